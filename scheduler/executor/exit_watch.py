"""Learn the moment a job's leader process exits, for all jobs of a worker in one thread.

Each leader gets a pidfd (`os.pidfd_open`, Linux 5.3+), which turns readable when the process exits
(without reaping it: the job's `poll` still owns that); one thread waits on all of them with epoll and
calls `on_exit` once per wake-up with the pids that exited together. This replaces a waiting thread per job,
whose start alone cost a worker about a millisecond per task. Where pidfds are not available
(`ExitWatcher.supported()` is False) the worker falls back to a thread per job.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class ExitWatcher:
    """Watches job leaders' pids and calls `on_exit(pids)` (from its own thread) with those that exited."""

    def __init__(self, on_exit: Callable[[list[int]], None], name: str = "exit-watch") -> None:
        self._on_exit = on_exit
        self._selector = selectors.DefaultSelector()
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        self._selector.register(self._wake_read, selectors.EVENT_READ)
        self._lock = threading.Lock()
        self._pending: list[tuple[int, int]] = []  # (pidfd, pid) to register, handed over by `watch`
        self._pids: dict[int, int] = {}  # registered pidfd -> its pid (the watcher thread's own)
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @staticmethod
    def supported() -> bool:
        """True when this kernel and Python offer pidfds (else a worker waits with a thread per job)."""
        if not hasattr(os, "pidfd_open"):
            return False
        try:
            os.close(os.pidfd_open(os.getpid()))
        except OSError:
            return False
        return True

    def watch(self, pid: int) -> None:
        """Call `on_exit` once `pid` (a child of this process) has exited; at once if it is already gone."""
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:  # reaped already: it is over
            self._on_exit([pid])
            return
        with self._lock:
            if self._closed:
                os.close(pidfd)
                return
            self._pending.append((pidfd, pid))
        self._wake()

    def close(self) -> None:
        """Stop the thread and close every descriptor."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._wake()
        self._thread.join(timeout=5)

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._wake_write, b"x")

    def _run(self) -> None:
        try:
            while True:
                events = self._selector.select(timeout=5.0)
                exited: list[int] = []
                for key, _ in events:
                    if key.fd == self._wake_read:
                        with contextlib.suppress(BlockingIOError, OSError):
                            os.read(self._wake_read, 4096)
                        continue
                    self._selector.unregister(key.fd)
                    os.close(key.fd)
                    exited.append(self._pids.pop(key.fd))
                with self._lock:
                    pending, self._pending = self._pending, []
                    closed = self._closed
                if closed:
                    for pidfd, _ in pending:
                        os.close(pidfd)
                    return
                for pidfd, pid in pending:
                    self._pids[pidfd] = pid
                    self._selector.register(pidfd, selectors.EVENT_READ)
                if exited:
                    try:
                        self._on_exit(exited)
                    except Exception:
                        log.exception("exit watcher: on_exit failed")
        finally:
            for key in list(self._selector.get_map().values()):
                with contextlib.suppress(OSError):
                    os.close(key.fd)
            self._selector.close()
            os.close(self._wake_write)
