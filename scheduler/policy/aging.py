"""The ranking key of a queued task and its parts: class, age, and the bounded nightshift credits.

Lower key runs first. All terms but the credits are the static score of `priority.queue_score`, so every
task ages at the same rate and the order only changes when a credit changes. Each credit is bounded,
which is what makes the starvation bound hold (docs/scheduling.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scheduler.policy.config import PolicyConfig
from scheduler.policy.priority import queue_score
from scheduler.policy.types import PriorityClass, QueuedTask


def task_estimate_s(task: QueuedTask, config: PolicyConfig) -> float:
    """The run time the policy assumes: the caller's estimate, else the time limit, else the default."""
    if task.estimated_s is not None and task.estimated_s > 0:
        return task.estimated_s
    if task.time_limit_s is not None and task.time_limit_s > 0:
        return task.time_limit_s
    return config.default_estimate_s


def short_job_credit_s(size: float, config: PolicyConfig) -> float:
    """Credit for small jobs: full at `short_job_min_gpu_s`, falling with the log of `size` (`credit_size`)
    to 0 at `short_job_max_gpu_s`."""
    if not config.credits_on or config.short_job_max_credit_s <= 0:
        return 0.0
    lo, hi = config.short_job_min_gpu_s, config.short_job_max_gpu_s
    x = min(max(size, lo), hi)
    return config.short_job_max_credit_s * math.log(hi / x) / math.log(hi / lo)


def credit_size(task: QueuedTask, config: PolicyConfig) -> float:
    """The size the short-job credit falls with: estimated run time x GPUs^`short_job_width_exponent`
    (x the GPU share of a task that shares one); GPU-seconds when the exponent is 1."""
    width: float = float(max(task.gpus, 1)) ** config.short_job_width_exponent
    return width * min(task.gpu_fraction, 1.0) * task_estimate_s(task, config)


_STATIC: dict[tuple[tuple[object, ...], QueuedTask], float] = {}


def static_score(task: QueuedTask, config: PolicyConfig) -> float:
    """Score for the sorted queue (ascending runs first): class and age, plus the short-job credit.

    It does not depend on the time, so a sorted set (Redis, or the simulator's) can hold it.
    """
    key = (_score_params(config), task)
    score = _STATIC.get(key)
    if score is None:
        if len(_STATIC) > 200_000:
            _STATIC.clear()
        base = queue_score(task.priority, task.enqueued_at_s, config.class_step_s)
        score = _STATIC[key] = base - short_job_credit_s(credit_size(task, config), config)
    return score


def _score_params(config: PolicyConfig) -> tuple[object, ...]:
    """The settings a static score depends on (a cache key that cannot go stale)."""
    return (
        config.policy, config.class_step_s, config.short_job_max_credit_s, config.short_job_min_gpu_s,
        config.short_job_max_gpu_s, config.short_job_width_exponent, config.default_estimate_s,
    )  # fmt: skip


def deadline_credit_s(task: QueuedTask, now_s: float, config: PolicyConfig) -> float:
    """Credit once a task's latest start (deadline - estimate) is within `deadline_lead_s` of now."""
    if not config.credits_on or task.deadline_s is None:
        return 0.0
    latest_start_s = task.deadline_s - task_estimate_s(task, config)
    return config.deadline_credit_s if now_s >= latest_start_s - config.deadline_lead_s else 0.0


def rank_key(task: QueuedTask, now_s: float, config: PolicyConfig, fairshare_factor: float) -> float:
    """The key `decide` orders its window by (lower first)."""
    key = static_score(task, config)
    if config.credits_on:
        key -= config.fairshare_max_credit_s * fairshare_factor + deadline_credit_s(task, now_s, config)
    return key


def aging_bound_s(priority: PriorityClass, config: PolicyConfig) -> float:
    """B: after waiting B seconds, a task ranks ahead of every task submitted later, whatever its class."""
    return (int(PriorityClass.URGENT) - int(priority)) * config.class_step_s + config.max_credit_s()


def overdue_at_s(task: QueuedTask, config: PolicyConfig) -> float:
    """When `task` has waited its aging bound: from then on it is overdue and ranks ahead of every task that
    is not. Static (submit time + bound), so a second sorted set (Redis, or the simulator's list) indexed by
    it finds the overdue tasks with one range query, however deep they sit in the static-score order."""
    return task.enqueued_at_s + aging_bound_s(task.priority, config)


OrderKey = tuple[int, float, float]


def order_key(task: QueuedTask, now_s: float, config: PolicyConfig, fairshare_factor: float) -> OrderKey:
    """The order `decide` considers tasks in (lower first): overdue tasks first, earliest overdue first;
    then the others by `rank_key`.

    For fifo and backfill (no credits) the overdue tasks are exactly the first ones by `rank_key`, so this
    is the plain class-and-age order; with credits it keeps the aging guarantee when short-job and fair-share
    credits have pushed an old task far down the order.
    """
    key = rank_key(task, now_s, config, fairshare_factor)
    due_s = overdue_at_s(task, config)
    if due_s <= now_s:
        return (0, due_s, key)
    return (1, key, 0.0)


@dataclass(frozen=True, slots=True)
class PriorityParts:
    """A task's effective priority in seconds of waiting, broken into its parts (higher runs first)."""

    class_s: float
    age_s: float
    short_job_s: float
    fair_share_s: float
    deadline_s: float

    @property
    def total_s(self) -> float:
        """The sum of the parts."""
        return self.class_s + self.age_s + self.short_job_s + self.fair_share_s + self.deadline_s


def priority_parts(
    task: QueuedTask, now_s: float, config: PolicyConfig, fairshare_factor: float
) -> PriorityParts:
    """The parts of `rank_key` for `explain`, as positive contributions."""
    fair = config.fairshare_max_credit_s * fairshare_factor if config.credits_on else 0.0
    return PriorityParts(
        class_s=int(task.priority) * config.class_step_s,
        age_s=max(0.0, now_s - task.enqueued_at_s),
        short_job_s=short_job_credit_s(credit_size(task, config), config),
        fair_share_s=fair,
        deadline_s=deadline_credit_s(task, now_s, config),
    )
