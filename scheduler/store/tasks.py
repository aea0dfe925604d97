"""Task rows in SQL: creation, lookups scoped to a caller, and compare-and-set state changes.

Every change of a claimed task is a compare-and-set on (task id, status, lease token): a worker whose
claim was lost (lease expired, task requeued or cancelled) changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, Engine, Select, Table, bindparam, func, insert, or_, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from scheduler.errors import ConflictError, NotFoundError
from scheduler.store.db import READ_ONLY, read_only, transaction, write_connection
from scheduler.store.identity import Identity
from scheduler.store.tables import FINAL_STATUSES, Attempt, Task, Team, User, utcnow
from scheduler.store.task_filter import TaskFilter, TaskPage, newest_first_page, task_conditions


@dataclass(frozen=True, slots=True)
class NewTask:
    """A validated, resolved spec ready to become a row."""

    name: str
    command: str
    spec: dict[str, Any]
    priority: str
    gpus: int
    gpu_memory_gb: float | None
    retries: int


MAX_TASK_ID = 2**63 - 1  # the largest id a 64-bit SQL integer holds
# what the scheduler reads of a queued row changes only with these: (claim count, spec changes)
RowVersion = tuple[int, int]
# a running task's lease token (its attempt) and revision (a change of its time limit, say)
RunningVersion = tuple[str | None, int]


def _running_versions(connection: Connection) -> dict[int, RunningVersion]:
    rows = connection.execute(
        select(Task.id, Task.lease_token, Task.revision).where(Task.status == "running")
    )
    return {task_id: (token, revision) for task_id, token, revision in rows}


def _queued_versions(connection: Connection, ids: list[int]) -> dict[int, RowVersion]:
    # status is checked here, not in SQL: `status = 'queued'` would steer SQLite to the status index
    # (every queued row) instead of the primary key (these ids)
    query = select(Task.id, Task.attempts_count, Task.revision, Task.status).where(Task.id.in_(ids))
    rows = connection.execute(query)
    return {task_id: (count, revision) for task_id, count, revision, status in rows if status == "queued"}


def _rowcount(result: Any) -> int:
    return int(getattr(result, "rowcount", 0) or 0)


_INSERT_TASK = insert(cast(Table, Task.__table__))  # built once: its compiled form is cached
# many rows in one statement, their ids back in the order of the rows
_INSERT_TASKS = _INSERT_TASK.returning(Task.__table__.c.id, sort_by_parameter_order=True)


_TASKS = cast(Table, Task.__table__)
_ATTEMPTS = cast(Table, Attempt.__table__)
_INSERT_ATTEMPT = insert(_ATTEMPTS)
# Core statements with bound parameters, built once: the hot path of a worker starting and ending jobs
_MARK_RUNNING = (
    update(_TASKS)
    .where(
        _TASKS.c.id == bindparam("b_task_id"),
        _TASKS.c.status == "queued",
        _TASKS.c.cancel_requested.is_(False),
        _TASKS.c.held_by.is_(None),  # held after it was assigned: its claim is refused
        _TASKS.c.waits_for_slot.is_(False),  # its sweep has no slot for it (`max_running`)
        # changed after the start was decided (-1: the start named no revision)
        or_(bindparam("b_revision") < 0, _TASKS.c.revision == bindparam("b_revision")),
    )
    .values(
        status="running",
        lease_token=bindparam("b_token"),
        node=bindparam("b_node"),
        gpu_indices=bindparam("b_gpus", type_=_TASKS.c.gpu_indices.type),
        started_at=bindparam("b_now", type_=_TASKS.c.started_at.type),
        attempts_count=_TASKS.c.attempts_count + 1,
        exit_code=None,
        reason=None,
        message=None,
    )
    .returning(_TASKS.c.attempts_count)
)
_RECORD_PID = (
    update(_ATTEMPTS)
    .where(_ATTEMPTS.c.task_id == bindparam("b_task_id"), _ATTEMPTS.c.token == bindparam("b_token"))
    .values(pid=bindparam("b_pid"))
)
_FINISH_TASK = (
    update(_TASKS)
    .where(
        _TASKS.c.id == bindparam("b_task_id"),
        _TASKS.c.status == "running",
        _TASKS.c.lease_token == bindparam("b_token"),
    )
    .values(
        status=bindparam("b_status"),
        finished_at=bindparam("b_now", type_=_TASKS.c.finished_at.type),
        exit_code=bindparam("b_exit_code", type_=_TASKS.c.exit_code.type),
        reason=bindparam("b_reason", type_=_TASKS.c.reason.type),
        message=bindparam("b_message", type_=_TASKS.c.message.type),
    )
)
_CLOSE_ATTEMPT = (
    update(_ATTEMPTS)
    .where(_ATTEMPTS.c.task_id == bindparam("b_task_id"), _ATTEMPTS.c.token == bindparam("b_token"))
    .values(
        finished_at=bindparam("b_now", type_=_ATTEMPTS.c.finished_at.type),
        exit_code=bindparam("b_exit_code", type_=_ATTEMPTS.c.exit_code.type),
        outcome=bindparam("b_outcome"),
        reason=bindparam("b_reason", type_=_ATTEMPTS.c.reason.type),
    )
)


@dataclass(frozen=True, slots=True)
class Finish:
    """How one claim's attempt ended, for `TaskStore.finish_many`."""

    task_id: int
    token: str
    status: str
    exit_code: int | None
    reason: str
    message: str | None = None


def _insert_values(who: Identity, new: NewTask, idempotency_key: str | None) -> dict[str, Any]:
    """Every column of a new queued task except its id."""
    now = utcnow()
    return {
        "team_id": who.team_id,
        "user_id": who.user_id,
        "name": new.name,
        "command": new.command,
        "spec": new.spec,
        "status": "queued",
        "priority": new.priority,
        "gpus": new.gpus,
        "gpu_memory_gb": new.gpu_memory_gb,
        "retries": new.retries,
        "idempotency_key": idempotency_key,
        "submitted_at": now,
        "enqueued_at": now,
        "attempts_count": 0,
        "cancel_requested": False,
    }


class ClassLimitReached(Exception):
    """A person's live tasks of a priority class fill its limit (`live`: their ids, oldest first) for
    `adding` more of `priority`."""

    def __init__(self, live: list[int], priority: str = "", adding: int = 1) -> None:
        super().__init__(f"{len(live)} live")
        self.live = live
        self.priority = priority
        self.adding = adding


PRIORITY_LIMIT_LOCK = 7_711  # pg_advisory_xact_lock(PRIORITY_LIMIT_LOCK, user id): one person's class count


def _check_class_room(
    connection: Connection, user_id: int, priority: str, limit: int, adding: int = 1
) -> None:
    """ClassLimitReached when `adding` more of `user_id`'s queued or running tasks of `priority` would pass
    `limit`, counted in this transaction after taking the person's lock (PostgreSQL; SQLite's writers take
    turns already)."""
    if connection.dialect.name == "postgresql":
        connection.execute(
            text("SELECT pg_advisory_xact_lock(:space, :user_id)"),
            {"space": PRIORITY_LIMIT_LOCK, "user_id": user_id},
        )
    live = [int(task_id) for task_id in connection.execute(_live_in_class(user_id, priority)).scalars()]
    if len(live) + adding > limit:
        raise ClassLimitReached(live, priority, adding)


def check_class_rooms(
    connection: Connection, user_id: int, adding: Mapping[str, int], limits: Mapping[str, int]
) -> None:
    """`_check_class_room` for each class of `adding` (class -> how many more) that `limits` limits: the
    count inside the transaction that writes them, so racing requests cannot both pass a limit."""
    for priority, count in sorted(adding.items()):
        limit = limits.get(priority)
        if limit is not None and count > 0:
            _check_class_room(connection, user_id, priority, limit, count)


def _live_in_class(user_id: int, priority: str) -> Select[int]:
    """The ids of a person's queued or running tasks of one priority class, oldest first."""
    return (
        select(Task.id)
        .where(Task.user_id == user_id, Task.priority == priority, Task.status.in_(("queued", "running")))
        .order_by(Task.id)
    )


def _insert(connection: Connection, values: dict[str, Any]) -> int:
    """INSERT one task row; its new id."""
    result = connection.execute(_INSERT_TASK, values)
    return int(result.inserted_primary_key[0])  # type: ignore[index]


def _new_row(task_id: int, values: dict[str, Any], who: Identity) -> Task:
    """The row just inserted with `values`, as a detached `Task` (what a SELECT would have read back).

    Columns not in `values` read None, as inserted. Its team and user come from the caller's identity,
    which is where the inserted ids came from.
    """
    row = Task(id=task_id, **values)
    team, user = _owners(who)
    row.team = team
    row.user = user
    return row


_OWNERS: dict[Identity, tuple[Team, User]] = {}


def _owners(who: Identity) -> tuple[Team, User]:
    """Detached Team and User objects of an identity (reused: they are only read)."""
    owners = _OWNERS.get(who)
    if owners is None:
        if len(_OWNERS) >= 1000:
            _OWNERS.clear()
        owners = _OWNERS[who] = (
            Team(id=who.team_id, name=who.team),
            User(id=who.user_id, name=who.user, team_id=who.team_id, is_admin=who.is_admin),
        )
    return owners


class TaskStore:
    """SQL operations on tasks and attempts."""

    def __init__(self, factory: sessionmaker[Session]) -> None:
        self.factory = factory
        self._engine: Engine = factory.kw["bind"]

    # --- creation and lookups --------------------------------------------------------------------

    def create(
        self,
        who: Identity,
        new: NewTask,
        idempotency_key: str | None = None,
        class_limit: int | None = None,
    ) -> tuple[Task, bool]:
        """Insert a queued task; with an idempotency key already used by this user, return that task.
        With `class_limit`, the person's live tasks of its class are counted again in the inserting
        transaction, under a lock per person: `ClassLimitReached` when it is full (nothing inserted).

        Returns (task, created).
        """
        if idempotency_key:
            existing = self._by_idempotency_key(who, idempotency_key)
            if existing is not None:
                return existing, False
        values = _insert_values(who, new, idempotency_key)
        try:
            # one Core INSERT (no unit of work, no SELECT back): every column's value is known here
            with write_connection(self._engine) as connection:
                if class_limit is not None:
                    _check_class_room(connection, who.user_id, new.priority, class_limit)
                task_id = _insert(connection, values)
        except IntegrityError:
            existing = self._by_idempotency_key(who, idempotency_key) if idempotency_key else None
            if existing is None:
                raise
            return existing, False
        return _new_row(task_id, values, who), True

    def create_many(self, items: Sequence[tuple[Identity, NewTask]]) -> list[Task]:
        """Insert queued tasks (no idempotency keys) in one transaction: every one of them, or none."""
        rows = [(who, _insert_values(who, new, None)) for who, new in items]
        if not rows:
            return []
        with write_connection(self._engine) as connection:
            result = connection.execute(_INSERT_TASKS, [values for _, values in rows])
            ids = [int(task_id) for task_id in result.scalars()]
        return [_new_row(task_id, values, who) for task_id, (who, values) in zip(ids, rows, strict=True)]

    def _by_idempotency_key(self, who: Identity, key: str) -> Task | None:
        with self.factory() as session:
            return session.scalar(
                select(Task).where(Task.user_id == who.user_id, Task.idempotency_key == key)
            )

    def get_any(self, task_id: int) -> Task:
        """A task by id regardless of team (internal use: scheduler, worker)."""
        if not 0 < task_id <= MAX_TASK_ID:  # beyond what SQL integers hold: it cannot exist
            raise NotFoundError(f"task {task_id} not found")
        with self.factory() as session:
            row = read_only(session).get(Task, task_id)
        if row is None:
            raise NotFoundError(f"task {task_id} not found")
        return row

    def get_for(self, who: Identity, task_id: int) -> Task:
        """A task the caller may see; another team's task answers exactly like a missing one."""
        if not 0 < task_id <= MAX_TASK_ID:
            raise NotFoundError(f"task {task_id} not found")
        with self.factory() as session:
            row = read_only(session).get(Task, task_id)
        if row is None or (not who.is_admin and row.team_id != who.team_id):
            raise NotFoundError(f"task {task_id} not found")
        return row

    def list_for(
        self,
        who: Identity,
        status: str | None = None,
        team: str | None = None,
        limit: int = 200,
        offset: int = 0,
        user: str | None = None,
    ) -> list[Task]:
        """Newest first; your team's tasks, or any team's for an admin (optionally filtered by status, team
        and the user who submitted them)."""
        return self.page_for(who, TaskFilter(status=status, team=team, user=user), limit, offset).tasks

    def page_for(self, who: Identity, filters: TaskFilter, limit: int = 200, offset: int = 0) -> TaskPage:
        """One page of the tasks the caller may see that pass `filters`, newest first, and how many pass
        in all (`GET /tasks`: "showing 50 of 1,234"). Both queries share one WHERE clause, so the total
        counts exactly what the pages hold; a page that is not cut gives the total without counting."""
        conditions = task_conditions(who, filters, self._engine.dialect.name)
        with self.factory() as session:
            return TaskPage(*newest_first_page(session, Task, conditions, limit, offset))

    def by_ids(self, task_ids: Iterable[int]) -> dict[int, Task]:
        """Rows for these ids (missing ids are simply absent)."""
        ids = list(task_ids)
        if not ids:
            return {}
        with self.factory() as session:
            return {row.id: row for row in session.scalars(select(Task).where(Task.id.in_(ids)))}

    def queued_versions(self, task_ids: Iterable[int]) -> dict[int, RowVersion]:
        """For the queued tasks among these ids, their version (claim count, changes): is a cached row
        current?"""
        ids = list(task_ids)
        if not ids:
            return {}
        # plain SQL, no ORM session: on every scheduling pass
        with self._engine.connect().execution_options(**{READ_ONLY: True}) as connection:
            return _queued_versions(connection, ids)

    def running_tokens(self) -> dict[int, RunningVersion]:
        """Id -> lease token and revision of every running task (the scheduler's hot path: no joins)."""
        with self._engine.connect().execution_options(**{READ_ONLY: True}) as connection:
            return _running_versions(connection)

    def pass_versions(
        self, task_ids: Iterable[int]
    ) -> tuple[dict[int, RowVersion], dict[int, RunningVersion]]:
        """`queued_versions(task_ids)` and `running_tokens()` on one connection (once per scheduling pass)."""
        ids = list(task_ids)
        queued: dict[int, RowVersion] = {}
        with self._engine.connect().execution_options(**{READ_ONLY: True}) as connection:
            if ids:
                queued = _queued_versions(connection, ids)
            return queued, _running_versions(connection)

    def schedulable_states(self, only: Iterable[int] | None = None) -> dict[int, str]:
        """Id -> status of the tasks Redis should know (among `only`, or all): queued ones that nobody
        holds and that have a slot in their sweep, and running ones. A held task, or one waiting for a slot
        (`waits_for_slot`), is in SQL alone until it is released or admitted."""
        query = select(Task.id, Task.status, Task.held_by).where(
            Task.status.in_(("queued", "running")), Task.waits_for_slot.is_(False)
        )
        if only is not None:
            ids = list(only)
            if not ids:
                return {}
            query = query.where(Task.id.in_(ids))
        with self.factory() as session:
            rows = session.execute(query)
            return {task_id: status for task_id, status, held_by in rows if held_by is None}

    def hold(self, task_id: int, by: str) -> bool:
        """Hold a queued task back (`held_by`); False when it is no longer queued or already held."""
        with transaction(self.factory) as session:
            result = session.execute(
                update(Task)
                .where(Task.id == task_id, Task.status == "queued", Task.held_by.is_(None))
                .values(held_by=by)
            )
            return _rowcount(result) == 1

    def update_queued(self, task_id: int, new: NewTask, class_limit: tuple[int, int] | None = None) -> bool:
        """Store a queued task's changed spec (name, priority, retries and the spec itself; what runs and
        where stay as they were); False when it is no longer queued. `class_limit` (owner's user id, limit)
        when its priority rises into a limited class: counted again in this transaction
        (`ClassLimitReached`, nothing written)."""
        with transaction(self.factory) as session:
            if class_limit is not None:
                user_id, limit = class_limit
                _check_class_room(session.connection(), user_id, new.priority, limit)
            result = session.execute(
                update(Task)
                .where(Task.id == task_id, Task.status == "queued")
                .values(
                    name=new.name,
                    spec=new.spec,
                    priority=new.priority,
                    retries=new.retries,
                    revision=Task.revision + 1,  # the scheduler's cached view of it is stale now
                )
            )
            return _rowcount(result) == 1

    def update_running(self, task_id: int, token: str, new: NewTask) -> bool:
        """Store a running attempt's changed spec (its time limit, estimate, retries, name or tags); False
        when that attempt (`token`) is no longer the one running."""
        with transaction(self.factory) as session:
            result = session.execute(
                update(Task)
                .where(Task.id == task_id, Task.status == "running", Task.lease_token == token)
                .values(name=new.name, spec=new.spec, retries=new.retries, revision=Task.revision + 1)
            )
            return _rowcount(result) == 1

    def release(self, task_id: int, wait_for_slot: bool = False) -> bool:
        """Let a held task start again; False when it is not held (or no longer queued). With
        `wait_for_slot` (its sweep has `max_running`) it waits for a slot: `admit_waiting` gives it one."""
        with transaction(self.factory) as session:
            result = session.execute(
                update(Task)
                .where(Task.id == task_id, Task.status == "queued", Task.held_by.is_not(None))
                .values(held_by=None, waits_for_slot=wait_for_slot)
            )
            return _rowcount(result) == 1

    def with_status(self, *statuses: str) -> list[Task]:
        """All tasks in these states (rebuild and reconciliation; not on the hot path)."""
        with self.factory() as session:
            return list(session.scalars(select(Task).where(Task.status.in_(statuses)).order_by(Task.id)))

    def statuses(self, task_ids: Iterable[int]) -> dict[int, str]:
        """Status of each of these tasks (for dependencies)."""
        ids = list(task_ids)
        if not ids:
            return {}
        with self.factory() as session:
            rows = session.execute(select(Task.id, Task.status).where(Task.id.in_(ids)))
            return {task_id: status for task_id, status in rows}

    def count_by_status(self) -> dict[str, int]:
        """How many tasks are in each status."""
        with self.factory() as session:
            rows = session.execute(select(Task.status, func.count()).group_by(Task.status))
            return {status: int(count) for status, count in rows}

    def live_in_class(self, user_id: int, priority: str) -> list[int]:
        """The ids of a person's queued or running tasks of one priority class, oldest first."""
        with self.factory() as session:
            return [int(task_id) for task_id in read_only(session).scalars(_live_in_class(user_id, priority))]

    def count_queued_for_team(self, team_id: int) -> int:
        """How many tasks of this team wait in the queue (the per-team cap on queued tasks)."""
        with self.factory() as session:
            query = (
                select(func.count()).select_from(Task).where(Task.team_id == team_id, Task.status == "queued")
            )
            return int(read_only(session).scalar(query) or 0)

    def attempt_reasons(self, task_id: int, excluding_token: str | None = None) -> list[str]:
        """Why each finished attempt of a task ended, oldest first (for retry decisions)."""
        query = select(Attempt.reason).where(Attempt.task_id == task_id, Attempt.reason.is_not(None))
        if excluding_token:
            query = query.where(Attempt.token != excluding_token)
        with self.factory() as session:
            return [str(reason) for reason in session.scalars(query.order_by(Attempt.number))]

    def attempts(self, task_id: int) -> list[Attempt]:
        """Every attempt of a task, oldest first."""
        with self.factory() as session:
            return list(
                session.scalars(select(Attempt).where(Attempt.task_id == task_id).order_by(Attempt.number))
            )

    # --- state changes (compare-and-set) ---------------------------------------------------------

    def mark_running(
        self, task_id: int, token: str, node: str, gpu_indices: Sequence[int], revision: int | None = None
    ) -> int | None:
        """queued -> running under `token`; returns the attempt number, or None if the task is not queued
        (or no longer the `revision` its start was decided on)."""
        revisions = {task_id: revision} if revision is not None else None
        return self.mark_running_many(node, [(task_id, token, tuple(gpu_indices))], revisions).get(task_id)

    def mark_running_many(
        self,
        node: str,
        claims: Sequence[tuple[int, str, Sequence[int]]],
        revisions: Mapping[int, int] | None = None,
    ) -> dict[int, int]:
        """queued -> running for each (task id, token, GPU indices) claimed on `node`, in one transaction.

        Returns task id -> attempt number for the tasks that were still queued (not held, not being
        cancelled and, where `revisions` names the row revision its start was decided on, not changed
        since: a change that raced the decision wins); the others are left alone.
        """
        now = utcnow()
        started: dict[int, int] = {}
        attempts: list[dict[str, Any]] = []
        known = revisions or {}
        with write_connection(self._engine) as connection:
            for task_id, token, gpu_indices in claims:
                gpus = list(gpu_indices)
                number = connection.execute(
                    _MARK_RUNNING,
                    {"b_task_id": task_id, "b_token": token, "b_node": node, "b_gpus": gpus, "b_now": now,
                     "b_revision": known.get(task_id, -1)},
                ).scalar()  # fmt: skip
                if number is None:
                    continue
                started[task_id] = int(number)
                attempts.append(
                    {"task_id": task_id, "number": int(number), "token": token, "node": node,
                     "gpu_indices": gpus, "started_at": now}
                )  # fmt: skip
            if attempts:
                connection.execute(_INSERT_ATTEMPT, attempts)
        return started

    def record_pid(self, task_id: int, token: str, pid: int) -> None:
        """Remember the job's process id on its attempt (for reconciliation after a worker restart)."""
        self.record_pids([(task_id, token, pid)])

    def record_pids(self, launched: Sequence[tuple[int, str, int]]) -> None:
        """`record_pid` for several (task id, token, pid) in one transaction."""
        if not launched:
            return
        with write_connection(self._engine) as connection:
            connection.execute(
                _RECORD_PID, [{"b_task_id": t, "b_token": token, "b_pid": pid} for t, token, pid in launched]
            )

    def finish(
        self,
        task_id: int,
        token: str,
        status: str,
        *,
        exit_code: int | None,
        reason: str,
        message: str | None = None,
    ) -> bool:
        """running -> a final status, only while `token` still holds the task."""
        return bool(self.finish_many([Finish(task_id, token, status, exit_code, reason, message)]))

    def finish_many(self, finishes: Sequence[Finish]) -> set[int]:
        """running -> a final status for each claim still holding its task, in one transaction; the ids
        of the tasks that changed (the others' claims were lost and change nothing)."""
        for item in finishes:
            if item.status not in FINAL_STATUSES:
                raise ValueError(f"not a final status: {item.status}")
        now = utcnow()
        done: set[int] = set()
        with write_connection(self._engine) as connection:
            for item in finishes:
                values = {
                    "b_task_id": item.task_id, "b_token": item.token, "b_status": item.status, "b_now": now,
                    "b_exit_code": item.exit_code, "b_reason": item.reason, "b_message": item.message,
                }  # fmt: skip
                if _rowcount(connection.execute(_FINISH_TASK, values)) != 1:
                    continue
                done.add(item.task_id)
                connection.execute(_CLOSE_ATTEMPT, {**values, "b_outcome": item.status})
        return done

    def requeue(
        self,
        task_id: int,
        token: str,
        reason: str,
        message: str | None = None,
        hold_until: datetime | None = None,
        held_by: str | None = None,
    ) -> datetime | None:
        """running -> queued (retry) while `token` holds it, held by `held_by` if given (in the same write, so
        no pass sees it free); returns the kept enqueue time (no lost place)."""
        now = utcnow()
        with transaction(self.factory) as session:
            result = session.execute(
                update(Task)
                .where(Task.id == task_id, Task.status == "running", Task.lease_token == token)
                .values(
                    status="queued",
                    lease_token=None,
                    node=None,
                    gpu_indices=None,
                    reason=reason,
                    message=message,
                    hold_until=hold_until,
                    held_by=held_by,
                )
            )
            if _rowcount(result) != 1:
                return None
            self._close_attempt(session, task_id, token, now, None, "retried", reason)
            return session.scalar(select(Task.enqueued_at).where(Task.id == task_id))

    @staticmethod
    def _close_attempt(
        session: Session,
        task_id: int,
        token: str,
        now: datetime,
        exit_code: int | None,
        outcome: str,
        reason: str,
    ) -> None:
        session.execute(
            update(Attempt)
            .where(Attempt.task_id == task_id, Attempt.token == token)
            .values(finished_at=now, exit_code=exit_code, outcome=outcome, reason=reason)
        )

    def cancel_queued(self, task_id: int, by: str) -> bool:
        """queued -> cancelled; False when the task is no longer queued."""
        with transaction(self.factory) as session:
            result = session.execute(
                update(Task)
                .where(Task.id == task_id, Task.status == "queued")
                .values(
                    status="cancelled",
                    finished_at=utcnow(),
                    reason="cancelled",
                    message=f"cancelled by {by}",
                    waits_for_slot=False,
                )
            )
            return _rowcount(result) == 1

    def request_cancel(self, task_id: int) -> Task:
        """Flag a running task so its worker stops it; ConflictError if it already finished."""
        with transaction(self.factory) as session:
            result = session.execute(
                update(Task).where(Task.id == task_id, Task.status == "running").values(cancel_requested=True)
            )
            changed = _rowcount(result) == 1
        row = self.get_any(task_id)
        if not changed and row.status in FINAL_STATUSES:
            raise ConflictError(f"task {task_id} already {row.status}; nothing to cancel")
        return row

    def fail_queued(self, task_id: int, reason: str, message: str) -> bool:
        """queued -> failed without running (e.g. a dependency failed)."""
        with transaction(self.factory) as session:
            result = session.execute(
                update(Task)
                .where(Task.id == task_id, Task.status == "queued")
                .values(status="failed", finished_at=utcnow(), reason=reason, message=message)
            )
            return _rowcount(result) == 1
