"""A worker's node record in Redis, read back by the scheduler: GPUs with the processes outside nightshift,
and fields a newer worker adds are left out rather than failing the read (a rolling upgrade)."""

from __future__ import annotations

import json

from scheduler.clock import now_ms
from scheduler.gpus.outside import OutsideProcess
from scheduler.nodes import NodeGpu
from scheduler.service import Cluster

GB = 1024


def test_a_gpu_with_processes_outside_nightshift_reads_back_as_published(cluster: Cluster) -> None:
    notebook = OutsideProcess(4242, 100 * GB, "alice", "jupyter-lab")
    gpu = NodeGpu(0, "NVIDIA H200", 140 * GB, 40 * GB, 0.0, 38.0, 80.0, outside=(notebook, OutsideProcess(7)))
    cluster.nodes.publish("gpu-box", [gpu], now_ms(), "nvml")

    [node] = cluster.nodes.all()
    assert node.gpus == (gpu,)


def test_a_field_a_newer_worker_publishes_is_left_out(cluster: Cluster) -> None:
    cluster.nodes.publish("gpu-box", [NodeGpu(0, "NVIDIA H200", 140 * GB, 40 * GB)], now_ms(), "nvml")
    key = cluster.nodes.keys.node("gpu-box")
    [record] = json.loads(cluster.nodes.client.hget(key, "gpus"))
    cluster.nodes.client.hset(key, "gpus", json.dumps([{**record, "mig_profile": "1g.18gb"}]))

    [node] = cluster.nodes.all()
    assert node.gpus == (NodeGpu(0, "NVIDIA H200", 140 * GB, 40 * GB),)
