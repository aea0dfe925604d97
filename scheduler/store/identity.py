"""Teams, users and API tokens. Tokens are shown once and stored as SHA-256 hashes."""

from __future__ import annotations

import hashlib
import itertools
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from scheduler.errors import AuthError, NotFoundError, SpecError
from scheduler.store.db import read_only, transaction
from scheduler.store.tables import ApiToken, Team, User, utcnow

TOKEN_PREFIX = "ns_"
_SLUG = re.compile(r"^[a-z0-9][a-z0-9_.\-]{0,63}$")
# Bumped by every `revoke_token` of this process: each `TokenCache` drops what it holds when it changes.
_revocations = itertools.count(1)
_revocation_generation = 0


@dataclass(frozen=True, slots=True)
class Identity:
    """Who is calling: resolved from a token, never from anything the caller writes."""

    user_id: int
    user: str
    team_id: int
    team: str
    is_admin: bool
    token_id: int | None = None


def hash_token(token: str) -> str:
    """SHA-256 hex of a token; tokens are 256-bit random, so a fast hash is enough."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _check_slug(kind: str, value: str) -> str:
    value = value.strip().lower()
    if not _SLUG.match(value):
        raise SpecError(f"{kind} {value!r} must be 1-64 lowercase letters, digits, '_', '-' or '.'")
    return value


def _get_or_create_team(session: Session, name: str) -> Team:
    team = session.scalar(select(Team).where(Team.name == name))
    if team is None:
        team = Team(name=name)
        session.add(team)
        session.flush()
    return team


def _get_or_create_user(session: Session, name: str, team: Team, is_admin: bool) -> User:
    user = session.scalar(select(User).where(User.name == name))
    if user is None:
        user = User(name=name, team_id=team.id, is_admin=is_admin)
        session.add(user)
        session.flush()
    elif user.team_id != team.id:
        raise SpecError(f"user {name!r} already belongs to team {user.team.name!r}, not {team.name!r}")
    elif is_admin and not user.is_admin:
        user.is_admin = True
    return user


def create_token(factory: sessionmaker[Session], user: str, team: str, is_admin: bool = False) -> str:
    """Create the user and team if needed and return a new token (only its hash is stored)."""
    user_name, team_name = _check_slug("user", user), _check_slug("team", team)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    for _ in range(3):
        try:
            with transaction(factory) as session:
                team_row = _get_or_create_team(session, team_name)
                user_row = _get_or_create_user(session, user_name, team_row, is_admin)
                session.add(
                    ApiToken(
                        user_id=user_row.id,
                        token_hash=hash_token(token),
                        prefix=token[:10],
                        is_admin=is_admin,
                    )
                )
            return token
        except IntegrityError:
            continue  # another process created the same team/user at the same moment: read it again
    raise SpecError(f"could not create a token for {user_name}@{team_name}; try again")


def _missing_token() -> AuthError:
    return AuthError(
        "missing API token: send 'Authorization: Bearer <token>' (see `nightshift token create`)"
    )


def authenticate(factory: sessionmaker[Session], token: str | None) -> Identity:
    """The identity behind a bearer token; AuthError for a missing, unknown or revoked token."""
    if not token:
        raise _missing_token()
    return _authenticate_hash(factory, hash_token(token))


def _authenticate_hash(factory: sessionmaker[Session], token_hash: str) -> Identity:
    with factory() as session:
        row = read_only(session).scalar(select(ApiToken).where(ApiToken.token_hash == token_hash))
        if row is None:
            raise AuthError("unknown API token")
        if row.revoked_at is not None:
            raise AuthError("this API token was revoked")
        user = row.user
        return Identity(
            user_id=user.id,
            user=user.name,
            team_id=user.team_id,
            team=user.team.name,
            is_admin=row.is_admin,
            token_id=row.id,
        )


def revoke_token(factory: sessionmaker[Session], token_or_prefix: str) -> int:
    """Revoke a token given in full or by its 10-character prefix; returns how many were revoked."""
    with transaction(factory) as session:
        condition = (
            ApiToken.token_hash == hash_token(token_or_prefix)
            if len(token_or_prefix) > 10
            else ApiToken.prefix == token_or_prefix
        )
        result = session.execute(
            update(ApiToken).where(condition, ApiToken.revoked_at.is_(None)).values(revoked_at=utcnow())
        )
        count = int(getattr(result, "rowcount", 0) or 0)
    _note_revocation()
    if count == 0:
        raise NotFoundError(f"no active token matches {token_or_prefix[:10]!r}")
    return count


def revoke_user_tokens(factory: sessionmaker[Session], user: str) -> int:
    """Revoke every active token of `user` (someone who left the lab): an admin rarely has their tokens,
    which are shown only once. Returns how many were revoked; NotFoundError when there were none."""
    name = user.strip().lower()
    with transaction(factory) as session:
        owner = select(User.id).where(User.name == name).scalar_subquery()
        result = session.execute(
            update(ApiToken)
            .where(ApiToken.user_id == owner, ApiToken.revoked_at.is_(None))
            .values(revoked_at=utcnow())
        )
        count = int(getattr(result, "rowcount", 0) or 0)
    _note_revocation()
    if count == 0:
        raise NotFoundError(f"user {name!r} has no active token")
    return count


@dataclass(frozen=True, slots=True)
class TokenRecord:
    """A token as an admin lists it: whose, which team, whether admin, its prefix, when made and revoked."""

    prefix: str
    user: str
    team: str
    is_admin: bool
    created_at: datetime
    revoked_at: datetime | None


def list_tokens(factory: sessionmaker[Session], include_revoked: bool = False) -> list[TokenRecord]:
    """Every token, by team, user and age (the active ones unless `include_revoked`): who has access, and the
    prefix `revoke_token` takes. The tokens themselves are not stored, so none is shown."""
    query = (
        select(ApiToken.prefix, User.name, Team.name, ApiToken.is_admin)
        .add_columns(ApiToken.created_at, ApiToken.revoked_at)
        .join(User, User.id == ApiToken.user_id)
        .join(Team, Team.id == User.team_id)
        .order_by(Team.name, User.name, ApiToken.created_at, ApiToken.id)
    )
    if not include_revoked:
        query = query.where(ApiToken.revoked_at.is_(None))
    with factory() as session:
        return [TokenRecord(*row) for row in read_only(session).execute(query)]


def _note_revocation() -> None:
    global _revocation_generation
    _revocation_generation = next(_revocations)


@dataclass(frozen=True, slots=True)
class _Cached:
    who: Identity
    until_s: float


class TokenCache:
    """A short-lived, in-process cache of token -> identity, so a request costs no SQL to authenticate.

    Bounds: an entry lives `ttl_s` seconds (2 s by default), so a token revoked by another process (the CLI's
    `nightshift token revoke`, another API process) is refused at most `ttl_s` seconds later; a revocation
    made in this process (`revoke_token`) empties every cache of the process at once. Only tokens that
    authenticated are kept (a missing, unknown or revoked token always reaches SQL), keyed by their SHA-256,
    at most `max_entries` of them. Thread-safe.
    """

    def __init__(
        self,
        factory: sessionmaker[Session],
        ttl_s: float = 2.0,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.factory = factory
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._clock = clock
        self._entries: dict[str, _Cached] = {}
        self._generation = _revocation_generation
        self._lock = threading.Lock()

    def cached(self, token: str | None) -> Identity | None:
        """The identity of `token` when a fresh entry holds it (no SQL), else None."""
        if not token or self.ttl_s <= 0:
            return None
        key = hash_token(token)
        now = self._clock()
        with self._lock:
            if self._generation != _revocation_generation:
                self._entries.clear()
                self._generation = _revocation_generation
            entry = self._entries.get(key)
            if entry is None:
                return None
            if now >= entry.until_s:
                del self._entries[key]
                return None
            return entry.who

    def authenticate(self, token: str | None) -> Identity:
        """`authenticate` through the cache: a fresh entry, else SQL (and the answer kept when valid)."""
        who = self.cached(token)
        if who is not None:
            return who
        if not token:
            raise _missing_token()
        key = hash_token(token)
        generation = _revocation_generation
        who = _authenticate_hash(self.factory, key)  # AuthError for unknown or revoked: never cached
        if self.ttl_s > 0:
            with self._lock:
                if generation == _revocation_generation == self._generation:
                    if len(self._entries) >= self.max_entries:
                        self._drop_expired()
                    if len(self._entries) < self.max_entries:
                        self._entries[key] = _Cached(who, self._clock() + self.ttl_s)
        return who

    def forget_all(self) -> None:
        """Drop every entry (the next request of each token reads SQL again)."""
        with self._lock:
            self._entries.clear()

    def _drop_expired(self) -> None:
        now = self._clock()
        for key in [key for key, entry in self._entries.items() if now >= entry.until_s]:
            del self._entries[key]


def team_of_user(factory: sessionmaker[Session], name: str) -> int | None:
    """The team id of a user, or None when no such user exists."""
    with factory() as session:
        return session.scalar(select(User.team_id).where(User.name == name))


def team_id_by_name(factory: sessionmaker[Session], name: str) -> int | None:
    """The id of a team, or None when no such team exists."""
    with factory() as session:
        return session.scalar(select(Team.id).where(Team.name == name))
