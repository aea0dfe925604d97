"""A person's secrets in SQL: set, listed by name, removed, and read only for their own jobs' launch.

A secret's value never leaves this module but through `values_for`, which a worker calls as it starts a job
whose spec names the secret. The API lists names and times only: a teammate who sees a task sees which
secrets it uses, never what they hold. Values are stored sealed (`secret_sealing`): whoever reads the
database, a dump or a backup without the key reads tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session, sessionmaker

from scheduler.errors import NotFoundError
from scheduler.store.db import read_only, transaction
from scheduler.store.secret_sealing import SecretSealer, SecretsKeyError
from scheduler.store.tables import Secret, User, utcnow


@dataclass(frozen=True, slots=True)
class SecretName:
    """A secret as anyone may see it: its name and when it was last set."""

    name: str
    updated_at: datetime


class MissingSecrets(Exception):
    """Secrets a spec names that its owner has not set (`names`, in order)."""

    def __init__(self, user: str, names: Sequence[str]) -> None:
        super().__init__(", ".join(names))
        self.user = user
        self.names = list(names)


class SecretStore:
    """The `secrets` table: one row per person and name."""

    def __init__(self, factory: sessionmaker[Session], sealer: SecretSealer) -> None:
        self.factory = factory
        self.sealer = sealer

    def put(self, user: str, name: str, value: str) -> tuple[SecretName, bool]:
        """Set `user`'s secret `name` to `value`: the secret as listed, and True when it is new (False when it
        replaced one)."""
        now, sealed = utcnow(), self.sealer.seal(value)
        with transaction(self.factory) as session:
            user_id = _user_id(session, user)
            row = session.scalar(select(Secret).where(Secret.user_id == user_id, Secret.name == name))
            if row is None:
                session.add(Secret(user_id=user_id, name=name, value=sealed, updated_at=now))
            else:
                row.value, row.updated_at = sealed, now
        return SecretName(name, now), row is None

    def names(self, user: str) -> list[SecretName]:
        """`user`'s secrets by name, without their values."""
        with self.factory() as session:
            rows = read_only(session).execute(
                select(Secret.name, Secret.updated_at)
                .join(User, User.id == Secret.user_id)
                .where(User.name == user)
                .order_by(Secret.name)
            )
            return [SecretName(name, updated_at) for name, updated_at in rows]

    def remove(self, user: str, name: str) -> None:
        """Remove `user`'s secret `name`; NotFoundError when there is none."""
        with transaction(self.factory) as session:
            gone = session.execute(
                delete(Secret).where(Secret.user_id == _user_id(session, user), Secret.name == name)
            )
            if not gone.rowcount:  # type: ignore[attr-defined]
                raise NotFoundError(f"you have no secret {name!r}; `nightshift secret ls` lists yours")

    def missing(self, user: str, names: Sequence[str]) -> list[str]:
        """Those of `names` that `user` has not set, in order."""
        if not names:
            return []
        have = {secret.name for secret in self.names(user)}
        return [name for name in names if name not in have]

    def values_for(self, user_id: int, user: str, names: Sequence[str]) -> dict[str, str]:
        """The values of `names` for a job of `user` (id `user_id`); MissingSecrets when any is not set."""
        if not names:
            return {}
        with self.factory() as session:
            rows = read_only(session).execute(
                select(Secret.name, Secret.value).where(Secret.user_id == user_id, Secret.name.in_(names))
            )
            found = {name: value for name, value in rows}
        absent = [name for name in names if name not in found]
        if absent:
            raise MissingSecrets(user, absent)
        return {name: self.sealer.open(found[name], name) for name in names}

    def reseal(self) -> tuple[int, int]:
        """Seal what is stored in the clear (set before secrets were sealed) or under an older key of
        `secrets_key`, each row in its own transaction: how many were sealed anew, and how many this box
        cannot open (sealed with a key it lacks; left as they are)."""
        with self.factory() as session:
            rows = list(read_only(session).execute(select(Secret.id, Secret.value)))
        changed = unreadable = 0
        for row_id, stored in rows:
            try:
                sealed = self.sealer.reseal(stored)
            except SecretsKeyError:
                unreadable += 1
                continue
            if sealed is None:
                continue
            with transaction(self.factory) as session:
                changed += session.execute(
                    update(Secret).where(Secret.id == row_id, Secret.value == stored).values(value=sealed)
                ).rowcount  # type: ignore[attr-defined]
        return changed, unreadable


def _user_id(session: Session, user: str) -> int:
    user_id = session.scalar(select(User.id).where(User.name == user))
    if user_id is None:
        raise NotFoundError(f"user {user!r} not found")
    return int(user_id)
