"""`nightshift report` against a real API server: a rich table by default, one JSON document with --json."""

from __future__ import annotations

import json

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
