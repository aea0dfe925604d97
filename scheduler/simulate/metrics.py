"""The metrics of a simulation run, exactly the keys of the brief's `--json` output."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


def percentile(sorted_values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile of already sorted values (0 for none)."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(pct / 100.0 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


LEFT_OUT_SHOWN = 5  # jobs named in `left_out` (the count has them all)


@dataclass(frozen=True, slots=True)
class LeftOut:
    """A trace job that could never start on the simulated cluster, so it was not simulated."""

    index: int
    job_id: str
    why: str


@dataclass
class SimulationResult:
    """What `nightshift simulate --json` prints. Kept for analysis, not printed: `starts_s` (job index ->
    start) and `placements` (job index -> the (node, GPU indices) parts it started on).

    `jobs` and every metric count only the jobs simulated; those that could never fit the cluster (more
    GPUs than it has, more memory than any GPU) are in `left_out`, printed only when there are any, with
    `would_fit`, a cluster on which they could start."""

    policy: str
    jobs: int
    gpus: int
    mean_jct_s: float
    mean_wait_s: float
    p50_wait_s: float
    p95_wait_s: float
    p99_wait_s: float
    max_wait_s: float
    makespan_s: float
    utilization: float
    lower_bound_mean_jct_s: float
    per_team: dict[str, dict[str, float]]
    energy_kwh: float
    energy_cost: float
    wall_s: float
    starts_s: dict[int, float] = field(default_factory=dict, repr=False)
    placements: dict[int, tuple[tuple[str, tuple[int, ...]], ...]] = field(default_factory=dict, repr=False)
    left_out: list[LeftOut] = field(default_factory=list)
    would_fit: str | None = None
    # per person, where the trace names people a team has several of (fair share within a team)
    per_user: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The brief's metrics, in its order, rounded for reading; then `left_out` when jobs were."""
        metrics = {
            "policy": self.policy,
            "jobs": self.jobs,
            "gpus": self.gpus,
            "mean_jct_s": round(self.mean_jct_s, 1),
            "mean_wait_s": round(self.mean_wait_s, 1),
            "p50_wait_s": round(self.p50_wait_s, 1),
            "p95_wait_s": round(self.p95_wait_s, 1),
            "p99_wait_s": round(self.p99_wait_s, 1),
            "max_wait_s": round(self.max_wait_s, 1),
            "makespan_s": round(self.makespan_s, 1),
            "utilization": round(self.utilization, 4),
            "lower_bound_mean_jct_s": round(self.lower_bound_mean_jct_s, 1),
            "per_team": self.per_team,
            **({"per_user": self.per_user} if self.per_user else {}),
            "energy_kwh": round(self.energy_kwh, 2),
            "energy_cost": round(self.energy_cost, 2),
            "wall_s": round(self.wall_s, 3),
        }
        if self.left_out:
            metrics["left_out"] = {
                "count": len(self.left_out),
                "jobs": [{"job_id": o.job_id, "why": o.why} for o in self.left_out[:LEFT_OUT_SHOWN]],
                "would_fit": self.would_fit,
            }
        return metrics


def team_metrics(waits_s: list[float], jcts_s: list[float], gpu_s: float) -> dict[str, float]:
    """Per-team (or per-person) block of the metrics."""
    waits_s = sorted(waits_s)
    return {
        "jobs": len(waits_s),
        "mean_jct_s": round(statistics.fmean(jcts_s), 1) if jcts_s else 0.0,
        "mean_wait_s": round(statistics.fmean(waits_s), 1) if waits_s else 0.0,
        "p99_wait_s": round(percentile(waits_s, 99), 1),
        "gpu_hours": round(gpu_s / 3600.0, 2),
    }
