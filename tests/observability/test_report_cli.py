"""`nightshift report` against a real API server: a rich table by default, one JSON document with --json."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from typer.testing import CliRunner

from api.cli.app import app
from scheduler.settings import get_settings
from tests.conftest import serve_api, wait_until


@pytest.fixture
def api_url(cluster):
    with serve_api(cluster) as url:
        yield url


def test_report_prints_tables_and_json(cluster, make_identity, start_node, api_url, monkeypatch, tmp_path):
    who, token = make_identity("alice", "vision", admin=True)
    start_node(gpus="1x24")
    task = cluster.submit(who, {"command": "exit 2", "workdir": str(tmp_path), "name": "broken"})[0]
    wait_until(lambda: cluster.tasks.get_any(task.id).status == "failed")
    monkeypatch.setenv("NIGHTSHIFT_API_URL", api_url)
    monkeypatch.setenv("NIGHTSHIFT_TOKEN", token)
    monkeypatch.setenv("NIGHTSHIFT_HOME", str(tmp_path / "client-home"))
    get_settings.cache_clear()
    try:
        runner = CliRunner()
        table = runner.invoke(app, ["report", "--days", "1"])
        assert table.exit_code == 0, table.output
        assert "vision" in table.output and "quota use" in table.output
        data = json.loads(runner.invoke(app, ["report", "--days", "1", "--json"]).output)
        assert [row["key"] for row in data["rows"]] == ["vision"] and "by_day" in data
        summary = json.loads(runner.invoke(app, ["report", "--summary", "--hours", "1", "--json"]).output)
        assert [(t["id"], t["reason"]) for t in summary["failed"]] == [(task.id, "nonzero_exit")]
        text = runner.invoke(app, ["report", "--summary", "--hours", "1"])
        assert "broken" in text.output and "1 failed" in text.output
    finally:
        get_settings.cache_clear()


def test_report_options_that_would_be_ignored_are_refused_and_summary_days_is_read(
    cluster, make_identity, api_url, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision", admin=True)
    monkeypatch.setenv("NIGHTSHIFT_API_URL", api_url)
    monkeypatch.setenv("NIGHTSHIFT_TOKEN", token)
    monkeypatch.setenv("NIGHTSHIFT_HOME", str(tmp_path / "client-home"))
    get_settings.cache_clear()
    try:
        runner = CliRunner()
        refused = {
            "--hours goes with --summary": ["report", "--hours", "3"],
            "--by goes with the usage report": ["report", "--summary", "--by", "user"],
            "give --days or --hours, not both": ["report", "--summary", "--days", "1", "--hours", "2"],
            "--summary looks back at most 31 days": ["report", "--summary", "--days", "40"],
        }
        for words, args in refused.items():
            result = runner.invoke(app, args)
            assert result.exit_code == 2 and words in " ".join(result.output.split()), (args, result.output)
        three_days = json.loads(runner.invoke(app, ["report", "--summary", "--days", "3", "--json"]).output)
        last_night = json.loads(runner.invoke(app, ["report", "--summary", "--json"]).output)
        by_user = json.loads(runner.invoke(app, ["report", "--by", "user", "--json"]).output)
    finally:
        get_settings.cache_clear()

    def span_s(summary: dict) -> float:
        return (
            datetime.fromisoformat(summary["until"]) - datetime.fromisoformat(summary["since"])
        ).total_seconds()

    assert span_s(three_days) == pytest.approx(3 * 86400, abs=5)
    assert span_s(last_night) < 2 * 86400  # since 18:00 yesterday
    assert (by_user["by"], by_user["days"]) == ("user", 7)


def test_report_team_shows_one_teams_usage_and_goes_only_with_the_usage_report(
    cluster, make_identity, api_url, monkeypatch, tmp_path
):
    from scheduler.clock import now_s
    from tests.observability.test_reports import _ran

    alice, _ = make_identity("alice", "vision")
    bob, _ = make_identity("bob", "nlp")
    _, token = make_identity("root", "ops", admin=True)
    now = now_s()
    for who in (alice, bob):
        _ran(cluster, who, submitted=now - 600, started=now - 600, finished=now - 300, tmp=tmp_path)
    monkeypatch.setenv("NIGHTSHIFT_API_URL", api_url)
    monkeypatch.setenv("NIGHTSHIFT_TOKEN", token)
    monkeypatch.setenv("NIGHTSHIFT_HOME", str(tmp_path / "client-home"))
    get_settings.cache_clear()
    try:
        runner = CliRunner()
        nlp = json.loads(runner.invoke(app, ["report", "--days", "1", "--team", "nlp", "--json"]).output)
        unknown = runner.invoke(app, ["report", "--team", "nope"])
        with_summary = runner.invoke(app, ["report", "--summary", "--team", "nlp"])
    finally:
        get_settings.cache_clear()
    assert (nlp["team"], [row["key"] for row in nlp["rows"]]) == ("nlp", ["nlp"])
    assert nlp["total_gpu_hours"] == pytest.approx(300 / 3600, abs=1e-5)
    assert unknown.exit_code == 1 and "team 'nope' not found" in unknown.output
    assert with_summary.exit_code == 2 and "--team goes with the usage report" in " ".join(
        with_summary.output.split()
    )
