"""Fair share within a team, in the simulator, with it on (the default) and off (one JSON line).

*flood*: a lab of one team on one node of 8 GPUs; alice queues 200 one-hour runs at once, bob and carol
each queue four more through the morning; mean wait per person and the makespan. *workload_200*: the
peers' `workload_200.csv` (4 people of one team, seconds-long jobs of 1-8 GPUs) on one node of 8 GPUs:
mean JCT, utilization, and the spread of the people's mean waits. The Philly replay is not here: its trace
names no people (each team is one), so the setting cannot change it.

Usage: python bench/fairshare_members.py
"""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

from _harness import emit, machine

from scheduler.policy.config import PolicyConfig
from scheduler.simulate import TraceJob, simulate_jobs

WORKLOAD = Path(__file__).resolve().parents[2] / "shared" / "peers" / "workload_200.csv"
HOUR_S = 3600.0


def flood() -> list[TraceJob]:
    """alice's 200 one-hour runs at 0 s; bob's and carol's four each, one an hour from 30 min on."""
    jobs = [TraceJob(i, f"alice-{i}", 0.0, HOUR_S, 1, "lab", "alice") for i in range(200)]
    for k, user in enumerate(("bob", "carol")):
        for j in range(4):
            jobs.append(
                TraceJob(len(jobs), f"{user}-{j}", 1800.0 + HOUR_S * j + 60 * k, HOUR_S, 1, "lab", user)
            )
    return jobs


def workload() -> list[TraceJob]:
    """The peers' replay workload, its people kept (one team)."""
    with WORKLOAD.open() as handle:
        rows = list(csv.DictReader(handle))
    return [
        TraceJob(
            i, row["job_id"], float(row["submit_offset_s"]), float(row["duration_s"]), int(row["num_gpus"]),
            user=row["user"],
        )
        for i, row in enumerate(rows)
    ]  # fmt: skip


def waits_by_person(jobs: list[TraceJob], starts_s: dict[int, float]) -> dict[str, float]:
    """Each person's mean wait, in seconds."""
    waits: dict[str, list[float]] = {}
    for job in jobs:
        waits.setdefault(job.user, []).append(starts_s[job.index] - job.submit_s)
    return {user: round(statistics.mean(values), 1) for user, values in sorted(waits.items())}


def main() -> None:
    out: dict[str, object] = {"bench": "fairshare_members", "machine": machine()}
    for label, jobs in (("flood", flood()), ("workload_200", workload())):
        for within in (True, False):
            result = simulate_jobs(
                jobs, "8x24", 1, "nightshift", config=PolicyConfig(fairshare_within_teams=within)
            )
            waits = waits_by_person(jobs, result.starts_s)
            out[f"{label}_{'within_teams' if within else 'teams_only'}"] = {
                "mean_wait_s_by_person": waits,
                "spread_of_mean_waits_s": round(max(waits.values()) - min(waits.values()), 1),
                "mean_jct_s": round(result.mean_jct_s, 1),
                "utilization": round(result.utilization, 4),
                "makespan_s": round(max(result.starts_s[j.index] + j.duration_s for j in jobs), 1),
            }
    emit(out)


if __name__ == "__main__":
    main()
