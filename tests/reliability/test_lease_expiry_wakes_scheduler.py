"""A lease running out is an event: the scheduler requeues the task when it expires, not at its next
safety pass."""

from __future__ import annotations

import threading

from scheduler.clock import now_ms
from scheduler.dispatcher import Dispatcher
from scheduler.nodes import NodeGpu
from scheduler.service import Cluster
from scheduler.store.identity import authenticate, create_token
from tests.conftest import wait_until

GB = 1024


def test_a_task_whose_worker_vanished_is_requeued_when_its_lease_runs_out(
    make_settings, redis_url, tmp_path
) -> None:
    # Given a scheduler whose safety pass (which also reaps leases) comes only once a minute
    settings = make_settings(database_url=f"sqlite:///{tmp_path / 'ns.db'}", scheduler_safety_pass_s=60.0)
    settings.home.mkdir(parents=True, exist_ok=True)
    cluster = Cluster.open(settings, redis_url)
    stop = threading.Event()
    scheduler: threading.Thread | None = None
    try:
        cluster.rebuild_redis()
        who = authenticate(cluster.factory, create_token(cluster.factory, user="alice", team="vision"))
        cluster.nodes.publish("node-a", [NodeGpu(0, "SIM", 24 * GB, 24 * GB)], now_ms(), "simulated")
        dispatcher = Dispatcher(cluster)
        scheduler = threading.Thread(target=dispatcher.run, args=(stop,), daemon=True)
        scheduler.start()
        task, _ = cluster.submit(who, {"command": "true", "workdir": str(tmp_path)})
        # And a worker that claimed the task for 1.5 s, started it, then vanished (it never renews)
        claim = wait_until(lambda: cluster.queue.claim("node-a", now_ms(), 1500))
        assert claim.task_id == task.id
        assert cluster.tasks.mark_running(task.id, claim.token, "node-a", claim.gpu_indices) == 1
        # When the lease runs out, Then the task is requeued well before the next safety pass, and the
        # scheduler gives the freed GPU to it again
        wait_until(lambda: cluster.queue.lease(task.id) is None, timeout_s=20.0)
        again = wait_until(lambda: cluster.queue.assignments().get(task.id), timeout_s=20.0)
        assert again == ("node-a", (0,))
        assert dispatcher.next_lease_expiry_ms is None  # no lease left to wait for
        assert "lost_worker" in cluster.tasks.attempt_reasons(task.id)
    finally:
        stop.set()
        if scheduler is not None:
            scheduler.join(timeout=30)
        cluster.close()
