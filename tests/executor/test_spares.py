"""Spare job shells (`spares.py`): started and moved into a cgroup ahead of time, so that a job's start
does not wait for the kernel's move. Behaviour shared with direct starts is checked by the whole process
suite (`run_job` runs each test from a spare too); these are the spares' own cases."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from scheduler.executor import LaunchRequest, start_job
from scheduler.executor.cgroups import JobCgroups
from scheduler.executor.launch import job_base_env, warm_up
from scheduler.executor.spares import SpareShells, setup_script
from tests.conftest import is_alive, read_pids

from .conftest import BURN_HALF_A_SECOND, WAIT_S, stand_in_worker, wait_until


@pytest.fixture
def spares(job_cgroups: JobCgroups) -> Iterator[SpareShells]:
    """Spare shells for this thread, closed after the test."""
    shells = SpareShells(job_cgroups)
    yield shells
    shells.close()


def _spare_names(cgroups: JobCgroups) -> set[str]:
    return {name for name in cgroups.owned() if name.startswith(f"{cgroups.owner}:spare{os.getpid()}-")}


def test_a_jobs_variables_reach_it_verbatim_whatever_characters_they_hold(
    make_request: Callable[..., LaunchRequest], spares: SpareShells, job_cgroups: JobCgroups
) -> None:
    # Given a spare, and a job whose variables hold quotes, a newline, $, backticks and a leading dash
    tricky = {"QUOTES": 'it\'s "quoted"', "LINES": "one\ntwo", "DOLLAR": "$HOME `id` $(id)", "DASH": "-n"}
    warm_up(spares, job_base_env(os.environ))
    request = make_request("env -0 > job.env", env=tricky)

    # When it starts from the spare
    job = start_job(request, cgroups=job_cgroups, spares=spares)
    assert job.wait(WAIT_S) == 0

    # Then it sees each value exactly as given
    pairs = (request.workdir / "job.env").read_bytes().split(b"\0")
    env = dict(pair.decode().split("=", 1) for pair in pairs if pair)
    assert {name: env[name] for name in tricky} == tricky


def test_a_job_starts_directly_when_its_threads_spare_has_died(
    make_request: Callable[..., LaunchRequest], spares: SpareShells, job_cgroups: JobCgroups
) -> None:
    # Given a spare that someone killed
    spare_env = job_base_env(os.environ)
    warm_up(spares, spare_env)
    dead = spares.spare_pid(spare_env)
    assert dead is not None
    os.kill(dead, signal.SIGKILL)
    wait_until(lambda: not is_alive(dead), what="the spare to die")

    # When a job starts, then it runs all the same (started directly, in a cgroup), and a new spare waits
    job = start_job(make_request("echo ran"), cgroups=job_cgroups, spares=spares)
    assert job.wait(WAIT_S) == 0
    assert job.pid != dead and job.cgroup is not None
    assert "ran" in job.request.log_path.read_text()
    assert spares.spare_pid(spare_env) not in (None, dead)


def test_a_job_with_another_base_environment_does_not_take_the_spare(
    make_request: Callable[..., LaunchRequest], spares: SpareShells, job_cgroups: JobCgroups
) -> None:
    warm_up(spares, job_base_env(os.environ))
    spare = spares.spare_pid(job_base_env(os.environ))
    other = {"PATH": os.environ["PATH"], "ONLY_HERE": "1"}

    job = start_job(make_request("echo $ONLY_HERE"), base_env=other, cgroups=job_cgroups, spares=spares)

    assert job.wait(WAIT_S) == 0 and job.pid != spare
    assert "1" in job.request.log_path.read_text().splitlines()


def test_closing_the_spares_leaves_no_shell_and_no_cgroup(
    spares: SpareShells, job_cgroups: JobCgroups
) -> None:
    warm_up(spares, job_base_env(os.environ))
    pid = spares.spare_pid(job_base_env(os.environ))
    assert pid is not None and _spare_names(job_cgroups)

    spares.close()

    assert not is_alive(pid)
    assert not _spare_names(job_cgroups)


def test_the_setup_script_changes_only_what_differs_from_the_spares_environment() -> None:
    script = setup_script(
        "/work dir",
        "/logs/1.log",
        {"A": "1", "B": "new"},
        {"A": "1", "B": "old", "GONE": "x"},
        ["sh", "-c", "x"],
    ).decode()
    assert script.splitlines() == [
        "cd -- '/work dir' || exit 126",
        "exec >>/logs/1.log 2>&1 </dev/null",
        "unset GONE",
        "export B=new",
        "exec sh -c x",
    ]


# A stand-in worker with spare shells beside a running job, its sentinel told where their cgroups are;
# prints a spare's pid, then waits to be killed.
WORKER = """
import os, sys
from pathlib import Path
from scheduler.executor import LaunchRequest, start_job
from scheduler.executor.cgroups import JobCgroups
from scheduler.executor.launch import job_base_env
from scheduler.executor.sentinel import JobSentinel
from scheduler.executor.spares import SpareShells

workdir, log_path, token = sys.argv[1:4]
cgroups = JobCgroups.detect(owner="standin" + str(os.getpid()))
spares, sentinel = SpareShells(cgroups), JobSentinel()
sentinel.own_cgroups(cgroups)
request = LaunchRequest(7, 1, "sleep 300", Path(workdir), Path(log_path), (), {}, None, None, None, None, token)
start_job(request, sentinel=sentinel, cgroups=cgroups, spares=spares)
print(spares.spare_pid(job_base_env(os.environ)), cgroups.owner, flush=True)
sys.stdin.read()
"""


def test_a_killed_workers_spares_die_with_it_and_its_sentinel_removes_their_cgroups(
    tmp_path: Path, job_cgroups: JobCgroups
) -> None:
    with stand_in_worker(WORKER, tmp_path) as (worker, _workdir, _token):
        assert worker.stdout is not None
        pid, owner = worker.stdout.readline().split()
        theirs = JobCgroups(job_cgroups.base, owner)
        assert is_alive(int(pid)) and theirs.owned()  # the spares' cgroups

        # When the worker is killed with SIGKILL
        worker.kill()
        worker.wait(WAIT_S)

        # Then its spares die at once (the parent-death signal) and its sentinel removes their cgroups
        wait_until(lambda: not is_alive(int(pid)), what="the spare to die with its worker")
        wait_until(lambda: not theirs.owned(), what="the spares' cgroups to be removed")


# A stand-in worker whose job starts in a spare shell (no parent-death signal), with a child; prints the
# job's pid, then waits to be killed.
WORKER_WITH_JOB = """
import os, sys, time
from pathlib import Path
from scheduler.executor import LaunchRequest, start_job
from scheduler.executor.cgroups import JobCgroups
from scheduler.executor.launch import job_base_env, warm_up
from scheduler.executor.sentinel import JobSentinel
from scheduler.executor.spares import SpareShells

workdir, log_path, token = sys.argv[1:4]
cgroups = JobCgroups.detect(owner="standin" + str(os.getpid()))
spares, sentinel = SpareShells(cgroups), JobSentinel()
sentinel.own_cgroups(cgroups)
warm_up(spares, job_base_env(os.environ))
spare = spares.spare_pid(job_base_env(os.environ))
request = LaunchRequest(
    7, 1, "sleep 300 & echo $! >> pids; wait", Path(workdir), Path(log_path), (), {}, None, None, None, None, token
)
job = start_job(request, sentinel=sentinel, cgroups=cgroups, spares=spares)
assert job.pid == spare, "the job did not start in a spare"
print(job.pid, flush=True)
sys.stdin.read()
"""


def test_a_job_started_in_a_spare_dies_with_a_killed_worker(tmp_path: Path, job_cgroups: JobCgroups) -> None:
    with stand_in_worker(WORKER_WITH_JOB, tmp_path) as (worker, workdir, _token):
        assert worker.stdout is not None
        leader = int(worker.stdout.readline())
        (child,) = read_pids(workdir / "pids", 1)

        # When the worker is killed with SIGKILL, then the job's sentinel kills its cgroup: all of it goes
        worker.kill()
        worker.wait(WAIT_S)
        for pid in (leader, child):
            wait_until(lambda pid=pid: not is_alive(pid), what=f"job process {pid} to die with its worker")


def test_a_job_in_a_reused_spare_cgroup_counts_none_of_the_cpu_time_of_the_job_before(
    make_request: Callable[..., LaunchRequest], job_cgroups: JobCgroups
) -> None:
    # Given one spare at a time, and a job that burns half a second of CPU in its cgroup
    spares = SpareShells(job_cgroups, depth=1)
    try:
        warm_up(spares, job_base_env(os.environ))
        burner = start_job(make_request(BURN_HALF_A_SECOND), cgroups=job_cgroups, spares=spares)
        assert burner.wait(WAIT_S) == 0 and burner.cpu_s is not None and burner.cpu_s >= 0.45
        # (the spare made while it ran has a new cgroup; the one after takes the burner's, now empty)
        between = start_job(make_request("true"), cgroups=job_cgroups, spares=spares)
        assert between.wait(WAIT_S) == 0

        # When a third job starts in the cgroup the burner left
        after = start_job(make_request("true"), cgroups=job_cgroups, spares=spares)
        assert after.wait(WAIT_S) == 0

        # Then it is that cgroup, and its CPU time is its own: a shell's few milliseconds
        assert burner.cgroup is not None and after.cgroup is not None
        assert after.cgroup.path == burner.cgroup.path
        assert after.cpu_s is not None and after.cpu_s < 0.25
    finally:
        spares.close()
