"""A worker killed with SIGKILL takes its jobs with it, whole: the leader, its background children and a
grandchild in its own session (the job sentinel), not only the leader (the parent-death signal), and
without waiting for a worker to restart on that node."""

from __future__ import annotations

import psutil
import pytest

from tests.reliability.stack import Stack, poll

# A compound job: a background child, a grandchild in its own session, and the shell itself.
FAMILY = (
    "sleep 300 & echo $! >> {pids}; "
    "setsid sh -c 'echo $$ >> {pids}; exec sleep 302' & "
    "echo $$ >> {pids}; python3 -c pass && wait"
)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _pids(path, count):
    text = path.read_text() if path.exists() else ""
    return [int(word) for word in text.split()] if len(text.split()) >= count else None


@pytest.mark.slow
def test_a_killed_workers_job_leaves_no_process_running(tmp_path, redis_url):
    stack = Stack(tmp_path, redis_url)
    pids_file = tmp_path / "pids"
    pids: list[int] = []
    try:
        stack.start_api()
        stack.start("scheduler", "scheduler")
        stack.start_worker("w1")
        stack.submit({"command": FAMILY.format(pids=pids_file), "workdir": str(tmp_path)})
        pids = poll(lambda: _pids(pids_file, 3), what="the job and its children to start")
        assert all(_alive(pid) for pid in pids)

        # When the worker is killed with SIGKILL (and no worker comes back for its node)
        stack.kill9("w1")

        # Then none of the job's processes runs on
        poll(lambda: not any(_alive(pid) for pid in pids), timeout_s=20, what="the job's processes to die")
    finally:
        for pid in pids:
            if _alive(pid):
                psutil.Process(pid).kill()
        stack.close()
