"""Watchdogs: the idle watchdog fires after its threshold and not before (injected clock, no sleeps);
a hot GPU and a GPU whose memory outlives its task get no new tasks until they recover."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from api.main import create_app
from scheduler.clock import now_ms
from scheduler.gpus.inventory import GpuInfo
from scheduler.nodes import NodeGpu, NodeState
from scheduler.notify.config import NotifyTarget
from scheduler.notify.notifier import Notifier
from scheduler.policy.types import RunningTask
from scheduler.policy_input import gpu_slots
from scheduler.watchdogs import GpuHealth, IdleWatchdog
from tests.conftest import wait_until


def _available(cluster) -> list[bool]:
    """What placement sees of each GPU: free to take a new whole-GPU task or not."""
    holders = [
        RunningTask(t.id, t.team.name, t.user.name, t.node or "", tuple(t.gpu_indices or ()), 0.0)
        for t in cluster.tasks.with_status("running")
    ]
    return [
        slot.available and slot.shares_used == 0 for slot in gpu_slots(cluster.nodes.all(), holders, now_ms())
    ]


def _gpu(index: int, util: float | None, temp: float = 50.0, used_mib: int = 0) -> GpuInfo:
    return GpuInfo(index, f"g{index}", "GPU", 24576, used_mib, 24576 - used_mib, util, temp, 100.0, 350.0)


def test_the_idle_watchdog_fires_after_its_threshold_and_not_before():
    dog = IdleWatchdog(idle_pct=5.0, after_s=1800.0)
    holders = {7: (0, 1)}
    start = 1_000_000.0
    for minute in range(30):  # 0 .. 29 minutes idle: nothing yet
        assert dog.observe(start + 60 * minute, holders, [_gpu(0, 1.0), _gpu(1, 0.0)]) == []
    alerts = dog.observe(start + 1800, holders, [_gpu(0, 1.0), _gpu(1, 0.0)])
    assert [(a.task_id, a.idle_s, a.gpu_indices) for a in alerts] == [(7, 1800.0, (0, 1))]
    assert dog.observe(start + 1860, holders, [_gpu(0, 1.0), _gpu(1, 0.0)]) == []  # reported once


def test_one_busy_gpu_or_a_busy_sample_resets_the_idle_clock():
    dog = IdleWatchdog(idle_pct=5.0, after_s=600.0)
    holders = {7: (0, 1)}
    dog.observe(0.0, holders, [_gpu(0, 0.0), _gpu(1, 0.0)])
    dog.observe(500.0, holders, [_gpu(0, 0.0), _gpu(1, 60.0)])  # one GPU busy: not idle
    assert dog.observe(900.0, holders, [_gpu(0, 0.0), _gpu(1, 0.0)]) == []
    assert dog.observe(1499.0, holders, [_gpu(0, 0.0), _gpu(1, 0.0)]) == []
    assert len(dog.observe(1500.0, holders, [_gpu(0, 0.0), _gpu(1, 0.0)])) == 1
    assert dog.observe(1600.0, {7: (0, 1)}, [_gpu(0, None), _gpu(1, 0.0)]) == []  # unreadable: not idle


def test_gpu_health_uses_hysteresis_for_heat_and_frees_leftover_memory_gpus():
    health = GpuHealth(max_temperature_c=85, cool_temperature_c=80, leftover_mib=256)
    assert "too hot" in health.assess([_gpu(0, 0.0, temp=90)], held={})[0]
    assert 0 in health.assess([_gpu(0, 0.0, temp=82)], held={})  # not yet cool enough
    assert health.assess([_gpu(0, 0.0, temp=79)], held={}) == {}
    health.task_ended(12, [1])
    reason = health.assess([_gpu(1, 0.0, used_mib=4000)], held={})[1]
    assert "memory still held: 4000 MiB" in reason and "task 12" in reason
    assert health.assess([_gpu(1, 0.0, used_mib=100)], held={}) == {}
    assert health.assess([_gpu(1, 0.0, used_mib=4000)], held={}) == {}  # not ours to judge any more


def test_gpu_health_takes_an_unreadable_gpu_out_of_service_until_it_reads_again():
    health = GpuHealth(max_temperature_c=85, cool_temperature_c=80, leftover_mib=256)
    lost = GpuInfo.unreadable(1, "NVML could not read the handle of GPU 1: GPU is lost.")

    assert health.assess([_gpu(0, 0.0), lost], held={}) == {
        1: "unreadable: NVML could not read the handle of GPU 1: GPU is lost; back in service once the driver "
        "reads it again (a lost GPU needs a reset or a reboot)"
    }
    assert health.assess([_gpu(0, 0.0), _gpu(1, 0.0)], held={}) == {}


def test_a_reading_taken_as_a_task_ends_still_sees_its_leftover_memory_until_another_attempt_holds_it():
    health = GpuHealth(max_temperature_c=85, cool_temperature_c=80, leftover_mib=256)
    health.task_ended(12, [0], "claim-a")

    # a sampler that read the holders just before the attempt was dropped still lists its claim
    assert "task 12" in health.assess([_gpu(0, 0.0, used_mib=4000)], held={0: {"claim-a"}})[0]
    assert "task 12" in health.assess([_gpu(0, 0.0, used_mib=4000)], held={})[0]
    # another attempt (of any task, this one's retry too) given the GPU on purpose: its memory is its own
    assert health.assess([_gpu(0, 0.0, used_mib=4000)], held={0: {"claim-b"}}) == {}
    assert health.assess([_gpu(0, 0.0, used_mib=4000)], held={}) == {}


def test_memory_held_since_before_a_task_started_is_not_its_leftover():
    health = GpuHealth(max_temperature_c=85, cool_temperature_c=80, leftover_mib=256)
    # a notebook outside nightshift holds 100 GiB of GPU 0 when task 12 starts there
    health.task_started("claim-a", {0: 102_400})
    health.task_ended(12, [0], "claim-a")

    assert health.assess([_gpu(0, 0.0, used_mib=102_400 + 200)], held={}) == {}  # back to what it was
    health.task_started("claim-b", {0: 102_400})
    health.task_ended(13, [0], "claim-b")
    reason = health.assess([_gpu(0, 0.0, used_mib=102_400 + 4000)], held={})[0]  # 4000 MiB more: its own
    assert reason.startswith("memory still held: 106400 MiB in use after task 13 ended, 102400 MiB before")
    assert health.assess([_gpu(0, 0.0, used_mib=102_400)], held={}) == {}  # freed


def test_an_idle_task_is_reported_to_its_owner_and_stopped_when_the_site_says_so(
    cluster, make_identity, start_node, receiver, tmp_path
):
    # Given a site that stops idle tasks after 10 minutes, and alice's webhook
    hook = receiver()
    notifier = Notifier([NotifyTarget(url=hook.url, user="alice", events=["idle_warning"])])
    who, _ = make_identity("alice", "vision")
    node = start_node(gpus="1x24", notifier=notifier, idle_after_min=10, idle_action="stop")
    task = cluster.submit(who, {"command": "sleep 60", "workdir": str(tmp_path)})[0]
    wait_until(lambda: task.id in node.worker.gpu_holders())
    node.gpus.set_reading(0, utilization_pct=0)

    # When its GPU stays at 0%: the first sample starts the idle clock, the tenth is 9 minutes later
    for _ in range(10):
        assert node.telemetry.sample_once(node.clock.advance(60)).idle_alerts == []
    assert cluster.tasks.get_any(task.id).status == "running"
    # Then at 10 minutes the owner is told and the task is stopped with the reason `idle`
    alerts = node.telemetry.sample_once(node.clock.advance(60)).idle_alerts
    assert [(alert.task_id, alert.idle_s) for alert in alerts] == [(task.id, 600.0)]
    wait_until(lambda: cluster.tasks.get_any(task.id).status == "failed")
    row = cluster.tasks.get_any(task.id)
    assert row.reason == "idle" and "below 5%" in (row.message or "")
    assert notifier.flush(10)
    assert [r.body["event"] for r in hook.requests] == ["idle_warning"]
    assert hook.requests[0].body["task_id"] == task.id
    notifier.close()


def test_a_lost_gpu_is_reported_to_the_admins_once_and_back_in_service_when_it_reads_again(
    cluster, make_identity, start_node, receiver, tmp_path
):
    # Given the admins' webhook for GPU warnings and a 2-GPU node
    hook = receiver()
    notifier = Notifier([NotifyTarget(url=hook.url, events=["gpu_warning"])])
    who, _ = make_identity()
    node = start_node(gpus="2x24", notifier=notifier)

    # When GPU 1 falls off the bus, over two samples
    node.gpus.set_lost(1, "NVML could not read the handle of GPU 1: GPU is lost.")
    for _ in range(2):
        node.telemetry.sample_once(node.clock.advance(10))
    node.worker.publish_node()

    # Then the admins hear of it once, with the reason, and tasks go to GPU 0 only
    assert notifier.flush(10)
    assert [r.body["event"] for r in hook.requests] == ["gpu_warning"]
    assert "unreadable: NVML could not read the handle of GPU 1: GPU is lost" in json.dumps(
        hook.requests[0].body
    )
    assert _available(cluster) == [True, False]
    first = cluster.submit(who, {"command": "sleep 60", "workdir": str(tmp_path)})[0]
    assert wait_until(lambda: cluster.tasks.get_any(first.id).gpu_indices) == [0]

    # And once it reads again it takes tasks
    node.gpus.set_lost(1, None)
    node.telemetry.sample_once(node.clock.advance(10))
    node.worker.publish_node()
    second = cluster.submit(who, {"command": "sleep 60", "workdir": str(tmp_path)})[0]
    assert wait_until(lambda: cluster.tasks.get_any(second.id).gpu_indices) == [1]
    for task in (first, second):
        cluster.cancel(who, task.id)
    notifier.close()


def test_a_hot_gpu_gets_no_new_tasks_until_it_cools(cluster, make_identity, start_node, tmp_path):
    who, token = make_identity()
    node = start_node(gpus="2x24")
    node.gpus.set_reading(0, temperature_c=92)
    node.telemetry.sample_once(node.clock.advance(10))
    node.worker.publish_node()
    client = TestClient(create_app(cluster))
    gpus = client.get("/api/v1/gpus", headers={"Authorization": f"Bearer {token}"}).json()["gpus"]
    assert "too hot: 92" in gpus[0]["out_of_service"] and gpus[1]["out_of_service"] is None

    first = cluster.submit(who, {"command": "sleep 60", "workdir": str(tmp_path)})[0]
    assert wait_until(lambda: cluster.tasks.get_any(first.id).gpu_indices) == [1]
    second = cluster.submit(who, {"command": "sleep 60", "workdir": str(tmp_path)})[0]
    node.telemetry.sample_once(node.clock.advance(10))
    assert _available(cluster) == [False, False]  # GPU 0 too hot, GPU 1 taken
    assert cluster.tasks.get_any(second.id).status == "queued"

    node.gpus.set_reading(0, temperature_c=70)
    node.telemetry.sample_once(node.clock.advance(10))
    assert wait_until(lambda: cluster.tasks.get_any(second.id).gpu_indices) == [0]
    for task in (first, second):
        cluster.cancel(who, task.id)


def test_a_gpu_whose_memory_outlives_its_task_is_out_of_service_until_freed(
    cluster, make_identity, start_node, tmp_path
):
    # Given a task on the only GPU, whose (simulated) process leaves 6000 MiB behind when it ends
    who, token = make_identity()
    node = start_node(gpus="1x24")
    first = cluster.submit(who, {"command": "sleep 0.5", "workdir": str(tmp_path)})[0]
    wait_until(lambda: first.id in node.worker.gpu_holders())
    node.gpus.set_reading(0, memory_used_mib=6000)
    wait_until(lambda: cluster.tasks.get_any(first.id).status == "succeeded")

    # Then the GPU is published out of service with the reason, and the next task waits
    reason = wait_until(lambda: cluster.nodes.all()[0].gpus[0].out_of_service)
    assert f"memory still held: 6000 MiB in use after task {first.id} ended" in reason
    second = cluster.submit(who, {"command": "true", "workdir": str(tmp_path)})[0]
    node.telemetry.sample_once(node.clock.advance(10))
    assert _available(cluster) == [False]
    assert cluster.tasks.get_any(second.id).status == "queued"
    with TestClient(create_app(cluster)) as client:
        explained = client.get(
            f"/api/v1/tasks/{second.id}/explain", headers={"Authorization": f"Bearer {token}"}
        ).json()
    assert explained["reason"].startswith(
        f"waiting for GPUs out of service (1 of 1: GPU 0 of {node.worker.node}: memory still held: 6000 MiB"
    ), explained["reason"]

    # When the memory is freed, it is back in service and the task runs
    node.gpus.set_reading(0, memory_used_mib=0)
    node.telemetry.sample_once(node.clock.advance(10))
    wait_until(lambda: cluster.tasks.get_any(second.id).status == "succeeded")


def test_a_gpu_shared_with_memory_held_outside_nightshift_stays_in_service_after_a_task_on_it_ends(
    cluster, make_identity, start_node, tmp_path
):
    # Given a 24 GB GPU on which someone's notebook, not a nightshift task, holds 10000 MiB
    who, _ = make_identity()
    node = start_node(gpus="1x24")
    node.gpus.set_reading(0, memory_used_mib=10_000)
    node.telemetry.sample_once(node.clock.advance(10))
    node.worker.publish_node()

    # When a task that fits beside it runs there and ends (its own memory freed, the notebook's not)
    first = cluster.submit(who, {"command": "sleep 0.5", "gpu_memory_gb": 8, "workdir": str(tmp_path)})[0]
    wait_until(lambda: cluster.tasks.get_any(first.id).status == "succeeded")
    node.telemetry.sample_once(node.clock.advance(10))
    node.worker.publish_node()

    # Then the GPU stays in service and the next task runs on it
    assert cluster.nodes.all()[0].gpus[0].out_of_service is None
    second = cluster.submit(who, {"command": "true", "gpu_memory_gb": 8, "workdir": str(tmp_path)})[0]
    wait_until(lambda: cluster.tasks.get_any(second.id).status == "succeeded")


def test_gpu_slots_count_memory_in_use_beyond_nightshifts_reservations_as_held_outside() -> None:
    # 140 GB GPUs: GPU 0 has 35 GB free while task 9 asked for 20 GB (100 GB + its CUDA context are someone
    # else's); GPU 1 runs a task that asked for no memory (what it uses is its own: nothing is known)
    gpus = (NodeGpu(0, "H200", 143_360, 35 * 1024), NodeGpu(1, "H200", 143_360, 60 * 1024))
    node = NodeState("gpu-box", gpus, heartbeat_ms=now_ms())
    holders = [
        RunningTask(9, "lab", "ada", "gpu-box", (0,), 0.0, gpu_memory_mib=20 * 1024, gpu_fraction=0.5),
        RunningTask(10, "lab", "ada", "gpu-box", (1,), 0.0),
    ]
    first, second = gpu_slots([node], holders, now_ms())
    assert (first.outside_mib, first.memory_free_mib) == (143_360 - 35 * 1024 - 20 * 1024, 35 * 1024)
    assert second.outside_mib == 0
