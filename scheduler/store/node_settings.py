"""What admins set on each node, kept in SQL: the source of truth Redis is rebuilt from (`NodeSettings`), and
the record of every reservation of a node for a team (`NodeReservation`), which the reports read."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from typing import NamedTuple

from sqlalchemy import or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from scheduler.clock import from_epoch_s, to_epoch_s
from scheduler.repeats import occurrences
from scheduler.store.db import transaction
from scheduler.store.tables import NodeReservation, NodeSettings, utcnow


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


class ReservationRecord(NamedTuple):
    """A node's reservation for a team as asked, and when it was called off (None: it was not)."""

    node: str
    team: str
    start_s: float
    end_s: float
    created_by: str
    cancelled_s: float | None
    repeat: str | None = None
    zone: str = "UTC"
    gpus: tuple[int, ...] = ()  # the GPUs it held; () for all of the node's

    def gpu_count(self, node_gpus: int) -> int:
        """How many GPUs it held of a node of `node_gpus`."""
        return len(self.gpus) if self.gpus else node_gpus

    @property
    def ends_s(self) -> float:
        """When it ended or ends: its end (a repeating one's never comes), or earlier when called off."""
        end_s = self.end_s if self.repeat is None else math.inf
        return end_s if self.cancelled_s is None else min(end_s, self.cancelled_s)

    def times(self, since_s: float, until_s: float) -> list[tuple[float, float]]:
        """(start, end) of each time it held (holds) the node within `since_s`..`until_s`, cut there and
        where it was called off; a one-off reservation has one."""
        if self.repeat is None:
            spans: Iterable[tuple[float, float]] = [(self.start_s, self.end_s)]
        else:
            spans = occurrences(self.repeat, self.start_s, self.end_s, self.zone, since_s, until_s)
        cut = ((max(start, since_s), min(end, until_s, self.ends_s)) for start, end in spans)
        return [(start, end) for start, end in cut if end > start]


class ReservationHistory:
    """Every reservation of a node for a team, kept after it ends (`NodeReservation`)."""

    def __init__(self, factory: sessionmaker[Session]) -> None:
        self.factory = factory

    def add(
        self,
        node: str,
        team: str,
        start_s: float,
        end_s: float,
        created_by: str,
        repeat: str | None = None,
        zone: str = "UTC",
        gpus: tuple[int, ...] = (),
    ) -> None:
        """Record a reservation just made (a repeating one: its first time, and how it repeats; of some GPUs:
        which)."""
        with transaction(self.factory) as session:
            session.add(
                NodeReservation(
                    node=node,
                    team=team,
                    start_at=from_epoch_s(start_s),
                    end_at=from_epoch_s(end_s),
                    created_by=created_by,
                    repeat=repeat,
                    zone=zone,
                    gpus=",".join(map(str, gpus)),
                )
            )

    def call_off(self, node: str, team: str | None, now_s: float) -> None:
        """Mark the node's reservations not over (of `team`, else all) as called off now."""
        query = update(NodeReservation).where(
            NodeReservation.node == node,
            or_(NodeReservation.end_at > from_epoch_s(now_s), NodeReservation.repeat.is_not(None)),
            NodeReservation.cancelled_at.is_(None),
        )
        if team is not None:
            query = query.where(NodeReservation.team == team)
        with transaction(self.factory) as session:
            session.execute(query.values(cancelled_at=from_epoch_s(now_s)))

    def overlapping(self, since_s: float, until_s: float, team: str | None = None) -> list[ReservationRecord]:
        """The reservations whose time (to their end, or when called off) overlaps `since_s`..`until_s`,
        of `team` when given, in order of start."""
        query = select(NodeReservation).where(
            NodeReservation.start_at < from_epoch_s(until_s),
            or_(NodeReservation.end_at > from_epoch_s(since_s), NodeReservation.repeat.is_not(None)),
        )
        if team is not None:
            query = query.where(NodeReservation.team == team)
        with self.factory() as session:
            rows = session.scalars(query.order_by(NodeReservation.start_at, NodeReservation.id)).all()
        records = [
            ReservationRecord(
                row.node,
                row.team,
                to_epoch_s(row.start_at),
                to_epoch_s(row.end_at),
                row.created_by,
                to_epoch_s(row.cancelled_at) if row.cancelled_at is not None else None,
                row.repeat,
                row.zone,
                tuple(int(index) for index in row.gpus.split(",") if index),
            )
            for row in rows
        ]
        return [record for record in records if record.ends_s > since_s and record.ends_s > record.start_s]
