"""`api_workers`: several API processes on one port share each token's rate limit (kept in Redis), serve
submissions into the same cluster, and all stop with their parent."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import httpx
import psutil
import pytest

from tests.cli.test_end_to_end import NIGHTSHIFT, _alive, _healthy, env  # noqa: F401 - `env` is a fixture
from tests.conftest import stops_with_test_run, wait_until


def _api_children(parent_pid: int) -> list[psutil.Process]:
    """The API processes among `nightshift up`'s children (not its redis-server, multiprocessing's resource
    tracker, the worker's spare job shell or its job sentinel)."""
    others = ("resource_tracker", "nightshift-spare", "scheduler.executor.sentinel")
    return [
        p
        for p in psutil.Process(parent_pid).children()
        if "redis" not in p.name() and not any(word in " ".join(p.cmdline()) for word in others)
    ]


def _serves_client(process: psutil.Process, port: int, client_port: int) -> bool:
    """True when `process` holds the server side of the connection from `client_port`."""
    connections = process.net_connections(kind="tcp")
    return any(c.laddr.port == port and c.raddr and c.raddr.port == client_port for c in connections)


@pytest.mark.slow
def test_two_api_processes_share_the_rate_limit_and_stop_together(env, tmp_path):  # noqa: F811
    env = {**env, "NIGHTSHIFT_API_WORKERS": "2", "NIGHTSHIFT_RATE_LIMIT_PER_S": "0.001",
           "NIGHTSHIFT_RATE_LIMIT_BURST": "6"}  # fmt: skip
    url = env["NIGHTSHIFT_API_URL"]
    port = url.rsplit(":", 1)[1]
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [*stops_with_test_run(), *NIGHTSHIFT, "up", "--port", port], env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    children: list[psutil.Process] = []
    try:
        wait_until(lambda: server.poll() is not None or _healthy(url), timeout_s=60, interval_s=0.1)
        assert server.poll() is None, (tmp_path / "server.log").read_text()
        children = wait_until(lambda: len(_api_children(server.pid)) == 2 and _api_children(server.pid))
        token = (Path(env["NIGHTSHIFT_HOME"]) / "admin.token").read_text().strip()
        headers = {"Authorization": f"Bearer {token}"}
        spec = {"command": "true", "workdir": str(tmp_path)}

        # connections until each process holds one (the kernel hands new ones to either), then requests
        # alternating between a connection of each
        clients: list[httpx.Client] = []
        by_process: dict[int, httpx.Client] = {}
        try:
            while len(by_process) < 2 and len(clients) < 60:
                http = httpx.Client(base_url=url, headers=headers, timeout=30)
                clients.append(http)
                response = http.get("/healthz")  # not rate limited
                local_port = response.extensions["network_stream"].get_extra_info("client_addr")[1]
                owner = next(p.pid for p in children if _serves_client(p, int(port), local_port))
                by_process.setdefault(owner, http)
            assert len(by_process) == 2, "the kernel gave every connection to one process"
            pair = list(by_process.values())
            codes = [pair[i % 2].post("/api/v1/tasks", json=spec).status_code for i in range(12)]
        finally:
            for http in clients:
                http.close()

        assert codes.count(201) == 6, codes  # the burst of one token, not one burst per process
        assert set(codes[6:]) == {429}
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 0
        log.close()
    wait_until(lambda: not any(_alive(p.pid) for p in children), timeout_s=15)
