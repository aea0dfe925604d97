"""`explain`: everything a person asks about one queued task, in one object."""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass

from scheduler.policy.aging import PriorityParts, aging_bound_s, priority_parts, task_estimate_s
from scheduler.policy.config import PolicyConfig, TeamUsage
from scheduler.policy.fairshare import fairshare_of_tasks
from scheduler.policy.forecast import StartEstimate, estimate_starts
from scheduler.policy.rolling import FinishedSpan
from scheduler.policy.types import GpuSlot, QueuedTask, RunningTask


@dataclass(frozen=True, slots=True)
class Explanation:
    """Position, expected start, plain reason and priority parts of one queued task."""

    task_id: int
    position: int
    queued_total: int
    estimate: StartEstimate
    reason: str
    priority: PriorityParts
    estimated_run_s: float
    aging_bound_s: float


def explain(
    task_id: int,
    queued: Sequence[QueuedTask],
    running: Sequence[RunningTask],
    gpus: Sequence[GpuSlot],
    now_s: float,
    config: PolicyConfig,
    usage: Mapping[str, TeamUsage] | None = None,
    succeeded: Set[int] = frozenset(),
    failed: Set[int] = frozenset(),
    finished: Sequence[FinishedSpan] = (),
) -> Explanation:
    """Explain `task_id` (which must be in `queued`); raises KeyError when it is not queued. `finished` as
    for `estimate_starts` (when used-up budgets free)."""
    task = next((t for t in queued if t.task_id == task_id), None)
    if task is None:
        raise KeyError(task_id)
    est = estimate_starts(
        queued, running, gpus, now_s, config, usage, succeeded, failed, targets=[task_id], finished=finished
    )[task_id]
    factors = fairshare_of_tasks(queued, usage, config)
    return Explanation(
        task_id=task_id,
        position=est.position,
        queued_total=len(queued),
        estimate=est,
        reason=est.reason,
        priority=priority_parts(task, now_s, config, factors.get((task.team, task.user), 1.0)),
        estimated_run_s=task_estimate_s(task, config),
        aging_bound_s=aging_bound_s(task.priority, config),
    )
