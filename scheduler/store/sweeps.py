"""Sweep rows and the results of tasks in SQL: a group of tasks created in one transaction, and metrics.

A sweep (or a batch) and all its tasks are inserted in one transaction: either every task exists, or none.
The `Idempotency-Key` of a group is unique per user, like a single task's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from scheduler.errors import NotFoundError
from scheduler.store.db import transaction
from scheduler.store.identity import Identity
from scheduler.store.tables import Sweep, Task
from scheduler.store.tasks import MAX_TASK_ID, NewTask


@dataclass(frozen=True, slots=True)
class NewSweep:
    """A group to create: its kind (`sweep` or `batch`), a name, the template, and its tasks with params."""

    kind: str
    name: str
    command: str | None
    tasks: Sequence[tuple[NewTask, dict[str, Any]]]


def _row(who: Identity, new: NewTask, sweep_id: int, params: dict[str, Any]) -> Task:
    return Task(
        team_id=who.team_id,
        user_id=who.user_id,
        name=new.name,
        command=new.command,
        spec=new.spec,
        priority=new.priority,
        gpus=new.gpus,
        gpu_memory_gb=new.gpu_memory_gb,
        retries=new.retries,
        sweep_id=sweep_id,
        params=params or None,
    )


class SweepStore:
    """SQL operations on sweeps and on the metrics of tasks."""

    def __init__(self, factory: sessionmaker[Session]) -> None:
        self.factory = factory

    def create(
        self, who: Identity, new: NewSweep, idempotency_key: str | None = None
    ) -> tuple[Sweep, list[Task], bool]:
        """Insert the sweep and every task in one transaction; returns (sweep, tasks, created).

        With an idempotency key this user already used for a group, nothing is inserted and that group is
        returned with `created` False.
        """
        if idempotency_key:
            existing = self.by_key(who, idempotency_key)
            if existing is not None:
                return existing, self.tasks_of(existing.id), False
        try:
            with transaction(self.factory) as session:
                sweep = Sweep(
                    team_id=who.team_id,
                    user_id=who.user_id,
                    kind=new.kind,
                    name=new.name,
                    command=new.command,
                    tasks_count=len(new.tasks),
                    idempotency_key=idempotency_key,
                )
                session.add(sweep)
                session.flush()
                sweep_id = sweep.id
                session.add_all([_row(who, task, sweep_id, params) for task, params in new.tasks])
        except IntegrityError:
            existing = self.by_key(who, idempotency_key) if idempotency_key else None
            if existing is None:
                raise
            return existing, self.tasks_of(existing.id), False
        return self.get_any(sweep_id), self.tasks_of(sweep_id), True

    def by_key(self, who: Identity, key: str) -> Sweep | None:
        """The group this user created with this idempotency key, if any."""
        with self.factory() as session:
            return session.scalar(
                select(Sweep).where(Sweep.user_id == who.user_id, Sweep.idempotency_key == key)
            )

    def get_any(self, sweep_id: int) -> Sweep:
        """A sweep by id regardless of team (internal use)."""
        with self.factory() as session:
            row = session.get(Sweep, sweep_id) if 0 < sweep_id <= MAX_TASK_ID else None
        if row is None:
            raise NotFoundError(f"sweep {sweep_id} not found")
        return row

    def get_for(self, who: Identity, sweep_id: int) -> Sweep:
        """A sweep the caller may see; another team's answers exactly like a missing one."""
        with self.factory() as session:
            row = session.get(Sweep, sweep_id) if 0 < sweep_id <= MAX_TASK_ID else None
        if row is None or (not who.is_admin and row.team_id != who.team_id):
            raise NotFoundError(f"sweep {sweep_id} not found")
        return row

    def tasks_of(self, sweep_id: int) -> list[Task]:
        """The tasks of a sweep, in the order they were expanded."""
        with self.factory() as session:
            return list(session.scalars(select(Task).where(Task.sweep_id == sweep_id).order_by(Task.id)))

    def tasks_with_tag(self, who: Identity, tag: str, limit: int = 1000) -> list[Task]:
        """The caller's team's newest tasks (any team's for an admin) carrying `tag`, oldest first."""
        query = select(Task).order_by(Task.id.desc()).limit(limit * 5)
        if not who.is_admin:
            query = query.where(Task.team_id == who.team_id)
        with self.factory() as session:
            rows = [row for row in session.scalars(query) if tag in (row.spec.get("tags") or [])]
        return sorted(rows[:limit], key=lambda row: row.id)

    def record_metrics(
        self, task_id: int, token: str, metrics: dict[str, Any] | None, note: str | None
    ) -> bool:
        """Store what the attempt holding `token` reported; False when that claim is no longer current."""
        with transaction(self.factory) as session:
            result = session.execute(
                update(Task)
                .where(Task.id == task_id, Task.lease_token == token)
                .values(metrics=metrics, metrics_note=note)
            )
            return int(getattr(result, "rowcount", 0) or 0) == 1
