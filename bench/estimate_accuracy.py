"""Wait-estimate accuracy: during a replay of philly_dev.csv, forecast sampled jobs' start at submit time
(`estimate_starts`, no oracle, exactly what `GET /estimate` would answer then) and compare with when they
actually started in that same replay. Prints one JSON line:

- `median_abs_error_s`: median |forecast start - actual start| over the sampled jobs;
- `error_over_median_wait`: that error divided by the median actual wait of the same jobs;
- `median_signed_error_s`: median of (forecast - actual); negative = forecasts too early;
- `share_inside_range`: share of actual starts inside the forecast's [low, high] range.

The forecasts do not change the replay: they run on copies of its state.

Usage: python bench/estimate_accuracy.py [--every 100] [--nodes 16] [--policy nightshift]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from scheduler.policy.aging import static_score
from scheduler.policy.config import PolicyConfig
from scheduler.policy.forecast import estimate_starts
from scheduler.policy.replay import Replay
from scheduler.policy.types import QueuedTask
from scheduler.simulate import TraceJob, read_trace, simulate_jobs

PHILLY = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces" / "philly_dev.csv"


def measure(
    every: int, nodes: int, policy: str, trace: Path = PHILLY, width_exponent: float | None = None
) -> dict[str, Any]:
    """Replay `trace`, forecasting every `every`-th job at its submit time; the accuracy figures.
    `width_exponent` replaces the default `short_job_width_exponent`, to compare forecasts under another."""
    cfg = PolicyConfig(policy=policy)  # type: ignore[arg-type]
    if width_exponent is not None:
        cfg = replace(cfg, short_job_width_exponent=width_exponent)
    forecasts: dict[int, tuple[float, float, float, float]] = {}  # index -> (submit, est, low, high)

    def probe(sim: Replay, job: TraceJob, task: QueuedTask) -> None:
        if job.index % every:
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

    result = simulate_jobs(read_trace(trace), "8x24", nodes, policy, False, cfg, probe=probe)
    errors: list[float] = []
    signed: list[float] = []
    waits: list[float] = []
    inside = 0
    for index, (submit_s, est_s, low_s, high_s) in forecasts.items():
        actual_s = result.starts_s[index]
        waits.append(actual_s - submit_s)
        if math.isfinite(est_s):
            errors.append(abs(est_s - actual_s))
            signed.append(est_s - actual_s)
            inside += low_s <= actual_s <= high_s
    median_wait = statistics.median(waits) if waits else None
    median_error = statistics.median(errors) if errors else None
    return {
        "trace": trace.name,
        "policy": policy,
        "nodes": nodes,
        "forecasts": len(forecasts),
        "with_estimate": len(errors),
        "median_abs_error_s": None if median_error is None else round(median_error, 1),
        "median_actual_wait_s": None if median_wait is None else round(median_wait, 1),
        "error_over_median_wait": (
            round(median_error / median_wait, 3) if median_error is not None and median_wait else None
        ),
        "median_signed_error_s": round(statistics.median(signed), 1) if signed else None,
        "share_inside_range": round(inside / len(errors), 3) if errors else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--every", type=int, default=100, help="forecast every Nth submitted job")
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--policy", default="nightshift")
    ap.add_argument("--width-exponent", type=float, default=None, help="short_job_width_exponent to use")
    args = ap.parse_args()
    t0 = time.perf_counter()
    out = measure(args.every, args.nodes, args.policy, width_exponent=args.width_exponent)
    out["short_job_width_exponent"] = (
        args.width_exponent if args.width_exponent is not None else PolicyConfig().short_job_width_exponent
    )
    out["wall_s"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
