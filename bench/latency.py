"""Event-driven dispatch: submit→start latency with free GPUs, and task-end→next-start with a full queue.

Starts `nightshift up` (API + scheduler + worker, embedded Redis, SQLite), 8 simulated GPUs, in a temp folder.
- submit→start: N one-GPU tasks, one at a time on an idle cluster; each job's first act is `date +%s.%N`;
  latency = that stamp - the client's clock just before the POST (so it includes the HTTP submit).
- end→next-start: M tasks of 8 GPUs each (only one fits at a time) submitted at once; each writes a stamp
  when it starts and just before it exits; gap = each start - the latest end before it.
Targets: p50 < 50 ms for both. Prints one JSON line.

Usage: python bench/latency.py [--n 40] [--m 40]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _harness import Nightshift, emit, machine, summary, temp_home, wait_for


def _stamp(path: Path) -> float | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--m", type=int, default=40)
    ap.add_argument("--job-cgroups", choices=("auto", "off"), default="auto", help="NIGHTSHIFT_JOB_CGROUPS")
    args = ap.parse_args()
    out: dict[str, object] = {
        "bench": "latency",
        "machine": machine(),
        "setup": f"nightshift up, 8x24 simulated, job_cgroups={args.job_cgroups}",
    }
    with (
        temp_home("latency") as home,
        Nightshift(home, "up", gpus="8x24", job_cgroups=args.job_cgroups) as ns,
        ns.client() as http,
    ):
        stamps = home / "stamps"
        stamps.mkdir()
        # warm-up: first request and first job pay imports and connection set-up
        for _ in range(3):
            task = http.post("/tasks", json={"command": "true", "gpus": 1, "workdir": str(home)}).json()
            wait_for(lambda t=task: http.get(f"/tasks/{t['id']}").json()["status"] == "succeeded", 30, 0.02)

        submit_start: list[float] = []
        post_s: list[float] = []
        for i in range(args.n):
            path = stamps / f"a{i}"
            spec = {"command": f"date +%s.%N > {path}", "gpus": 1, "workdir": str(home)}
            t0 = time.time()
            task = http.post("/tasks", json=spec).json()
            post_s.append(time.time() - t0)
            if not wait_for(lambda p=path: _stamp(p) is not None, 30, 0.002):
                raise RuntimeError(f"task {task} did not start")
            submit_start.append(_stamp(path) - t0)  # type: ignore[operator]
            wait_for(lambda t=task: http.get(f"/tasks/{t['id']}").json()["status"] == "succeeded", 30, 0.01)
        out["submit_to_start_ms"] = summary(submit_start)
        out["submit_http_ms"] = summary(post_s)

        starts: list[float] = []
        ends: list[float] = []
        ids = []
        for i in range(args.m):
            s, e = stamps / f"s{i}", stamps / f"e{i}"
            command = f"date +%s.%N > {s}; sleep 0.1; date +%s.%N > {e}"
            ids.append(
                http.post("/tasks", json={"command": command, "gpus": 8, "workdir": str(home)}).json()["id"]
            )
        done = wait_for(lambda: all(_stamp(stamps / f"e{i}") for i in range(args.m)), 120, 0.05)
        if not done:
            raise RuntimeError("the full-queue tasks did not all finish")
        starts = sorted(_stamp(stamps / f"s{i}") for i in range(args.m))  # type: ignore[type-var]
        ends = sorted(_stamp(stamps / f"e{i}") for i in range(args.m))  # type: ignore[type-var]
        gaps = []
        for start in starts[1:]:
            before = [end for end in ends if end <= start]
            if before:
                gaps.append(start - before[-1])
        out["end_to_next_start_ms"] = summary(gaps)
        out["overlaps"] = sum(1 for a, b in zip(ends, starts[1:], strict=False) if b < a)
    p50a = out["submit_to_start_ms"]["p50"]  # type: ignore[index]
    p50b = out["end_to_next_start_ms"]["p50"]  # type: ignore[index]
    out["targets"] = {"submit_to_start_p50_lt_50ms": p50a < 50, "end_to_next_start_p50_lt_50ms": p50b < 50}
    out["peers"] = {"slurm_submit_to_start_p50_ms": 373, "slurm_end_to_next_start_p50_ms": 558}
    emit(out)


if __name__ == "__main__":
    main()
