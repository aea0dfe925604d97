"""Fixtures of the reliability tests: a worker loop in a thread whose tasks are assigned directly."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from scheduler.clock import now_ms
from scheduler.errors import ServiceUnavailable
from scheduler.gpus import SimulatedGpus
from scheduler.redis_server import EmbeddedRedis
from scheduler.service import Cluster
from scheduler.worker import Worker
from tests.conftest import unavailable

FINAL = ("succeeded", "failed", "cancelled")


# A job with a family: a background child, a nested shell with its own child, a grandchild in its own session
# (`setsid`), and the shell itself; each writes its pid to {pids}.
JOB_FAMILY = (
    "sleep 300 & echo $! >> {pids}; "
    "sh -c 'sleep 301 & echo $! >> {pids}; wait' & "
    "setsid sh -c 'echo $$ >> {pids}; exec sleep 302' & "
    "echo $$ >> {pids}; wait"
)
# The same family with one more member that leaves the job's session *and* scrubs its environment: no
# process group, no run token. Only the job's cgroup holds it (tests that use it need `job_cgroups`).
JOB_FAMILY_SCRUBBED = "setsid env -i sh -c 'echo $$ >> {pids}; exec sleep 303' & " + JOB_FAMILY


def settled(cluster: Cluster, task_id: int) -> str:
    """The task's final status, or '' while it is not final."""
    status = cluster.tasks.get_any(task_id).status
    return status if status in FINAL else ""


@pytest.fixture
def start_worker(cluster: Cluster, run_in_thread) -> Callable[..., Worker]:
    """Factory: a worker loop for `node` in a thread (stopped after the test)."""

    def start(node: str = "node-a", **kwargs: Any) -> Worker:
        worker = Worker(cluster, node, SimulatedGpus("4x24", node=node), base_env=dict(os.environ), **kwargs)
        worker.publish_node()
        run_in_thread(worker.run)
        return worker

    return start


@pytest.fixture
def submit_to(cluster: Cluster, make_identity) -> Callable[..., Any]:
    """Factory: submit a spec and assign it to `node` at once, as the scheduler would (GPU 0)."""
    who, _ = make_identity()

    def submit(spec: dict[str, Any], node: str = "node-a"):
        task, _ = cluster.submit(who, {"gpus": 1, **spec})
        assert cluster.queue.assign(task.id, node, [0], now_ms())
        return task

    return submit


# what a failed test's service processes printed, kept to this many characters each
_LOG_TAIL_CHARS = 6_000


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failed test that ran a `Stack` (its processes log to `<name>.log` in its tmp_path) shows the end of
    each process's log in its report: a race seen once in CI can then be read, not guessed."""
    outcome = yield
    report = outcome.get_result()
    folder = getattr(item, "funcargs", {}).get("tmp_path")
    if report.when != "call" or not report.failed or folder is None:
        return
    for log_file in sorted(folder.glob("*.log")):
        text = log_file.read_text(errors="replace")
        report.sections.append((f"{log_file.name} (last {_LOG_TAIL_CHARS} chars)", text[-_LOG_TAIL_CHARS:]))


@pytest.fixture
def restartable_redis(tmp_path) -> Iterator[EmbeddedRedis]:
    """A redis-server of this test's own, with AOF, that the test may stop, kill and start again (same port,
    password and data)."""
    server = EmbeddedRedis(tmp_path / "redis", appendonly=True)
    try:
        server.start()
    except ServiceUnavailable as exc:
        unavailable(f"redis-server not available: {exc.message}")
    yield server
    server.stop()
