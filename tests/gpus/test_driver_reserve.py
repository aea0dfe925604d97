"""The driver's own memory on each GPU, learned from real readings, and the half-GPU tasks it lets start:
a sharer is charged its fraction of what the driver leaves, so two halves fit even once the first has
filled its half (charged halves of the total, the second never started beside a full first)."""

from __future__ import annotations

from pathlib import Path

from scheduler.gpus import NvmlGpus
from scheduler.gpus.driver_reserve import DriverReserve
from scheduler.service import Cluster
from tests.conftest import wait_until

from .nvml_replay import ReplayNvml

MIB = 1024**2


def test_the_reserve_is_the_memory_in_use_beyond_the_listed_processes_on_real_readings(recorded_nvml) -> None:
    # A real H200 beside a notebook: 103,542 MiB in use, 102,918 MiB of it the notebook's
    [h200] = NvmlGpus(nvml=recorded_nvml("h200_notebook")).read()
    assert DriverReserve().observe(h200, held_by_jobs=()) == 623
    # The A100 box: GPU 6 idle (no process, 589 MiB in use); GPU 0 holds a job of this worker
    reserve = DriverReserve()
    a100 = NvmlGpus(nvml=recorded_nvml("a100_sxm4_80gb_x8")).read()
    assert reserve.observe(a100[6], held_by_jobs={0}) == 589
    assert reserve.observe(a100[0], held_by_jobs={0}) == 0  # a job's processes may be left out: not told


def test_a_reading_that_cannot_tell_keeps_what_was_learned(recorded_nvml) -> None:
    reserve = DriverReserve()
    [notebook] = NvmlGpus(nvml=recorded_nvml("h200_notebook")).read()
    [unlisted] = NvmlGpus(nvml=recorded_nvml("h200_idle")).read()  # recorded without the process list
    assert reserve.observe(unlisted, held_by_jobs=()) == 0
    assert reserve.observe(notebook, held_by_jobs=()) == 623
    assert reserve.observe(unlisted, held_by_jobs=()) == 623
    assert reserve.observe(notebook, held_by_jobs={0}) == 623


def test_a_second_half_starts_beside_a_first_that_filled_its_half(
    cluster: Cluster, make_identity, start_worker_on, tmp_path: Path
) -> None:
    # Given the real idle H200 (615 MiB in use, the driver's; it lists no process) and a worker on it
    who, _ = make_identity()
    nvml = ReplayNvml.load("h200_idle")
    device = nvml.recording["devices"][0]
    device["nvmlDeviceGetComputeRunningProcesses"] = []
    worker = start_worker_on(NvmlGpus(nvml=nvml))
    flag = tmp_path / "done"
    spec = {"command": f"while [ ! -f {flag} ]; do sleep 0.05; done", "gpu_fraction": 0.5}
    first, _ = cluster.submit(who, {**spec, "workdir": str(tmp_path)})
    wait_until(lambda: first.id in worker.gpu_holders())

    # When the first task's process fills its half: half of what the driver leaves
    total = device["nvmlDeviceGetMemoryInfo"]["total"]
    half = (total // MIB - 615) // 2 * MIB
    used = 615 * MIB + half
    device["nvmlDeviceGetMemoryInfo"] = {"total": total, "used": used, "free": total - used}
    leader = worker.job_of(first.id).job.pid  # type: ignore[union-attr]
    device["nvmlDeviceGetComputeRunningProcesses"] = [{"pid": leader, "usedGpuMemory": half}]
    worker.publish_node()
    second, _ = cluster.submit(who, {**spec, "workdir": str(tmp_path)})

    # Then the second half starts beside it
    try:
        wait_until(lambda: second.id in worker.gpu_holders())
        assert worker.gpu_holders() == {first.id: (0,), second.id: (0,)}
    finally:
        flag.touch()


def test_a_half_gpu_job_is_told_its_share_of_the_gpu(
    cluster: Cluster, make_identity, start_worker_on, tmp_path: Path
) -> None:
    # Given the real idle H200 and a worker on it
    who, _ = make_identity()
    nvml = ReplayNvml.load("h200_idle")
    nvml.recording["devices"][0]["nvmlDeviceGetComputeRunningProcesses"] = []
    start_worker_on(NvmlGpus(nvml=nvml))

    # When a half-GPU task runs
    spec = {"command": "env > seen", "gpu_fraction": 0.5, "workdir": str(tmp_path)}
    task, _ = cluster.submit(who, spec)
    wait_until(lambda: cluster.tasks.get_any(task.id).status == "succeeded")

    # Then it is told its half of what the driver leaves, and given it as MPS client limits
    seen = dict(line.split("=", 1) for line in (tmp_path / "seen").read_text().splitlines() if "=" in line)
    half = (143_771 - 615) // 2
    assert (seen["NIGHTSHIFT_GPU_FRACTION"], seen["NIGHTSHIFT_GPU_MEMORY_MIB"]) == ("0.5", str(half))
    assert seen["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == f"0={half}M"
    assert seen["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "50"
