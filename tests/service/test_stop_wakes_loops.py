"""A worker or scheduler told to stop is woken at once from its doorbell wait (a BLPOP of up to 2 s), so
`nightshift up` exits promptly on Ctrl-C."""

from __future__ import annotations

import threading

import redis

from scheduler.wakeup import ring_when_set


def test_the_doorbell_rings_once_the_stop_is_set_and_not_before(cluster):
    stop = threading.Event()
    waker = ring_when_set(stop, lambda: cluster.queue.ring_node("node-a"), "worker")

    assert cluster.queue.wait_node_doorbell("node-a", 0.2) is False  # not told to stop: nothing rings
    stop.set()

    assert cluster.queue.wait_node_doorbell("node-a", 30) is True
    waker.join(timeout=30)
    assert not waker.is_alive()


def test_a_redis_gone_at_stop_time_is_no_error_of_the_waker():
    stop = threading.Event()
    rung: list[str] = []

    def ring() -> None:
        rung.append("tried")
        raise redis.ConnectionError("redis has stopped")

    waker = ring_when_set(stop, ring, "scheduler")
    stop.set()
    waker.join(timeout=30)

    assert rung == ["tried"] and not waker.is_alive()
