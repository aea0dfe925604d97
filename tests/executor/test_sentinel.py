"""The job sentinel: when the worker dies, even by SIGKILL, its jobs' children die too, not only the leader."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scheduler.executor import LaunchRequest, find_processes_with_token, start_job
from scheduler.executor.launch import job_base_env, warm_up
from scheduler.executor.sentinel import JobSentinel, WatchedJob, serve
from scheduler.executor.spares import SpareShells
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


# A stand-in worker whose sentinel may hear nothing for 1 s (told when it starts, with the job), then waits.
SILENT_WORKER = """
import sys
from pathlib import Path
from scheduler.executor import LaunchRequest, start_job
from scheduler.executor.sentinel import JobSentinel

workdir, log_path, token = sys.argv[1:4]
request = LaunchRequest(
    7, 1, "sleep 300 & echo $! >> pids; wait", Path(workdir), Path(log_path), (), {}, None, None, None, None,
    token,
)
sentinel = JobSentinel(silence_s=1.0)
job = start_job(request, sentinel=sentinel)
print(job.pid, sentinel.pid, flush=True)
sys.stdin.read()
"""


def test_a_stopped_workers_jobs_are_killed_after_the_silence_it_allowed_and_the_sentinel_stays(
    tmp_path: Path,
) -> None:
    # Given a worker whose job (with a background child) runs, which said it speaks at least every second
    with stand_in_worker(SILENT_WORKER, tmp_path) as (worker, workdir, token):
        assert worker.stdout is not None
        leader, sentinel = (int(word) for word in worker.stdout.readline().split())
        (child,) = read_pids(workdir / "pids", 1)

        # When the worker is stopped, as Ctrl-Z or a frozen VM stops it
        os.kill(worker.pid, signal.SIGSTOP)
        try:
            # Then its job dies, child included, though the worker still exists; the sentinel stays for it
            for pid in (leader, child):
                wait_until(lambda pid=pid: not is_alive(pid), what=f"job process {pid} to be killed")
            assert not find_processes_with_token(token)
            assert worker.poll() is None
            assert is_alive(sentinel)
        finally:
            os.kill(worker.pid, signal.SIGCONT)


def test_the_sentinel_kills_what_it_watches_after_a_silence_longer_than_the_worker_allowed() -> None:
    # Given a pipe on which the worker watched a job and allowed a silence of 0.1 s, then said nothing
    read_end, write_end = os.pipe()
    silences: list[tuple[set[str], float]] = []
    # the read end is closed only after the sentinel has read end-of-file from it (not under its reader)
    with os.fdopen(read_end) as lines:
        with os.fdopen(write_end, "w") as worker:
            worker.write(json.dumps({"watch": "run-a", "group": None, "cleanup": None}) + "\n")
            worker.write(json.dumps({"alive": 0.1}) + "\n")
            worker.flush()
            served: list[Any] = []
            thread = threading.Thread(
                target=lambda: served.append(
                    serve(lines, lambda told, s: silences.append((set(told.jobs), s)))
                )
            )
            thread.start()

            # When the silence outlasts what it allowed
            wait_until(lambda: silences, what="the sentinel to act on the silence")

            # Then it acted once, on what it watched, and it goes on following the worker until end-of-file
            worker.write(json.dumps({"watch": "run-b", "group": None, "cleanup": None}) + "\n")
            worker.write(json.dumps({"forget": "run-b"}) + "\n")
        thread.join(WAIT_S)
    assert silences[0][0] == {"run-a"} and silences[0][1] >= 0.1
    assert served and served[0].jobs == {}


class _SlowToHearSentinel(JobSentinel):
    """A sentinel whose `watch` takes a while, as a loaded machine's does, and notes whether the job had run
    anything by the time it was told of it."""

    def __init__(self, marker: Path) -> None:
        super().__init__()
        self.marker = marker
        self.job_had_run: list[bool] = []

    def watch(self, run_token: str, *args: Any, **kwargs: Any) -> None:
        time.sleep(0.3)
        self.job_had_run.append(self.marker.exists())
        super().watch(run_token, *args, **kwargs)


@pytest.mark.parametrize("start", ["directly", "directly in a cgroup", "from a spare shell"])
def test_a_job_runs_nothing_before_its_sentinel_knows_it(
    start: str, make_request: Callable[..., LaunchRequest], request: pytest.FixtureRequest
) -> None:
    # Given a job whose first act leaves a mark, and a sentinel slow to be told
    job_request = make_request("touch ran")
    sentinel = _SlowToHearSentinel(job_request.workdir / "ran")
    cgroups = request.getfixturevalue("job_cgroups") if start != "directly" else None
    spares = SpareShells(cgroups) if start == "from a spare shell" and cgroups is not None else None
    try:
        spare = None
        if spares is not None:
            warm_up(spares, job_base_env(os.environ))
            spare = spares.spare_pid(job_base_env(os.environ))

        # When the job starts
        job = start_job(job_request, sentinel=sentinel, cgroups=cgroups, spares=spares)

        # Then it ran only once the sentinel knew it (a worker killed in between leaves nothing running)
        assert job.wait(WAIT_S) == 0
        assert sentinel.job_had_run == [False]
        assert (job_request.workdir / "ran").exists()
        assert job.pid == spare if spares is not None else job.pid is not None
    finally:
        if spares is not None:
            spares.close()
        sentinel.close()
