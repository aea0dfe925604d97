"""Teams, users and API tokens on SQLite and PostgreSQL: hashed at rest, revocable, never moved silently."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select, text

from scheduler.errors import AuthError, NotFoundError, SpecError
from scheduler.store.identity import (
    TOKEN_PREFIX,
    authenticate,
    create_token,
    hash_token,
    list_tokens,
    revoke_token,
    revoke_user_tokens,
    team_id_by_name,
)
from scheduler.store.tables import ApiToken, Team, User


def _count(store, model) -> int:
    with store.factory() as session:
        return int(session.scalar(select(func.count()).select_from(model)) or 0)


def test_a_token_is_stored_only_as_its_hash(store):
    token = create_token(store.factory, user="alice", team="vision")
    assert token.startswith(TOKEN_PREFIX) and len(token) > 40
    with store.engine.connect() as connection:
        rows = connection.execute(text("SELECT * FROM api_tokens")).all()
    assert len(rows) == 1
    stored = [str(value) for value in rows[0]]
    assert not any(token in value for value in stored)
    assert hash_token(token) in stored
    assert token[:10] in stored  # the short prefix people recognise, not the secret


def test_a_token_authenticates_as_its_user_and_team(store):
    token = create_token(store.factory, user="Alice", team="Vision")
    who = authenticate(store.factory, token)
    assert (who.user, who.team, who.is_admin) == ("alice", "vision", False)
    assert who.team_id == team_id_by_name(store.factory, "vision")


def test_missing_unknown_and_revoked_tokens_are_refused(store):
    token = create_token(store.factory, user="alice", team="vision")
    with pytest.raises(AuthError, match="missing API token"):
        authenticate(store.factory, None)
    with pytest.raises(AuthError, match="unknown API token"):
        authenticate(store.factory, token + "x")
    revoke_token(store.factory, token)
    with pytest.raises(AuthError, match="revoked"):
        authenticate(store.factory, token)


def test_a_token_is_revoked_by_its_prefix_and_others_stay_valid(store):
    first = create_token(store.factory, user="alice", team="vision")
    second = create_token(store.factory, user="alice", team="vision")
    assert first[:10] != second[:10]  # 42 random bits apart; a clash here would be astronomically rare
    assert revoke_token(store.factory, first[:10]) == 1
    with pytest.raises(AuthError, match="revoked"):
        authenticate(store.factory, first)
    assert authenticate(store.factory, second).user == "alice"
    with pytest.raises(NotFoundError, match="no active token"):
        revoke_token(store.factory, first[:10])  # already revoked
    with pytest.raises(NotFoundError, match="no active token"):
        revoke_token(store.factory, "ns_nothing")


def test_every_token_of_a_user_is_revoked_by_name_and_other_users_keep_theirs(store):
    """An admin revoking a departed user's access rarely has their tokens (shown once): the name does."""
    first = create_token(store.factory, user="alice", team="vision")
    second = create_token(store.factory, user="alice", team="vision")
    bobs = create_token(store.factory, user="bob", team="vision")

    assert revoke_user_tokens(store.factory, "Alice") == 2
    for token in (first, second):
        with pytest.raises(AuthError, match="revoked"):
            authenticate(store.factory, token)
    assert authenticate(store.factory, bobs).user == "bob"
    with pytest.raises(NotFoundError, match="'alice' has no active token"):
        revoke_user_tokens(store.factory, "alice")  # already revoked
    with pytest.raises(NotFoundError, match="no active token"):
        revoke_user_tokens(store.factory, "nobody")


def test_tokens_are_listed_by_team_and_user_with_their_prefix_never_the_token(store):
    first = create_token(store.factory, user="alice", team="vision")
    create_token(store.factory, user="alice", team="vision")
    boss = create_token(store.factory, user="root", team="admins", is_admin=True)
    create_token(store.factory, user="bob", team="nlp")
    revoke_token(store.factory, first[:10])

    active = list_tokens(store.factory)
    every = list_tokens(store.factory, include_revoked=True)

    assert [(r.team, r.user, r.is_admin) for r in active] == [
        ("admins", "root", True),
        ("nlp", "bob", False),
        ("vision", "alice", False),
    ]
    assert next(r.prefix for r in every if r.user == "alice") == first[:10]  # oldest first, revoked kept
    assert [r.revoked_at is not None for r in every if r.user == "alice"] == [True, False]
    assert next(r for r in active if r.user == "root").prefix == boss[:10]
    assert all(len(r.prefix) == 10 for r in every)


def test_a_user_cannot_be_moved_to_another_team_silently(store):
    create_token(store.factory, user="alice", team="vision")
    with pytest.raises(SpecError, match="already belongs to team 'vision'"):
        create_token(store.factory, user="alice", team="nlp")
    assert _count(store, ApiToken) == 1
    assert team_id_by_name(store.factory, "nlp") is None  # the half-made team was rolled back
    assert (
        authenticate(store.factory, create_token(store.factory, user="alice", team="vision")).team == "vision"
    )


def test_an_admin_token_makes_its_user_an_admin_and_teams_are_shared(store):
    plain = authenticate(store.factory, create_token(store.factory, user="alice", team="vision"))
    admin = authenticate(
        store.factory, create_token(store.factory, user="alice", team="vision", is_admin=True)
    )
    bob = authenticate(store.factory, create_token(store.factory, user="bob", team="vision"))
    assert (plain.is_admin, admin.is_admin, bob.is_admin) == (False, True, False)
    assert plain.user_id == admin.user_id and bob.team_id == plain.team_id
    assert (_count(store, User), _count(store, Team)) == (2, 1)


@pytest.mark.parametrize("name", ["", "has space", "-dash-first", "x" * 65, "semi;colon", "ünï"])
def test_user_and_team_names_must_be_slugs(store, name):
    with pytest.raises(SpecError, match="must be 1-64 lowercase letters"):
        create_token(store.factory, user=name, team="vision")
    with pytest.raises(SpecError, match="must be 1-64 lowercase letters"):
        create_token(store.factory, user="alice", team=name)
    assert _count(store, ApiToken) == 0


def _token_cache(store, now):
    from scheduler.store.identity import TokenCache

    return TokenCache(store.factory, ttl_s=2.0, clock=lambda: now[0])


def _revoke_as_another_process(store, token):
    # what `nightshift token revoke` does from its own process: no in-process hook reaches this cache
    with store.engine.begin() as connection:
        connection.execute(
            text("UPDATE api_tokens SET revoked_at = CURRENT_TIMESTAMP WHERE token_hash = :h"),
            {"h": hash_token(token)},
        )


def test_the_token_cache_refuses_a_token_revoked_elsewhere_once_its_entry_expires(store):
    now = [0.0]
    cache = _token_cache(store, now)
    token = create_token(store.factory, user="alice", team="vision")
    assert cache.authenticate(token).user == "alice"

    _revoke_as_another_process(store, token)
    now[0] = 1.9
    assert cache.authenticate(token).user == "alice"  # within the stated bound (2 s) the entry answers
    now[0] = 2.0
    with pytest.raises(AuthError, match="revoked"):
        cache.authenticate(token)
    with pytest.raises(AuthError, match="revoked"):
        cache.authenticate(token)  # a refused token is never cached


def test_the_token_cache_refuses_a_token_revoked_in_this_process_at_once(store):
    cache = _token_cache(store, [0.0])
    token = create_token(store.factory, user="alice", team="vision")
    assert cache.cached(token) is None
    cache.authenticate(token)
    assert cache.cached(token) is not None

    revoke_token(store.factory, token)

    assert cache.cached(token) is None
    with pytest.raises(AuthError, match="revoked"):
        cache.authenticate(token)


def test_the_token_cache_keeps_no_unknown_or_missing_token(store):
    cache = _token_cache(store, [0.0])
    with pytest.raises(AuthError, match="missing API token"):
        cache.authenticate(None)
    with pytest.raises(AuthError, match="unknown API token"):
        cache.authenticate("ns_not-a-token")
    assert cache.cached("ns_not-a-token") is None
