"""What admins set on each node, kept in SQL: the source of truth Redis is rebuilt from (`NodeSettings`)."""

from __future__ import annotations

import json
from collections.abc import Callable

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from scheduler.store.db import transaction
from scheduler.store.tables import NodeSettings, utcnow


class NodeSettingsStore:
    """Each node's admin fields (name -> field -> value), as its Redis record holds them."""

    def __init__(self, factory: sessionmaker[Session]) -> None:
        self.factory = factory

    def save(self, name: str, read_fields: Callable[[], dict[str, str] | None]) -> None:
        """Write the node's fields as `read_fields` (a read of Redis) gives them, inside one transaction
        holding the node's row, so that two changes at once are written in the order they were read."""
        try:
            self._save(name, read_fields)
        except IntegrityError:  # another save made the node's first row meanwhile: it exists now
            self._save(name, read_fields)

    def _save(self, name: str, read_fields: Callable[[], dict[str, str] | None]) -> None:
        with transaction(self.factory) as session:
            row = session.get(NodeSettings, name, with_for_update=True)
            fields = read_fields()
            if fields is None:  # the node is gone from Redis: nothing to keep
                return
            if row is None:
                session.add(NodeSettings(name=name, fields=json.dumps(fields), updated_at=utcnow()))
            else:
                row.fields, row.updated_at = json.dumps(fields), utcnow()

    def all(self) -> dict[str, dict[str, str]]:
        """Every node's saved fields."""
        with self.factory() as session:
            rows = session.scalars(select(NodeSettings)).all()
        return {row.name: {str(k): str(v) for k, v in json.loads(row.fields).items()} for row in rows}
