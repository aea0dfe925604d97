"""One worker per node: a worker holds its node's owner key in Redis from start to shutdown.

A starting worker reconciles its node (`Worker.reconcile`): it kills every job process of the node that it
does not run itself and settles those tasks as lost. Started while another worker serves the same node (a
second `nightshift up` on the same machine, two machines given the same node name), it would kill that
worker's running jobs. So a worker first takes the node's owner key, and refuses to start while a live
worker holds it. The key expires when its holder stops renewing it (a crash); a holder on this machine
whose process is gone is taken over at once.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from dataclasses import dataclass

import redis

from scheduler.errors import NightshiftError
from scheduler.keys import RedisKeys
from scheduler.store.queue import load_script


class NodeTaken(NightshiftError):
    """Raised when another live worker already serves this node."""


def process_started(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot, /proc/PID/stat), or None when there is none:
    with the pid it names one process, however often pids are reused (a restarted container's pid 1)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            fields = stat.read().rpartition(")")[2].split()
        return int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


@dataclass(frozen=True, slots=True)
class OwnerId:
    """Who holds a node: machine, process (pid and start time) and a nonce (two workers of one process
    differ too)."""

    host: str
    pid: int
    started: int
    nonce: str

    @classmethod
    def here(cls) -> OwnerId:
        """A new id for a worker of this process."""
        pid = os.getpid()
        return cls(socket.gethostname(), pid, process_started(pid) or 0, secrets.token_hex(4))

    @classmethod
    def parse(cls, text: str) -> OwnerId | None:
        """The id written by `__str__`, or None for anything else."""
        host, _, rest = text.rpartition(" pid ")
        parts = rest.split()
        if not host or len(parts) != 4 or parts[1] != "started" or not (parts[0] + parts[2]).isdigit():
            return None
        return cls(host, int(parts[0]), int(parts[2]), parts[3])

    def __str__(self) -> str:
        return f"{self.host} pid {self.pid} started {self.started} {self.nonce}"

    def on_this_machine(self) -> bool:
        """True when the holder ran on this machine (same host name)."""
        return self.host == socket.gethostname()

    def gone(self) -> bool:
        """True when this holder ran on this machine and its process no longer exists (its pid is free, or
        now names a process that started at another time)."""
        return self.on_this_machine() and process_started(self.pid) != self.started


class NodeOwnership:
    """The owner key of one node, held by one worker while it runs."""

    def __init__(self, client: redis.Redis, keys: RedisKeys, node: str, ttl_s: float) -> None:
        self.client = client
        self.key = keys.node_owner(node)
        self.node = node
        self.ttl_ms = max(1, int(ttl_s * 1000))
        self.me = OwnerId.here()
        self._set = load_script(client, "node_owner_set")
        self._release = load_script(client, "node_owner_release")

    def claim(self, wait_s: float | None = None) -> None:
        """Hold the node, waiting up to `wait_s` (default: one TTL) for a holder that stopped renewing to
        expire; raise `NodeTaken` naming the holder when a live one keeps it."""
        deadline = time.monotonic() + (self.ttl_ms / 1000 + 1 if wait_s is None else wait_s)
        while True:
            if self.client.set(self.key, str(self.me), nx=True, px=self.ttl_ms):
                return
            seen = self.client.get(self.key)
            if seen is None:
                continue  # expired between the two calls
            text = seen.decode() if isinstance(seen, bytes) else str(seen)
            if text == str(self.me):
                return
            holder = OwnerId.parse(text)
            if holder is not None and holder.gone():
                if self._set(keys=[self.key], args=[text, str(self.me), self.ttl_ms]):
                    return
                continue
            alive_here = holder is not None and holder.on_this_machine()  # and not gone, as checked above
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
        return bool(self._set(keys=[self.key], args=[str(self.me), str(self.me), self.ttl_ms]))

    def release(self) -> None:
        """Give the node up (only if we still hold it)."""
        self._release(keys=[self.key], args=[str(self.me)])
