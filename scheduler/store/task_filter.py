"""Which tasks a list holds (`GET /tasks`, `nightshift ls`): one WHERE clause, built once, that both the
page and its total use, so "showing 50 of 1,234" counts exactly the rows the pages hold.

Whose tasks comes first and is never optional: a member sees their own team's tasks through any filter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from sqlalchemy import ColumnElement, exists, func, select, true
from sqlalchemy import cast as sql_cast
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import InstrumentedAttribute, Session

from scheduler.store.identity import Identity
from scheduler.store.tables import Attempt, Sweep, Task, Team, User

PREFIX_WILDCARD = "*"  # a name ending in it matches every name that starts with the rest


@dataclass(frozen=True, slots=True)
class TaskFilter:
    """What a task list is narrowed to, besides whose tasks the caller may see (None: no narrowing).

    `since` and `until` are aware datetimes, both ends included (as `sacct -S/-E`); `name` is exact, or
    ends in `*` to match every name starting with the rest; `node` is where any attempt of the task ran.
    """

    status: str | None = None
    team: str | None = None  # an admin's choice of team (a member's is always their own)
    user: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    name: str | None = None
    tag: str | None = None
    node: str | None = None
    held: bool | None = None  # True: only tasks held back (`nightshift hold`); False: none of them
    sweep_id: int | None = None  # the tasks of one sweep


@dataclass(frozen=True, slots=True)
class TaskPage:
    """One page of a filtered list and how many tasks pass the filter in all."""

    tasks: list[Task]
    total: int


def task_conditions(who: Identity, filters: TaskFilter, dialect: str) -> list[ColumnElement[bool]]:
    """The WHERE clause (ANDed) of the tasks `who` may see that pass `filters`, for a database of this
    dialect (`sqlite` or `postgresql`: tags are read from the JSON spec differently)."""
    conditions = [visible_to(who, filters.team)]
    if filters.status:
        conditions.append(Task.status == filters.status)
    if filters.user:
        conditions.append(Task.user_id.in_(select(User.id).where(User.name == filters.user)))
    if filters.since is not None:
        conditions.append(Task.submitted_at >= filters.since)
    if filters.until is not None:
        conditions.append(Task.submitted_at <= filters.until)
    if filters.name is not None:
        conditions.append(name_matches(filters.name))
    if filters.tag is not None:
        conditions.append(has_tag(filters.tag, dialect))
    if filters.node is not None:
        conditions.append(ran_on(filters.node))
    if filters.sweep_id is not None:
        conditions.append(Task.sweep_id == filters.sweep_id)
    if filters.held is not None:  # a held task is a queued one someone holds back
        held = (Task.status == "queued") & Task.held_by.is_not(None)
        conditions.append(held if filters.held else ~held)
    return conditions


ListedRow = TypeVar("ListedRow", Task, Sweep)


def newest_first_page(
    session: Session,
    model: type[ListedRow],
    conditions: Sequence[ColumnElement[bool]],
    limit: int,
    offset: int,
) -> tuple[list[ListedRow], int]:
    """One page of `model`'s rows that pass `conditions` (ANDed), newest (highest id) first, and how many
    pass in all: the page and its total share the WHERE clause, and a page that is not cut gives the total
    without counting."""
    query = select(model).where(*conditions).order_by(model.id.desc()).limit(limit).offset(offset)
    rows = list(session.scalars(query))
    if len(rows) < limit and (rows or offset == 0):
        return rows, offset + len(rows)
    total = session.scalar(select(func.count()).select_from(model).where(*conditions))
    return rows, int(total or 0)


def visible_to(
    who: Identity, team: str | None, team_id: InstrumentedAttribute[int] = Task.team_id
) -> ColumnElement[bool]:
    """Rows (tasks, or sweeps with `team_id=Sweep.team_id`) of a member's own team, whatever `team` says;
    of an admin's chosen team, or of every team."""
    if not who.is_admin:
        return team_id == who.team_id
    if team:
        return team_id.in_(select(Team.id).where(Team.name == team))
    return true()  # every team's


def name_matches(name: str) -> ColumnElement[bool]:
    """Tasks named exactly `name`; with a trailing `*`, every name that starts with the rest.

    The prefix is compared as text (`substr`), not with LIKE: `_` and `%` in it are plain characters, and
    the match is case-sensitive on SQLite as on PostgreSQL (SQLite's LIKE ignores ASCII case).
    """
    if not name.endswith(PREFIX_WILDCARD):
        return Task.name == name
    prefix = name.removesuffix(PREFIX_WILDCARD)
    return func.substr(Task.name, 1, len(prefix)) == prefix


def has_tag(tag: str, dialect: str) -> ColumnElement[bool]:
    """Tasks whose spec's `tags` list holds `tag` (exactly), in SQL: the count of a filtered list, and
    `nightshift compare TAG`, must see every such task, not only the newest few."""
    if dialect == "postgresql":
        # `@>` on jsonb: true when the tags array holds the tag; false (no error) when there is none
        return sql_cast(Task.spec, JSONB)["tags"].contains([tag])
    tags = func.json_each(Task.spec, "$.tags").table_valued("value")
    return exists(select(tags.c.value).where(tags.c.value == tag))


def ran_on(node: str) -> ColumnElement[bool]:
    """Tasks with an attempt on `node` (a task requeued elsewhere still ran there)."""
    return exists(select(Attempt.id).where(Attempt.task_id == Task.id, Attempt.node == node))
