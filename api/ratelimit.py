"""Per-token rate limit: a token bucket per API token.

`TokenBuckets` keeps them in this process's memory (one API process, the default: no round trip). With
several API processes (`api_workers`, or processes behind a balancer) each would allow the whole rate, so
`SharedTokenBuckets` keeps the same buckets in Redis, refilled by Redis's clock in one Lua step. Both
answer `take_async(key)`: 0.0 when the request may go, else the seconds until it could.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from redis.asyncio import Redis as AsyncRedis
from redis.exceptions import RedisError

from scheduler.errors import ServiceUnavailable
from scheduler.keys import RedisKeys

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

    async def take_async(self, key: object) -> float:
        """`take`, for callers that also serve `SharedTokenBuckets`."""
        return self.take(key)

    def _forget_full(self, now: float) -> None:
        """Drop buckets that have refilled completely (they hold no state worth keeping)."""
        refill_s = self.burst / self.rate_per_s
        for key in [k for k, b in self._buckets.items() if now - b.updated_s >= refill_s]:
            del self._buckets[key]


# KEYS[1] the bucket HASH; ARGV[1] rate per second, ARGV[2] burst. Returns the wait in seconds, as text
# (Lua numbers come back truncated to integers).
_TAKE = """
local now_t = redis.call('TIME')
local now = tonumber(now_t[1]) + tonumber(now_t[2]) / 1e6
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens, at = tonumber(state[1]), tonumber(state[2])
if not tokens then tokens, at = burst, now end
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = (1 - tokens) / rate end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return tostring(wait)
"""


class SharedTokenBuckets:
    """`TokenBuckets` kept in Redis: every API process spends from the same bucket of a token."""

    def __init__(self, client: AsyncRedis, keys: RedisKeys, rate_per_s: float, burst: int) -> None:
        self.rate_per_s = rate_per_s
        self.burst = burst
        self._client = client
        self._keys = keys
        self._take = client.register_script(_TAKE)

    async def take_async(self, key: object) -> float:
        """Spend one request of `key`'s bucket: 0.0 when allowed, else the seconds until one is available."""
        if self.rate_per_s <= 0:
            return 0.0
        try:
            answer = await self._take(
                keys=[self._keys.rate_bucket(str(key))], args=[self.rate_per_s, self.burst]
            )
        except RedisError as exc:
            raise ServiceUnavailable(
                f"the rate limit could not be checked: Redis did not answer ({exc})"
            ) from exc
        return float(answer)

    async def close(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()


def retry_after_s(wait_s: float) -> int:
    """Whole seconds for a Retry-After header (at least 1)."""
    return max(1, math.ceil(wait_s))
