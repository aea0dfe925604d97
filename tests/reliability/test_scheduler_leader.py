"""One scheduler passes at a time (the leader lock), and a restarted one leads at once: a crashed scheduler's
lock outlives it by its TTL (15 s), and comes back with Redis's AOF when `nightshift up` restarts its
embedded Redis, so without a takeover every restart after a crash held all new tasks back for up to 15 s."""

from __future__ import annotations

import socket
import subprocess
import time

from scheduler.clock import now_ms
from scheduler.dispatcher import LEADER_LOCK_TTL_MS, Dispatcher
from scheduler.held_key import OwnerId, pid_namespace, process_started
from scheduler.nodes import NodeGpu
from tests.conftest import wait_until

GB = 1024


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def _lock(cluster) -> str | None:
    value = cluster.queue.client.get(cluster.queue.keys.scheduler_lock)
    return value.decode() if isinstance(value, bytes) else value


def _queued_task(cluster, make_identity, tmp_path):
    who, _ = make_identity()
    cluster.nodes.publish("node-a", [NodeGpu(0, "SIM", 24 * GB, 24 * GB)], now_ms(), "simulated")
    task, _ = cluster.submit(who, {"command": "true", "workdir": str(tmp_path)})
    return task


def test_a_crashed_schedulers_lock_is_taken_over_at_once(cluster, make_identity, run_in_thread, tmp_path):
    # Given the lock of a scheduler that crashed on this machine, with most of its TTL left
    crashed = OwnerId(socket.gethostname(), _dead_pid(), 1000, "0badc0de", pid_namespace())
    cluster.queue.client.set(cluster.queue.keys.scheduler_lock, str(crashed), px=LEADER_LOCK_TTL_MS)
    task = _queued_task(cluster, make_identity, tmp_path)

    # When a new scheduler starts, Then it leads and assigns the task well before the old lock would expire
    started = time.monotonic()
    dispatcher = Dispatcher(cluster)
    stop = run_in_thread(dispatcher.run)
    wait_until(lambda: cluster.queue.assignments().get(task.id), timeout_s=10)
    assert time.monotonic() - started < LEADER_LOCK_TTL_MS / 1000
    assert _lock(cluster) == str(dispatcher.leader.me)

    # And a clean stop gives the lock up, so the next scheduler need not wait either
    stop.set()
    wait_until(lambda: _lock(cluster) is None, timeout_s=10)


def test_a_live_schedulers_lock_is_left_alone(cluster, make_identity, run_in_thread, tmp_path):
    # Given the lock of a live scheduler on this machine (pid 1 stands in for it)
    live = str(OwnerId(socket.gethostname(), 1, process_started(1) or 0, "0000beef", pid_namespace()))
    cluster.queue.client.set(cluster.queue.keys.scheduler_lock, live, px=LEADER_LOCK_TTL_MS)
    task = _queued_task(cluster, make_identity, tmp_path)

    # When a second scheduler runs, Then it does not pass (the task stays unassigned) and the lock stays
    stop = run_in_thread(Dispatcher(cluster).run)
    time.sleep(1.5)  # a few of its loops (each waits at most 1 s for the doorbell)
    assert cluster.queue.assignments().get(task.id) is None
    assert _lock(cluster) == live
    stop.set()
