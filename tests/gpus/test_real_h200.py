"""A real NVIDIA H200, idle and busy, as NVML answered on a lent GPU machine (`tests/gpus/recorded/h200_*`,
written by scripts/device_nvml_check.py): read through the adapter, and placed on by a worker and the
scheduler exactly as on that machine."""

from __future__ import annotations

import os

from fastapi.testclient import TestClient

from api.main import create_app
from scheduler.dispatcher import Dispatcher
from scheduler.gpus import GpuInfo, GpuProcess, NvmlGpus
from scheduler.service import Cluster
from scheduler.worker import Worker
from tests.conftest import wait_until

from .nvml_replay import ReplayNvml

H200_UUID = "GPU-cd3d1dda-2142-e1be-b50b-b20708fcf4b9"


def test_an_idle_h200_reads_141_gb_free_at_80_w() -> None:
    assert NvmlGpus(nvml=ReplayNvml.load("h200_idle")).read() == [
        GpuInfo(
            index=0,
            uuid=H200_UUID,
            name="NVIDIA H200",
            memory_total_mib=143771,
            memory_used_mib=615,  # the driver's own reservation: nothing runs on it
            memory_free_mib=143155,
            utilization_pct=0.0,
            temperature_c=37.0,
            power_w=79.718,
            power_limit_w=700.0,
        )
    ]


def test_a_busy_h200_reads_the_memory_its_process_holds_and_its_power() -> None:
    [busy] = NvmlGpus(nvml=ReplayNvml.load("h200_busy")).read()

    assert (busy.memory_used_mib, busy.memory_free_mib) == (32217, 111553)  # 30 GiB + CUDA context
    assert busy.memory_total_mib - (busy.memory_used_mib + busy.memory_free_mib) == 1  # each rounded down
    assert (busy.utilization_pct, busy.power_w, busy.power_limit_w) == (98.0, 693.814, 700.0)


def test_an_h200_shared_with_a_notebook_lists_its_process_and_the_memory_it_holds() -> None:
    [shared] = NvmlGpus(nvml=ReplayNvml.load("h200_notebook")).read()

    assert shared.processes == (GpuProcess(934, 102918),)  # 100 GiB + its CUDA context
    assert (shared.memory_used_mib, shared.memory_free_mib) == (103541, 40229)  # with the driver's own 615
    assert (shared.utilization_pct, shared.power_w) == (0.0, 101.743)  # holding, not computing


def test_a_task_is_placed_by_what_the_busy_h200_has_free(
    cluster: Cluster, make_identity, run_in_thread, tmp_path
) -> None:
    # Given a worker whose GPU is the busy H200 (108 GB free of 140), and the scheduler
    who, token = make_identity()
    worker = Worker(cluster, "h200", NvmlGpus(nvml=ReplayNvml.load("h200_busy")), base_env=dict(os.environ))
    worker.publish_node()
    run_in_thread(Dispatcher(cluster).run)
    run_in_thread(worker.run)

    # When one task asks for 120 GB and another for 100 GB
    too_big, _ = cluster.submit(who, {"command": "true", "gpu_memory_gb": 120, "workdir": str(tmp_path)})
    fits, _ = cluster.submit(who, {"command": "true", "gpu_memory_gb": 100, "workdir": str(tmp_path)})

    # Then the 100 GB one runs there, and the 120 GB one waits, saying why
    wait_until(lambda: cluster.tasks.get_any(fits.id).status == "succeeded")
    assert cluster.tasks.get_any(fits.id).node == "h200"
    with TestClient(create_app(cluster)) as client:
        explained = client.get(
            f"/api/v1/tasks/{too_big.id}/explain", headers={"Authorization": f"Bearer {token}"}
        ).json()
    assert cluster.tasks.get_any(too_big.id).status == "queued"
    assert explained["reason"].startswith("no GPU has 120 GB free"), explained["reason"]
