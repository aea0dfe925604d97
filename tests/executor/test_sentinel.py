"""The job sentinel: when the worker dies, even by SIGKILL, its jobs' children die too, not only the leader."""

from __future__ import annotations

import io
import json
import os
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from scheduler.executor import LaunchRequest, find_processes_with_token, start_job
from scheduler.executor.sentinel import JobSentinel, WatchedJob, serve
from tests.conftest import is_alive, read_pids

from .conftest import WAIT_S, stand_in_worker, wait_until

# A stand-in worker: starts a compound job with a background child, a `setsid` grandchild (out of the job's
# group, with its token) and a child without the token (`env -i`, in the group), with a sentinel; prints the
# leader's and the sentinel's pids, and waits to be killed.
WORKER = """
import sys
from pathlib import Path
from scheduler.executor import LaunchRequest, start_job
from scheduler.executor.sentinel import JobSentinel

workdir, log_path, token = sys.argv[1:4]
command = (
    "sleep 300 & echo $! >> pids; setsid sleep 300 & echo $! >> pids; env -i sleep 300 & echo $! >> pids; "
    "python3 -c pass && wait"
)
request = LaunchRequest(7, 1, command, Path(workdir), Path(log_path), (), {}, None, None, None, None, token)
sentinel = JobSentinel()
job = start_job(request, sentinel=sentinel)
print(job.pid, sentinel.pid, flush=True)
sys.stdin.read()
"""


def test_a_killed_workers_jobs_die_with_it_children_and_escaped_grandchildren_included(
    tmp_path: Path,
) -> None:
    # Given a worker running a compound job with a background child, a grandchild in its own session and a
    # child without the job's token
    with stand_in_worker(WORKER, tmp_path) as (worker, workdir, token):
        assert worker.stdout is not None
        leader, sentinel = (int(word) for word in worker.stdout.readline().split())
        children = read_pids(workdir / "pids", 3)
        assert all(is_alive(pid) for pid in children)

        # When the worker is killed with SIGKILL
        worker.kill()
        worker.wait(WAIT_S)

        # Then nothing of the job is left, and the sentinel has exited
        for pid in (leader, *children):
            wait_until(lambda pid=pid: not is_alive(pid), what=f"job process {pid} to die with its worker")
        wait_until(lambda: not find_processes_with_token(token), what="no process with the job's token")
        wait_until(lambda: not is_alive(sentinel), what="the sentinel to exit")


def test_a_job_that_ended_is_forgotten_and_a_closed_sentinel_leaves_other_processes_alone(
    make_request: Callable[..., LaunchRequest], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # Given a sentinel that watched a job which then ended
    sentinel = JobSentinel()
    job = start_job(make_request("true"), sentinel=sentinel)
    assert job.wait(WAIT_S) == 0
    # and a process that carries that job's token but was not started by it
    stranger = subprocess.Popen(
        ["sleep", "300"], env={**os.environ, "NIGHTSHIFT_RUN_TOKEN": job.run_token}, start_new_session=True
    )
    try:
        pid = sentinel.pid
        assert pid is not None

        # When the worker stops (the sentinel reads end-of-file)
        sentinel.close()

        # Then the sentinel is gone and killed nothing (the ended job was forgotten), silently
        assert not is_alive(pid)
        assert stranger.poll() is None
        assert capfd.readouterr().err == ""
    finally:
        stranger.kill()
        stranger.wait(WAIT_S)


def test_a_sentinel_that_was_killed_is_started_again_and_told_every_running_job(
    make_request: Callable[..., LaunchRequest], tmp_path: Path
) -> None:
    # Given a job watched by a sentinel that someone killed
    sentinel = JobSentinel()
    first = start_job(make_request("sleep 300 & echo $! > pids; wait"), sentinel=sentinel)
    jobs = [first]
    try:
        (child,) = read_pids(first.request.workdir / "pids", 1)
        killed = sentinel.pid
        assert killed is not None
        os.kill(killed, 9)
        wait_until(lambda: not is_alive(killed), what="the sentinel to die")

        # When the next job starts
        second_dir = tmp_path / "second"
        second_dir.mkdir()
        second = start_job(make_request("sleep 300", workdir=second_dir), sentinel=sentinel)
        jobs.append(second)
        assert sentinel.pid not in (None, killed)

        # Then the new sentinel knows both: at end-of-file it kills the first job's child and the second job
        sentinel.close()
        wait_until(lambda: not is_alive(child), what="the first job's child to be killed")
        assert second.wait(WAIT_S) == -9
    finally:
        for job in jobs:
            job.stop(0.1, "cancelled")


def test_the_sentinel_runs_a_jobs_cleanup_command_when_the_worker_is_gone(tmp_path: Path) -> None:
    # Given a watched job whose cleanup (for docker: `docker rm --force NAME`) leaves a mark
    marker = tmp_path / "removed"
    sentinel = JobSentinel()
    sentinel.watch(f"test-{uuid.uuid4().hex}", None, ["/bin/sh", "-c", f"echo removed > {marker}"])

    # When the worker is gone
    sentinel.close()

    # Then the cleanup ran
    assert marker.read_text() == "removed\n"


def test_the_sentinel_follows_watch_and_forget_and_skips_lines_it_cannot_read() -> None:
    lines = [
        json.dumps({"watch": "run-a", "group": 100, "cleanup": None}),
        json.dumps(
            {"watch": "run-b", "group": 200, "cleanup": ["docker", "rm", "--force", "nightshift-2-1"]}
        ),
        "not json",
        json.dumps(["a", "list"]),
        json.dumps("watching"),
        json.dumps({"watch": "run-c", "group": 1, "cleanup": "rm -rf /"}),  # never group 1 (init's)
        json.dumps({"watch": "run-d", "group": "300"}),
        json.dumps({"forget": "run-a"}),
        json.dumps({"forget": "never-watched"}),
    ]

    assert serve(io.StringIO("\n".join(lines) + "\n")).jobs == {
        "run-b": WatchedJob(200, cleanup=["docker", "rm", "--force", "nightshift-2-1"]),
        "run-c": WatchedJob(None),
        "run-d": WatchedJob(None),
    }


def test_the_sentinel_learns_where_the_workers_spare_cgroups_are() -> None:
    told = [
        json.dumps({"cgroups": "/sys/fs/cgroup/nightshift", "owner": "n1.abc", "spares": "n1.abc:spare42-"}),
        json.dumps({"cgroups": "relative/path", "owner": "n2", "spares": "n2:spare1-"}),  # ignored
        json.dumps({"cgroups": "/x", "owner": "n3", "spares": ["not", "a", "prefix"]}),  # ignored
    ]
    watched = serve(io.StringIO("\n".join(told) + "\n"))
    assert watched.cgroups is not None
    assert (watched.cgroups.base, watched.cgroups.owner) == (Path("/sys/fs/cgroup/nightshift"), "n1.abc")
    assert watched.spare_prefix == "n1.abc:spare42-"
