"""Shared helpers of the `bench/*.py` benchmarks: machine info, percentiles, a throw-away nightshift.

Not a benchmark itself (it lives in a folder, so `make bench`'s `bench/*.py` loop skips it).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psutil

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
NIGHTSHIFT = str(BIN / "nightshift") if (BIN / "nightshift").exists() else "nightshift"


def machine() -> dict[str, Any]:
    """CPU count and model, and the load when the benchmark started (other people share this machine)."""
    model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "loadavg_1m": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
    }


def process_cpu_s(proc: psutil.Process) -> float:
    """User + system CPU seconds of a process (its own threads; children only once reaped)."""
    times = proc.cpu_times()
    return float(times.user + times.system)


def machine_cpu_s() -> float:
    """Busy CPU seconds of the whole machine, all cores, since boot."""
    t = psutil.cpu_times()
    return float(t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0))


def pct(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by nearest rank; nan for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[rank]


def summary(values_s: Sequence[float], scale: float = 1000.0, digits: int = 2) -> dict[str, float]:
    """n, p50, p90, p99, max (in ms by default) of a list of seconds."""
    return {
        "n": len(values_s),
        "p50": round(pct(values_s, 50) * scale, digits),
        "p90": round(pct(values_s, 90) * scale, digits),
        "p99": round(pct(values_s, 99) * scale, digits),
        "max": round(max(values_s) * scale, digits) if values_s else float("nan"),
    }


def emit(result: dict[str, Any]) -> None:
    """Print the benchmark's one JSON line."""
    print(json.dumps(result, separators=(",", ":")), flush=True)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def bench_dir() -> str | None:
    """Where temp homes go: $NIGHTSHIFT_BENCH_DIR, else /var/tmp, else the system default.

    Not /tmp by default: on the VMs these benchmarks run on, creating a file or folder under /tmp takes
    ~0.7 ms against ~0.03 ms anywhere else on the same disk (measured with os.mkdir, 300 in a row), and a
    task's log file and two folders would make that the figure measured. A node's home is ~/.nightshift.
    """
    chosen = os.environ.get("NIGHTSHIFT_BENCH_DIR")
    if chosen:
        return chosen
    return "/var/tmp" if os.access("/var/tmp", os.W_OK) else None


@contextmanager
def temp_home(prefix: str) -> Iterator[Path]:
    """A throw-away nightshift home (see `bench_dir`), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix=f"nsbench-{prefix}-", dir=bench_dir()))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def base_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a nightshift process under `home` (no inherited NIGHTSHIFT_* settings)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIGHTSHIFT_")}
    # jobs run as the worker's user (root on these machines): allowed explicitly, as a benchmark needs
    env.update(
        {
            "NIGHTSHIFT_HOME": str(home),
            "NIGHTSHIFT_NODE_NAME": "bench-node",
            "NIGHTSHIFT_ALLOW_ROOT_JOBS": "true",
        }
    )
    env.update({f"NIGHTSHIFT_{k.upper()}": v for k, v in extra.items()})
    return env


class Nightshift:
    """One `nightshift <part>` process in a temp home; `stop()` sends SIGTERM and waits."""

    def __init__(self, home: Path, part: str = "up", gpus: str | None = "8x24", **extra: str) -> None:
        self.home = home
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        settings = dict(extra)
        if gpus:
            settings["simulate_gpus"] = gpus
        settings.setdefault("port", str(self.port))
        settings.setdefault("api_url", self.url)
        self.env = base_env(home, **settings)
        self.part = part
        self.log_path = home / f"nightshift-{part}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.token = ""

    def start(self, wait_api: bool = True, timeout_s: float = 60.0) -> Nightshift:
        home = self.home
        home.mkdir(parents=True, exist_ok=True)
        argv = [NIGHTSHIFT, self.part]
        if self.part in ("up", "api"):
            argv += ["--port", str(self.port)]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                argv, env=self.env, stdout=log, stderr=subprocess.STDOUT, cwd=home, start_new_session=True
            )
        if wait_api:
            deadline = time.monotonic() + timeout_s
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError(f"nightshift {self.part} exited: {self.log_path.read_text()[-2000:]}")
                try:
                    if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"nightshift {self.part} did not come up: {self.log_path}")
                time.sleep(0.1)
            token_file = home / "admin.token"
            while not token_file.is_file():
                time.sleep(0.05)
            self.token = token_file.read_text().strip()
        return self

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=f"{self.url}/api/v1", headers=self.headers, timeout=60, **kwargs)

    def stop(self, timeout_s: float = 30.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def __enter__(self) -> Nightshift:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def wait_for(predicate: Any, timeout_s: float, interval_s: float = 0.01) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return False
