"""One worker per node: a worker holds its node's owner key in Redis from start to shutdown.

A starting worker reconciles its node (`Worker.reconcile`): it kills every job process of the node that it
does not run itself and settles those tasks as lost. Started while another worker serves the same node (a
second `nightshift up` on the same machine, two machines given the same node name), it would kill that
worker's running jobs. So a worker first takes the node's owner key, and refuses to start while a live
worker holds it. The key expires when its holder stops renewing it (a crash); a holder on this machine
whose process is gone is taken over at once (`held_key.HeldKey`).
"""

from __future__ import annotations

import time

import redis

from scheduler.errors import NightshiftError
from scheduler.held_key import HeldKey, OwnerId
from scheduler.keys import RedisKeys


class NodeTaken(NightshiftError):
    """Raised when another live worker already serves this node."""


class NodeOwnership:
    """The owner key of one node, held by one worker while it runs."""

    def __init__(self, client: redis.Redis, keys: RedisKeys, node: str, ttl_s: float) -> None:
        self.node = node
        self.held = HeldKey(client, keys.node_owner(node), int(ttl_s * 1000))
        self.me = self.held.me

    def claim(self, wait_s: float | None = None) -> None:
        """Hold the node, waiting up to `wait_s` (default: one TTL) for a holder that stopped renewing to
        expire; raise `NodeTaken` naming the holder when a live one keeps it."""
        deadline = time.monotonic() + (self.held.ttl_ms / 1000 + 1 if wait_s is None else wait_s)
        while True:
            text = self.held.hold()
            if text is None:
                return
            holder = OwnerId.parse(text)
            alive_here = holder is not None and holder.on_this_machine()  # and not gone: `hold` took those
            if alive_here or time.monotonic() >= deadline:
                who = f"pid {holder.pid} on {holder.host}" if holder is not None else text
                raise NodeTaken(
                    f"node {self.node!r} is already served by another worker ({who}; is `nightshift up` or "
                    "`nightshift worker` already running?): stop it first, or give this worker another "
                    "name with NIGHTSHIFT_NODE_NAME",
                    node=self.node,
                    holder=text,
                )
            time.sleep(0.2)

    def renew(self) -> bool:
        """Extend our hold (taking the node again if the key was lost with Redis's data); False when
        another worker holds it now."""
        return self.held.renew()

    def release(self) -> None:
        """Give the node up (only if we still hold it)."""
        self.held.release()
