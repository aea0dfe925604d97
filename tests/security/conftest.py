"""Fixtures of the security tests: the API app over a real cluster, callers of two teams, an admin."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from api.main import create_app
from scheduler.service import Cluster
from scheduler.store.identity import Identity, revoke_token

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*starlette.testclient.*")
    from fastapi.testclient import TestClient


def bearer(token: str) -> dict[str, str]:
    """The Authorization header for `token`."""
    return {"Authorization": f"Bearer {token}"}


@dataclass
class Callers:
    """Headers of each kind of caller: own team (vision), other team (nlp), admin, none, revoked."""

    own: dict[str, str]
    other: dict[str, str]
    admin: dict[str, str]
    none: dict[str, str]
    revoked: dict[str, str]
    own_identity: Identity

    def of(self, kind: str) -> dict[str, str]:
        return dict(getattr(self, kind))


@pytest.fixture
def app_client(cluster: Cluster) -> Iterator[TestClient]:
    """The API app over the test cluster (no scheduler, no worker)."""
    with TestClient(create_app(cluster)) as test_client:
        yield test_client


@pytest.fixture
def callers(cluster: Cluster, make_identity: Callable[..., Any]) -> Callers:
    """One caller of each kind; the revoked token belonged to a member of the own team."""
    own_identity, own = make_identity("alice", "vision")
    _, other = make_identity("bob", "nlp")
    _, admin = make_identity("root", "ops", admin=True)
    _, revoked = make_identity("carol", "vision")
    revoke_token(cluster.factory, revoked)
    return Callers(bearer(own), bearer(other), bearer(admin), {}, bearer(revoked), own_identity)


@pytest.fixture
def make_identity_on() -> Callable[..., Identity]:
    """Factory: `make_identity_on(cluster, "alice", "vision")` -> an identity in that cluster's database."""
    from scheduler.store.identity import authenticate, create_token

    def make(cluster: Cluster, user: str, team: str, admin: bool = False) -> Identity:
        return authenticate(
            cluster.factory, create_token(cluster.factory, user=user, team=team, is_admin=admin)
        )

    return make
