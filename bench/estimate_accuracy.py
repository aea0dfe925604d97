"""Wait-estimate accuracy: during a replay of philly_dev.csv, forecast sampled jobs' start at submit time
(`estimate_starts`, no oracle) and compare with when they actually started. Prints one JSON line.

Usage: python bench/estimate_accuracy.py [--every 100] [--nodes 16]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

from scheduler.policy.aging import static_score
from scheduler.policy.config import PolicyConfig
from scheduler.policy.forecast import estimate_starts
from scheduler.policy.replay import Replay
from scheduler.policy.types import QueuedTask
from scheduler.simulate import TraceJob, read_trace, simulate_jobs

PHILLY = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces" / "philly_dev.csv"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--every", type=int, default=100, help="forecast every Nth submitted job")
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--policy", default="nightshift")
    args = ap.parse_args()
    cfg = PolicyConfig(policy=args.policy)
    forecasts: dict[int, tuple[float, float, float, float]] = {}  # index -> (submit, est, low, high)

    def probe(sim: Replay, job: TraceJob, task: QueuedTask) -> None:
        if job.index % args.every:
            return
        queued = sorted(
            [*(sim.tasks[i] for _, i in sim.queue), task], key=lambda t: static_score(t, sim.config)
        )
        running = [p for parts in sim.running.values() for p in parts]
        usage = sim.usage_of(sim.now_s) if sim.usage_of else None
        est = estimate_starts(
            queued, running, list(sim.slots.values()), task.enqueued_at_s, sim.config, usage, sim.succeeded,
            targets=[task.task_id],
        )[task.task_id]  # fmt: skip
        forecasts[job.index] = (task.enqueued_at_s, est.start_s, est.low_s, est.high_s)

    t0 = time.perf_counter()
    result = simulate_jobs(read_trace(PHILLY), "8x24", args.nodes, args.policy, False, cfg, probe=probe)
    errors, waits, inside = [], [], 0
    for index, (submit_s, est_s, low_s, high_s) in forecasts.items():
        actual_s = result.starts_s[index]
        waits.append(actual_s - submit_s)
        if math.isfinite(est_s):
            errors.append(abs(est_s - actual_s))
            inside += low_s <= actual_s <= high_s
    print(
        json.dumps(
            {
                "trace": "philly_dev.csv",
                "policy": args.policy,
                "nodes": args.nodes,
                "forecasts": len(forecasts),
                "with_estimate": len(errors),
                "median_abs_error_s": round(statistics.median(errors), 1) if errors else None,
                "median_actual_wait_s": round(statistics.median(waits), 1) if waits else None,
                "share_inside_range": round(inside / len(errors), 3) if errors else None,
                "wall_s": round(time.perf_counter() - t0, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
