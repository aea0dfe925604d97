"""`nightshift submit --idempotency-key`: a retry with the same key queues nothing new and says so; the
same key for another task is refused."""

from __future__ import annotations

from tests.cli.conftest import cli_as


def test_a_second_submit_with_the_same_key_says_nothing_new_was_queued(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        first = nightshift("submit", "--idempotency-key", "k1", "--name", "idem", "--", "echo", "one")
        again = nightshift("submit", "--idempotency-key", "k1", "--name", "idem", "--", "echo", "one")
        other = nightshift("submit", "--idempotency-key", "k1", "--name", "idem", "--", "echo", "two")

    assert first.exit_code == 0 and "submitted task" in first.output, first.output
    task_id = first.output.split("task ")[1].split(" ")[0]
    assert f"already submitted as task {task_id} (idem) with idempotency key 'k1'" in " ".join(
        again.output.split()
    )
    assert other.exit_code == 1 and "was already used for task" in " ".join(other.output.split())
    assert cluster.tasks.count_by_status() == {"queued": 1}
