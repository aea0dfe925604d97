"""A GPU the driver has lost takes no tasks, says why, and the node goes on serving its other GPUs; once
the driver reads it again (after a reset), it is back in service. Over recorded NVML answers."""

from __future__ import annotations

import copy
from pathlib import Path

from api.main import create_app
from scheduler.clock import now_ms
from scheduler.gpus import NvmlGpus
from scheduler.service import Cluster
from tests.api.conftest import TestClient, bearer
from tests.conftest import wait_until

from .nvml_replay import ReplayNvml

LOST = "unreadable: NVML could not read the handle of GPU 1: GPU is lost; back in service once the driver reads it again"


def test_a_lost_gpu_is_out_of_service_with_the_reason_while_the_other_runs_tasks(
    cluster: Cluster, make_identity, start_worker_on, tmp_path: Path
) -> None:
    # Given a two-GPU box whose GPU 1 has fallen off the bus (NVML: GPU is lost)
    who, token = make_identity()
    nvml = ReplayNvml.load("gpu_lost")
    worker = start_worker_on(NvmlGpus(nvml=nvml))
    flag = tmp_path / "done"
    spec = {"command": f"while [ ! -f {flag} ]; do sleep 0.05; done", "workdir": str(tmp_path)}

    with TestClient(create_app(cluster)) as client:
        # Then GET /gpus shows it out of service with the driver's words
        gpus = client.get("/api/v1/gpus", headers=bearer(token)).json()["gpus"]
        assert gpus[0]["out_of_service"] is None
        assert gpus[1]["out_of_service"].startswith(LOST), gpus[1]
        metrics = client.get("/metrics").text
        assert 'nightshift_gpu_out_of_service{gpu="1",node="gpu-box",reason="unreadable"} 1.0' in metrics

        # And a task runs on the good GPU, while a two-GPU task waits, saying why
        first, _ = cluster.submit(who, spec)
        assert wait_until(lambda: worker.gpu_holders().get(first.id)) == (0,)
        both, _ = cluster.submit(who, {**spec, "gpus": 2})
        reason = client.get(f"/api/v1/tasks/{both.id}/explain", headers=bearer(token)).json()["reason"]
        assert reason.startswith(f"waiting for GPUs out of service (1 of 2: GPU 1 of gpu-box: {LOST}"), reason

    # When the GPU is reset and reads again, and the first task ends, the two-GPU task starts on both
    nvml.recording["devices"][1] = copy.deepcopy(nvml.recording["devices"][0])
    worker.publish_node()
    assert cluster.nodes.all()[0].gpus[1].out_of_service is None
    flag.touch()
    wait_until(lambda: cluster.tasks.get_any(both.id).status == "succeeded")
    assert cluster.tasks.get_any(both.id).gpu_indices == [0, 1]


def test_when_nvml_cannot_read_any_gpu_the_node_says_so_instead_of_going_silent(
    cluster: Cluster, make_identity, start_worker_on, tmp_path: Path
) -> None:
    # Given a worker on a box with two good GPUs
    who, token = make_identity()
    nvml = ReplayNvml.load("rtx4090_x2_power_not_supported")
    worker = start_worker_on(NvmlGpus(nvml=nvml))

    # When NVML can no longer even count the GPUs (a driver in trouble)
    nvml.recording["nvmlDeviceGetCount"] = {"nvml_error": "NVML_ERROR_UNKNOWN"}
    worker.publish_node()

    # Then the node stays alive, its GPUs (still named) out of service with NVML's words, and a task waits
    (node,) = cluster.nodes.all()
    assert node.alive(now_ms())
    reason = "unreadable: NVML could not read the device count: Unknown Error; back in service once"
    assert [(gpu.name, gpu.out_of_service[: len(reason)]) for gpu in node.gpus] == [
        ("NVIDIA GeForce RTX 4090", reason), ("NVIDIA GeForce RTX 4090", reason)
    ]  # fmt: skip
    task, _ = cluster.submit(who, {"command": "true", "workdir": str(tmp_path)})
    with TestClient(create_app(cluster)) as client:
        explained = client.get(f"/api/v1/tasks/{task.id}/explain", headers=bearer(token)).json()
    assert explained["reason"].startswith(
        "waiting for GPUs out of service (2 of 2: GPU 0 of gpu-box: " + reason
    )

    # And once NVML reads again, the task runs
    nvml.recording["nvmlDeviceGetCount"] = 2
    worker.publish_node()
    wait_until(lambda: cluster.tasks.get_any(task.id).status == "succeeded")
