"""A Redis key that one live process holds at a time, with a TTL its holder renews: a node's owner key (one
worker per node) and the scheduler's leader lock.

The holder's id names its machine and process (pid and start time). When the holder crashes its key
outlives it until the TTL runs out, and Redis's AOF brings it back after a restart; a holder on this
machine whose process is gone (its pid free, reused, or a zombie) is therefore taken over at once instead
of after the TTL. A holder on another machine is taken over once its key expires.
"""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass

import redis

from scheduler.store.queue import load_script


def process_started(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot, /proc/PID/stat), or None when there is none:
    with the pid it names one process, however often pids are reused (a restarted container's pid 1).
    A zombie counts as none: it has ended, and only waits for a parent to collect its status, which
    may never come where pid 1 does not reap (many containers)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            fields = stat.read().rpartition(")")[2].split()
        return None if fields[0] in ("Z", "X") else int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def pid_namespace() -> str:
    """This process's PID namespace (`4026531836`), or "" where /proc does not say: pids are only
    comparable inside one namespace (containers sharing a host name have their own)."""
    try:
        return os.readlink("/proc/self/ns/pid").partition("[")[2].rstrip("]")
    except OSError:
        return ""


@dataclass(frozen=True, slots=True)
class OwnerId:
    """Who holds a key: machine and PID namespace, process (pid and start time) and a nonce (two holders
    in one process differ too)."""

    host: str
    pid: int
    started: int
    nonce: str
    pid_ns: str = ""

    @classmethod
    def here(cls) -> OwnerId:
        """A new id for a holder in this process."""
        pid = os.getpid()
        started = process_started(pid) or 0
        return cls(socket.gethostname(), pid, started, secrets.token_hex(4), pid_namespace())

    @classmethod
    def parse(cls, text: str) -> OwnerId | None:
        """The id written by `__str__`, or None for anything else."""
        host, _, rest = text.rpartition(" pid ")
        parts = rest.split()
        if len(parts) == 6 and parts[3] == "ns":
            parts, pid_ns = [*parts[:3], parts[5]], parts[4]
        else:
            pid_ns = ""
        if not host or len(parts) != 4 or parts[1] != "started" or not (parts[0] + parts[2]).isdigit():
            return None
        return cls(host, int(parts[0]), int(parts[2]), parts[3], pid_ns)

    def __str__(self) -> str:
        ns = f" ns {self.pid_ns}" if self.pid_ns else ""
        return f"{self.host} pid {self.pid} started {self.started}{ns} {self.nonce}"

    def on_this_machine(self) -> bool:
        """True when the holder ran on this machine (same host name) where we can see its pid (same PID
        namespace: a container sharing the host's name has pids of its own)."""
        return self.host == socket.gethostname() and self.pid_ns == pid_namespace()

    def gone(self) -> bool:
        """True when this holder ran on this machine and its process no longer exists (its pid is free, or
        now names a process that started at another time, or a zombie)."""
        return self.on_this_machine() and process_started(self.pid) != self.started


class HeldKey:
    """One key held by `me` while it renews it within `ttl_ms`."""

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int, me: OwnerId | None = None) -> None:
        self.client = client
        self.key = key
        self.ttl_ms = max(1, ttl_ms)
        self.me = me or OwnerId.here()
        self._set = load_script(client, "held_key_set")
        self._release = load_script(client, "held_key_release")

    def hold(self) -> str | None:
        """Take or renew the key (one round trip while we hold it), taking it over from a holder whose
        process is gone; None when we hold it now, else the id of the live holder who does."""
        while True:
            if self.renew():
                return None
            seen = self.client.get(self.key)
            if seen is None:
                continue  # expired between the two calls
            text = seen.decode() if isinstance(seen, bytes) else str(seen)
            holder = OwnerId.parse(text)
            if holder is None or not holder.gone():
                return text
            if self._set(keys=[self.key], args=[text, str(self.me), self.ttl_ms]):
                return None

    def renew(self) -> bool:
        """Extend our hold (taking the key if it is free, e.g. lost with Redis's data); False when
        another holds it."""
        return bool(self._set(keys=[self.key], args=[str(self.me), str(self.me), self.ttl_ms]))

    def release(self) -> None:
        """Give the key up (only if we still hold it)."""
        self._release(keys=[self.key], args=[str(self.me)])
