"""A worker paused (SIGSTOP) past its lease and resumed: its job sentinel kills the job while it is paused
(before its lease runs out), its late heartbeat and completion are refused, and exactly one attempt
succeeds — on the other worker."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from scheduler.store.queue import RedisQueue, RenewResult
from tests.conftest import is_alive
from tests.reliability.stack import Stack, poll

# Attempt 1 hangs (its worker gets paused); the retry finishes at once. Each attempt leaves its pid.
JOB = (
    'echo $$ > {folder}/pid.$NIGHTSHIFT_ATTEMPT; if [ "$NIGHTSHIFT_ATTEMPT" = 1 ]; then sleep 120; fi; '
    "echo done >> {folder}/out"
)


def _first_attempt_running_on_w1(stack: Stack, folder: Path) -> tuple[int, int]:
    """Start the API, a scheduler and worker w1, submit `JOB` (no retries) and wait for its first attempt
    to run: (task id, the attempt's pid)."""
    stack.start_api()
    stack.start("scheduler", "scheduler")
    stack.start_worker("w1")
    task_id = stack.submit({"command": JOB.format(folder=folder), "workdir": str(folder)})
    pid = poll(lambda: _pid_written(folder / "pid.1"), what="attempt 1 to start")
    return task_id, pid


def _wait_for_the_end(stack: Stack, task_id: int, what: str) -> None:
    """Wait until the task has ended and check it succeeded; else say how each attempt ended."""
    status = poll(lambda: _ended(stack, task_id), timeout_s=60, what=what)
    attempts = [(a.node, a.outcome, a.reason) for a in stack.tasks.attempts(task_id)]
    assert status == "succeeded", f"task {task_id} {status}; attempts {attempts}"


def _ended(stack: Stack, task_id: int) -> str | None:
    status = stack.statuses([task_id])[task_id]
    return status if status in ("succeeded", "failed", "cancelled") else None


def _pid_written(path: Path) -> int | None:
    """The pid a job wrote to `path`, None until the whole line is there (`>` creates the file first)."""
    text = path.read_text() if path.exists() else ""
    return int(text) if text.endswith("\n") else None


@pytest.mark.slow
def test_a_paused_workers_job_is_killed_by_its_sentinel_and_its_task_runs_once_elsewhere(tmp_path, redis_url):
    stack = Stack(tmp_path, redis_url)
    folder = tmp_path / "job"
    folder.mkdir()
    try:
        task_id, first_pid = _first_attempt_running_on_w1(stack, folder)
        assert stack.tasks.get_any(task_id).node == "w1"
        stack.start_worker("w2")

        # When w1 is paused past its lease
        stack.signal("w1", signal.SIGSTOP)
        _wait_for_the_end(stack, task_id, "the retry on w2")

        # Then its sentinel, hearing nothing from it, has killed its job while it is still paused
        poll(
            lambda: not is_alive(first_pid), timeout_s=30, what="the sentinel to kill the paused worker's job"
        )
        assert "worker silent for" in stack.log("w1")

        # When it is resumed, Then what it still holds is refused
        stack.signal("w1", signal.SIGCONT)
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


@pytest.mark.slow
def test_a_whole_single_node_service_paused_and_resumed_runs_its_task_again_without_failing_it(
    tmp_path, redis_url
):
    """Ctrl-Z on `nightshift up` stops the scheduler and the worker together, not the sentinel: the job is
    killed while they are stopped, and once resumed the task is retried as a lost worker's, not failed."""
    stack = Stack(tmp_path, redis_url)
    folder = tmp_path / "job"
    folder.mkdir()
    try:
        task_id, first_pid = _first_attempt_running_on_w1(stack, folder)  # no retries

        # When the scheduler and the worker are paused past the silence the sentinel allows, then resumed
        stack.signal("scheduler", signal.SIGSTOP)
        stack.signal("w1", signal.SIGSTOP)
        poll(lambda: not is_alive(first_pid), timeout_s=30, what="the sentinel to kill the job")
        stack.signal("w1", signal.SIGCONT)
        stack.signal("scheduler", signal.SIGCONT)

        # Then the task runs again and succeeds: the killed attempt is a lost worker's, not the task's failure
        _wait_for_the_end(stack, task_id, "attempt 2")
        attempts = stack.tasks.attempts(task_id)
        assert [(a.outcome, a.reason) for a in attempts] == [
            ("retried", "lost_worker"),
            ("succeeded", "exit"),
        ]
        assert (folder / "out").read_text().splitlines() == ["done"]
    finally:
        stack.close()
