"""A worker killed with SIGKILL takes its jobs with it, whole: the leader, its background children and a
grandchild in its own session (the job sentinel), not only the leader (the parent-death signal), and
without waiting for a worker to restart on that node; in a job cgroup, a child with no group and no token
too."""

from __future__ import annotations

import psutil
import pytest

from tests.conftest import is_alive, read_pids
from tests.reliability.conftest import JOB_FAMILY, JOB_FAMILY_SCRUBBED
from tests.reliability.stack import Stack, poll


@pytest.fixture(params=["family", "scrubbed child (cgroup)"])
def job_family(request) -> tuple[str, int]:
    """The job's command (writing its pids to {pids}) and how many pids it writes."""
    if request.param == "family":
        return JOB_FAMILY, 4
    request.getfixturevalue("job_cgroups")
    return JOB_FAMILY_SCRUBBED, 5


@pytest.mark.slow
def test_a_killed_workers_job_leaves_no_process_running(tmp_path, redis_url, job_family):
    family, count = job_family
    stack = Stack(tmp_path, redis_url)
    pids_file = tmp_path / "pids"
    pids: list[int] = []
    try:
        stack.start_api()
        stack.start("scheduler", "scheduler")
        stack.start_worker("w1")
        stack.submit({"command": family.format(pids=pids_file), "workdir": str(tmp_path)})
        pids = read_pids(pids_file, count, timeout_s=60)
        assert all(is_alive(pid) for pid in pids)

        # When the worker is killed with SIGKILL (and no worker comes back for its node)
        stack.kill9("w1")

        # Then none of the job's processes runs on
        poll(lambda: not any(is_alive(pid) for pid in pids), timeout_s=20, what="the job's processes to die")
    finally:
        for pid in pids:
            if is_alive(pid):
                psutil.Process(pid).kill()
        stack.close()
