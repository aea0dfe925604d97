"""Per-token rate limit and per-team cap on queued tasks: 429 with Retry-After and a message to act on."""

from __future__ import annotations

import pytest

from api.deps import LOOKUP_BURST, LOOKUP_RATE_PER_S
from api.main import create_app
from api.ratelimit import TokenBuckets
from scheduler.service import Cluster
from scheduler.store.identity import TokenCache
from tests.security.conftest import TestClient, bearer


@pytest.fixture
def limited(make_settings, redis_url, tmp_path):
    """A cluster whose settings allow bursts of 3 requests, refilled at one per 100 s (so a slow machine
    cannot refill the bucket between requests a test sends in a row), and 2 queued tasks per team."""
    settings = make_settings(
        database_url=f"sqlite:///{tmp_path / 'limited.db'}",
        rate_limit_per_s=0.01,
        rate_limit_burst=3,
        max_queued_per_team=2,
    )
    settings.home.mkdir(parents=True, exist_ok=True)
    cluster = Cluster.open(settings, redis_url)
    cluster.rebuild_redis()
    yield cluster
    cluster.close()


def _token(cluster, user, team, admin=False):
    from scheduler.store.identity import create_token

    return bearer(create_token(cluster.factory, user=user, team=team, is_admin=admin))


def test_a_token_over_its_burst_gets_429_with_retry_after_and_others_are_unaffected(limited):
    alice, bob = _token(limited, "alice", "vision"), _token(limited, "bob", "nlp")
    with TestClient(create_app(limited)) as client:
        answers = [client.get("/api/v1/tasks", headers=alice) for _ in range(4)]
        other = client.get("/api/v1/tasks", headers=bob)

    assert [answer.status_code for answer in answers] == [200, 200, 200, 429]
    refused = answers[-1]
    assert int(refused.headers["Retry-After"]) >= 1
    assert "too many requests with this token" in refused.json()["detail"]
    assert other.status_code == 200


def test_a_team_at_its_queued_cap_gets_429_on_submit_until_a_task_leaves_the_queue(limited):
    limited.settings.rate_limit_per_s = 0  # this test is about the cap alone
    alice, bob = _token(limited, "alice", "vision"), _token(limited, "bob", "nlp")
    with TestClient(create_app(limited)) as client:
        first, second, third = (
            client.post("/api/v1/tasks", json={"command": "true"}, headers=alice) for _ in range(3)
        )
        other_team = client.post("/api/v1/tasks", json={"command": "true"}, headers=bob)
        still_readable = client.get("/api/v1/tasks", headers=alice)
        client.post(f"/api/v1/tasks/{first.json()['id']}/cancel", headers=alice)
        after_cancel = client.post("/api/v1/tasks", json={"command": "true"}, headers=alice)

    assert (first.status_code, second.status_code, third.status_code) == (201, 201, 429)
    assert "team 'vision' already has 2 tasks queued (the cap is 2)" in third.json()["detail"]
    assert third.headers["Retry-After"] == "60"
    assert other_team.status_code == 201
    assert still_readable.status_code == 200
    assert after_cancel.status_code == 201
    assert limited.tasks.count_queued_for_team(limited.tasks.get_any(second.json()["id"]).team_id) == 2


def test_a_token_bucket_refills_at_its_rate():
    now = [0.0]
    buckets = TokenBuckets(rate_per_s=2.0, burst=2, clock=lambda: now[0])

    assert [buckets.take("t"), buckets.take("t")] == [0.0, 0.0]
    assert buckets.take("t") == pytest.approx(0.5)
    now[0] = 0.5
    assert buckets.take("t") == 0.0
    assert buckets.take("other") == 0.0
    assert TokenBuckets(rate_per_s=0, burst=1).take("t") == 0.0  # 0 = no limit


def test_a_batch_counts_against_the_cap_for_the_next_single_submission_at_once(limited):
    limited.settings.rate_limit_per_s = 0
    limited.settings.max_queued_per_team = 10
    alice = _token(limited, "alice", "vision")
    with TestClient(create_app(limited)) as client:
        first = client.post("/api/v1/tasks", json={"command": "true"}, headers=alice)
        batch = client.post("/api/v1/tasks/batch", json={"specs": [{"command": "true"}] * 9}, headers=alice)
        over = client.post("/api/v1/tasks", json={"command": "true"}, headers=alice)

    assert (first.status_code, batch.status_code) == (201, 201)
    assert over.status_code == 429
    assert "already has 10 tasks queued (the cap is 10)" in over.json()["detail"]


def test_a_client_sending_unknown_tokens_gets_429_after_a_burst_of_lookups_and_known_tokens_do_not_count(
    limited,
):
    alice = _token(limited, "alice", "vision")
    app = create_app(limited)
    # the lookup buckets as the API makes them, on a clock that stands still: no refill while the test runs
    app.state.token_lookups = TokenBuckets(LOOKUP_RATE_PER_S, LOOKUP_BURST, clock=lambda: 0.0)
    app.state.token_cache = TokenCache(limited.factory, ttl_s=3600)  # alice's entry outlives a slow run
    with TestClient(app) as client:
        known = client.get("/api/v1/tasks", headers=alice)  # its one lookup, then cached
        guesses = [
            client.get("/api/v1/tasks", headers=bearer(f"ns_guess{i}")).status_code
            for i in range(LOOKUP_BURST)
        ]
        refused = client.get("/api/v1/tasks", headers=bearer("ns_one-more-guess"))
        cached = client.get("/api/v1/tasks", headers=alice)

    assert known.status_code == 200
    assert guesses[: LOOKUP_BURST - 1] == [401] * (LOOKUP_BURST - 1)  # the first lookup was alice's
    assert guesses[-1] == refused.status_code == 429
    assert "too many unknown or new tokens from testclient" in refused.json()["detail"]
    assert int(refused.headers["Retry-After"]) >= 1
    assert cached.status_code == 200  # a token this process knows costs no lookup
