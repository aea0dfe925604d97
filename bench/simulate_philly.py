"""The issue's target on philly_dev.csv over 16 nodes × 8 GPUs: nightshift vs FIFO and EASY backfill, with
nightshift given true run times (oracle, SJF-like) and the no-queueing lower bound for comparison.

Runs the trace as is, and with run times capped at 24 h as in the trace README's anchor numbers (one job
of the trace runs 23 days and alone sets the makespan, hence utilization, of the uncapped runs).
Also runs the uncapped trace over 12-24 nodes (`as_is_by_nodes`): utilization relative to FIFO there is
the start of that one job, and moves by a few percent either way with the cluster size, for EASY backfill
as for nightshift. `nightshift_favour_wide` is the default policy with `short_job_width_exponent` -0.5 (wide
tasks favoured, as Slurm's job-size factor does, instead of ranked by GPU-seconds) and
`nightshift_by_run_time` the same with 0 (short jobs ranked by run time alone): both trade mean JCT for
starting that job sooner. Each run also says how busy the GPUs were while work waited
(`while_work_waits`), a utilization the makespan's tail does not decide. Prints one JSON line.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from scheduler.policy.config import PolicyConfig
from scheduler.simulate import SimulationResult, TraceJob, read_trace, simulate_jobs

PHILLY = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces" / "philly_dev.csv"
BY_RUN_TIME = PolicyConfig(short_job_width_exponent=0.0)
FAVOUR_WIDE = PolicyConfig(short_job_width_exponent=-0.5)
KEYS = ("mean_jct_s", "mean_wait_s", "p99_wait_s", "max_wait_s", "makespan_s", "utilization", "wall_s")


def compare(jobs: list[TraceJob]) -> dict[str, Any]:
    """FIFO, backfill, nightshift, nightshift+oracle, and the target checks."""
    runs = {
        "fifo": simulate_jobs(jobs, "8x24", 16, "fifo"),
        "backfill": simulate_jobs(jobs, "8x24", 16, "backfill"),
        "nightshift": simulate_jobs(jobs, "8x24", 16, "nightshift"),
        "nightshift_oracle": simulate_jobs(jobs, "8x24", 16, "nightshift", oracle=True),
        "nightshift_by_run_time": simulate_jobs(jobs, "8x24", 16, "nightshift", config=BY_RUN_TIME),
        "nightshift_favour_wide": simulate_jobs(jobs, "8x24", 16, "nightshift", config=FAVOUR_WIDE),
    }
    out: dict[str, Any] = {name: {k: r.to_dict()[k] for k in KEYS} for name, r in runs.items()}
    for name, r in runs.items():  # the job that ends last sets the makespan, hence utilization
        last = max(jobs, key=lambda j: r.starts_s[j.index] + j.duration_s)
        out[name]["last_to_end"] = {"job": last.job_id, "start_s": r.starts_s[last.index]}
        out[name]["while_work_waits"] = while_work_waits(jobs, r, gpus_per_node=8, nodes=16)
    fifo, ns = runs["fifo"], runs["nightshift"]
    out["lower_bound_mean_jct_s"] = round(fifo.lower_bound_mean_jct_s, 1)
    out["jct_ratio_vs_fifo"] = round(ns.mean_jct_s / fifo.mean_jct_s, 3)
    out["targets"] = _targets(ns, fifo)
    for name in ("nightshift_by_run_time", "nightshift_favour_wide"):
        out[name]["jct_ratio_vs_fifo"] = round(runs[name].mean_jct_s / fifo.mean_jct_s, 3)
        out[name]["targets"] = _targets(runs[name], fifo)
    return out


def _targets(run: SimulationResult, fifo: SimulationResult) -> dict[str, bool]:
    return {
        "jct_at_most_0.6_fifo": run.mean_jct_s <= 0.6 * fifo.mean_jct_s,
        "p99_wait_no_worse": run.p99_wait_s <= fifo.p99_wait_s,
        "utilization_no_lower": run.utilization >= fifo.utilization,
    }


END, SUBMIT, START = 0, 1, 2  # at one instant a job's GPUs free before the next job takes them


def while_work_waits(
    jobs: list[TraceJob], run: SimulationResult, gpus_per_node: int, nodes: int
) -> dict[str, float]:
    """Over the time some job waited: the fraction of GPU capacity busy, and the idle rest split into idle
    while a waiting job would have fit on one node's free GPUs (held back: reservations, order) and idle
    while none fit (fragmented: free GPUs scattered over nodes, waiting jobs too wide for any one)."""
    events: list[tuple[float, int, TraceJob]] = []
    for job in jobs:
        start = run.starts_s[job.index]
        events += [(job.submit_s, SUBMIT, job), (start, START, job), (start + job.duration_s, END, job)]
    events.sort(key=lambda e: (e[0], e[1]))
    used: dict[str, float] = {}  # node -> GPUs in use
    waiting: dict[int, TraceJob] = {}
    held_back = fragmented = capacity = 0.0
    last_s = events[0][0] if events else 0.0
    for at_s, kind, job in events:
        if waiting and at_s > last_s:
            span = at_s - last_s
            free = [gpus_per_node - u for u in used.values()] + [gpus_per_node] * (nodes - len(used))
            whole = sum(1 for f in free if f >= gpus_per_node)
            fits = any(
                w.gpus <= max(free) if w.gpus <= gpus_per_node else w.gpus <= whole * gpus_per_node
                for w in waiting.values()
            )
            if fits:
                held_back += sum(free) * span
            else:
                fragmented += sum(free) * span
            capacity += nodes * gpus_per_node * span
        last_s = at_s
        if kind == SUBMIT:
            waiting[job.index] = job
            continue
        waiting.pop(job.index, None)
        sign = 1 if kind == START else -1
        for node, gpu_indices in run.placements.get(job.index, ()):
            used[node] = used.get(node, 0.0) + sign * len(gpu_indices) * min(job.gpu_fraction, 1.0)
    if capacity == 0:
        return {"busy": 0.0, "idle_held_back": 0.0, "idle_fragmented": 0.0}
    return {
        "busy": round(1 - (held_back + fragmented) / capacity, 4),
        "idle_held_back": round(held_back / capacity, 4),
        "idle_fragmented": round(fragmented / capacity, 4),
    }


SIZES = tuple(range(12, 25))
POLICY_RUNS = (
    ("backfill", "backfill", None),
    ("nightshift", "nightshift", None),
    ("nightshift_by_run_time", "nightshift", BY_RUN_TIME),
    ("nightshift_favour_wide", "nightshift", FAVOUR_WIDE),
)


def utilization_by_cluster_size(jobs: list[TraceJob]) -> dict[str, Any]:
    """Utilization as a fraction of FIFO's on the uncapped trace over several node counts, for EASY backfill
    and nightshift: how much of the 16-node figure is the start of the one job that ends last."""
    out: dict[str, Any] = {}
    for nodes in SIZES:
        fifo = simulate_jobs(jobs, "8x24", nodes, "fifo")
        row: dict[str, Any] = {}
        for name, policy, config in POLICY_RUNS:
            r = simulate_jobs(jobs, "8x24", nodes, policy, config=config)
            last = max(jobs, key=lambda j: r.starts_s[j.index] + j.duration_s)
            row[name] = {
                "utilization_vs_fifo": round(r.utilization / fifo.utilization, 3),
                "jct_vs_fifo": round(r.mean_jct_s / fifo.mean_jct_s, 3),
                "last_to_end": {"job": last.job_id, "start_s": r.starts_s[last.index]},
            }
        last = max(jobs, key=lambda j: fifo.starts_s[j.index] + j.duration_s)
        row["fifo_last_to_end"] = {"job": last.job_id, "start_s": fifo.starts_s[last.index]}
        out[str(nodes)] = row
    out["summary"] = {name: _over_sizes([out[str(n)][name] for n in SIZES]) for name, _, _ in POLICY_RUNS}
    return out


def _over_sizes(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Means over the cluster sizes, and at how many of them utilization is at least FIFO's."""
    util = [r["utilization_vs_fifo"] for r in rows]
    jct = [r["jct_vs_fifo"] for r in rows]
    return {
        "mean_utilization_vs_fifo": round(sum(util) / len(util), 3),
        "sizes_utilization_at_least_fifo": f"{sum(u >= 1.0 for u in util)} of {len(util)}",
        "mean_jct_vs_fifo": round(sum(jct) / len(jct), 3),
        "max_jct_vs_fifo": max(jct),
    }


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
