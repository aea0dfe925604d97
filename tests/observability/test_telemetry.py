"""Telemetry: scripted simulated readings land in the history attributed to the tasks holding the GPUs,
the APScheduler job samples by itself, and the history downsamples with age."""

from __future__ import annotations

import time

from scheduler.gpus import SimulatedGpus
from scheduler.telemetry.downsample import downsample
from scheduler.telemetry.store import GpuPoint, TelemetryStore
from tests.conftest import wait_until


def _running(cluster, task_id):
    row = cluster.tasks.get_any(task_id)
    return row if row.status == "running" else None


def test_scripted_samples_are_attributed_to_the_tasks_holding_each_gpu(
    cluster, make_identity, start_node, tmp_path
):
    # Given two tasks running on one GPU each and two idle GPUs
    alice, _ = make_identity("alice", "vision")
    bob, _ = make_identity("bob", "nlp")
    node = start_node(gpus="4x24")
    a = cluster.submit(alice, {"command": "sleep 60", "workdir": str(tmp_path)})[0].id
    b = cluster.submit(bob, {"command": "sleep 60", "workdir": str(tmp_path)})[0].id
    gpu_a = wait_until(lambda: _running(cluster, a)).gpu_indices[0]
    gpu_b = wait_until(lambda: _running(cluster, b)).gpu_indices[0]
    wait_until(lambda: set(node.worker.gpu_holders()) == {a, b})

    # When the GPUs report scripted readings over three samples
    node.gpus.set_reading(gpu_a, utilization_pct=91, memory_used_mib=8000, power_w=280, temperature_c=70)
    node.gpus.set_reading(gpu_b, utilization_pct=40, memory_used_mib=3000, power_w=150, temperature_c=60)
    for _ in range(3):
        node.telemetry.sample_once(node.clock.advance(10))

    # Then each task's samples come from its own GPU with its readings; idle GPUs belong to no task
    store = TelemetryStore(cluster.factory)
    mine = store.gpu_samples(task_id=a)
    assert len(mine) == 3
    assert {(p.gpu_index, p.utilization_pct, p.memory_used_mib, p.power_w) for p in mine} == {
        (gpu_a, 91.0, 8000, 280.0)
    }
    theirs = store.gpu_samples(task_id=b)
    assert {(p.gpu_index, p.utilization_pct) for p in theirs} == {(gpu_b, 40.0)}
    everything = store.gpu_samples(node="node-a")
    assert len(everything) == 4 * 3
    idle = [p for p in everything if p.gpu_index not in (gpu_a, gpu_b)]
    assert idle and all(p.task_id is None and p.utilization_pct == 0.0 for p in idle)
    hosts = store.latest_hosts(0)
    assert hosts["node-a"][1].cpu_pct == 12.5
    for task_id in (a, b):
        cluster.cancel(alice if task_id == a else bob, task_id)


def test_the_background_job_samples_on_its_interval(cluster, make_settings, make_identity, start_node):
    node = start_node(gpus="2x24", telemetry_interval_s=0.05)
    node.telemetry.clock = time.time
    node.telemetry.start()
    try:
        store = TelemetryStore(cluster.factory)
        wait_until(lambda: len(store.gpu_samples(node="node-a")) >= 4)
    finally:
        node.telemetry.stop()


def test_downsampling_keeps_means_per_task_and_peaks_and_is_idempotent(cluster):
    store = TelemetryStore(cluster.factory)
    day = 86400
    now = 1_780_000_000 // 3600 * 3600
    # two days ago: 12 raw samples of one GPU within one minute, task 7 then task 8
    base = now - 2 * day
    base -= base % 60
    points = [
        GpuPoint("n", 0, base + 5 * i, 7 if i < 6 else 8, 10.0 * i, 1000 + i, 100.0 + i, 50.0 + i)
        for i in range(12)
    ]
    points.append(GpuPoint("n", 0, now - 30, 7, 99.0, 5, 5.0, 5.0))  # recent: stays raw
    store.add_gpu_samples(points)

    report = downsample(cluster.factory, now, retention_s=90 * day)
    assert (report.merged, report.written) == (12, 2)
    assert downsample(cluster.factory, now, retention_s=90 * day).merged == 0

    rows = {p.task_id: p for p in store.gpu_samples(node="n") if p.resolution_s == 60}
    assert rows[7].utilization_pct == 25.0 and rows[7].memory_used_mib == 1005
    assert rows[8].utilization_pct == 85.0 and rows[8].temperature_c == 61.0
    assert [p.resolution_s for p in store.gpu_samples(node="n") if p.ts_s == now - 30] == [0]

    # ten days on, the minute rows fold into a 10-minute row; past the retention they are deleted
    downsample(cluster.factory, now + 10 * day, retention_s=90 * day)
    assert {p.resolution_s for p in store.gpu_samples(node="n")} == {600}
    downsample(cluster.factory, now + 100 * day, retention_s=90 * day)
    assert store.gpu_samples(node="n") == []


def test_simulated_gpus_are_scriptable():
    gpus = SimulatedGpus("2x80")
    gpus.set_reading(1, utilization_pct=55, power_w=300.0, temperature_c=71, memory_used_mib=4096)
    reading = gpus.read()[1]
    assert (reading.utilization_pct, reading.power_w, reading.temperature_c) == (55.0, 300.0, 71.0)
    assert reading.memory_free_mib == 80 * 1024 - 4096
