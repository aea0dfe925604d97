"""The chat card's "to submit it" line, run as it is by `nightshift submit`, queues the same spec the card
would have submitted: every field the card shows reaches the task."""

from __future__ import annotations

import shlex
from datetime import UTC, datetime, timedelta

from assistant.cards import cli_equivalent
from tests.cli.conftest import cli_as

FIELDS = (
    "command", "name", "gpus", "gpu_memory_gb", "priority", "time_limit_minutes", "estimated_minutes",
    "retries", "conda_env", "gpu_model", "node", "offpeak", "not_before", "deadline", "depends_on",
    "depends_on_any",
)  # fmt: skip


def test_the_cards_command_line_submits_the_same_spec(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
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
        "node": a100_node,
        "offpeak": True,
        "not_before": "2026-12-24T09:00:00+00:00",
        "deadline": (datetime.now(UTC) + timedelta(days=30)).replace(microsecond=0).isoformat(),
        "depends_on": [parent.id],
        "depends_on_any": [parent.id],
    }
    line = cli_equivalent(spec)
    words = shlex.split(line)
    assert words[:2] == ["nightshift", "submit"]

    monkeypatch.chdir(tmp_path)
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        result = nightshift(*words[1:])

    assert result.exit_code == 0, result.output
    task = max(cluster.tasks.with_status("queued"), key=lambda t: t.id)
    submitted = task.spec
    assert {key: submitted.get(key) for key in FIELDS} == {**spec, "not_before": "2026-12-24T09:00:00+00:00"}
