"""`nightshift logs ID -n N`: the last N lines; `-n 0` none, as `tail -n 0`; a negative N refused."""

from __future__ import annotations

import threading

from scheduler.log_relay import answer_log_requests
from tests.cli.conftest import cli_as


def test_logs_tail_zero_prints_nothing_as_tail_does(cluster, a100_node, make_identity, monkeypatch, tmp_path):
    who, token = make_identity("alice", "vision")
    task, _ = cluster.submit(who, {"command": "true", "workdir": str(tmp_path)})
    log = cluster.log_path(task.id)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("one\ntwo\nthree\n")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        whole = nightshift("logs", str(task.id))
        last = nightshift("logs", str(task.id), "-n", "1")
        none = nightshift("logs", str(task.id), "-n", "0")
        negative = nightshift("logs", str(task.id), "-n", "-1")

    assert whole.exit_code == last.exit_code == none.exit_code == 0, whole.output
    assert whole.stdout == "one\ntwo\nthree\n" and last.stdout == "three\n"
    assert none.stdout == ""
    said = " ".join(negative.output.replace("│", " ").split())
    assert negative.exit_code == 2 and "greater than or equal to 0" in said, said


def test_logs_of_a_task_that_ran_but_whose_file_is_gone_says_so(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    who, token = make_identity("alice", "vision")
    task, _ = cluster.submit(who, {"command": "true", "workdir": str(tmp_path)})
    cluster.tasks.mark_running(task.id, "token-1", a100_node, [0])
    stop = threading.Event()  # the node's worker answers for its logs: it has none for this task
    answering = threading.Thread(
        target=answer_log_requests,
        args=(cluster.queue.client, cluster.queue.keys, a100_node, cluster.log_path, stop, 0.2),
    )
    answering.start()
    try:
        with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
            shown = nightshift("logs", str(task.id))
    finally:
        stop.set()
        answering.join()

    assert shown.exit_code == 0 and shown.stdout == ""
    assert f"task {task.id} ran on {a100_node}, but its log file is gone" in shown.stderr
