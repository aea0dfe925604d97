"""FastAPI dependencies: the cluster of this process and the caller's identity (authorization lives here).

Every route that needs a caller takes `IdentityDep`, so the checks made here hold for every endpoint:
the token (401 when missing, unknown or revoked), the per-token rate limit (429, `api.ratelimit`), and on
task submission the per-team cap on queued tasks (429).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from api.ratelimit import TokenBuckets, retry_after_s
from scheduler.cluster_state import UsageCache
from scheduler.errors import PermissionDenied, RateLimited
from scheduler.service import Cluster
from scheduler.store.identity import Identity, authenticate

bearer = HTTPBearer(auto_error=False, description="an API token from `nightshift token create`")


def get_cluster(request: Request) -> Cluster:
    """The cluster this API process serves."""
    cluster: Cluster = request.app.state.cluster
    return cluster


ClusterDep = Annotated[Cluster, Depends(get_cluster)]


def get_usage(request: Request) -> UsageCache:
    """The API process's cache of team usage (recomputed from SQL every few seconds)."""
    usage: UsageCache = request.app.state.usage
    return usage


UsageDep = Annotated[UsageCache, Depends(get_usage)]


def rate_limiter(request: Request, cluster: Cluster) -> TokenBuckets:
    """This API process's token buckets, made on first use from the cluster's settings."""
    state = request.app.state
    buckets: TokenBuckets | None = getattr(state, "rate_limiter", None)
    if buckets is None:
        settings = cluster.settings
        buckets = TokenBuckets(settings.rate_limit_per_s, settings.rate_limit_burst)
        state.rate_limiter = buckets
    return buckets


def enforce_rate_limit(request: Request, cluster: Cluster, who: Identity) -> None:
    """429 with Retry-After when this token has spent its burst and the refill has not caught up."""
    wait_s = rate_limiter(request, cluster).take(who.token_id if who.token_id is not None else who.user_id)
    if wait_s > 0:
        seconds = retry_after_s(wait_s)
        raise RateLimited(
            f"too many requests with this token (limit {cluster.settings.rate_limit_per_s:g}/s, bursts of "
            f"{cluster.settings.rate_limit_burst}); retry in {seconds} s",
            retry_after_s=seconds,
        )


def enforce_queued_cap(cluster: Cluster, who: Identity) -> None:
    """429 when the caller's team already has `max_queued_per_team` tasks waiting."""
    cap = cluster.settings.max_queued_per_team
    if cap is None:
        return
    queued = cluster.tasks.count_queued_for_team(who.team_id)
    if queued >= cap:
        raise RateLimited(
            f"team {who.team!r} already has {queued} tasks queued (the cap is {cap}); wait for some to "
            "start or cancel some, then submit again",
            retry_after_s=60,
        )


def current_identity(
    request: Request,
    cluster: ClusterDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Identity:
    """Who is calling, from the bearer token; 401 when missing, unknown or revoked; 429 over the limits."""
    who = authenticate(cluster.factory, credentials.credentials if credentials else None)
    enforce_rate_limit(request, cluster, who)
    return who


IdentityDep = Annotated[Identity, Depends(current_identity)]


def within_queued_cap(cluster: ClusterDep, who: IdentityDep) -> None:
    """Dependency of every submit route: 429 before the body is read when the team's queue is full."""
    enforce_queued_cap(cluster, who)


QueuedCap = Depends(within_queued_cap)
# A task id in a path: out-of-range numbers (SQL BIGINT) answer 422, not a database error.
TaskId = Annotated[int, Path(ge=1, le=2**63 - 1, description="the task's id")]


def admin_identity(who: IdentityDep) -> Identity:
    """The caller, who must hold an admin token."""
    if not who.is_admin:
        raise PermissionDenied("this needs an admin token")
    return who


AdminDep = Annotated[Identity, Depends(admin_identity)]
