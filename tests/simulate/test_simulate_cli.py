"""`nightshift simulate` on the command line: the metrics, the site's policy settings with --settings, and
a clear exit 2 for a bad trace."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from api.cli.app import app
from scheduler.settings import get_settings


@pytest.fixture
def fresh_settings() -> Iterator[None]:
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def _trace(tmp_path: Path) -> Path:
    """One 4-GPU node: a 4-GPU job holds it until 100 s; then a 1-GPU job (submitted at 1 s, runs 300 s) and
    a 4-GPU job (submitted at 2 s, runs 100 s) wait for it, run times unknown to the policy."""
    p = tmp_path / "trace.csv"
    p.write_text(
        "submit_time_s,duration_s,num_gpus,user\n0,100,4,a\n1,300,1,b\n2,100,4,c\n",
        encoding="utf-8",
    )
    return p


def _simulate(*args: str) -> dict[str, object]:
    out = CliRunner().invoke(app, ["simulate", *args, "--json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.output)  # type: ignore[no-any-return]


def test_simulate_prints_the_metrics_of_the_brief(tmp_path: Path) -> None:
    result = _simulate(str(_trace(tmp_path)), "--gpus", "4x24", "--nodes", "1")
    assert result["policy"] == "nightshift" and result["jobs"] == 3 and result["gpus"] == 4
    for key in (
        "mean_jct_s",
        "p99_wait_s",
        "makespan_s",
        "utilization",
        "lower_bound_mean_jct_s",
        "per_team",
    ):
        assert key in result


def test_settings_takes_the_sites_policy_knobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_settings: None
) -> None:
    trace = str(_trace(tmp_path))
    monkeypatch.setenv("NIGHTSHIFT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NIGHTSHIFT_SHORT_JOB_WIDTH_EXPONENT", "-0.5")
    # By GPU-seconds (the built-in default) the 1-GPU job goes first at 100 s and the 4-GPU one waits for
    # it to end at 400 s: waits 0, 99, 398
    built_in = _simulate(trace, "--gpus", "4x24")
    assert built_in["mean_wait_s"] == pytest.approx((0 + 99 + 398) / 3, abs=1.0)
    # With the site's exponent of -0.5 the 4-GPU job goes first at 100 s, the 1-GPU one at 200 s: 0, 199, 98
    site = _simulate(trace, "--gpus", "4x24", "--settings")
    assert site["mean_wait_s"] == pytest.approx((0 + 199 + 98) / 3, abs=1.0)


def test_a_bad_setting_or_trace_exits_2_saying_what_to_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_settings: None
) -> None:
    bad_trace = tmp_path / "bad.csv"
    bad_trace.write_text("submit_offset_s,duration_s,num_gpus\n0,1,1\n", encoding="utf-8")
    out = CliRunner().invoke(app, ["simulate", str(bad_trace)])
    assert out.exit_code == 2 and "missing required column submit_time_s" in out.output
    out = CliRunner().invoke(app, ["simulate", str(_trace(tmp_path)), "--nodes", "0"])
    assert out.exit_code == 2 and "--nodes must be at least 1" in out.output
    monkeypatch.setenv("NIGHTSHIFT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NIGHTSHIFT_SHORT_JOB_WIDTH_EXPONENT", "5")
    out = CliRunner().invoke(app, ["simulate", str(_trace(tmp_path)), "--settings"])
    assert out.exit_code == 2
    assert "short_job_width_exponent" in out.output and "less than or equal to 2" in out.output


def test_jobs_that_never_fit_are_a_warning_and_when_all_are_an_error(tmp_path: Path) -> None:
    some = tmp_path / "some.csv"
    some.write_text("submit_time_s,duration_s,num_gpus\n0,100,9\n5,100,1\n", encoding="utf-8")
    none = tmp_path / "none.csv"
    none.write_text("submit_time_s,duration_s,num_gpus\n0,100,9\n", encoding="utf-8")

    warned = CliRunner().invoke(app, ["simulate", str(some), "--gpus", "4x24", "--json"])
    refused = CliRunner().invoke(app, ["simulate", str(none), "--gpus", "4x24", "--json"])

    assert warned.exit_code == 0, warned.output
    assert json.loads(warned.stdout)["left_out"]["count"] == 1
    said = " ".join(warned.stderr.split())
    assert "warning: 1 job(s) left out, they could never start on this cluster (job 0 needs 9 GPUs" in said
    assert "--gpus 4x24 --nodes 3" in said
    assert refused.exit_code == 2 and refused.stdout == ""
    said = " ".join(refused.stderr.split())
    assert "no job of the trace could ever start on this cluster" in said and "--nodes 3" in said
