"""FastAPI dependencies: the cluster of this process and the caller's identity (authorization lives here).

Every route that needs a caller takes `IdentityDep`, so the checks made here hold for every endpoint:
the token (401 when missing, unknown or revoked), the per-token rate limit (429, `api.ratelimit`), the
per-address limit on SQL lookups of tokens not cached (429), and on task submission the per-team cap on
queued tasks (429).

The hot path runs on the event loop without a thread hop: the identity comes from `TokenCache` (SQL at
most every 2 s per token; a revocation in another process is honoured within those 2 s, one in this
process at once) and the queued cap from `QueuedEstimate` (SQL whenever the team may be near its cap).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from redis.asyncio import Redis as AsyncRedis
from starlette.concurrency import run_in_threadpool

from api.ratelimit import SharedTokenBuckets, TokenBuckets, retry_after_s
from api.submissions import SubmissionQueue
from scheduler.admission import QueuedEstimate
from scheduler.cluster_state import UsageCache
from scheduler.errors import NotFoundError, PermissionDenied, RateLimited
from scheduler.service import Cluster
from scheduler.store.identity import Identity, TokenCache, team_id_by_name, team_of_user

bearer = HTTPBearer(auto_error=False, description="an API token from `nightshift token create`")


async def get_cluster(request: Request) -> Cluster:
    """The cluster this API process serves (async: a dependency this cheap needs no worker thread)."""
    cluster: Cluster = request.app.state.cluster
    return cluster


ClusterDep = Annotated[Cluster, Depends(get_cluster)]


def get_usage(request: Request) -> UsageCache:
    """The API process's cache of team usage (recomputed from SQL every few seconds)."""
    usage: UsageCache = request.app.state.usage
    return usage


UsageDep = Annotated[UsageCache, Depends(get_usage)]


def rate_limiter(request: Request, cluster: Cluster) -> TokenBuckets | SharedTokenBuckets:
    """The token buckets, made on first use from the cluster's settings: in this process's memory, or in
    Redis when several API processes serve (`api_workers`), so that they share each token's rate."""
    state = request.app.state
    buckets: TokenBuckets | SharedTokenBuckets | None = getattr(state, "rate_limiter", None)
    if buckets is None:
        settings = cluster.settings
        if settings.api_workers > 1 and cluster.queue.url is not None:
            client = AsyncRedis.from_url(cluster.queue.url, decode_responses=True)
            keys = cluster.queue.keys
            buckets = SharedTokenBuckets(client, keys, settings.rate_limit_per_s, settings.rate_limit_burst)
        else:
            buckets = TokenBuckets(settings.rate_limit_per_s, settings.rate_limit_burst)
        state.rate_limiter = buckets
    return buckets


async def enforce_rate_limit(request: Request, cluster: Cluster, who: Identity) -> None:
    """429 with Retry-After when this token has spent its burst and the refill has not caught up."""
    limiter = rate_limiter(request, cluster)
    wait_s = await limiter.take_async(who.token_id if who.token_id is not None else who.user_id)
    if wait_s > 0:
        seconds = retry_after_s(wait_s)
        raise RateLimited(
            f"too many requests with this token (limit {cluster.settings.rate_limit_per_s:g}/s, bursts of "
            f"{cluster.settings.rate_limit_burst}); retry in {seconds} s",
            retry_after_s=seconds,
        )


# Token lookups in SQL (a token not in this process's cache: a new or unknown one) per client address: a
# bucket of LOOKUP_BURST refilled at LOOKUP_RATE_PER_S, in each API process's memory. Known tokens stay
# cached for seconds, so honest clients spend almost none; a client guessing or retrying a wrong token gets
# 429s instead of one SQL query per request.
LOOKUP_RATE_PER_S = 20.0
LOOKUP_BURST = 100


async def enforce_lookup_limit(request: Request, cluster: Cluster) -> None:
    """429 with Retry-After when this client address has looked up too many uncached tokens; off with the
    rate limit (`rate_limit_per_s` 0)."""
    if cluster.settings.rate_limit_per_s <= 0:
        return
    state = request.app.state
    lookups: TokenBuckets | None = getattr(state, "token_lookups", None)
    if lookups is None:
        lookups = state.token_lookups = TokenBuckets(LOOKUP_RATE_PER_S, LOOKUP_BURST)
    address = request.client.host if request.client is not None else "unknown"
    wait_s = lookups.take(address)
    if wait_s > 0:
        seconds = retry_after_s(wait_s)
        raise RateLimited(
            f"too many unknown or new tokens from {address} (limit {LOOKUP_RATE_PER_S:g}/s, bursts of "
            f"{LOOKUP_BURST}); check the token you send (`nightshift token create` makes one), retry in "
            f"{seconds} s",
            retry_after_s=seconds,
        )


def token_cache(request: Request, cluster: Cluster) -> TokenCache:
    """This API process's cache of token -> identity, made on first use."""
    state = request.app.state
    cache: TokenCache | None = getattr(state, "token_cache", None)
    if cache is None:
        cache = state.token_cache = TokenCache(cluster.factory)
    return cache


def submission_queue(request: Request, cluster: Cluster) -> SubmissionQueue:
    """This API process's group commit of single submissions, made on first use."""
    state = request.app.state
    queue: SubmissionQueue | None = getattr(state, "submission_queue", None)
    if queue is None:
        queue = state.submission_queue = SubmissionQueue(cluster)
    return queue


def queued_estimate(request: Request) -> QueuedEstimate:
    """This API process's estimate of each team's queued tasks, made on first use."""
    state = request.app.state
    estimate: QueuedEstimate | None = getattr(state, "queued_estimate", None)
    if estimate is None:
        estimate = state.queued_estimate = QueuedEstimate()
    return estimate


def enforce_queued_cap(cluster: Cluster, who: Identity, estimate: QueuedEstimate | None = None) -> None:
    """429 when the caller's team already has `max_queued_per_team` tasks waiting (counted in SQL).

    With an `estimate`, the count (plus this submission) is remembered for it.
    """
    cap = cluster.settings.max_queued_per_team
    if cap is None:
        return
    ticket = estimate.ticket(who.team_id) if estimate is not None else 0
    queued = cluster.tasks.count_queued_for_team(who.team_id)
    if queued >= cap:
        raise RateLimited(
            f"team {who.team!r} already has {queued} task{'' if queued == 1 else 's'} queued (the cap is "
            f"{cap}); wait for some to start or cancel some, then submit again",
            retry_after_s=60,
        )
    if estimate is not None:
        estimate.record(who.team_id, queued + 1, ticket)


async def current_identity(
    request: Request,
    cluster: ClusterDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Identity:
    """Who is calling, from the bearer token; 401 when missing, unknown or revoked; 429 over the limits."""
    token = credentials.credentials if credentials else None
    cache = token_cache(request, cluster)
    who = cache.cached(token)
    if who is None:  # SQL: in a worker thread, off the event loop
        if token:
            await enforce_lookup_limit(request, cluster)
        who = await run_in_threadpool(cache.authenticate, token)
    await enforce_rate_limit(request, cluster, who)
    return who


IdentityDep = Annotated[Identity, Depends(current_identity)]


async def within_queued_cap(request: Request, cluster: ClusterDep, who: IdentityDep) -> None:
    """Dependency of every submit route: 429 before the body is read when the team's queue is full.

    No SQL while this process's estimate shows the team far below its cap (`QueuedEstimate`); a 429 is
    only ever answered from a count made in SQL.
    """
    cap = cluster.settings.max_queued_per_team
    if cap is None:
        return
    estimate = queued_estimate(request)
    if estimate.admit(who.team_id, cap):
        return
    await run_in_threadpool(enforce_queued_cap, cluster, who, estimate)


def forget_queued_estimate(request: Request, who: Identity) -> None:
    """After a batch or sweep added many tasks at once: the team's next submission counts in SQL again."""
    queued_estimate(request).forget(who.team_id)


QueuedCap = Depends(within_queued_cap)
# A task id in a path: out-of-range numbers (SQL BIGINT) answer 422, not a database error.
TaskId = Annotated[int, Path(ge=1, le=2**63 - 1, description="the task's id")]


def admin_identity(who: IdentityDep) -> Identity:
    """The caller, who must hold an admin token."""
    if not who.is_admin:
        raise PermissionDenied("this needs an admin token")
    return who


AdminDep = Annotated[Identity, Depends(admin_identity)]


def refuse_user_out_of_sight(cluster: Cluster, who: Identity, user: str) -> None:
    """404 for a `user=` filter naming someone who does not exist or (for a member) is in another team:
    whether they exist elsewhere is not said (`GET /tasks`, `GET /sweeps`)."""
    user_team = team_of_user(cluster.factory, user)
    if user_team is None or (user_team != who.team_id and not who.is_admin):
        where = "" if who.is_admin else f" in team {who.team}"
        raise NotFoundError(f"no user {user!r}{where}")


def refuse_team_out_of_sight(cluster: Cluster, who: Identity, team: str, listing: str) -> None:
    """For a `team=` filter of a list (`listing`: "tasks", "sweeps"): 403 for a member naming any team but
    their own, as `/quota?team=` answers (not their own team's in its place); 404 for an admin naming a
    team that does not exist (`GET /tasks`, `GET /sweeps`)."""
    if team != who.team and not who.is_admin:
        raise PermissionDenied(
            f"you can see only your own team's {listing} (team {who.team}); "
            "only admins may list another team's"
        )
    if who.is_admin and team_id_by_name(cluster.factory, team) is None:
        raise NotFoundError(f"team {team!r} not found")
