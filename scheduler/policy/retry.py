"""Whether a failed attempt is tried again, after how long, and why not — from the reasons of past attempts.

- Lost worker or node (`lost_worker`, `worker_stopped`): retried at once and not counted against the spec's
  `retries`; but a task whose worker is lost `MAX_LOST_WORKER_IN_A_ROW` times in a row is given up with a
  clear reason instead of taking nodes down in a loop.
- `nonzero_exit`, `timeout`, `oom`, `signal`: counted; retried while `retries` allow, with backoff.
- Worker shut down (`worker_shutdown`: a restart, a deploy) or requeued by a person (`requeued`, `nightshift
  requeue`): retried at once, never counted, and left out when counting lost workers in a row; restarting
  nightshift three times must not fail a healthy task.
- `cancelled` and `executor` (the job could not start: missing conda, bad workdir): never retried.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

LOST_WORKER_REASONS = frozenset({"lost_worker", "worker_stopped"})
SHUTDOWN_REASON = "worker_shutdown"
REQUEUE_REASON = "requeued"
UNCOUNTED_REASONS = frozenset({SHUTDOWN_REASON, REQUEUE_REASON})
COUNTED_REASONS = frozenset({"nonzero_exit", "timeout", "output_limit", "oom", "signal"})
MAX_LOST_WORKER_IN_A_ROW = 3
BACKOFF_FIRST_S = 30.0
BACKOFF_MAX_S = 600.0


@dataclass(frozen=True, slots=True)
class RetryDecision:
    """Retry after `delay_s`, or give up with `reason` and a `message` for the person."""

    retry: bool
    delay_s: float = 0.0
    reason: str = ""
    message: str = ""


def backoff_s(counted_failures: int, first_s: float = BACKOFF_FIRST_S) -> float:
    """Delay before the n-th counted retry: 30 s, 60 s, 120 s, ... at most 10 minutes."""
    return float(min(BACKOFF_MAX_S, first_s * 2 ** max(0, counted_failures - 1)))


def decide_retry(
    previous_reasons: Sequence[str], reason: str, retries: int, backoff_first_s: float = BACKOFF_FIRST_S
) -> RetryDecision:
    """What to do after an attempt ended with `reason`, given the reasons of the attempts before it."""
    if reason in UNCOUNTED_REASONS:
        return RetryDecision(True, 0.0)
    history = [past for past in (*previous_reasons, reason) if past not in UNCOUNTED_REASONS]
    if reason in LOST_WORKER_REASONS:
        in_a_row = 0
        for past in reversed(history):
            if past not in LOST_WORKER_REASONS:
                break
            in_a_row += 1
        if in_a_row >= MAX_LOST_WORKER_IN_A_ROW:
            return RetryDecision(
                False,
                reason="lost_worker_repeatedly",
                message=f"its worker was lost {in_a_row} times in a row (a node crashed or the job took it "
                "down); not retrying — check the job and resubmit",
            )
        return RetryDecision(True, 0.0)
    if reason not in COUNTED_REASONS:
        return RetryDecision(False, reason=reason)
    counted = sum(1 for past in history if past in COUNTED_REASONS)
    if counted <= retries:
        return RetryDecision(True, backoff_s(counted, backoff_first_s))
    return RetryDecision(False, reason=reason)
