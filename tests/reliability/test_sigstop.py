"""A worker paused (SIGSTOP) past its lease and resumed: its late heartbeat and completion are refused,
its job is gone, and exactly one attempt succeeds — on the other worker."""

from __future__ import annotations

import os
import signal

import pytest

from scheduler.store.queue import RedisQueue, RenewResult
from tests.conftest import is_alive
from tests.reliability.stack import Stack, poll

# Attempt 1 hangs (its worker gets paused); the retry finishes at once. Each attempt leaves its pid.
JOB = (
    'echo $$ > {folder}/pid.$NIGHTSHIFT_ATTEMPT; if [ "$NIGHTSHIFT_ATTEMPT" = 1 ]; then sleep 120; fi; '
    "echo done >> {folder}/out"
)


@pytest.mark.slow
def test_a_paused_worker_loses_its_task_and_kills_its_job_when_it_wakes_up(tmp_path, redis_url):
    stack = Stack(tmp_path, redis_url)
    folder = tmp_path / "job"
    folder.mkdir()
    try:
        stack.start_api()
        stack.start("scheduler", "scheduler")
        stack.start_worker("w1")
        task_id = stack.submit({"command": JOB.format(folder=folder), "workdir": str(folder)})
        poll(lambda: (folder / "pid.1").exists(), what="attempt 1 to start")
        first = stack.tasks.get_any(task_id)
        assert first.node == "w1"
        first_pid = int((folder / "pid.1").read_text())
        stack.start_worker("w2")

        # When w1 is paused past its lease
        stack.signal("w1", signal.SIGSTOP)
        poll(lambda: stack.statuses([task_id])[task_id] == "succeeded", timeout_s=60, what="the retry on w2")
        assert is_alive(first_pid), "attempt 1 still runs while its worker is paused"

        # ... and resumed
        stack.signal("w1", signal.SIGCONT)

        # Then it kills its job, and refuses (is refused) what it still holds
        poll(lambda: not is_alive(first_pid), timeout_s=30, what="the paused worker to kill its job")
        poll(lambda: "killing its job" in stack.log("w1") or "heartbeat refused" in stack.log("w1"))
        attempts = stack.tasks.attempts(task_id)
        assert [(a.node, a.outcome, a.reason) for a in attempts] == [
            ("w1", "retried", "lost_worker"),
            ("w2", "succeeded", "exit"),
        ]
        assert (folder / "out").read_text().splitlines() == ["done"]
        # the stale claim's heartbeat and completion are refused, by Redis and by SQL
        queue = RedisQueue.from_url(redis_url)
        try:
            assert queue.renew(task_id, attempts[0].token, 0, 3_000) in (
                RenewResult.MISSING,
                RenewResult.STOLEN,
            )
        finally:
            queue.client.close()
        assert not stack.tasks.finish(
            task_id, attempts[0].token, "failed", exit_code=1, reason="nonzero_exit"
        )
        assert stack.tasks.get_any(task_id).status == "succeeded"
        assert os.path.exists(folder / "pid.2")
    finally:
        stack.close()
