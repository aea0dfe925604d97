"""A task's new attempt claimed on the node whose worker still holds an older attempt of it (that worker lost
the older lease, say while it was paused, and has not settled it yet): the two are apart. Losing the older
lease stops the older job only, and the new attempt runs to its end and is settled."""

from __future__ import annotations

import os
import time

from scheduler.clock import now_ms
from scheduler.gpus import SimulatedGpus
from scheduler.store.identity import authenticate, create_token
from scheduler.store.queue import RenewResult
from scheduler.worker import Worker
from tests.conftest import is_alive, wait_until
from tests.reliability.conftest import settled

NODE = "node-a"
# attempt 1 hangs; attempt 2 waits for the test's go file, then succeeds; each writes its pid
JOB = (
    "echo $$ > {folder}/pid.$NIGHTSHIFT_ATTEMPT; "
    'if [ "$NIGHTSHIFT_ATTEMPT" = 1 ]; then exec sleep 300; fi; '
    "while [ ! -e {folder}/go ]; do sleep 0.05; done"
)


def _pid(path) -> int | None:
    text = path.read_text() if path.exists() else ""
    return int(text) if text.endswith("\n") else None


def test_losing_an_older_attempts_lease_stops_only_that_attempt(make_cluster, tmp_path):
    # the worker's own lease watchdog must not stop attempt 1 first on a slow machine (steps over 5 s
    # apart killed it in one CI run): the test expires that lease itself, below
    cluster = make_cluster(lease_ttl_s=60.0)
    # Given a worker (driven step by step) running attempt 1 of a task
    worker = Worker(cluster, NODE, SimulatedGpus("1x24", node=NODE), base_env=dict(os.environ))
    worker.publish_node()
    who = authenticate(cluster.factory, create_token(cluster.factory, user="alice", team="vision"))
    task, _ = cluster.submit(
        who, {"gpus": 1, "command": JOB.format(folder=tmp_path), "workdir": str(tmp_path)}
    )
    try:
        assert cluster.queue.assign(task.id, NODE, [0], now_ms())
        worker.step()
        first_pid = wait_until(lambda: _pid(tmp_path / "pid.1"))
        first = cluster.tasks.get_any(task.id).lease_token
        assert first is not None

        # When its lease runs out before the worker heard of it (the reaper requeues the task) and the task's
        # attempt 2 is claimed by the same worker, attempt 1 not yet settled
        assert cluster.queue.renew(task.id, first, now_ms(), 1) == RenewResult.RENEWED
        time.sleep(0.01)
        assert cluster.queue.expired(now_ms()) == [(task.id, first)]
        assert cluster.settle_attempt(task.id, first, "lost_worker", message="its worker stopped") == "queued"
        assert cluster.queue.assign(task.id, NODE, [0], now_ms())
        worker.step()
        second_pid = wait_until(lambda: _pid(tmp_path / "pid.2"))
        assert {item.attempt for item in worker.jobs.values()} == {1, 2}
        newest = worker.job_of(task.id)
        assert newest is not None and newest.attempt == 2

        # ... and the worker's heartbeat finds attempt 1's lease gone
        worker.heartbeat()

        # Then attempt 1's job is stopped, and attempt 2's runs on
        wait_until(lambda: not is_alive(first_pid), timeout_s=15)
        assert is_alive(second_pid)
        # attempt 1 is settled once its stop is over (its claim is no longer the task's: nothing changes)
        wait_until(lambda: (worker.step(), {item.attempt for item in worker.jobs.values()} == {2})[1])
        assert settled(cluster, task.id) == ""

        # When attempt 2 finishes, Then it is the task's success
        (tmp_path / "go").touch()
        wait_until(lambda: not is_alive(second_pid), timeout_s=15)
        wait_until(lambda: (worker.step(), settled(cluster, task.id))[1], timeout_s=15)
        assert settled(cluster, task.id) == "succeeded"
        attempts = cluster.tasks.attempts(task.id)
        assert [(a.outcome, a.reason) for a in attempts] == [
            ("retried", "lost_worker"),
            ("succeeded", "exit"),
        ]
        assert worker.jobs == {}
    finally:
        worker.shutdown()
