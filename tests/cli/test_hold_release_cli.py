"""`nightshift hold ID` / `release ID`, and `ls` showing who holds a task."""

from __future__ import annotations

from tests.cli.conftest import cli_as


def test_hold_and_release_from_the_command_line(cluster, a100_node, make_identity, monkeypatch, tmp_path):
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        task_id = nightshift("submit", "--after", "+2h", "--", "true").output.split("task ")[1].split(" ")[0]
        held = nightshift("hold", task_id)
        listed = nightshift("ls")
        explained = nightshift("explain", task_id)
        released = nightshift("release", task_id)
        twice = nightshift("release", task_id)

    assert held.exit_code == 0 and f"task {task_id} held" in held.output, held.output
    assert "queued (held by alice)" in " ".join(listed.output.split())
    assert f"held by alice: nightshift release {task_id} lets it start" in " ".join(explained.output.split())
    assert released.exit_code == 0 and f"task {task_id} released" in released.output
    assert twice.exit_code == 1 and "is not held" in twice.output
    assert cluster.tasks.get_any(int(task_id)).held_by is None
