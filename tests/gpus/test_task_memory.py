"""Each task's own GPU memory where tasks share a GPU: the driver's process list, each process told to the
job it belongs to (its process group or its run token), gives every task its own peak; where the driver
lists none, or one not visible from here, the memory in use beyond what the GPU held at the start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from scheduler.executor.reaper import TOKEN_VAR
from scheduler.gpus import GpuProcess, NvmlGpus
from scheduler.gpus.inventory import GpuInfo
from scheduler.gpus.outside import job_processes
from scheduler.policy.tariff import DEFAULT_TARIFF
from scheduler.service import Cluster
from scheduler.telemetry.accounting import UsageMeter
from tests.conftest import wait_until

from .nvml_replay import ReplayNvml

GIB = 1024**3


def test_the_processes_of_each_job_are_told_apart_and_an_invisible_one_makes_them_unknown() -> None:
    # a process with task 7's run token, one in task 8's process group, and one of neither
    tokened = subprocess.Popen(["sleep", "300"], env={**os.environ, TOKEN_VAR: "node.1.token-7"})
    grouped = subprocess.Popen(["sleep", "300"], start_new_session=True)
    other = subprocess.Popen(["sleep", "300"])
    try:
        listed = [GpuProcess(p.pid, 1024) for p in (tokened, grouped, other)]
        owners = job_processes(listed, by_group={grouped.pid: 8}, by_token={"node.1.token-7": 7})
        assert owners == {tokened.pid: 7, grouped.pid: 8}
        assert job_processes(None, {}, {}) == {}
        gone = subprocess.Popen([sys.executable, "-c", "pass"])
        gone.wait()
        assert job_processes([*listed, GpuProcess(gone.pid, 10)], {grouped.pid: 8}, {}) is None
    finally:
        for process in (tokened, grouped, other):
            process.kill()
            process.wait()


def _gpu(used_mib: int, processes: tuple[GpuProcess, ...] | None) -> GpuInfo:
    return GpuInfo(0, "g0", "A100", 81920, used_mib, 81920 - used_mib, 90.0, 60.0, 300.0, 400.0,
                   processes=processes)  # fmt: skip


def test_two_tasks_sharing_a_gpu_each_peak_at_their_own_processes_memory() -> None:
    # Given task 1 on GPU 0 from 0 s, and task 2 beside it from 10 s
    meter = UsageMeter("n", DEFAULT_TARIFF, (), "UTC")
    meter.begin(1, 1, [0], 0.0, gpu_fraction=0.5)
    meter.begin(2, 1, [0], 10.0, gpu_fraction=0.5, used_before_mib={0: 3000})
    owners = {101: 1, 202: 2}

    # When the driver lists task 1's process at 3 GB and task 2's at 9 GB (12 GB on the GPU)
    meter.observe(60.0, [_gpu(12000, (GpuProcess(101, 3000), GpuProcess(202, 9000)))], owners)

    # Then each peak is its own processes', not what the GPU held beyond its start
    first, second = meter.end(1, 120.0), meter.end(2, 120.0)
    assert first is not None and second is not None
    assert (first.peak_memory_mib, second.peak_memory_mib) == (3000, 9000)


def test_without_a_process_list_a_tasks_memory_is_what_the_gpu_holds_beyond_its_start() -> None:
    meter = UsageMeter("n", DEFAULT_TARIFF, (), "UTC")
    meter.begin(1, 1, [0], 0.0, used_before_mib={0: 1000})
    meter.observe(60.0, [_gpu(7000, None)], owners=None)
    # listed, but with a process whose memory the driver does not give: the same fallback
    meter.observe(90.0, [_gpu(8000, (GpuProcess(101, None),))], owners={101: 1})
    usage = meter.end(1, 120.0)
    assert usage is not None and usage.peak_memory_mib == 7000


def test_a_worker_tells_its_jobs_processes_on_a_real_gpus_process_list(
    cluster: Cluster, make_identity, start_worker_on, tmp_path: Path
) -> None:
    # Given two half-GPU tasks running side by side on the (replayed) H200
    who, _ = make_identity()
    nvml = ReplayNvml(ReplayNvml.load("h200_idle").recording)
    worker = start_worker_on(NvmlGpus(nvml=nvml))
    flag = tmp_path / "done"
    spec = {
        "command": f"while [ ! -f {flag} ]; do sleep 0.05; done",
        "gpu_fraction": 0.5,
        "workdir": str(tmp_path),
    }
    tasks = [cluster.submit(who, spec)[0] for _ in range(2)]
    wait_until(lambda: sorted(worker.gpu_holders()) == sorted(t.id for t in tasks))
    leaders = {task.id: worker.job_of(task.id).job.pid for task in tasks}  # type: ignore[union-attr]

    # When the driver lists their processes (and one of nobody's)
    device = nvml.recording["devices"][0]
    listed = [{"pid": pid, "usedGpuMemory": (n + 1) * GIB} for n, pid in enumerate(leaders.values())]
    notebook = subprocess.Popen(["sleep", "300"])
    device["nvmlDeviceGetComputeRunningProcesses"] = [*listed, {"pid": notebook.pid, "usedGpuMemory": GIB}]
    try:
        owners = worker.gpu_process_owners(worker.monitor.read())
    finally:
        notebook.kill()
        notebook.wait()
        flag.touch()

    # Then each job's process is its task's; the notebook is nobody's
    assert owners == {pid: task_id for task_id, pid in leaders.items()}
