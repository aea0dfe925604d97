"""Sweep rows and the results of tasks in SQL: a group of tasks created in one transaction, and metrics.

A sweep (or a batch) and all its tasks are inserted in one transaction: either every task exists, or none.
The `Idempotency-Key` of a group is unique per user, like a single task's.

A sweep with `max_running` N has at most N tasks admitted (running, or queued and neither held nor waiting
for a slot); the others are queued with `waits_for_slot` and kept out of Redis until `admit_waiting` gives
them a slot, lowest id first.

A sweep's status is its tasks' (`group_status`), and `status_is` is the same rule in SQL, for the list's
`status=` filter: the two sit together here, so the filter keeps exactly the sweeps the list reports so.

A task of a sweep that was run again (`add_reruns`) keeps its row, with `replaced_by` naming the task that
took its place. A sweep's tasks, counts, status and results are its *current* tasks (`CURRENT`): the newest
run of each parameter set. `GET /tasks?sweep_id=` lists them all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from sqlalchemy import ColumnElement, and_, exists, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from scheduler.errors import ConflictError, NotFoundError
from scheduler.store.db import transaction
from scheduler.store.identity import Identity
from scheduler.store.tables import FINAL_STATUSES, Sweep, Task, User
from scheduler.store.task_filter import TaskFilter, newest_first_page, task_conditions, visible_to
from scheduler.store.tasks import MAX_TASK_ID, NewTask, check_class_rooms


@dataclass(frozen=True, slots=True)
class NewSweep:
    """A group to create: its kind (`sweep` or `batch`), a name, the template, and its tasks with params."""

    kind: str
    name: str
    command: str | None
    tasks: Sequence[tuple[NewTask, dict[str, Any]]]
    max_running: int | None = None


@dataclass(frozen=True, slots=True)
class SweepTally:
    """A sweep's tasks counted without loading them: per status, held, waiting for a slot, and the
    lowest and highest task id (`GET /sweeps` lists many sweeps with one query)."""

    counts: dict[str, int]
    held: int = 0
    waiting: int = 0
    first_task: int | None = None
    last_task: int | None = None


# a task still standing for its parameter set in its sweep: not replaced by a rerun
CURRENT = Task.replaced_by.is_(None)


@dataclass(frozen=True, slots=True)
class Rerun:
    """One task of a sweep to run again: the task it replaces and the new row's resolved spec."""

    replaces: int
    task: NewTask


SweepStatus = Literal["queued", "running", "done", "cancelled"]  # what `group_status` says of a sweep
SWEEP_STATUSES: tuple[str, ...] = get_args(SweepStatus)


@dataclass(frozen=True, slots=True)
class SweepFilter:
    """What a sweep list is narrowed to, besides whose sweeps the caller may see (None: no narrowing), as
    `TaskFilter` narrows a task list: an admin's choice of `team`, one `user`'s, one `status`
    (`SWEEP_STATUSES`)."""

    team: str | None = None  # an admin's choice of team (a member's is always their own)
    user: str | None = None
    status: str | None = None


@dataclass(frozen=True, slots=True)
class SweepPage:
    """One page of a filtered sweep list and how many sweeps pass the filter in all."""

    sweeps: list[Sweep]
    total: int


def group_status(statuses: Collection[str]) -> str:
    """A sweep's status from its tasks' statuses: `running` while any runs, `queued` while any other has
    not ended, else `done` (or `cancelled` when all were). `status_is` is this rule in SQL."""
    present = set(statuses)
    if present - FINAL_STATUSES:
        return "running" if "running" in present else "queued"
    return "cancelled" if present == {"cancelled"} else "done"


def _has_task(*conditions: ColumnElement[bool]) -> ColumnElement[bool]:
    """The sweep (of the outer query) has a task meeting every condition."""
    return exists(select(Task.id).where(Task.sweep_id == Sweep.id, CURRENT, *conditions))


def status_is(status: str) -> ColumnElement[bool]:
    """The sweeps whose `group_status` is `status`, in SQL (the list's `status=` filter, counted as its
    pages are); one of `SWEEP_STATUSES`."""
    unfinished = _has_task(Task.status.not_in(FINAL_STATUSES))
    running = _has_task(Task.status == "running")
    all_cancelled = and_(_has_task(), ~_has_task(Task.status != "cancelled"))
    conditions = {
        "running": running,
        "queued": and_(unfinished, ~running),
        "cancelled": all_cancelled,
        "done": and_(~unfinished, ~all_cancelled),  # a sweep without tasks too, as `group_status` says
    }
    if status not in conditions:
        raise ValueError(f"unknown sweep status {status!r}: one of {', '.join(SWEEP_STATUSES)}")
    return conditions[status]


def sweep_conditions(who: Identity, filters: SweepFilter) -> list[ColumnElement[bool]]:
    """The WHERE clause (ANDed) of the sweeps `who` may see that pass `filters` (the page and its total)."""
    conditions = [visible_to(who, filters.team, Sweep.team_id)]
    if filters.user is not None:
        conditions.append(Sweep.user_id.in_(select(User.id).where(User.name == filters.user)))
    if filters.status is not None:
        conditions.append(status_is(filters.status))
    return conditions


def _admitted() -> ColumnElement[bool]:
    """A task that holds one of its sweep's slots: running, or queued and neither held nor waiting."""
    queued = and_(Task.status == "queued", Task.held_by.is_(None), Task.waits_for_slot.is_(False))
    return or_(Task.status == "running", queued)


def tally_of(groups: Sequence[tuple[str, bool, bool, int, int, int]]) -> SweepTally:
    """One sweep's tally from its (status, held, waits for a slot, count, lowest id, highest id) groups;
    held and waiting are counted among queued tasks only. The one counting rule of a sweep, whether its
    tasks were loaded (`tally_of_tasks`) or grouped in SQL (`SweepStore.tallies`)."""
    counts: dict[str, int] = {}
    held = waiting = 0
    for status, is_held, waits, count, _, _ in groups:
        counts[status] = counts.get(status, 0) + count
        if status == "queued":
            held += count if is_held else 0
            waiting += count if waits and not is_held else 0
    if not groups:
        return SweepTally(counts)
    first, last = min(group[4] for group in groups), max(group[5] for group in groups)
    return SweepTally(counts, held, waiting, first, last)


def tally_of_tasks(tasks: Sequence[Task]) -> SweepTally:
    """A sweep's tally from its loaded task rows (`tally_of`, one group a task)."""
    return tally_of(
        [(task.status, task.held_by is not None, task.waits_for_slot, 1, task.id, task.id) for task in tasks]
    )


def _row(
    owner: tuple[int, int], new: NewTask, sweep_id: int, params: dict[str, Any] | None, waits: bool
) -> Task:
    """A new task row of the sweep, for `owner` (team id, user id)."""
    team_id, user_id = owner
    return Task(
        team_id=team_id,
        user_id=user_id,
        name=new.name,
        command=new.command,
        spec=new.spec,
        priority=new.priority,
        gpus=new.gpus,
        gpu_memory_gb=new.gpu_memory_gb,
        retries=new.retries,
        sweep_id=sweep_id,
        params=params or None,
        waits_for_slot=waits,
    )


class SweepStore:
    """SQL operations on sweeps and on the metrics of tasks."""

    def __init__(self, factory: sessionmaker[Session]) -> None:
        self.factory = factory

    def create(
        self,
        who: Identity,
        new: NewSweep,
        idempotency_key: str | None = None,
        class_limits: Mapping[str, int] | None = None,
    ) -> tuple[Sweep, list[Task], bool]:
        """Insert the sweep and every task in one transaction; returns (sweep, tasks, created).

        With an idempotency key this user already used for a group, nothing is inserted and that group is
        returned with `created` False. With `class_limits` (class -> limit), the person's live tasks of
        each class are counted again in the inserting transaction (`ClassLimitReached`, nothing inserted).
        """
        if idempotency_key:
            existing = self.by_key(who, idempotency_key)
            if existing is not None:
                return existing, self.tasks_of(existing.id), False
        try:
            with transaction(self.factory) as session:
                if class_limits:
                    adding = Counter(task.priority for task, _ in new.tasks)
                    check_class_rooms(session.connection(), who.user_id, adding, class_limits)
                sweep = Sweep(
                    team_id=who.team_id,
                    user_id=who.user_id,
                    kind=new.kind,
                    name=new.name,
                    command=new.command,
                    tasks_count=len(new.tasks),
                    max_running=new.max_running,
                    idempotency_key=idempotency_key,
                )
                session.add(sweep)
                session.flush()
                sweep_id = sweep.id
                limit = len(new.tasks) if new.max_running is None else new.max_running
                session.add_all(
                    [
                        _row((who.team_id, who.user_id), task, sweep_id, params, waits=number >= limit)
                        for number, (task, params) in enumerate(new.tasks)
                    ]
                )
        except IntegrityError:
            existing = self.by_key(who, idempotency_key) if idempotency_key else None
            if existing is None:
                raise
            return existing, self.tasks_of(existing.id), False
        return self.get_any(sweep_id), self.tasks_of(sweep_id), True

    def admit_waiting(self, sweep_id: int) -> list[Task]:
        """Give free slots to the sweep's tasks that wait for one, lowest id first; the tasks admitted.

        One transaction with the sweep row locked (`FOR UPDATE` on PostgreSQL; SQLite serialises
        writers), so two callers at once (two tasks of the sweep ending together) never admit more than
        `max_running`. Without a limit every waiting task is admitted. The caller enqueues them in Redis;
        if it dies first, the rows are queued and admitted, and the rebuild from SQL enqueues them.
        """
        with transaction(self.factory) as session:
            locked = select(Sweep.max_running).where(Sweep.id == sweep_id).with_for_update()
            limit = session.execute(locked).scalar_one_or_none()
            waiting = select(Task).where(
                Task.sweep_id == sweep_id,
                Task.status == "queued",
                Task.held_by.is_(None),
                Task.waits_for_slot.is_(True),
            )
            if limit is not None:
                free = limit - self._admitted_count(session, sweep_id)
                if free <= 0:
                    return []
                waiting = waiting.limit(free)
            rows = list(session.scalars(waiting.order_by(Task.id)))
            if rows:
                ids = [row.id for row in rows]
                session.execute(update(Task).where(Task.id.in_(ids)).values(waits_for_slot=False))
            for row in rows:
                row.waits_for_slot = False
            session.expunge_all()
            return rows

    @staticmethod
    def _admitted_count(session: Session, sweep_id: int) -> int:
        """How many of the sweep's tasks hold a slot (`_admitted`)."""
        query = select(func.count()).select_from(Task).where(Task.sweep_id == sweep_id, _admitted())
        return int(session.scalar(query) or 0)

    def set_max_running(self, sweep_id: int, max_running: int | None) -> None:
        """Change how many of the sweep's tasks may run at once (None: no limit). A lower limit stops
        nothing already admitted; a higher one is filled by the caller's `admit_waiting`."""
        with transaction(self.factory) as session:
            session.execute(update(Sweep).where(Sweep.id == sweep_id).values(max_running=max_running))

    def limited_sweeps_of(self, task_ids: Sequence[int]) -> set[int]:
        """The sweeps with a `max_running` among these tasks' (whose ending may free a slot)."""
        if not task_ids:
            return set()
        query = (
            select(Task.sweep_id)
            .join(Sweep, Sweep.id == Task.sweep_id)
            .where(Task.id.in_(list(task_ids)), Sweep.max_running.is_not(None))
            .distinct()
        )
        with self.factory() as session:
            return {int(sweep_id) for sweep_id in session.scalars(query) if sweep_id is not None}

    def sweeps_with_waiting(self) -> set[int]:
        """The sweeps that have a task waiting for a slot (the rebuild's repair of a lost admission)."""
        query = (
            select(Task.sweep_id)
            .where(Task.status == "queued", Task.waits_for_slot.is_(True), Task.held_by.is_(None))
            .distinct()
        )
        with self.factory() as session:
            return {int(sweep_id) for sweep_id in session.scalars(query) if sweep_id is not None}

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

    def page_for(
        self, who: Identity, filters: SweepFilter | None = None, limit: int = 50, offset: int = 0
    ) -> SweepPage:
        """One page of the sweeps the caller may see (their team's; every team's, or one `team`'s, for an
        admin, as `GET /tasks`) that pass `filters`, newest first, and how many pass in all. As
        `TaskStore.page_for`: one WHERE clause for both, and a page that is not cut gives the total
        without counting."""
        conditions = sweep_conditions(who, filters or SweepFilter())
        with self.factory() as session:
            return SweepPage(*newest_first_page(session, Sweep, conditions, limit, offset))

    def tallies(self, sweep_ids: Sequence[int]) -> dict[int, SweepTally]:
        """Each sweep's tasks counted by status, held and waiting, in one grouped query for all the ids
        (a sweep without tasks is absent)."""
        if not sweep_ids:
            return {}
        held = Task.held_by.is_not(None)
        query = (
            select(
                Task.sweep_id,
                Task.status,
                held,
                Task.waits_for_slot,
                func.count(),
                func.min(Task.id),
                func.max(Task.id),
            )
            .where(Task.sweep_id.in_(list(sweep_ids)), CURRENT)
            .group_by(Task.sweep_id, Task.status, held, Task.waits_for_slot)
        )
        with self.factory() as session:
            rows = session.execute(query).all()
        groups: dict[int, list[tuple[str, bool, bool, int, int, int]]] = {}
        for sweep_id, status, is_held, waits, count, low, high in rows:
            groups.setdefault(int(sweep_id or 0), []).append(
                (str(status), bool(is_held), bool(waits), int(count), int(low), int(high))
            )
        return {sweep_id: tally_of(group) for sweep_id, group in groups.items()}

    def tasks_of(self, sweep_id: int) -> list[Task]:
        """The current tasks of a sweep (`CURRENT`: a rerun stands for the task it replaced), by id."""
        with self.factory() as session:
            query = select(Task).where(Task.sweep_id == sweep_id, CURRENT).order_by(Task.id)
            return list(session.scalars(query))

    def add_reruns(
        self,
        sweep_id: int,
        reruns: Sequence[Rerun],
        statuses: Collection[str],
        class_limits: Mapping[str, int] | None = None,
    ) -> list[Task]:
        """Insert a new task for each rerun, in the sweep, with the parameters, team and user of the task it
        replaces, and mark that task `replaced_by` it: one transaction with the sweep row locked, as
        `admit_waiting`. With `max_running` the new tasks beyond the free slots wait for one. ConflictError,
        and nothing written, when a task to replace changed meanwhile (another rerun took it, or its status
        is no longer one of `statuses`); `ClassLimitReached` when they would pass the owner's
        `class_limits`, counted in this transaction."""
        with transaction(self.factory) as session:
            locked = select(Sweep.max_running).where(Sweep.id == sweep_id).with_for_update()
            limit = session.execute(locked).scalar_one_or_none()
            ids = [rerun.replaces for rerun in reruns]
            replaced = {
                row.id: row
                for row in session.scalars(
                    select(Task).where(
                        Task.id.in_(ids), Task.sweep_id == sweep_id, CURRENT, Task.status.in_(list(statuses))
                    )
                )
            }
            if len(replaced) != len(ids):
                changed = f"sweep {sweep_id} changed while its tasks were being run again: try again"
                raise ConflictError(changed)
            if class_limits and replaced:
                owner = next(iter(replaced.values())).user_id
                adding = Counter(rerun.task.priority for rerun in reruns)
                check_class_rooms(session.connection(), owner, adding, class_limits)
            free = len(reruns) if limit is None else max(0, limit - self._admitted_count(session, sweep_id))
            rows = [
                _row(
                    (replaced[rerun.replaces].team_id, replaced[rerun.replaces].user_id),
                    rerun.task,
                    sweep_id,
                    replaced[rerun.replaces].params,
                    waits=number >= free,
                )
                for number, rerun in enumerate(reruns)
            ]
            session.add_all(rows)
            session.flush()
            for rerun, row in zip(reruns, rows, strict=True):
                replaced[rerun.replaces].replaced_by = row.id
            new_ids = [row.id for row in rows]
        with self.factory() as session:
            loaded = {row.id: row for row in session.scalars(select(Task).where(Task.id.in_(new_ids)))}
        return [loaded[task_id] for task_id in new_ids]  # in the order of `reruns`

    def tasks_with_tag(self, who: Identity, tag: str, limit: int = 1000) -> list[Task]:
        """The caller's team's newest `limit` tasks (any team's for an admin) carrying `tag`, oldest first;
        the tag is matched by the database (`task_filter.has_tag`), however many newer untagged tasks
        there are."""
        with self.factory() as session:
            conditions = task_conditions(who, TaskFilter(tag=tag), session.get_bind().dialect.name)
            query = select(Task).where(*conditions, CURRENT).order_by(Task.id.desc()).limit(limit)
            rows = list(session.scalars(query))
        return sorted(rows, key=lambda row: row.id)

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
