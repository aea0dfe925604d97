"""The chat card's "to submit it" line, run as it is by `nightshift submit`, queues the same spec the card
would have submitted: every field the card shows reaches the task."""

from __future__ import annotations

import shlex

from typer.testing import CliRunner

from api.cli.app import app
from assistant.cards import cli_equivalent
from scheduler.clock import now_ms
from scheduler.nodes import NodeGpu
from scheduler.settings import get_settings
from tests.conftest import serve_api

GB = 1024
FIELDS = (
    "command", "name", "gpus", "gpu_memory_gb", "priority", "time_limit_minutes", "estimated_minutes",
    "retries", "conda_env", "gpu_model", "node", "offpeak", "not_before", "depends_on",
)  # fmt: skip


def test_the_cards_command_line_submits_the_same_spec(cluster, make_identity, monkeypatch, tmp_path):
    cluster.nodes.publish(
        "box-1",
        [NodeGpu(i, "NVIDIA A100-SXM4-80GB", 80 * GB, 80 * GB) for i in range(4)],
        now_ms(),
        "simulated",
    )
    who, token = make_identity("alice", "vision")
    parent, _ = cluster.submit(who, {"command": "true", "workdir": str(tmp_path)})
    spec = {
        "command": 'python train.py --lr 3e-4 --out "$NIGHTSHIFT_OUTPUT_DIR"',
        "name": "ft run",
        "gpus": 2,
        "gpu_memory_gb": 40.0,
        "priority": "high",
        "time_limit_minutes": 180.0,
        "estimated_minutes": 90.0,
        "retries": 2,
        "conda_env": "torch2",
        "gpu_model": "A100",
        "node": "box-1",
        "offpeak": True,
        "not_before": "2026-12-24T09:00:00+00:00",
        "depends_on": [parent.id],
    }
    line = cli_equivalent(spec)
    words = shlex.split(line)
    assert words[:2] == ["nightshift", "submit"]

    monkeypatch.setenv("NIGHTSHIFT_TOKEN", token)
    monkeypatch.setenv("NIGHTSHIFT_HOME", str(tmp_path / "client-home"))
    monkeypatch.chdir(tmp_path)
    with serve_api(cluster) as url:
        monkeypatch.setenv("NIGHTSHIFT_API_URL", url)
        get_settings.cache_clear()
        result = CliRunner().invoke(app, words[1:])
    get_settings.cache_clear()

    assert result.exit_code == 0, result.output
    task = max(cluster.tasks.with_status("queued"), key=lambda t: t.id)
    submitted = task.spec
    assert {key: submitted.get(key) for key in FIELDS} == {**spec, "not_before": "2026-12-24T09:00:00+00:00"}
