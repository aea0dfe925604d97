"""Migration 0008: `ix_tasks_team_id (team_id, id)`, which a team's task list and its total read (on
PostgreSQL the count of one team's tasks was a scan of every team's rows without it)."""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from sqlalchemy import inspect

from scheduler.store.db import MIGRATIONS_DIR, migrate
from scheduler.store.task_filter import TaskFilter
from tests.store.conftest import new_task


def _team_index(store) -> list[str] | None:
    found = {ix["name"]: ix["column_names"] for ix in inspect(store.engine).get_indexes("tasks")}
    return found.get("ix_tasks_team_id")


def _to(store, revision: str) -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    with store.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, revision)


def test_the_migrated_tasks_table_has_a_team_then_id_index(store):
    assert _team_index(store) == ["team_id", "id"]


def test_downgrading_drops_the_index_and_migrating_again_brings_it_back_with_the_rows(store):
    alice = store.identity()
    task, _ = store.tasks.create(alice, new_task())
    _to(store, "0007")
    assert _team_index(store) is None
    migrate(store.engine)
    assert _team_index(store) == ["team_id", "id"]
    page = store.tasks.page_for(alice, TaskFilter(), limit=1)
    assert ([row.id for row in page.tasks], page.total) == ([task.id], 1)
