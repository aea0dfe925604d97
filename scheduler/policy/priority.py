"""Effective priority with linear starvation aging, and the static Redis score that orders it.

effective(t) = class * class_step_s + (t - enqueued_at_s)            (in "seconds of waiting")

Every task ages at the same rate, so the order between two queued tasks never changes with t:
task A is ahead of B iff  A.class*step - A.enqueued_at  >  B.class*step - B.enqueued_at.
That lets the Redis sorted set keep one static score per task (ascending = runs first):

    score = enqueued_at_s - class * class_step_s

A task that has waited `class_step_s * (URGENT - its class)` seconds ranks ahead of every task
submitted after that moment, whatever its class: the starvation bound (see docs/scheduling.md).
"""

from __future__ import annotations

from scheduler.policy.types import PriorityClass

DEFAULT_CLASS_STEP_S = 2 * 3600.0


def queue_score(
    priority: PriorityClass, enqueued_at_s: float, class_step_s: float = DEFAULT_CLASS_STEP_S
) -> float:
    """The static sorted-set score of a queued task: lower runs first."""
    return enqueued_at_s - int(priority) * class_step_s


def effective_priority(
    priority: PriorityClass, enqueued_at_s: float, now_s: float, class_step_s: float = DEFAULT_CLASS_STEP_S
) -> float:
    """Effective priority at `now_s`, in seconds of waiting: the class part plus the age part."""
    return int(priority) * class_step_s + max(0.0, now_s - enqueued_at_s)
