"""Wall time of `simulate` on the 5,000-job Philly trace and on a synthetic 100,000-job trace (one JSON line).

Philly: `philly_dev.csv` on 16 nodes x 8 GPUs; synthetic: Poisson arrivals at 90 % load of 32 nodes x 8 GPUs.
Targets (issue 8): 5,000 jobs under 10 s, 100,000 jobs under 3 minutes.

Usage: python bench/simulate_scale.py [--jobs 100000] [--policy nightshift]
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from _harness import emit, machine

from scheduler.simulate import TraceJob, read_trace, simulate_jobs

PHILLY = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces" / "philly_dev.csv"


def synthetic(n: int, nodes: int, seed: int = 1, load: float = 0.9) -> list[TraceJob]:
    """Poisson arrivals at `load` of 8-GPU nodes; 1/2/4/8 GPUs; log-normal run times (median ~30 min)."""
    rng = random.Random(seed)
    sizes, weights = [1, 2, 4, 8], [0.75, 0.12, 0.08, 0.05]
    mean_gpus = sum(s * w for s, w in zip(sizes, weights, strict=True))
    mean_s = 1800 * 2.718 ** (1.2**2 / 2)
    rate = load * nodes * 8 / (mean_gpus * mean_s)
    t, jobs = 0.0, []
    for i in range(n):
        t += rng.expovariate(rate)
        d = min(rng.lognormvariate(7.5, 1.2), 7 * 86400)
        jobs.append(
            TraceJob(i, f"s{i}", round(t, 1), round(d, 1), rng.choices(sizes, weights)[0], f"team{i % 7}")
        )
    return jobs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--policy", default="nightshift")
    args = ap.parse_args()
    out: dict[str, object] = {"bench": "simulate_scale", "machine": machine(), "policy": args.policy}
    t0 = time.perf_counter()
    r = simulate_jobs(read_trace(PHILLY), "8x24", 16, args.policy)
    out["philly_5000_wall_s"] = round(time.perf_counter() - t0, 2)
    jobs = synthetic(args.jobs, nodes=32)
    t0 = time.perf_counter()
    r = simulate_jobs(jobs, "8x24", 32, args.policy)
    out[f"synthetic_{args.jobs}_wall_s"] = round(time.perf_counter() - t0, 2)
    out["synthetic_mean_wait_s"] = round(r.mean_wait_s, 1)
    out["synthetic_utilization"] = round(r.utilization, 3)
    out["targets"] = {
        "philly_5000_lt_10s": float(out["philly_5000_wall_s"]) < 10,  # type: ignore[arg-type]
        f"synthetic_{args.jobs}_lt_180s": float(out[f"synthetic_{args.jobs}_wall_s"]) < 180,  # type: ignore[arg-type]
    }
    emit(out)


if __name__ == "__main__":
    main()
