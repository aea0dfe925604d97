"""A node counts as down once its worker has been silent for its own lease TTL, the time after which its
leases run out and any worker gives its inbox back: the scheduler must not keep placing work there (with a
lease TTL under the old fixed 30 s, a paused worker's task went back and forth between the queue and its
inbox until the 30 s had passed)."""

from __future__ import annotations

import os

from scheduler.clock import now_ms
from scheduler.dispatcher import Dispatcher
from scheduler.gpus import SimulatedGpus
from scheduler.nodes import NODE_STALE_AFTER_MS, NodeGpu
from scheduler.store.identity import authenticate, create_token
from scheduler.worker import Worker

GB = 1024


def test_a_worker_publishes_its_lease_ttl_as_the_silence_after_which_its_node_is_down(cluster) -> None:
    Worker(cluster, "node-a", SimulatedGpus("1x24", node="node-a"), base_env=dict(os.environ)).publish_node()
    cluster.nodes.publish("old-worker", [NodeGpu(0, "SIM", 24 * GB, 24 * GB)], now_ms() - 6_000, "simulated")
    client = cluster.nodes.client
    client.hdel(cluster.nodes.keys.node("old-worker"), "stale_after_ms")  # as a worker of before wrote it

    nodes = {node.name: node for node in cluster.nodes.all()}

    assert nodes["node-a"].stale_after_ms == int(cluster.settings.lease_ttl_s * 1000) == 5_000
    assert nodes["old-worker"].stale_after_ms == NODE_STALE_AFTER_MS and nodes["old-worker"].alive(now_ms())


def test_a_node_silent_past_its_lease_ttl_gets_no_new_work_though_it_fits_best(cluster, tmp_path) -> None:
    who = authenticate(cluster.factory, create_token(cluster.factory, user="alice", team="vision"))
    gpu = NodeGpu(0, "SIM", 24 * GB, 24 * GB)
    # node-a (one GPU: the best fit) last heard 6 s ago, past its 5-s lease TTL; node-b (two GPUs) now
    cluster.nodes.publish("node-a", [gpu], now_ms() - 6_000, "simulated", stale_after_ms=5_000)
    cluster.nodes.publish("node-b", [gpu, NodeGpu(1, "SIM", 24 * GB, 24 * GB)], now_ms(), "simulated",
                          stale_after_ms=5_000)  # fmt: skip
    task, _ = cluster.submit(who, {"command": "true", "workdir": str(tmp_path)})

    Dispatcher(cluster).run_pass()

    assert cluster.queue.assignments()[task.id][0] == "node-b"
    assert not next(node for node in cluster.nodes.all() if node.name == "node-a").alive(now_ms())
