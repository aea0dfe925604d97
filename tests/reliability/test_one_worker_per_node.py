"""One worker per node: a second worker for a node that is served refuses to start, and touches nothing.

Before, a second `nightshift up` (or `nightshift worker`) on the same machine reconciled the node at start:
it killed the first worker's running jobs as orphans and failed their tasks.
"""

from __future__ import annotations

import os
import socket
import subprocess

import pytest
import redis

from scheduler.gpus.simulated import SimulatedGpus
from scheduler.held_key import OwnerId, pid_namespace, process_started
from scheduler.keys import RedisKeys
from scheduler.node_owner import NodeOwnership, NodeTaken
from scheduler.service import Cluster
from scheduler.worker import Worker

from ..conftest import wait_until
from .conftest import settled


def make_worker(cluster: Cluster, node: str = "node-a") -> Worker:
    return Worker(cluster, node, SimulatedGpus("4x24", node=node), base_env=dict(os.environ))


def owner_key(cluster: Cluster, node: str = "node-a") -> str:
    return cluster.queue.keys.node_owner(node)


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_second_worker_for_a_served_node_refuses_and_the_first_ones_job_runs_on(
    cluster, start_worker, submit_to, run_in_thread, tmp_path
):
    # Given a worker on node-a running a job
    start_worker("node-a")
    ready = tmp_path / "ready"
    task = submit_to({"command": f"touch {ready}; sleep 300", "workdir": str(tmp_path)})
    wait_until(ready.exists)

    # When a second worker for node-a starts
    second = make_worker(cluster)
    with pytest.raises(NodeTaken, match="node 'node-a' is already served by another worker"):
        second.claim_node(wait_s=0)
    refused: list[NodeTaken] = []

    def run_second(stop):
        try:
            second.run(stop)
        except NodeTaken as exc:
            refused.append(exc)

    run_in_thread(run_second)

    # Then its loop stops before reconciling the node: the first worker's job runs on
    wait_until(lambda: refused)
    assert cluster.tasks.get_any(task.id).status == "running"
    assert settled(cluster, task.id) == ""


def test_a_stopped_worker_gives_its_node_up_at_once(cluster, run_in_thread):
    first = make_worker(cluster)
    stop = run_in_thread(first.run)
    wait_until(lambda: cluster.queue.client.get(owner_key(cluster)))

    stop.set()
    wait_until(lambda: cluster.queue.client.get(owner_key(cluster)) is None)

    make_worker(cluster).claim_node(wait_s=0)


def _stat_fields(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        return stat.read().rpartition(")")[2].split()


@pytest.mark.parametrize(
    "how", ["its pid is free", "its pid names a newer process", "it is a zombie nobody reaps"]
)
def test_a_node_whose_worker_died_on_this_machine_is_taken_over_at_once(cluster, how):
    # a crashed worker's key, e.g. of a container restarted since (its new pid 1 is not the old pid 1), or
    # of a worker killed where pid 1 does not reap: its zombie keeps the pid and start time
    zombie = None
    if how == "its pid is free":
        crashed = OwnerId(socket.gethostname(), dead_pid(), 1000, "0badc0de", pid_namespace())
    elif how == "its pid names a newer process":
        crashed = OwnerId(socket.gethostname(), 1, (process_started(1) or 0) + 1, "0badc0de", pid_namespace())
    else:
        zombie = os.fork()
        if zombie == 0:
            os._exit(0)
        wait_until(lambda: _stat_fields(zombie)[0] == "Z")
        crashed = OwnerId(
            socket.gethostname(), zombie, int(_stat_fields(zombie)[19]), "0badc0de", pid_namespace()
        )
    cluster.queue.client.set(owner_key(cluster), str(crashed), px=60_000)
    try:
        worker = make_worker(cluster)
        worker.claim_node(wait_s=0)

        assert cluster.queue.client.get(owner_key(cluster)) == str(worker.ownership.me)
    finally:
        if zombie is not None:
            os.waitpid(zombie, 0)


@pytest.mark.parametrize("where", ["another machine", "a container with this host name"])
def test_a_node_held_from_another_machine_is_taken_once_its_holder_stops_renewing(cluster, where):
    # a holder whose pids we cannot see: another host, or this host name in another PID namespace (its
    # pid 4242 means nothing here, so its liveness cannot be judged from here)
    host, ns = ("gpu-box-2", "") if where == "another machine" else (socket.gethostname(), "4026531999")
    holder = OwnerId(host, 4242, 77, "cafe0001", ns)
    client = cluster.queue.client
    client.set(owner_key(cluster), str(holder), px=300)

    make_worker(cluster).claim_node(wait_s=5)  # the key expires after 0.3 s

    client.set(owner_key(cluster), str(holder))  # a live holder keeps renewing
    with pytest.raises(NodeTaken, match=f"pid 4242 on {host}"):
        make_worker(cluster).claim_node(wait_s=0.5)


def test_renewing_takes_the_node_again_after_redis_lost_it_but_not_from_another_worker(redis_url):
    client = redis.Redis.from_url(redis_url)
    keys = RedisKeys()
    mine = NodeOwnership(client, keys, "node-a", ttl_s=5)
    mine.claim(wait_s=0)

    client.delete(keys.node_owner("node-a"))  # Redis lost its data
    assert mine.renew()
    assert client.get(keys.node_owner("node-a")).decode() == str(mine.me)

    client.set(keys.node_owner("node-a"), "gpu-box-2 pid 1 started 9 beef")
    assert not mine.renew()
    mine.release()  # not ours: left alone
    assert client.get(keys.node_owner("node-a")) == b"gpu-box-2 pid 1 started 9 beef"
    client.close()
