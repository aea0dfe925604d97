"""A worker stopped (Ctrl-Z) long enough for its sentinel to kill its job: once resumed it must take that
SIGKILL for the sentinel's, leave the task to the reaper and have it retried as a lost worker's, not fail it,
however its own clock saw the silence (its last tick may never have been sent, its ticks come late on a
loaded machine: twice that failed the paused-service test). The sentinel says which jobs it killed; a
SIGKILL from anyone else still fails the task."""

from __future__ import annotations

import os
import signal

from scheduler.clock import now_ms
from scheduler.dispatcher import Dispatcher
from scheduler.gpus import SimulatedGpus
from scheduler.worker import Worker
from tests.conftest import is_alive, read_pids, wait_until


def _worker_running_one_job(cluster, make_identity, tmp_path) -> tuple[Worker, int, int]:
    """A worker whose sentinel kills its jobs after 3 s of silence (TTL 4 s, a tick every second), with one
    job started: (the worker, the task id, the job's pid)."""
    cluster.settings.lease_ttl_s = 4.0
    cluster.settings.heartbeat_interval_s = 1.0
    who, _ = make_identity()
    pid_file = tmp_path / "pid"
    command = f"echo $$ > {pid_file}; exec sleep 60"
    task, _ = cluster.submit(who, {"gpus": 1, "command": command, "workdir": str(tmp_path)})
    assert cluster.queue.assign(task.id, "node-a", [0], now_ms())
    worker = Worker(cluster, "node-a", SimulatedGpus("4x24", node="node-a"), base_env=dict(os.environ))
    worker.publish_node()
    worker.sentinel.silence_s = worker.sentinel_silence_s()  # armed, as `run` arms it
    assert worker.sentinel.silence_s == 3.0
    worker.step()  # claims and starts the job
    [pid] = read_pids(pid_file, 1)
    return worker, task.id, pid


def test_a_job_the_sentinel_killed_while_its_worker_was_silent_is_retried_not_failed(
    cluster, make_identity, tmp_path
):
    worker, task_id, pid = _worker_running_one_job(cluster, make_identity, tmp_path)
    try:
        # When the worker says nothing to its sentinel (stopped) until the sentinel has killed its job
        worker.sentinel.alive()
        worker.heartbeat()  # the lease is fresh: only the sentinel acts on this silence
        wait_until(lambda: not is_alive(pid))
        worker.step()  # resumed: it finds its job killed, whatever its own clock says

        # Then the task is not failed: the reaper takes its lease once it runs out and retries it
        assert cluster.tasks.get_any(task_id).status == "running"
        wait_until(lambda: Dispatcher(cluster).reap_expired_leases() == 1)
        retried = cluster.tasks.get_any(task_id)
        assert (retried.status, cluster.tasks.attempts(task_id)[0].reason) == ("queued", "lost_worker")
    finally:
        worker.shutdown()


def test_a_job_killed_by_someone_else_while_its_worker_was_silent_fails_as_killed(
    cluster, make_identity, tmp_path
):
    worker, task_id, pid = _worker_running_one_job(cluster, make_identity, tmp_path)
    try:
        # When someone else SIGKILLs the job while the worker has said nothing for a while (not yet long
        # enough for its sentinel)
        worker.sentinel.alive()
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not is_alive(pid))
        worker.step()

        # Then that is the job's end: not the sentinel's, so the task fails, killed by a signal
        task = cluster.tasks.get_any(task_id)
        assert (task.status, cluster.tasks.attempts(task_id)[0].reason) == ("failed", "signal")
    finally:
        worker.shutdown()
