"""Cheap admission checks of the API's hot path: an estimate of each team's queued tasks.

The per-team cap on queued tasks (`max_queued_per_team`) needs a count in SQL, whose cost grows with the
team's queue. `QueuedEstimate` remembers the last count of each team for `ttl_s` seconds (1 s by default)
and adds every submission this process admits since; while that estimate, plus the submission at hand,
stays within half the cap, the submission is admitted without SQL. Otherwise the count is made in SQL
(and a 429 is only ever answered from such a count), so the cap binds exactly as before near it.

What the estimate cannot see are tasks queued by another process (a second API process, a retry requeued
by the scheduler) in the last `ttl_s` seconds: only when those exceed half the cap within one `ttl_s`
could a team go over its cap, which is already the precision of the check (it is not atomic with the
insert). Batches and sweeps, which add many tasks at once, `forget` the team's estimate.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(slots=True)
class _Estimate:
    count: int
    counted_s: float


class QueuedEstimate:
    """Per team: the last SQL count of its queued tasks plus what this process admitted since. Thread-safe."""

    def __init__(self, ttl_s: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self._clock = clock
        self._teams: dict[int, _Estimate] = {}
        self._generation = 0
        self._lock = threading.Lock()

    def admit(self, team_id: int, cap: int) -> bool:
        """True (and the submission counted) when a fresh estimate keeps the team within half its cap.

        False means: count in SQL (`ticket`, then `record`).
        """
        now = self._clock()
        with self._lock:
            estimate = self._teams.get(team_id)
            if estimate is None or now - estimate.counted_s >= self.ttl_s:
                return False
            if 2 * (estimate.count + 1) > cap:
                return False
            estimate.count += 1
            return True

    def ticket(self, team_id: int) -> int:
        """Take before counting in SQL; hand to `record` so a count older than a `forget` is not kept."""
        with self._lock:
            return self._generation

    def record(self, team_id: int, count: int, ticket: int) -> None:
        """Remember `count` (queued tasks counted in SQL, plus the submission being admitted)."""
        now = self._clock()
        with self._lock:
            if ticket == self._generation:
                self._teams[team_id] = _Estimate(count, now)

    def forget(self, team_id: int) -> None:
        """Drop the team's estimate (and any count in flight): its next submission counts in SQL."""
        with self._lock:
            self._teams.pop(team_id, None)
            self._generation += 1
