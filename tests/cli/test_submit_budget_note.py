"""`nightshift submit` says when the team's day budget is used up: the task is queued, and waits."""

from __future__ import annotations

import time

import pytest
from typer.testing import CliRunner

from api.cli.app import app
from scheduler.clock import now_ms
from scheduler.nodes import NodeGpu
from scheduler.settings import get_settings
from scheduler.store.identity import authenticate, create_token
from tests.conftest import serve_api, wait_until

GB = 1024


@pytest.fixture
def budget_api(make_cluster):
    cluster = make_cluster(day_budget_gpu_h={"vision": 0.0001})
    with serve_api(cluster) as url:
        yield cluster, url


def _submit_as(monkeypatch, token: str, *command: str):
    monkeypatch.setenv("NIGHTSHIFT_TOKEN", token)
    get_settings.cache_clear()
    return CliRunner().invoke(app, ["submit", "--", *command])


def test_a_submit_notes_a_used_up_day_budget(budget_api, monkeypatch, tmp_path):
    cluster, url = budget_api
    cluster.nodes.publish("node-a", [NodeGpu(0, "SIM", 24 * GB, 24 * GB)], now_ms(), "simulated")
    alice = create_token(cluster.factory, user="alice", team="vision")
    bob = create_token(cluster.factory, user="bob", team="nlp")  # nlp has no budget
    monkeypatch.setenv("NIGHTSHIFT_API_URL", url)
    monkeypatch.setenv("NIGHTSHIFT_TOKEN", alice)
    monkeypatch.setenv("NIGHTSHIFT_HOME", str(tmp_path / "client-home"))
    monkeypatch.chdir(tmp_path)
    # Given a task of team vision ran long enough to use up its day budget
    task, _ = cluster.submit(
        authenticate(cluster.factory, alice), {"command": "sleep 60", "workdir": str(tmp_path)}
    )
    assert cluster.queue.assign(task.id, "node-a", [0], now_ms())
    claim = wait_until(lambda: cluster.queue.claim("node-a", now_ms(), 60_000))
    assert cluster.tasks.mark_running(task.id, claim.token, "node-a", claim.gpu_indices) == 1
    time.sleep(1.2)
    try:
        # When bob (team nlp) submits, Then nothing is noted
        within = _submit_as(monkeypatch, bob, "echo", "hi")
        assert within.exit_code == 0, within.output
        assert "queued" in within.output and "note:" not in within.output

        # When alice submits again, Then it is queued and she is told it waits for the budget
        over = _submit_as(monkeypatch, alice, "echo", "hi")
        assert over.exit_code == 0, over.output
        assert "queued" in over.output
        assert "note: day budget of team vision is used up" in over.output
        assert "it waits until the team's usage falls" in over.output

        # When she submits a CPU-only task, Then she is told it starts anyway (it uses no GPU-hours)
        monkeypatch.setenv("NIGHTSHIFT_TOKEN", alice)
        get_settings.cache_clear()
        cpu_only = CliRunner().invoke(app, ["submit", "--gpus", "0", "--", "echo", "hi"])
        assert cpu_only.exit_code == 0, cpu_only.output
        assert "used up" in cpu_only.output and "it starts anyway: CPU-only" in cpu_only.output
    finally:
        get_settings.cache_clear()
