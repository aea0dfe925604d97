"""`nightshift estimate` for a new task: when it would start (tonight, or after a time) and what its energy
would cost, through the real API."""

from __future__ import annotations

import json
from datetime import datetime

from typer.testing import CliRunner

from api.cli.app import app
from scheduler.clock import now_ms
from scheduler.nodes import NodeGpu
from scheduler.settings import get_settings
from tests.conftest import serve_api

GB = 1024


def test_an_estimate_for_tonight_starts_off_peak_and_is_priced(cluster, make_identity, monkeypatch, tmp_path):
    cluster.nodes.publish(
        "box-1",
        [NodeGpu(i, "NVIDIA A100-SXM4-80GB", 80 * GB, 80 * GB) for i in range(4)],
        now_ms(),
        "simulated",
    )
    _, token = make_identity("alice", "vision")
    monkeypatch.setenv("NIGHTSHIFT_TOKEN", token)
    monkeypatch.setenv("NIGHTSHIFT_HOME", str(tmp_path / "client-home"))
    with serve_api(cluster) as url:
        monkeypatch.setenv("NIGHTSHIFT_API_URL", url)
        get_settings.cache_clear()
        tonight = CliRunner().invoke(
            app, ["estimate", "--gpus", "2", "--estimate", "60", "--tonight", "--json"]
        )
        later = CliRunner().invoke(app, ["estimate", "--gpus", "2", "--after", "2030-01-07T12:00", "--json"])
        bad = CliRunner().invoke(app, ["estimate", "--after", "someday"])
    get_settings.cache_clear()

    assert tonight.exit_code == 0, tonight.output
    answer = json.loads(tonight.output)
    local = datetime.fromisoformat(answer["start"]).astimezone(cluster.zone)
    assert local.hour >= 23 or local.hour < 7, local
    assert answer["energy_kwh"] > 0 and answer["energy_cost"] is not None
    assert datetime.fromisoformat(json.loads(later.output)["start"]).astimezone(cluster.zone).replace(
        tzinfo=None
    ) == datetime(2030, 1, 7, 12)
    assert bad.exit_code == 2 and "cannot read the time 'someday'" in bad.output
