"""The issue's target on philly_dev.csv over 16 nodes × 8 GPUs: nightshift vs FIFO and EASY backfill, with
nightshift given true run times (oracle, SJF-like) and the no-queueing lower bound for comparison.

Runs the trace as is, and with run times capped at 24 h as in the trace README's anchor numbers (one job
of the trace runs 23 days and alone sets the makespan, hence utilization, of the uncapped runs).
Also runs the uncapped trace over 12-24 nodes (`as_is_by_nodes`): utilization relative to FIFO there is
the start of that one job, and moves by a few percent either way with the cluster size, for EASY backfill
as for nightshift. Prints one JSON line.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from scheduler.simulate import TraceJob, read_trace, simulate_jobs

PHILLY = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces" / "philly_dev.csv"
KEYS = ("mean_jct_s", "mean_wait_s", "p99_wait_s", "max_wait_s", "makespan_s", "utilization", "wall_s")


def compare(jobs: list[TraceJob]) -> dict[str, Any]:
    """FIFO, backfill, nightshift, nightshift+oracle, and the target checks."""
    runs = {
        "fifo": simulate_jobs(jobs, "8x24", 16, "fifo"),
        "backfill": simulate_jobs(jobs, "8x24", 16, "backfill"),
        "nightshift": simulate_jobs(jobs, "8x24", 16, "nightshift"),
        "nightshift_oracle": simulate_jobs(jobs, "8x24", 16, "nightshift", oracle=True),
    }
    out: dict[str, Any] = {name: {k: r.to_dict()[k] for k in KEYS} for name, r in runs.items()}
    for name, r in runs.items():  # the job that ends last sets the makespan, hence utilization
        last = max(jobs, key=lambda j: r.starts_s[j.index] + j.duration_s)
        out[name]["last_to_end"] = {"job": last.job_id, "start_s": r.starts_s[last.index]}
    fifo, ns = runs["fifo"], runs["nightshift"]
    out["lower_bound_mean_jct_s"] = round(fifo.lower_bound_mean_jct_s, 1)
    out["jct_ratio_vs_fifo"] = round(ns.mean_jct_s / fifo.mean_jct_s, 3)
    out["targets"] = {
        "jct_at_most_0.6_fifo": ns.mean_jct_s <= 0.6 * fifo.mean_jct_s,
        "p99_wait_no_worse": ns.p99_wait_s <= fifo.p99_wait_s,
        "utilization_no_lower": ns.utilization >= fifo.utilization,
    }
    return out


SIZES = (12, 14, 16, 18, 20, 24)


def utilization_by_cluster_size(jobs: list[TraceJob]) -> dict[str, Any]:
    """Utilization as a fraction of FIFO's on the uncapped trace over several node counts, for EASY backfill
    and nightshift: how much of the 16-node figure is the start of the one job that ends last."""
    out: dict[str, Any] = {}
    for nodes in SIZES:
        fifo = simulate_jobs(jobs, "8x24", nodes, "fifo")
        row: dict[str, Any] = {}
        for policy in ("backfill", "nightshift"):
            r = simulate_jobs(jobs, "8x24", nodes, policy)
            last = max(jobs, key=lambda j: r.starts_s[j.index] + j.duration_s)
            row[policy] = {
                "utilization_vs_fifo": round(r.utilization / fifo.utilization, 3),
                "jct_vs_fifo": round(r.mean_jct_s / fifo.mean_jct_s, 3),
                "last_to_end": {"job": last.job_id, "start_s": r.starts_s[last.index]},
            }
        last = max(jobs, key=lambda j: fifo.starts_s[j.index] + j.duration_s)
        row["fifo_last_to_end"] = {"job": last.job_id, "start_s": fifo.starts_s[last.index]}
        out[str(nodes)] = row
    return out


def main() -> None:
    t0 = time.perf_counter()
    jobs = read_trace(PHILLY)
    capped = [replace(j, duration_s=min(j.duration_s, 86400.0)) for j in jobs]
    print(
        json.dumps(
            {
                "trace": "philly_dev.csv",
                "cluster": "16 nodes x 8 GPUs (24 GB)",
                "as_is": compare(jobs),
                "capped_24h": compare(capped),
                "as_is_by_nodes": utilization_by_cluster_size(jobs),
                "wall_s": round(time.perf_counter() - t0, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
