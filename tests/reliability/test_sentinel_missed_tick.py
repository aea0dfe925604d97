"""A worker stopped (Ctrl-Z) just after noting a keepalive tick but before sending it: its sentinel, which
never heard that tick, kills the job a little sooner than the worker's own clock says it was silent. The
resumed worker must still take the SIGKILL for the sentinel's, leave the task to the reaper and have it
retried as a lost worker's, not fail it. (Seen once in a full run: the paused-service test's task failed.)"""

from __future__ import annotations

import os
import time

from scheduler.clock import now_ms
from scheduler.dispatcher import Dispatcher
from scheduler.gpus import SimulatedGpus
from scheduler.worker import Worker
from tests.conftest import is_alive, read_pids, wait_until

NOTED_BUT_NOT_SENT_S = 0.7  # how long after the last tick the sentinel heard the worker noted the next one


def test_a_job_killed_by_the_sentinel_after_a_tick_it_never_heard_is_retried_not_failed(
    cluster, make_identity, tmp_path
):
    # Given a worker whose sentinel kills its jobs after 3 s of silence (TTL 4 s, a tick every second)
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
    try:
        worker.step()  # claims and starts the job
        [pid] = read_pids(pid_file, 1)

        # When the sentinel hears one last tick, and the worker notes the next but is stopped before sending it
        heard = time.monotonic()
        worker.sentinel.alive()
        worker.heartbeat()  # the lease is fresh: only the sentinel acts on this silence
        worker._alive_at = heard + NOTED_BUT_NOT_SENT_S
        wait_until(lambda: not is_alive(pid))  # 3 s after the tick it heard, 2.3 s after the one noted
        worker.step()  # resumed: it finds its job killed

        # Then the task is not failed: the reaper takes its lease once it runs out and retries it
        assert cluster.tasks.get_any(task.id).status == "running"
        wait_until(lambda: Dispatcher(cluster).reap_expired_leases() == 1)
        retried = cluster.tasks.get_any(task.id)
        assert (retried.status, cluster.tasks.attempts(task.id)[0].reason) == ("queued", "lost_worker")
    finally:
        worker.shutdown()
