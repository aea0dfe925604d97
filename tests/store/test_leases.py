"""Leases: heartbeats renew only their own claim, the reaper takes only due leases, tokens fence claims."""

from __future__ import annotations

from scheduler.store.queue import RenewResult
from tests.store.conftest import NODE, fill_inbox

TTL_MS = 5_000


def _claim_one(queue, task_id: int = 1, now_ms: int = 1_000):
    fill_inbox(queue, [task_id])
    claim = queue.claim(NODE, now_ms, TTL_MS)
    assert claim is not None and claim.task_id == task_id
    return claim


def _lease_expiry_in_reaper_index(queue, task_id: int) -> float | None:
    return queue.client.zscore(queue.keys.leases, str(task_id))


def test_a_renew_with_its_own_token_extends_the_lease(queue):
    claim = _claim_one(queue)
    assert queue.lease(1).expires_ms == 6_000
    assert queue.renew(1, claim.token, 4_000, TTL_MS) == RenewResult.RENEWED
    assert queue.lease(1).expires_ms == 9_000
    assert _lease_expiry_in_reaper_index(queue, 1) == 9_000
    assert queue.expired(8_999) == []


def test_a_renew_with_another_token_is_refused_as_stolen_and_changes_nothing(queue):
    claim = _claim_one(queue)
    assert queue.renew(1, claim.token + "0", 4_000, TTL_MS) == RenewResult.STOLEN == 0
    assert queue.lease(1).expires_ms == 6_000
    assert queue.lease(1).token == claim.token
    assert _lease_expiry_in_reaper_index(queue, 1) == 6_000


def test_a_renew_after_the_lease_expired_and_was_reaped_finds_it_missing(queue):
    claim = _claim_one(queue)
    assert queue.expired(6_000) == [(1, claim.token)]
    assert queue.lease(1) is None
    assert _lease_expiry_in_reaper_index(queue, 1) is None
    assert queue.renew(1, claim.token, 6_001, TTL_MS) == RenewResult.MISSING == -1
    assert queue.lease(1) is None  # a missing lease is not recreated by a heartbeat


def test_a_renew_of_a_task_with_a_cancel_request_says_so_and_still_extends_the_lease(queue):
    claim = _claim_one(queue)
    assert queue.renew(1, claim.token, 2_000, TTL_MS) == RenewResult.RENEWED
    queue.request_cancel(1, NODE)
    assert queue.wait_node_doorbell(NODE, 0.1)
    assert queue.renew(1, claim.token, 3_000, TTL_MS) == RenewResult.CANCEL_REQUESTED == 2
    assert queue.lease(1).expires_ms == 8_000


def test_expired_takes_only_the_leases_that_are_due(queue):
    fill_inbox(queue, [1, 2, 3])
    tokens = {}
    for now_ms in (1_000, 2_000, 3_000):
        claim = queue.claim(NODE, now_ms, TTL_MS)
        tokens[claim.task_id] = claim.token
    assert queue.expired(5_999) == []
    assert queue.expired(7_000) == [(1, tokens[1]), (2, tokens[2])]
    assert queue.lease(3) is not None
    assert queue.expired(7_000) == []  # taken once
    assert queue.expired(8_000) == [(3, tokens[3])]


def test_a_renewed_lease_is_not_taken_by_the_reaper(queue):
    fill_inbox(queue, [1, 2])
    first = queue.claim(NODE, 1_000, TTL_MS)
    second = queue.claim(NODE, 1_000, TTL_MS)
    assert queue.renew(first.task_id, first.token, 5_000, TTL_MS) == RenewResult.RENEWED
    assert queue.expired(6_000) == [(second.task_id, second.token)]
    assert queue.lease(first.task_id).token == first.token


def test_a_lease_renewed_after_the_reaper_listed_it_is_left_alone(queue):
    claim = _claim_one(queue)
    # the reaper's index still says 6000 while the lease itself was renewed to 10000 (a race)
    queue.client.hset(queue.keys.lease(1), "expires_ms", 10_000)
    assert queue.expired(7_000) == []
    assert queue.lease(1).token == claim.token
    assert queue.renew(1, claim.token, 7_000, TTL_MS) == RenewResult.RENEWED


def test_a_reaper_entry_without_its_lease_is_dropped_without_a_token(queue):
    queue.client.zadd(queue.keys.leases, {"5": 100})
    assert queue.expired(1_000) == []
    assert _lease_expiry_in_reaper_index(queue, 5) is None


def test_release_drops_the_lease_only_with_the_right_token(queue):
    claim = _claim_one(queue)
    queue.request_cancel(1, NODE)
    assert queue.release(1, claim.token + "0") is False
    assert queue.lease(1).token == claim.token
    assert queue.release(1, claim.token) is True
    assert queue.lease(1) is None
    assert _lease_expiry_in_reaper_index(queue, 1) is None
    assert queue.client.exists(queue.keys.cancel(1)) == 0
    assert queue.release(1, claim.token) is False  # already gone
    assert queue.renew(1, claim.token, 2_000, TTL_MS) == RenewResult.MISSING


def test_release_rings_the_scheduler(queue):
    claim = _claim_one(queue)
    queue.client.delete(queue.keys.scheduler_doorbell)
    queue.release(1, claim.token)
    assert queue.wait_scheduler_doorbell(0.1)


def test_a_reclaimed_task_fences_out_the_old_claim(queue):
    old = _claim_one(queue)
    assert queue.expired(6_000) == [(1, old.token)]
    fill_inbox(queue, [1], now_ms=7_000)
    new = queue.claim(NODE, 7_000, TTL_MS)
    assert new.token != old.token
    assert queue.renew(1, old.token, 8_000, TTL_MS) == RenewResult.STOLEN
    assert queue.release(1, old.token) is False
    assert queue.renew(1, new.token, 8_000, TTL_MS) == RenewResult.RENEWED


def test_fencing_tokens_stay_unique_after_redis_loses_its_data_and_starts_a_new_epoch(queue):
    fill_inbox(queue, [1, 2, 3])
    first_epoch = queue.epoch()
    before = [queue.claim(NODE, 1_000, TTL_MS).token for _ in range(3)]
    queue.client.flushall()
    assert queue.epoch() is None
    second_epoch = queue.start_epoch()
    assert second_epoch != first_epoch
    fill_inbox(queue, [1, 2, 3])
    after = [queue.claim(NODE, 1_000, TTL_MS).token for _ in range(3)]
    # the counter restarted, the epoch did not: no token repeats
    assert [token.rsplit("-", 1)[1] for token in after] == [token.rsplit("-", 1)[1] for token in before]
    assert all(token.startswith(f"{first_epoch}-") for token in before)
    assert all(token.startswith(f"{second_epoch}-") for token in after)
    assert set(before).isdisjoint(after)


def test_a_claim_before_the_rebuild_never_reuses_a_token_from_an_earlier_loss(queue):
    tokens = []
    for _ in range(2):
        queue.client.flushall()  # Redis lost its data; the dispatcher has not rebuilt yet
        fill_inbox(queue, [1])
        claim = queue.claim(NODE, 1_000, TTL_MS)
        tokens.append(claim.token if claim else None)
    given = [token for token in tokens if token is not None]
    assert len(set(given)) == len(given)
