"""A nightshift cluster as separate OS processes (`nightshift api | scheduler | worker`) sharing one
SQLite file and one Redis, for the chaos and SIGSTOP tests and `bench/chaos_recovery.py`.

Fast failure detection for tests: lease TTL 3 s, heartbeat 0.5 s, safety pass 0.5 s, no retry backoff.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from scheduler.store.db import create_db_engine, make_session_factory, migrate
from scheduler.store.identity import create_token
from scheduler.store.tasks import TaskStore
from tests.conftest import stops_with_test_run

NIGHTSHIFT = str(Path(sys.executable).parent / "nightshift")
FAST = {
    "NIGHTSHIFT_LEASE_TTL_S": "3",
    "NIGHTSHIFT_HEARTBEAT_INTERVAL_S": "0.5",
    "NIGHTSHIFT_KILL_GRACE_S": "1",
    "NIGHTSHIFT_SCHEDULER_SAFETY_PASS_S": "0.5",
    "NIGHTSHIFT_RETRY_BACKOFF_S": "0",
    "NIGHTSHIFT_TIMEZONE": "UTC",
    "NIGHTSHIFT_ALLOW_ROOT_JOBS": "true",
    "NIGHTSHIFT_RATE_LIMIT_PER_S": "0",
}


def poll(predicate: Callable[[], Any], timeout_s: float = 60.0, what: str = "condition") -> Any:
    """Poll until `predicate` returns something truthy; AssertionError after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.05)
    return value


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Stack:
    """Start, kill -9, pause and resume the parts of one cluster; `close()` ends every process it started."""

    def __init__(
        self, folder: Path, redis_url: str, database_url: str | None = None, **overrides: str
    ) -> None:
        self.folder = folder
        self.home = folder / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.database_url = database_url or f"sqlite:///{folder / 'nightshift.db'}"
        self.env = {key: value for key, value in os.environ.items() if not key.startswith("NIGHTSHIFT_")}
        self.env.update(
            FAST,
            NIGHTSHIFT_HOME=str(self.home),
            NIGHTSHIFT_DATABASE_URL=self.database_url,
            NIGHTSHIFT_REDIS_URL=redis_url,
            **overrides,
        )
        self.engine = create_db_engine(self.database_url)
        migrate(self.engine)
        self.factory = make_session_factory(self.engine)
        self.tasks = TaskStore(self.factory)
        self.token = create_token(self.factory, user="alice", team="vision", is_admin=True)
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.port = _free_port()
        self.api = httpx.Client(
            base_url=f"http://127.0.0.1:{self.port}", headers={"Authorization": f"Bearer {self.token}"}
        )

    def start(self, name: str, *args: str, **env: str) -> subprocess.Popen[bytes]:
        """Start `nightshift ARGS` as process `name` (its output in `<name>.log`)."""
        log = open(self.folder / f"{name}.log", "ab")  # noqa: SIM115 - the child holds it
        process = subprocess.Popen(
            [*stops_with_test_run(), NIGHTSHIFT, *args],
            env={**self.env, **env},
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        self.processes[name] = process
        return process

    def start_api(self) -> None:
        """Start the API and wait until it answers."""
        self.start("api", "api", "--port", str(self.port))
        poll(lambda: self._healthy(), what="the API to answer /healthz")

    def _healthy(self) -> bool:
        try:
            return self.api.get("/healthz").status_code == 200
        except httpx.HTTPError:
            return False

    def start_worker(self, name: str, gpus: str = "2x24", own_home: bool = False) -> None:
        """Start a worker for node `name` with simulated GPUs; with `own_home`, in a data folder of its own
        (logs, outputs), as on another machine."""
        env = {"NIGHTSHIFT_NODE_NAME": name, "NIGHTSHIFT_SIMULATE_GPUS": gpus}
        if own_home:
            home = self.folder / f"home-{name}"
            home.mkdir(exist_ok=True)
            env["NIGHTSHIFT_HOME"] = str(home)
        self.start(name, "worker", **env)

    def submit(self, spec: dict[str, Any]) -> int:
        """Submit through the API; the task id."""
        response = self.api.post("/api/v1/tasks", json=spec)
        assert response.status_code == 201, response.text
        return int(response.json()["id"])

    def kill9(self, name: str) -> None:
        """SIGKILL one process and reap it."""
        process = self.processes.pop(name)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)

    def signal(self, name: str, sig: int) -> None:
        """Send a signal to one process (SIGSTOP / SIGCONT)."""
        self.processes[name].send_signal(sig)

    def log(self, name: str) -> str:
        """What process `name` printed so far."""
        path = self.folder / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def statuses(self, ids: list[int]) -> dict[int, str]:
        """Status of each task, from SQL."""
        return self.tasks.statuses(ids)

    def close(self) -> None:
        """SIGCONT + SIGTERM every process, then SIGKILL what is left."""
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        self.processes.clear()
        self.api.close()
        self.engine.dispose()
