"""Jobs that end together: one look at /proc for all of them (`ProcessSnapshot`), and one thread that learns
of every leader's exit (`ExitWatcher`) instead of a thread per job."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable

from scheduler.executor import LaunchRequest, RunningJob, find_processes_with_token
from scheduler.executor.exit_watch import ExitWatcher
from scheduler.executor.reaper import take_process_snapshot
from tests.conftest import is_alive, read_pids

from .conftest import WAIT_S, wait_until

RunJob = Callable[..., RunningJob]


def _command(pid: int) -> str:
    """The process's command name (`/proc/PID/comm`), or "" once it is gone."""
    try:
        with open(f"/proc/{pid}/comm") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def _leader_gone(job: RunningJob) -> None:
    wait_until(job.leader_exited, what="the job's leader to exit")


def test_a_snapshot_taken_after_the_leaders_exit_finds_every_leftover_and_the_sweep_kills_them(
    run_job: RunJob,
) -> None:
    jobs = [
        run_job(
            f"sleep 300 & echo $! > pids{i}; setsid sleep 30{i} & echo $! >> pids{i}; exit 0", task_id=i + 1
        )
        for i in range(3)
    ]
    children = {job.pid: read_pids(job.request.workdir / f"pids{i}", 2) for i, job in enumerate(jobs)}
    for job in jobs:
        _leader_gone(job)
        # each child past its last exec (`setsid` execs `sleep`: in the middle of an exec a process shows no
        # environment for an instant, so a look then would miss it), and carrying the token
        wait_until(lambda job=job: all(_command(pid) == "sleep" for pid in children[job.pid]))
        wait_until(lambda job=job: set(children[job.pid]) <= set(find_processes_with_token(job.run_token)))

    snapshot = take_process_snapshot()
    for job in jobs:
        assert set(children[job.pid]) <= set(snapshot.job_processes(job.run_token, None))
        assert job.poll(snapshot) == 0

    for job in jobs:
        assert not [pid for pid in children[job.pid] if is_alive(pid)]
        assert find_processes_with_token(job.run_token) == []
        assert job.outcome is not None and job.outcome.reason == "exit"


def test_a_snapshot_taken_while_the_leader_still_ran_cannot_hide_what_it_started_later(
    run_job: RunJob, make_request: Callable[..., LaunchRequest]
) -> None:
    workdir = make_request().workdir
    os.mkfifo(workdir / "fifo")
    job = run_job("read go < fifo; setsid sleep 300 & echo $! > pids; exit 0")
    snapshot = take_process_snapshot()  # the leader is alive here: it is listed under its group
    assert job.pid in snapshot.job_processes(job.run_token, job.pid)

    (job.request.workdir / "fifo").write_text("go\n")
    (escaped,) = read_pids(job.request.workdir / "pids", 1)
    _leader_gone(job)

    assert job.poll(snapshot) == 0  # the stale snapshot lists the leader, so the sweep looks again
    assert not is_alive(escaped)


def test_the_exit_watcher_calls_back_once_a_watched_child_exits_and_at_once_for_one_already_reaped() -> None:
    assert ExitWatcher.supported(), "pidfds are available on the kernels nightshift supports here"
    rung = threading.Semaphore(0)
    told: list[int] = []

    def on_exit(pids: list[int]) -> None:
        told.extend(pids)
        rung.release()

    watcher = ExitWatcher(on_exit)
    try:
        sleeper = subprocess.Popen(["sleep", "0.3"])
        watcher.watch(sleeper.pid)
        assert not rung.acquire(timeout=0.05), "called back while the child still ran"
        assert rung.acquire(timeout=WAIT_S)
        assert told == [sleeper.pid]
        assert sleeper.poll() == 0, "the watcher must not reap the child: its owner does"

        reaped = subprocess.Popen(["true"])
        reaped.wait()
        watcher.watch(reaped.pid)
        assert rung.acquire(timeout=WAIT_S)
        assert told == [sleeper.pid, reaped.pid]
    finally:
        watcher.close()


def test_a_closed_exit_watcher_leaves_no_descriptor_open() -> None:
    before = set(os.listdir("/proc/self/fd"))
    watcher = ExitWatcher(lambda pids: None)
    child = subprocess.Popen(["sleep", "5"])
    watcher.watch(child.pid)
    watcher.close()
    child.kill()
    child.wait()
    wait_until(lambda: set(os.listdir("/proc/self/fd")) <= before, what="the watcher's descriptors to close")
