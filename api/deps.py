"""FastAPI dependencies: the cluster of this process and the caller's identity (authorization lives here)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from scheduler.cluster_state import UsageCache
from scheduler.errors import PermissionDenied
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


def current_identity(
    cluster: ClusterDep, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> Identity:
    """Who is calling, from the bearer token; 401 when the token is missing, unknown or revoked."""
    return authenticate(cluster.factory, credentials.credentials if credentials else None)


IdentityDep = Annotated[Identity, Depends(current_identity)]


def admin_identity(who: IdentityDep) -> Identity:
    """The caller, who must hold an admin token."""
    if not who.is_admin:
        raise PermissionDenied("this needs an admin token")
    return who


AdminDep = Annotated[Identity, Depends(admin_identity)]
