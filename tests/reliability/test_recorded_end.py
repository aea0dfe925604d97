"""A job that ended just before its worker died, its end not yet written to SQL: the job's shell recorded the
end in its log, so the restarted worker (or the reaper, once the lease runs out) settles the attempt as the
job ended instead of running the task a second time. A job still running when its worker died has recorded
nothing and is retried as a lost worker's, as before."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from scheduler.clock import now_ms
from scheduler.dispatcher import Dispatcher
from scheduler.executor.exit_record import recorded_exit
from scheduler.gpus import SimulatedGpus
from scheduler.service import Cluster
from scheduler.store.queue import RenewResult
from scheduler.worker import Worker
from tests.conftest import wait_until

NODE = "node-a"


def _start_and_lose_its_worker(
    cluster: Cluster, make_identity, folder: Path, command: str
) -> tuple[Worker, int]:
    """A worker (driven step by step) starts the task's job, which runs until the go file is there (then
    runs `command`); the worker then takes no more steps, as if killed: (that worker, task id)."""
    worker = Worker(cluster, NODE, SimulatedGpus("1x24", node=NODE), base_env=dict(os.environ))
    worker.publish_node()
    who, _ = make_identity()
    spec = {
        "gpus": 1,
        "command": f"while [ ! -e go ]; do sleep 0.02; done; {command}",
        "workdir": str(folder),
    }
    task, _ = cluster.submit(who, spec)
    assert cluster.queue.assign(task.id, NODE, [0], now_ms())
    worker.step()
    wait_until(lambda: worker.job_of(task.id) is not None)
    return worker, task.id


def _job_over(worker: Worker, cluster: Cluster, task_id: int) -> bool:
    """The job's shell recorded its end (the worker has not seen it: it takes no steps)."""
    item = worker.job_of(task_id)
    assert item is not None
    return recorded_exit(cluster.log_path(task_id), item.job.run_token, task_id, 1) is not None


@pytest.mark.parametrize("code, status, reason", [(0, "succeeded", "exit"), (3, "failed", "nonzero_exit")])
@pytest.mark.parametrize("seen", [False, True], ids=["unseen", "seen-not-written"])
def test_a_restarted_worker_settles_a_job_that_ended_as_it_ended(
    cluster, make_identity, tmp_path, code, status, reason, seen
):
    # Given a job that finished (writing its output once) while its worker could not report it: the worker
    # did not see it end, or saw it (and wrote its end line in the log) but died before it told SQL
    old, task_id = _start_and_lose_its_worker(
        cluster, make_identity, tmp_path, f"echo ran >> out; exit {code}"
    )
    try:
        (tmp_path / "go").touch()
        wait_until(lambda: _job_over(old, cluster, task_id))
        if seen:
            item = old.job_of(task_id)
            assert item is not None
            wait_until(lambda: item.job.poll() is not None)

        # When the node's worker is started again
        Worker(cluster, NODE, SimulatedGpus("1x24", node=NODE), base_env=dict(os.environ)).reconcile()

        # Then the task ended as its job did, and did not run again
        task = cluster.tasks.get_any(task_id)
        assert (task.status, task.exit_code) == (status, code)
        assert [(a.outcome, a.reason) for a in cluster.tasks.attempts(task_id)] == [(status, reason)]
        assert (tmp_path / "out").read_text() == "ran\n"
        ends = [line for line in cluster.log_path(task_id).read_text().splitlines() if " ended: " in line]
        assert len(ends) == 1
        assert ends[0].startswith(f"==> nightshift task {task_id} attempt 1 ended: exit code {code}")
        if not seen:
            assert "as its log records; its worker on node-a was restarted before it could report" in ends[0]
    finally:
        old.shutdown()


def test_a_job_still_running_when_its_worker_died_is_retried_as_before(cluster, make_identity, tmp_path):
    old, task_id = _start_and_lose_its_worker(cluster, make_identity, tmp_path, "echo ran >> out")
    try:
        # When the node's worker is started again while the job still waits (it has recorded nothing)
        Worker(cluster, NODE, SimulatedGpus("1x24", node=NODE), base_env=dict(os.environ)).reconcile()

        # Then the task goes back to the queue as a lost worker's
        assert cluster.tasks.get_any(task_id).status == "queued"
        assert [(a.outcome, a.reason) for a in cluster.tasks.attempts(task_id)] == [
            ("retried", "lost_worker")
        ]
    finally:
        old.shutdown()


def test_the_reaper_settles_a_job_that_ended_before_its_lease_ran_out(cluster, make_identity, tmp_path):
    # Given a job that finished while its worker could not report it
    old, task_id = _start_and_lose_its_worker(cluster, make_identity, tmp_path, "echo ran >> out")
    try:
        (tmp_path / "go").touch()
        wait_until(lambda: _job_over(old, cluster, task_id))

        # When its lease runs out and the scheduler reaps it
        token = cluster.tasks.get_any(task_id).lease_token
        assert token is not None
        assert cluster.queue.renew(task_id, token, now_ms(), 1) == RenewResult.RENEWED
        time.sleep(0.01)
        assert Dispatcher(cluster).reap_expired_leases() == 0  # nothing requeued

        # Then the task succeeded, once
        assert cluster.tasks.get_any(task_id).status == "succeeded"
        assert [(a.outcome, a.reason) for a in cluster.tasks.attempts(task_id)] == [("succeeded", "exit")]
        assert (tmp_path / "out").read_text() == "ran\n"
    finally:
        old.shutdown()
