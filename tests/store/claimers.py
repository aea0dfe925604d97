"""Claim loops run by the concurrency tests, in threads or in separate processes (spawned: importable)."""

from __future__ import annotations

from typing import Any

from scheduler.store.queue import RedisQueue

LEASE_TTL_MS = 60_000


def claim_until_empty(redis_url: str, node: str) -> list[tuple[int, str]]:
    """Claim with its own connection until the node's inbox is empty; (task id, token) of each claim."""
    queue = RedisQueue.from_url(redis_url)
    claimed: list[tuple[int, str]] = []
    try:
        while (claim := queue.claim(node, 1_000, LEASE_TTL_MS)) is not None:
            claimed.append((claim.task_id, claim.token))
    finally:
        queue.client.close()
    return claimed


def claim_in_process(redis_url: str, node: str, start: Any, results: Any) -> None:
    """Process entry point: wait for every claimer to be ready, claim, send the claims back."""
    start.wait()
    results.put(claim_until_empty(redis_url, node))
