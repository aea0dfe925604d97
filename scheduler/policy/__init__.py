"""The scheduling policy: pure functions of (queued tasks, running tasks, GPUs, now) -> decisions.

No Redis, no SQL, no clock reads here: the live scheduler and `nightshift simulate` call the same code.
"""

from scheduler.policy.aging import (
    PriorityParts,
    aging_bound_s,
    order_key,
    overdue_at_s,
    rank_key,
    static_score,
    task_estimate_s,
)
from scheduler.policy.config import POLICIES, PolicyConfig, TeamUsage
from scheduler.policy.engine import decide
from scheduler.policy.estimate import DurationEstimate, DurationHistory, estimate_duration_s
from scheduler.policy.explain import Explanation, explain
from scheduler.policy.forecast import StartEstimate, estimate_starts, queue_positions
from scheduler.policy.placement import place_on_gpus
from scheduler.policy.quotas import BudgetStatus, budget_status
from scheduler.policy.tariff import Tariff, estimate_cost, estimate_energy_kwh, gpu_power_w
from scheduler.policy.types import (
    Decisions,
    GpuSlot,
    PriorityClass,
    QueuedTask,
    RunningTask,
    StartDecision,
)

__all__ = [
    "POLICIES",
    "BudgetStatus",
    "Decisions",
    "DurationEstimate",
    "DurationHistory",
    "Explanation",
    "GpuSlot",
    "PolicyConfig",
    "PriorityClass",
    "PriorityParts",
    "QueuedTask",
    "RunningTask",
    "StartDecision",
    "StartEstimate",
    "Tariff",
    "TeamUsage",
    "aging_bound_s",
    "budget_status",
    "decide",
    "estimate_cost",
    "estimate_duration_s",
    "estimate_energy_kwh",
    "estimate_starts",
    "explain",
    "gpu_power_w",
    "order_key",
    "overdue_at_s",
    "place_on_gpus",
    "queue_positions",
    "rank_key",
    "static_score",
    "task_estimate_s",
]
