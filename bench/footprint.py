"""Idle footprint: CPU and RSS of `nightshift up` (8 simulated GPUs, empty queue) and of a worker alone.

psutil samples the process (and its children: the embedded redis-server is reported separately) once a
second for `--seconds` after a 5 s settle: CPU % of one core over the window (from CPU times), mean and max
RSS. Then a `nightshift worker` alone (its Redis given by URL) the same way.
Targets: < 1% of one core and < 200 MB RSS for `nightshift up`. Prints one JSON line.

Usage: python bench/footprint.py [--seconds 60]
"""

from __future__ import annotations

import argparse
import time

import psutil
from _harness import Nightshift, emit, machine, process_cpu_s, temp_home


def _watch(main: psutil.Process, seconds: float) -> dict[str, dict[str, float]]:
    """CPU % of one core and RSS of `main` (own process) and of its redis-server child, if any."""

    def redis_of() -> psutil.Process | None:
        for child in main.children(recursive=True):
            if "redis-server" in child.name():
                return child
        return None

    redis = redis_of()
    parts = {"nightshift": main} | ({"redis_server": redis} if redis else {})
    others = [c for c in main.children(recursive=True) if c not in parts.values()]
    start = {name: process_cpu_s(p) for name, p in parts.items()}
    rss: dict[str, list[float]] = {name: [] for name in parts}
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        for name, proc in parts.items():
            rss[name].append(proc.memory_info().rss / 2**20)
        time.sleep(1.0)
    wall = time.monotonic() - t0
    out = {}
    for name, proc in parts.items():
        out[name] = {
            "cpu_pct_of_one_core": round((process_cpu_s(proc) - start[name]) / wall * 100, 3),
            "rss_mb_mean": round(sum(rss[name]) / len(rss[name]), 1),
            "rss_mb_max": round(max(rss[name]), 1),
            "threads": proc.num_threads(),
        }
    # the worker's spare job shells (and, once a job ran, its sentinel): what each costs at rest
    live = [c for c in others if c.is_running()]
    out["other_children"] = {  # type: ignore[assignment]
        "count": len(live),
        "names": sorted(c.name() for c in live),
        "rss_mb": round(sum(c.memory_info().rss for c in live) / 2**20, 1),
    }
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60.0)
    args = ap.parse_args()
    out: dict[str, object] = {"bench": "footprint", "machine": machine(), "seconds": args.seconds}
    with temp_home("footprint") as home:
        up = Nightshift(home, "up", gpus="8x24").start()
        try:
            time.sleep(5)
            out["up_idle"] = _watch(psutil.Process(up.process.pid), args.seconds)  # type: ignore[union-attr]
            worker = Nightshift(home, "worker", gpus="8x24", node_name="bench-worker-2")
            worker.env["NIGHTSHIFT_REDIS_URL"] = (home / "redis.url").read_text().strip()
            worker.start(wait_api=False)
            try:
                time.sleep(5)
                out["worker_idle"] = _watch(psutil.Process(worker.process.pid), args.seconds)  # type: ignore[union-attr]
            finally:
                worker.stop()
        finally:
            up.stop()
    ns = out["up_idle"]["nightshift"]  # type: ignore[index]
    out["targets"] = {"cpu_lt_1pct": ns["cpu_pct_of_one_core"] < 1.0, "rss_lt_200mb": ns["rss_mb_max"] < 200}
    emit(out)


if __name__ == "__main__":
    main()
