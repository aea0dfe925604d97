"""Finding a job's processes by its run token: stragglers, and jobs a restarted worker no longer owns."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from scheduler.errors import ExecutorError
from scheduler.executor import (
    RunningJob,
    find_processes_with_token,
    find_run_tokens,
    kill_processes_with_token,
)
from scheduler.executor.reaper import found_twice_over
from tests.conftest import is_alive, read_pids

from .conftest import WAIT_S, stand_in_worker, wait_until

RunJob = Callable[..., RunningJob]

# A stand-in worker: starts one job, prints its leader's pid, and waits to be killed.
WORKER = """
import sys
from pathlib import Path
from scheduler.executor import LaunchRequest, start_job

workdir, log_path, token = sys.argv[1:4]
request = LaunchRequest(7, 1, "sleep 300 & echo $! > pids; wait", Path(workdir), Path(log_path), (), {},
                        None, None, None, None, token)
print(start_job(request).pid, flush=True)
sys.stdin.read()
"""


def test_a_jobs_processes_are_found_by_its_run_token(run_job: RunJob) -> None:
    job = run_job("sleep 300 & echo $! > pids; wait")
    (child,) = read_pids(job.request.workdir / "pids", 1)
    # `$!` is written once the child is forked; while it execs `sleep` its environment may not read yet
    wait_until(
        lambda: set(find_processes_with_token(job.run_token)) == {job.pid, child}, what="both processes"
    )

    assert set(find_run_tokens()[job.run_token]) == {job.pid, child}


def test_a_token_matches_whole_not_as_a_prefix(run_job: RunJob) -> None:
    job = run_job("sleep 300")
    wait_until(lambda: find_processes_with_token(job.run_token), what="the job to carry its token")

    assert find_processes_with_token(job.run_token[:-1]) == []


def test_killing_by_token_ends_a_job_and_the_worker_sees_it_killed(run_job: RunJob) -> None:
    job = run_job("sleep 300 & echo $! > pids; wait")
    (child,) = read_pids(job.request.workdir / "pids", 1)

    killed = kill_processes_with_token(job.run_token)

    assert set(killed) == {job.pid, child}
    assert job.wait(WAIT_S) == -9
    assert not is_alive(child)


def test_killing_by_a_token_nobody_carries_kills_nothing() -> None:
    assert kill_processes_with_token(f"nobody-{uuid.uuid4().hex}") == []


def test_an_unsafe_token_is_refused_rather_than_matched() -> None:
    with pytest.raises(ExecutorError, match="run token"):
        find_processes_with_token("")


def test_a_dead_workers_job_leader_dies_with_it_and_a_new_worker_finds_the_rest(tmp_path: Path) -> None:
    # Given a worker process running a job with a background child
    with stand_in_worker(WORKER, tmp_path) as (worker, workdir, token):
        assert worker.stdout is not None
        leader = int(worker.stdout.readline())
        (child,) = read_pids(workdir / "pids", 1)

        # When the worker is killed with SIGKILL
        worker.kill()
        worker.wait(WAIT_S)

        # Then the job's leader dies with it and, with no sentinel (test_sentinel.py), a new worker finds the
        # orphaned child by its token
        wait_until(lambda: not is_alive(leader), what="the leader to die with its worker")
        assert find_run_tokens()[token] == [child]
        assert kill_processes_with_token(token) == [child]
        assert not is_alive(child)


def test_a_scan_that_finds_nothing_is_looked_at_once_more_before_it_counts_as_none() -> None:
    # Given a scan that misses a process the first time (in the middle of an exec it shows no environment)
    looks = iter([[], [4242], [4242]])

    # Then the process is found by the second look, and a scan that finds something is not repeated
    assert found_twice_over(lambda: next(looks)) == [4242]
    assert found_twice_over(lambda: next(looks)) == [4242]
    assert found_twice_over(list) == []
