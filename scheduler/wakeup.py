"""Waking a service loop that blocks on a Redis doorbell (BLPOP, up to seconds) as soon as it is told to stop,
so `nightshift up` exits at once on Ctrl-C and a stopped worker hands back its node without waiting out the
block."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable

import redis

log = logging.getLogger(__name__)


def ring_when_set(stop: threading.Event, ring: Callable[[], None], name: str) -> threading.Thread:
    """Start a daemon thread that calls `ring` (a doorbell of the loop that watches `stop`) once `stop` is
    set; it ends with that call."""

    def wait_then_ring() -> None:
        stop.wait()
        with contextlib.suppress(redis.RedisError):  # Redis already gone: the loop's block times out anyway
            ring()

    thread = threading.Thread(target=wait_then_ring, name=f"{name}-wakeup", daemon=True)
    thread.start()
    return thread
