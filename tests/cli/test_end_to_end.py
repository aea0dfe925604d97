"""The issue's "Done when", for real: `nightshift up` with zero set-up, then the CLI as a person uses it."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import psutil
import pytest

from scheduler.errors import ServiceUnavailable
from scheduler.redis_server import find_redis_server, free_port
from tests.conftest import stops_with_test_run, unavailable, wait_until

CONSOLE_SCRIPT = Path(sys.executable).with_name(
    "nightshift"
)  # the `nightshift = api.cli.app:main` entry point
NIGHTSHIFT = (
    [str(CONSOLE_SCRIPT)]
    if CONSOLE_SCRIPT.is_file()
    else [sys.executable, "-c", "from api.cli.app import main; main()"]
)
REPO = Path(__file__).resolve().parents[2]


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class Shell:
    """Runs `nightshift ...` in a subprocess with the test's environment."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.env = env
        self.cwd = cwd

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [*NIGHTSHIFT, *args], env=self.env, cwd=self.cwd, capture_output=True, text=True, timeout=60
        )
        if check and result.returncode != 0:
            raise AssertionError(f"nightshift {' '.join(args)} exited {result.returncode}: {result.stderr}")
        return result

    def tasks(self) -> dict[int, dict[str, object]]:
        return {task["id"]: task for task in json.loads(self.run("ls", "--json").stdout)}

    def submit(self, *command: str) -> int:
        out = self.run("submit", "--", *command).stdout
        match = re.search(r"submitted task (\d+)", out)
        assert match, out
        return int(match.group(1))


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    try:
        find_redis_server()
    except ServiceUnavailable as exc:  # a machine without redis-server: same rule as the shared fixtures
        unavailable(f"redis-server not available: {exc.message}")
    port = free_port()
    values = {k: v for k, v in os.environ.items() if not k.startswith("NIGHTSHIFT_")}
    values.update(
        NIGHTSHIFT_HOME=str(tmp_path / "home"),
        NIGHTSHIFT_SIMULATE_GPUS="4x24",
        NIGHTSHIFT_API_URL=f"http://127.0.0.1:{port}",
        NIGHTSHIFT_NODE_NAME="e2e-node",
        NIGHTSHIFT_KILL_GRACE_S="2",
        NIGHTSHIFT_LOG_LEVEL="WARNING",
        NIGHTSHIFT_ALLOW_ROOT_JOBS="true",  # CI runs as root; the refusal has its own tests
        PYTHONPATH=str(REPO),
    )
    return values


@pytest.mark.slow  # 10 s on an idle machine, over 20 s when busy: about 15 CLI processes
def test_nightshift_up_runs_submitted_tasks_shows_their_logs_and_cancels_with_no_process_left(env, tmp_path):
    home = Path(env["NIGHTSHIFT_HOME"])
    url = env["NIGHTSHIFT_API_URL"]
    port = url.rsplit(":", 1)[1]
    server_log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [*stops_with_test_run(), *NIGHTSHIFT, "up", "--port", port],
        env=env,
        cwd=tmp_path,
        stdout=server_log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    redis_pid: int | None = None
    sleep_pid: int | None = None
    try:
        wait_until(lambda: server.poll() is not None or _healthy(url), timeout_s=30, interval_s=0.1)
        assert server.poll() is None, (tmp_path / "server.log").read_text()

        # Zero set-up: an embedded redis-server of our own, and a local admin token only its owner can read.
        token_file = home / "admin.token"
        assert token_file.is_file()
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        redis_port = int((home / "redis.url").read_text().strip().rsplit(":", 1)[1].split("/")[0])
        redis_pid = _child_listening_on(server.pid, redis_port)

        shell = Shell(env, tmp_path)
        ids = [shell.submit("echo", "hi") for _ in range(3)]
        assert len(set(ids)) == 3
        wait_until(
            lambda: all(shell.tasks()[i]["status"] == "succeeded" for i in ids), timeout_s=30, interval_s=0.3
        )
        for task_id in ids:
            assert "hi" in shell.run("logs", str(task_id)).stdout.splitlines()

        # a script named as the command, as `sbatch run.sh` takes one: run with its interpreter, and said so
        (tmp_path / "hello.sh").write_text('echo "from a script: $1"\n')
        scripted = shell.run("submit", "hello.sh", "x")
        assert (
            "note: running `bash hello.sh x`: hello.sh is a script, not a command on PATH" in scripted.stderr
        )
        script_id = int(re.findall(r"submitted task (\d+)", scripted.stdout)[0])
        wait_until(lambda: shell.tasks()[script_id]["status"] == "succeeded", timeout_s=30, interval_s=0.3)
        logged = shell.run("logs", str(script_id)).stdout.splitlines()
        assert "==> $ bash hello.sh x" in logged and "from a script: x" in logged

        pid_file = tmp_path / "sleep.pid"
        sleeper = shell.submit(f"echo $$ > {pid_file}; exec sleep 300")
        wait_until(lambda: pid_file.is_file() and pid_file.read_text().strip(), timeout_s=30)
        sleep_pid = int(pid_file.read_text())
        assert _alive(sleep_pid)
        assert shell.tasks()[sleeper]["status"] == "running"
        cancelled = shell.run("cancel", str(sleeper))
        assert (
            f"task {sleeper} is stopping (SIGTERM, then SIGKILL after the grace period)" in cancelled.stdout
        )
        wait_until(lambda: shell.tasks()[sleeper]["status"] == "cancelled", timeout_s=30, interval_s=0.3)
        wait_until(lambda: not _alive(sleep_pid), timeout_s=30)

        refused = shell.run("submit", "--gpus", "9", "--", "x", check=False)
        assert refused.returncode != 0
        # the API's message first, once (its one detail says the same)
        assert refused.stderr.splitlines() == [
            "error: gpus must be between 0 and 4 on this cluster (the largest node has 4 GPUs); you asked for 9"
        ]
        assert len(shell.tasks()) == 5

        later = re.search(r"task (\d+)", shell.run("submit", "--after", "+1h", "--", "echo", "x").stdout)
        assert later is not None
        not_yet = shell.run("logs", later.group(1))
        assert not_yet.stdout == ""
        assert f"task {later.group(1)} is waiting to start (waiting until " in not_yet.stderr

        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 0
        wait_until(lambda: not _alive(redis_pid), timeout_s=15)
        assert not (home / "redis.url").exists()
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)
        for leftover in (redis_pid, sleep_pid):  # only if the test failed before they were stopped
            if leftover is not None and _alive(leftover):
                psutil.Process(leftover).kill()
        server_log.close()


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _child_listening_on(parent_pid: int, port: int) -> int:
    for child in psutil.Process(parent_pid).children(recursive=True):
        try:
            if any(conn.laddr.port == port for conn in child.net_connections(kind="tcp")):
                assert "redis" in child.name()
                return int(child.pid)
        except psutil.Error:
            continue
    raise AssertionError(f"no child of the server listens on the embedded Redis port {port}")
