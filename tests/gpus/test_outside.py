"""Processes on a GPU that are none of nightshift's jobs: told apart from the jobs' own, named with their
owner and command, shown by GET /gpus and named by the reason of a task their memory keeps out."""

from __future__ import annotations

import getpass
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from scheduler.clock import now_ms
from scheduler.dispatcher import Dispatcher
from scheduler.executor.reaper import TOKEN_VAR
from scheduler.gpus import GpuProcess, NvmlGpus
from scheduler.gpus.outside import OutsideProcess, outside_memory_mib, outside_processes
from scheduler.nodes import NodeGpu, NodeState
from scheduler.policy.types import RunningTask
from scheduler.policy_input import gpu_slots
from scheduler.service import Cluster
from scheduler.worker import Worker
from tests.conftest import wait_until

from .nvml_replay import ReplayNvml

GIB = 1024**3


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A process of this user that is no job: `sleep 300` (as a notebook would be)."""
    process = subprocess.Popen(["sleep", "300"])
    yield process
    process.kill()
    process.wait()


def test_a_process_that_is_no_job_is_named_with_its_owner_and_command(sleeper) -> None:
    assert outside_processes([GpuProcess(sleeper.pid, 40960)], job_groups=set()) == (
        OutsideProcess(sleeper.pid, 40960, getpass.getuser(), "sleep 300"),
    )
    assert OutsideProcess(sleeper.pid, 40960, "alice", "sleep 300").describe() == (
        f"pid {sleeper.pid} of alice"  # never the command: anyone whose task waits reads this
    )


def test_a_command_written_over_several_lines_is_named_on_one() -> None:
    script = subprocess.Popen([sys.executable, "-c", "import time\ntime.sleep(300)"])
    try:
        [named] = outside_processes([GpuProcess(script.pid, 1024)], job_groups=set())
        assert named.command is not None and named.command.endswith(" -c import time time.sleep(300)")
    finally:
        script.kill()
        script.wait()


def test_a_jobs_processes_are_not_outside_nightshift(sleeper) -> None:
    # a process with a run token in its environment, and one in a job's process group
    env = {**os.environ, TOKEN_VAR: "node.1.lease-token"}
    tokened = subprocess.Popen(["sleep", "300"], env=env)
    grouped = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        listed = [GpuProcess(p.pid, 1024) for p in (tokened, grouped, sleeper)]
        assert [p.pid for p in outside_processes(listed, job_groups={grouped.pid})] == [sleeper.pid]
    finally:
        for process in (tokened, grouped):
            process.kill()
            process.wait()


def test_processes_not_visible_here_are_listed_by_pid_largest_first() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    listed = [GpuProcess(gone.pid, 1024), GpuProcess(gone.pid + 1_000_000, 90_000)]
    assert outside_processes(listed, job_groups=set()) == (
        OutsideProcess(gone.pid + 1_000_000, 90_000),  # another pid namespace's: no owner, no command
        OutsideProcess(gone.pid, 1024),
    )
    assert outside_processes(None, job_groups=set()) == ()  # the driver lists none


def test_the_memory_held_outside_is_known_only_where_the_driver_lists_each_processs_memory() -> None:
    assert outside_memory_mib((), ()) == 0  # listed: nothing outside
    assert outside_memory_mib([GpuProcess(1, 10)], [OutsideProcess(1, 10), OutsideProcess(2, 5)]) == 15
    assert outside_memory_mib(None, ()) is None  # not listed
    assert outside_memory_mib([GpuProcess(1)], [OutsideProcess(1)]) is None  # listed without its memory


def _h200_beside_a_notebook(pid: int) -> ReplayNvml:
    """The real H200 as NVML would read it while process `pid` (the "notebook") holds 100 GiB."""
    recording = ReplayNvml.load("h200_idle").recording
    device = recording["devices"][0]
    total = device["nvmlDeviceGetMemoryInfo"]["total"]
    device["nvmlDeviceGetMemoryInfo"] = {"total": total, "used": 100 * GIB, "free": total - 100 * GIB}
    device["nvmlDeviceGetComputeRunningProcesses"] = [{"pid": pid, "usedGpuMemory": 100 * GIB}]
    return ReplayNvml(recording)


def test_gpu_slots_count_a_reservation_not_filled_yet_beside_memory_listed_outside() -> None:
    # 140 GB: the notebook's 100 GB listed by the driver; task 9 asked for 20 GB and has not allocated yet
    gpu = NodeGpu(
        0, "H200", 140 * 1024, 40 * 1024, outside=(OutsideProcess(4242, 100 * 1024),), outside_mib=100 * 1024
    )
    node = NodeState("gpu-box", (gpu,), heartbeat_ms=now_ms())
    holder = RunningTask(9, "lab", "ada", "gpu-box", (0,), 0.0, gpu_memory_mib=20 * 1024, gpu_fraction=0.5)

    [slot] = gpu_slots([node], [holder], now_ms())
    assert (slot.memory_free_mib, slot.outside_mib) == (
        20 * 1024,
        100 * 1024,
    )  # not the 40 GB the reading shows
    assert slot.outside_by == "pid 4242"


def test_beside_a_running_task_the_memory_held_outside_is_what_the_driver_lists(
    cluster: Cluster, make_identity, run_in_thread, sleeper, tmp_path
) -> None:
    # Given the H200 beside the notebook, where a task that asked for 20 GB runs (and has not allocated yet)
    who, token = make_identity()
    monitor = NvmlGpus(nvml=_h200_beside_a_notebook(sleeper.pid))
    worker = Worker(cluster, "gpu-box", monitor, base_env=dict(os.environ))
    worker.publish_node()
    run_in_thread(Dispatcher(cluster).run)
    run_in_thread(worker.run)
    first, _ = cluster.submit(who, {"command": "sleep 30", "gpu_memory_gb": 20, "workdir": str(tmp_path)})
    wait_until(lambda: cluster.tasks.get_any(first.id).status == "running")

    # When a task asks for 70 GB
    second, _ = cluster.submit(who, {"command": "true", "gpu_memory_gb": 70, "workdir": str(tmp_path)})

    # Then its reason names the notebook's 100 GB, not the 80 GB a guess from the reading would give
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(create_app(cluster)) as client:
        reason = wait_until(
            lambda: client.get(f"/api/v1/tasks/{second.id}/explain", headers=headers).json()["reason"]
        )
    assert ": 100 GB of GPU 0 of gpu-box is in use outside them, most by pid" in reason, reason
    for task in (first, second):
        cluster.cancel(who, task.id)


def test_memory_a_notebook_holds_is_shown_and_named_in_the_reason_of_the_task_it_keeps_out(
    cluster: Cluster, make_identity, run_in_thread, sleeper, tmp_path
) -> None:
    # Given the real H200, where a process of this user (the "notebook") holds 100 GiB
    who, token = make_identity()
    worker = Worker(
        cluster, "gpu-box", NvmlGpus(nvml=_h200_beside_a_notebook(sleeper.pid)), base_env=dict(os.environ)
    )
    worker.publish_node()
    run_in_thread(Dispatcher(cluster).run)
    run_in_thread(worker.run)
    headers = {"Authorization": f"Bearer {token}"}

    # When a task asks for 60 GB
    task, _ = cluster.submit(who, {"command": "true", "gpu_memory_gb": 60, "workdir": str(tmp_path)})

    # Then GET /gpus shows the notebook (its command to admins only), and the task's reason says whose
    # memory keeps it out
    _, admin_token = make_identity("root-admin", "ops", admin=True)
    with TestClient(create_app(cluster)) as client:
        [gpu] = client.get("/api/v1/gpus", headers=headers).json()["gpus"]
        [seen_by_admin] = client.get(
            "/api/v1/gpus", headers={"Authorization": f"Bearer {admin_token}"}
        ).json()["gpus"]
        reason = wait_until(
            lambda: client.get(f"/api/v1/tasks/{task.id}/explain", headers=headers).json()["reason"]
        )
    user = getpass.getuser()
    assert gpu["outside"] == [{"pid": sleeper.pid, "used_mib": 102400, "user": user, "command": None}]
    assert seen_by_admin["outside"][0]["command"] == "sleep 300"
    assert reason == (
        "no GPU has 60 GB free, nor would one once nightshift's tasks end: 100 GB of GPU 0 of gpu-box is in "
        f"use outside them, most by pid {sleeper.pid} of {user}; it starts when that is freed"
    )
    assert cluster.tasks.get_any(task.id).status == "queued"
