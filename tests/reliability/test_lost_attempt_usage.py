"""An attempt that died with its worker still counts in the accounting: its GPU-hours, estimated energy and
cost are stored when it is requeued (lease run out, or the worker restarted), as quotas already count it."""

from __future__ import annotations

import os
import time

import pytest

from scheduler.clock import now_ms
from scheduler.dispatcher import Dispatcher
from scheduler.gpus import SimulatedGpus
from scheduler.logs import last_output
from scheduler.nodes import NodeGpu
from scheduler.telemetry.accounting import AttemptUsage
from scheduler.telemetry.lost import account_lost_attempt
from scheduler.telemetry.store import TelemetryStore
from scheduler.worker import Worker

GB = 1024


def test_a_task_whose_worker_vanished_keeps_the_usage_of_its_lost_attempt(cluster, make_identity, tmp_path):
    # Given a task on two A100s whose worker claimed and started it, then vanished (kill -9: nothing metered)
    who, _ = make_identity("alice", "vision")
    gpus = [NodeGpu(i, "NVIDIA A100-SXM4-80GB", 80 * GB, 80 * GB) for i in range(2)]
    cluster.nodes.publish("node-a", gpus, now_ms(), "simulated")
    task, _ = cluster.submit(who, {"command": "sleep 60", "gpus": 2, "workdir": str(tmp_path)})
    dispatcher = Dispatcher(cluster)
    assert [start.task_id for start in dispatcher.run_pass().starts] == [task.id]
    claim = cluster.queue.claim("node-a", now_ms(), 300)
    assert claim is not None and cluster.tasks.mark_running(task.id, claim.token, "node-a", claim.gpu_indices)
    time.sleep(0.5)

    # When its lease runs out and the scheduler requeues it
    assert dispatcher.reap_expired_leases() == 1

    # Then that attempt's usage is stored: its GPU-hours, and energy estimated for its GPU model
    rows = TelemetryStore(cluster.factory).usage_rows([task.id])[task.id]
    assert [(row.attempt, row.gpus, row.energy_source) for row in rows] == [(1, 2, "estimated")]
    held_s = rows[0].gpu_hours * 3600 / 2
    assert 0.4 < held_s < 10
    assert rows[0].energy_kwh == pytest.approx(2 * 400 * held_s / 3.6e6)  # an A100's 400 W, twice
    assert rows[0].cost > 0
    # And asking again stores nothing more (the row is there)
    assert account_lost_attempt(cluster, task.id, claim.token) is None
    assert len(TelemetryStore(cluster.factory).usage_rows([task.id])[task.id]) == 1


def test_the_usage_its_worker_stored_is_kept(cluster, make_identity, tmp_path):
    who, _ = make_identity("alice", "vision")
    cluster.nodes.publish("node-a", [NodeGpu(0, "SIM", 24 * GB, 24 * GB)], now_ms(), "simulated")
    task, _ = cluster.submit(who, {"command": "true", "workdir": str(tmp_path)})
    Dispatcher(cluster).run_pass()
    claim = cluster.queue.claim("node-a", now_ms(), 30_000)
    assert claim is not None and cluster.tasks.mark_running(task.id, claim.token, "node-a", claim.gpu_indices)
    now = time.time()
    measured = AttemptUsage(
        task.id, 1, "node-a", 1, now - 5, now, 5 / 3600, 0.001, "measured", 0.0, 0.0003, "EUR",
        None, None, None, 3,
    )  # fmt: skip
    TelemetryStore(cluster.factory).save_usage(measured)
    assert cluster.settle_attempt(task.id, claim.token, "lost_worker", message="worker restarted") == "queued"

    assert account_lost_attempt(cluster, task.id, claim.token) is None
    rows = TelemetryStore(cluster.factory).usage_rows([task.id])[task.id]
    assert [(row.energy_source, row.samples) for row in rows] == [("measured", 3)]


def test_a_restarted_worker_ends_the_lost_attempts_log_and_stores_its_usage(cluster, make_identity, tmp_path):
    # Given a task SQL says runs on node-a, whose worker died (kill -9) while its job printed without a newline
    who, _ = make_identity("alice", "vision")
    cluster.nodes.publish("node-a", [NodeGpu(0, "SIM", 24 * GB, 24 * GB)], now_ms(), "simulated")
    task, _ = cluster.submit(who, {"command": "sleep 300", "workdir": str(tmp_path)})
    Dispatcher(cluster).run_pass()
    claim = cluster.queue.claim("node-a", now_ms(), 30_000)
    assert claim is not None and cluster.tasks.mark_running(task.id, claim.token, "node-a", claim.gpu_indices)
    log_path = cluster.log_path(task.id)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_text(f"==> nightshift task {task.id} attempt 1 on GPUs 0 at ...\n==> $ sleep 300\nepoch 3")

    # When the worker of node-a starts again
    worker = Worker(cluster, "node-a", SimulatedGpus("4x24", node="node-a"), base_env=dict(os.environ))
    try:
        worker.reconcile()
    finally:
        worker.sentinel.close()

    # Then the task is queued again, the log says how attempt 1 ended, and that attempt's usage is stored
    assert cluster.tasks.get_any(task.id).status == "queued"
    lines = log_path.read_text().splitlines()
    assert lines[-2] == "epoch 3"  # the job's own last line is kept whole
    assert lines[-1].startswith(
        f"==> nightshift task {task.id} attempt 1 ended: its worker on node-a stopped"
    )
    assert "(killed or crashed) and was restarted; the task is now queued at " in lines[-1]
    assert last_output(log_path) == ["epoch 3"]
    assert [row.attempt for row in TelemetryStore(cluster.factory).usage_rows([task.id])[task.id]] == [1]
