"""Fixtures for telemetry, accounting, watchdogs and notifications: a fake clock, a worker with simulated
GPUs and its telemetry agent, local webhook receivers (http.server) and a local SMTP server (aiosmtpd)."""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from scheduler.dispatcher import Dispatcher
from scheduler.gpus import SimulatedGpus
from scheduler.notify.notifier import Notifier
from scheduler.service import Cluster
from scheduler.telemetry.agent import WorkerTelemetry
from scheduler.telemetry.host import HostReading
from scheduler.worker import Worker
from tests.conftest import wait_until


class FakeClock:
    """A clock tests move by hand."""

    def __init__(self, start_s: float) -> None:
        self.now_s = start_s

    def __call__(self) -> float:
        return self.now_s

    def advance(self, seconds: float) -> float:
        self.now_s += seconds
        return self.now_s


@dataclass
class Node:
    """A worker on simulated GPUs, its telemetry (not started: tests call `sample_once`) and its clock."""

    worker: Worker
    gpus: SimulatedGpus
    telemetry: WorkerTelemetry
    clock: FakeClock


@pytest.fixture
def start_node(cluster: Cluster, run_in_thread) -> Iterator[Callable[..., Node]]:
    """Factory: a worker (and the scheduler) in threads, with a telemetry agent driven by a fake clock.

    At the end the workers are stopped and their job threads awaited before the cluster closes.
    """
    stops: list[threading.Event] = []

    def start(
        gpus: str = "4x24",
        node: str = "node-a",
        start_s: float = 1_780_000_000.0,
        notifier: Notifier | None = None,
        scheduler: bool = True,
        **overrides: Any,
    ) -> Node:
        monitor = SimulatedGpus(gpus, node=node)
        worker = Worker(cluster, node, monitor, base_env=dict(os.environ))
        clock = FakeClock(start_s)
        telemetry = WorkerTelemetry(
            worker,
            notifier=notifier,
            clock=clock,
            host_reader=lambda: HostReading(12.5, 40.0, 55.0),
            settings=cluster.settings.model_copy(update=overrides),
        ).attach()
        worker.publish_node()
        if scheduler:
            run_in_thread(Dispatcher(cluster).run)
        stops.append(run_in_thread(worker.run))
        return Node(worker, monitor, telemetry, clock)

    yield start
    for stop in stops:
        stop.set()
    wait_until(
        lambda: (
            not [t for t in threading.enumerate() if t.name.startswith(("wait-", "stop-")) and t.is_alive()]
        )
    )


@dataclass
class Received:
    """One request a receiver got."""

    path: str
    body: Any
    headers: dict[str, str]


@dataclass
class Receiver:
    """A local webhook receiver: answers `failures` requests with 500 first (or `error_body` with 200)."""

    url: str
    requests: list[Received] = field(default_factory=list)
    attempts: int = 0
    failures: int = 0
    error_body: dict[str, Any] | None = None
    ok_body: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


@pytest.fixture
def receiver() -> Iterator[Callable[..., Receiver]]:
    """Factory: `receiver(failures=1)` starts an http.server on a free port that records what it gets."""
    servers: list[ThreadingHTTPServer] = []

    def make(
        failures: int = 0, error_body: dict[str, Any] | None = None, ok_body: dict[str, Any] | None = None
    ) -> Receiver:
        state = Receiver(url="", failures=failures, error_body=error_body, ok_body=ok_body or {})

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"null")
                with state.lock:
                    state.attempts += 1
                    failing = state.attempts <= state.failures
                    if not failing:
                        state.requests.append(Received(self.path, body, dict(self.headers)))
                if failing and state.error_body is None:
                    self.send_response(500)
                    self.end_headers()
                    self.wfile.write(b"try again later")
                    return
                answer = json.dumps(state.error_body if failing else state.ok_body).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        state.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        return state

    yield make
    for server in servers:
        server.shutdown()
        server.server_close()


@dataclass
class Mailbox:
    """Messages a local SMTP server received."""

    host: str
    port: int
    messages: list[Any] = field(default_factory=list)


@pytest.fixture
def smtp_server() -> Iterator[Mailbox]:
    """A real SMTP server (aiosmtpd) on a free local port, collecting messages."""
    from aiosmtpd.controller import Controller
    from aiosmtpd.handlers import Message

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    box = Mailbox("127.0.0.1", port)

    class Collect(Message):
        def handle_message(self, message: Any) -> None:
            box.messages.append(message)

    controller = Controller(Collect(), hostname="127.0.0.1", port=port)
    controller.start()
    yield box
    controller.stop()
