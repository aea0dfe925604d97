"""A cgroup per job (cgroup v2): a process that leaves the job's process group *and* scrubs its environment
(`setsid env -i cmd &`) carries nothing the group or the token sweep can find, and still dies with its job.

The real tests create cgroups under this process's own cgroup, as the worker does; they skip on a machine
where that is not allowed (and fail in CI, which runs as root on a cgroup v2 tree).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from scheduler.executor import LaunchRequest, RunningJob, start_job
from scheduler.executor.cgroups import JobCgroup, JobCgroups, cgroup2_mount, cgroup_base, own_cgroup
from tests.conftest import is_alive, read_pids, unavailable

from .conftest import BURN_HALF_A_SECOND, WAIT_S, stand_in_worker, wait_until

HYBRID_MOUNTINFO = """\
31 24 0:27 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
42 31 0:39 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
"""
UNIFIED_MOUNTINFO = (
    "29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw\n"
)
V1_ONLY_MOUNTINFO = "42 31 0:39 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
# a container that sees a part of the host's tree bind-mounted (no cgroup namespace)
BIND_MOUNTINFO = "50 40 0:26 /docker/abc /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n"
# a hybrid tree with a cgroup2 mounted over /sys/fs/cgroup (recorded here in a mount namespace): the
# unified mount is hidden under the new one
OVERMOUNTED_MOUNTINFO = """\
31 24 0:27 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
57 47 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
63 47 0:38 / /sys/fs/cgroup rw,relatime - cgroup2 none rw
"""


def test_the_cgroup_v2_mount_is_found_in_a_hybrid_and_a_unified_tree_and_not_in_a_v1_one() -> None:
    assert cgroup2_mount(HYBRID_MOUNTINFO) == (Path("/sys/fs/cgroup/unified"), "/")
    assert cgroup2_mount(UNIFIED_MOUNTINFO) == (Path("/sys/fs/cgroup"), "/")
    assert cgroup2_mount(V1_ONLY_MOUNTINFO) is None
    assert cgroup2_mount(OVERMOUNTED_MOUNTINFO) == (Path("/sys/fs/cgroup"), "/")
    # a second view of the hierarchy elsewhere hides nothing: the first one counts
    assert cgroup2_mount(HYBRID_MOUNTINFO + "70 31 0:38 / /mnt/cg rw - cgroup2 none rw\n") == (
        Path("/sys/fs/cgroup/unified"),
        "/",
    )
    assert cgroup2_mount("61 31 0:40 / /mnt/cgroup\\040two rw - cgroup2 none rw\n") == (
        Path("/mnt/cgroup two"),
        "/",
    )


def test_the_workers_own_cgroup_is_read_from_its_unified_line() -> None:
    assert own_cgroup("4:memory:/x\n0::/system.slice/nightshift-worker.service\n") == (
        "/system.slice/nightshift-worker.service"
    )
    assert own_cgroup("0::/\n") == "/"
    assert own_cgroup("4:memory:/x\n1:cpu:/\n") is None


def test_the_base_folder_is_the_workers_cgroup_inside_the_mount() -> None:
    service = "0::/system.slice/nightshift-worker.service\n"
    assert cgroup_base(UNIFIED_MOUNTINFO, service) == Path(
        "/sys/fs/cgroup/system.slice/nightshift-worker.service"
    )
    assert cgroup_base(HYBRID_MOUNTINFO, "0::/\n") == Path("/sys/fs/cgroup/unified")
    assert cgroup_base(BIND_MOUNTINFO, "0::/docker/abc/worker\n") == Path("/sys/fs/cgroup/worker")
    # outside the mounted part, or no cgroup v2 at all: no cgroups for jobs
    assert cgroup_base(BIND_MOUNTINFO, "0::/elsewhere\n") is None
    assert cgroup_base(V1_ONLY_MOUNTINFO, "0::/\n") is None


@pytest.fixture
def cgroups(job_cgroups: JobCgroups) -> JobCgroups:
    """The job cgroups of this test process, as a worker here would have them."""
    return job_cgroups


@pytest.fixture
def run_in_cgroup(
    make_request: Callable[..., LaunchRequest], cgroups: JobCgroups
) -> Iterator[Callable[..., RunningJob]]:
    """Factory: start a job in a cgroup of its own; every job is stopped (and its cgroup removed) after."""
    jobs: list[RunningJob] = []

    def run(command: str, **overrides: object) -> RunningJob:
        job = start_job(make_request(command, **overrides), cgroups=cgroups)
        jobs.append(job)
        return job

    yield run
    for job in jobs:
        job.stop(0.1, "cancelled")
        if job.cgroup is not None:
            job.cgroup.kill()
            job.cgroup.remove()


ESCAPE = "setsid env -i sleep 300 & echo $! > pids; "


def escaped_child(pids_file: Path) -> int:
    """The pid of `ESCAPE`'s child once it has left the job's session and runs `sleep` with no token."""
    (pid,) = read_pids(pids_file, 1)

    def escaped() -> bool:
        with contextlib.suppress(OSError):
            return os.getsid(pid) == pid and (Path(f"/proc/{pid}/environ").read_bytes() == b"")
        return False

    wait_until(escaped, what=f"process {pid} to leave the job's session with an empty environment")
    return pid


def test_a_job_runs_in_its_own_cgroup_from_its_first_command(
    run_in_cgroup: Callable[..., RunningJob],
) -> None:
    job = run_in_cgroup("cat /proc/self/cgroup > where")
    assert job.wait(WAIT_S) == 0
    unified = [
        line for line in (job.request.workdir / "where").read_text().splitlines() if line.startswith("0::")
    ]
    assert unified and unified[0].endswith(f"/nightshift/{job.request.run_token}")


def test_stopping_a_job_kills_a_child_that_left_its_group_and_scrubbed_its_environment(
    run_in_cgroup: Callable[..., RunningJob],
) -> None:
    # Given a job whose child left the job's session and started with an empty environment
    job = run_in_cgroup(ESCAPE + "wait")
    escaped = escaped_child(job.request.workdir / "pids")
    assert job.cgroup is not None and escaped in job.cgroup.pids()

    # When the job is stopped
    job.stop(5.0, "cancelled")

    # Then that child is gone too, and so is the job's cgroup
    assert not is_alive(escaped)
    assert job.outcome is not None and job.outcome.reason == "cancelled"
    assert not job.cgroup.path.exists()


def test_the_stop_signal_reaches_such_a_child_first_so_it_can_save_its_work(
    run_in_cgroup: Callable[..., RunningJob],
) -> None:
    # Given an escaped child (no group, no token) that writes a file when it gets SIGTERM
    # (the child writes its own pid once its trap is set)
    child = "trap 'echo saved > saved; exit 0' TERM; echo \\$\\$ > pids; while :; do sleep 0.05; done"
    job = run_in_cgroup(f'setsid env -i /bin/sh -c "{child}" & wait')
    (escaped,) = read_pids(job.request.workdir / "pids", 1)

    # When the job is stopped with a grace period
    job.stop(5.0, "cancelled")

    # Then the child got the stop signal (it saved) before anything was killed
    assert (job.request.workdir / "saved").read_text().strip() == "saved"
    assert not is_alive(escaped)


def test_a_job_that_ends_on_its_own_leaves_no_such_child_behind(
    run_in_cgroup: Callable[..., RunningJob],
) -> None:
    job = run_in_cgroup(ESCAPE + "exit 0")
    escaped = escaped_child(job.request.workdir / "pids")
    assert job.wait(WAIT_S) == 0
    assert not is_alive(escaped)
    assert job.cgroup is not None and not job.cgroup.path.exists()


def test_without_cgroups_such_a_child_escapes_which_is_why_they_are_used(
    make_request: Callable[..., LaunchRequest], cgroups: JobCgroups
) -> None:
    # The same job without a cgroup: neither the group nor the token sweep can find the child
    job = start_job(make_request(ESCAPE + "wait"))
    escaped = escaped_child(job.request.workdir / "pids")
    try:
        job.stop(0.5, "cancelled")
        assert is_alive(escaped)
    finally:
        os.kill(escaped, signal.SIGKILL)


def test_where_cgroups_cannot_be_made_jobs_run_without_them(
    make_request: Callable[..., LaunchRequest], tmp_path: Path
) -> None:
    # Given job cgroups whose folder is not a cgroup folder one can create cgroups in (a plain file)
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    cgroups = JobCgroups(blocked)

    # When a job starts, then it runs without one, and later jobs do not try again
    job = start_job(make_request("echo ran"), cgroups=cgroups)
    assert job.wait(WAIT_S) == 0
    assert job.cgroup is None and not cgroups.usable
    assert "ran" in job.request.log_path.read_text()


def test_a_leftover_cgroup_of_the_same_attempt_is_emptied_before_it_is_reused(cgroups: JobCgroups) -> None:
    token = f"test-{uuid.uuid4().hex}"
    stale = cgroups.of(token)
    stale.path.mkdir()
    sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        assert stale.join(sleeper.pid)
        cgroup = cgroups.create(token)
        assert cgroup is not None and cgroup.pids() == []
        assert sleeper.wait(WAIT_S) == -signal.SIGKILL
    finally:
        sleeper.kill()
        sleeper.wait(WAIT_S)
        JobCgroup(stale.path).remove()


def test_waiting_for_a_cgroup_to_empty_ends_when_its_last_process_has_exited(cgroups: JobCgroups) -> None:
    cgroup = cgroups.create(f"test-{uuid.uuid4().hex}")
    assert cgroup is not None
    sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        assert cgroup.join(sleeper.pid)
        assert cgroup.wait_empty(0.05) is False  # still running: the wait gives up at its timeout
        sleeper.kill()
        assert cgroup.wait_empty(WAIT_S) is True
        assert not cgroup.populated() and cgroup.pids() == []
    finally:
        sleeper.kill()
        sleeper.wait(WAIT_S)
        cgroup.remove()


# A stand-in worker whose job runs in a cgroup and starts a child that leaves its group and scrubs its
# environment; prints the leader's pid and its cgroup, then waits to be killed.
WORKER = """
import sys
from pathlib import Path
from scheduler.executor import LaunchRequest, start_job
from scheduler.executor.cgroups import JobCgroups
from scheduler.executor.sentinel import JobSentinel

workdir, log_path, token = sys.argv[1:4]
command = "setsid env -i sleep 300 & echo $! >> pids; wait"
request = LaunchRequest(7, 1, command, Path(workdir), Path(log_path), (), {}, None, None, None, None, token)
job = start_job(request, sentinel=JobSentinel(), cgroups=JobCgroups.detect())
print(job.pid, job.cgroup.path, flush=True)
sys.stdin.read()
"""


def test_a_killed_workers_job_dies_with_it_even_a_child_with_no_group_and_no_token(
    tmp_path: Path, cgroups: JobCgroups
) -> None:
    with stand_in_worker(WORKER, tmp_path) as (worker, workdir, _token):
        assert worker.stdout is not None
        leader, cgroup_path = worker.stdout.readline().split()
        escaped = escaped_child(workdir / "pids")

        # When the worker is killed with SIGKILL
        worker.kill()
        worker.wait(WAIT_S)

        # Then its sentinel kills the job's cgroup, the escaped child with it, and removes the cgroup
        wait_until(lambda: not is_alive(escaped), what="the escaped child to die with its worker")
        # both are sent SIGKILL together; the one seen dead first says nothing of the other's exit yet
        wait_until(lambda: not is_alive(int(leader)), what="the job's leader to die with its worker")
        wait_until(lambda: not Path(cgroup_path).exists(), what="the job's cgroup to be removed")


def test_a_job_in_a_cgroup_knows_the_cpu_time_of_all_its_processes(
    run_in_cgroup: Callable[..., RunningJob], make_request: Callable[..., LaunchRequest]
) -> None:
    # Given a job whose background child (in its own session) burns half a second of CPU, as it does
    job = run_in_cgroup(f"setsid {BURN_HALF_A_SECOND} & {BURN_HALF_A_SECOND}; wait")
    assert job.wait(WAIT_S) == 0

    # Then its CPU time counts both (and nothing of the cgroup's earlier use)
    assert job.cpu_s is not None and 0.9 <= job.cpu_s < 5.0

    # while a job without a cgroup has none to tell
    plain = start_job(make_request("true"))
    assert plain.wait(WAIT_S) == 0 and plain.cpu_s is None


PURE_V2_JOB = """
import sys
from pathlib import Path
from scheduler.executor import LaunchRequest, start_job
from scheduler.executor.cgroups import JobCgroups
cgroups = JobCgroups.detect("purev2")
assert cgroups is not None, "no job cgroups on a cgroup v2 only tree"
work = Path(sys.argv[1])
request = LaunchRequest(
    task_id=1, attempt=1, command="grep ^0:: /proc/self/cgroup > where; setsid sleep 300 & echo $! > child",
    workdir=work, log_path=work / "job.log", gpu_indices=(), env={}, conda_env=None, docker_image=None,
    checkpoint_dir=None, time_limit_s=None, run_token="purev2:task1:a",
)
job = start_job(request, cgroups=cgroups)
assert job.wait(30) == 0
print(cgroups.base)
print((work / "where").read_text().strip())
print(job.cgroup.path.exists())
"""


def test_on_a_cgroup_v2_only_tree_jobs_get_cgroups_and_leave_nothing_behind(tmp_path: Path) -> None:
    # Given the hierarchy mounted at /sys/fs/cgroup alone, as on a pure cgroup v2 host (here in a mount
    # namespace of its own, where the hybrid tree is unmounted)
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0 or JobCgroups.detect() is None:
        unavailable("needs root, unshare and cgroup v2 to lay out a cgroup v2 only tree")
    layout = 'umount -l /sys/fs/cgroup && mount -t cgroup2 none /sys/fs/cgroup && exec "$0" -c "$1" "$2"'
    # When a job that leaves a background child starts there
    done = subprocess.run(
        [unshare, "-m", "sh", "-c", layout, sys.executable, PURE_V2_JOB, str(tmp_path)],
        capture_output=True, text=True, timeout=60, check=False, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    base, where, left = done.stdout.split("\n")[:3]

    # Then the job cgroups were found under /sys/fs/cgroup, the job ran in its own, and once the job was
    # over its child was killed and its cgroup removed
    assert base.startswith("/sys/fs/cgroup/") and not base.startswith("/sys/fs/cgroup/unified")
    assert where.startswith("0::/") and where.endswith("/nightshift/purev2:task1:a")
    assert left == "False"
    assert not is_alive(int((tmp_path / "child").read_text()))


def test_a_cgroup_file_longer_than_one_read_is_read_whole(tmp_path: Path) -> None:
    # cgroup.procs of a job with ~10,000 processes is more than 64 KiB
    procs = tmp_path / "cgroup.procs"
    procs.write_text("".join(f"{pid}\n" for pid in range(1_000_000, 1_010_000)))
    cgroup = JobCgroup(tmp_path)
    (tmp_path / "cgroup.events").write_text("populated 1\nfrozen 0\n")

    assert cgroup.pids() == list(range(1_000_000, 1_010_000))
