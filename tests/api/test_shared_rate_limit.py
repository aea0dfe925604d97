"""The rate limit kept in Redis (`SharedTokenBuckets`, used when several API processes serve): every
process spends from the same bucket of a token, refilled by Redis's clock."""

from __future__ import annotations

import asyncio

from redis.asyncio import Redis as AsyncRedis

from api.ratelimit import SharedTokenBuckets, TokenBuckets
from scheduler.keys import RedisKeys

KEYS = RedisKeys("nstest-rate:")


def _buckets(redis_url: str, rate_per_s: float, burst: int) -> SharedTokenBuckets:
    return SharedTokenBuckets(AsyncRedis.from_url(redis_url, decode_responses=True), KEYS, rate_per_s, burst)


def test_two_processes_share_one_burst_per_token(redis_url: str) -> None:
    async def scenario() -> tuple[list[float], list[float], float]:
        # Given two API processes' limiters on one Redis, 4 requests a token may send at once, refilled
        # at one per 1000 s (no refill within the test)
        first, second = _buckets(redis_url, 0.001, 4), _buckets(redis_url, 0.001, 4)
        try:
            # When the token alternates between them
            waits = [await (first if i % 2 else second).take_async(7) for i in range(6)]
            other = [await first.take_async(8)]  # another token has its own bucket
            ttl_ms = await first._client.pttl(KEYS.rate_bucket("7"))
            return waits[:4], waits[4:] + other, ttl_ms
        finally:
            await first.close()
            await second.close()

    allowed, rest, ttl_ms = asyncio.run(scenario())
    # Then 4 pass in all, not 4 per process; the next ones (refused: they spend nothing) learn how long
    # until one is back, and another token is not held back
    assert allowed == [0.0, 0.0, 0.0, 0.0]
    assert all(990 < wait <= 1000 for wait in rest[:2])
    assert rest[2] == 0.0
    assert 4_000_000 < ttl_ms <= 4_001_000  # the bucket is forgotten once it would be full again


def test_a_bucket_refills_at_its_rate(redis_url: str) -> None:
    async def scenario() -> list[float]:
        limiter = _buckets(redis_url, 20.0, 1)  # one at a time, one every 50 ms
        try:
            first = [await limiter.take_async("t") for _ in range(2)]
            await asyncio.sleep(max(first[1], 0.0) + 0.05)
            return [*first, await limiter.take_async("t")]
        finally:
            await limiter.close()

    now, refused, later = asyncio.run(scenario())
    assert now == 0.0 and 0.0 < refused <= 0.05
    assert later == 0.0


def test_a_rate_of_zero_is_off_in_both_kinds(redis_url: str) -> None:
    async def scenario() -> list[float]:
        limiter = _buckets(redis_url, 0.0, 1)
        try:
            return [await limiter.take_async("t") for _ in range(5)]
        finally:
            await limiter.close()

    assert asyncio.run(scenario()) == [0.0] * 5
    local = TokenBuckets(0.0, 1)
    assert asyncio.run(local.take_async("t")) == 0.0
