"""Per-token rate limit: a token bucket per API token, kept in this API process's memory.

In-process on purpose: one API process is the normal deployment, and a limit that resets when the API
restarts is still a limit. Several API processes behind a balancer each allow the rate (a Redis-backed
bucket would share it; the seam is `TokenBuckets.take`).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

MAX_TRACKED = 10_000


@dataclass(slots=True)
class _Bucket:
    tokens: float
    updated_s: float


class TokenBuckets:
    """Buckets of `burst` requests refilled at `rate_per_s`, one per key; thread-safe."""

    def __init__(self, rate_per_s: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate_per_s = rate_per_s
        self.burst = burst
        self._clock = clock
        self._buckets: dict[object, _Bucket] = {}
        self._lock = threading.Lock()

    def take(self, key: object) -> float:
        """Spend one request of `key`'s bucket: 0.0 when allowed, else the seconds until one is available."""
        if self.rate_per_s <= 0:
            return 0.0
        now = self._clock()
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                if len(self._buckets) >= MAX_TRACKED:
                    self._forget_full(now)
                bucket = self._buckets[key] = _Bucket(float(self.burst), now)
            bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.updated_s) * self.rate_per_s)
            bucket.updated_s = now
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return 0.0
            return (1.0 - bucket.tokens) / self.rate_per_s

    def _forget_full(self, now: float) -> None:
        """Drop buckets that have refilled completely (they hold no state worth keeping)."""
        refill_s = self.burst / self.rate_per_s
        for key in [k for k, b in self._buckets.items() if now - b.updated_s >= refill_s]:
            del self._buckets[key]


def retry_after_s(wait_s: float) -> int:
    """Whole seconds for a Retry-After header (at least 1)."""
    return max(1, math.ceil(wait_s))
