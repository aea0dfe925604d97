"""Processes that start together on a fresh database (the API, the scheduler and each node's worker under
systemd) all migrate it: none may die of another's half-made schema (on PostgreSQL the second `CREATE
TABLE alembic_version` was a UniqueViolation, and `nightshift api` exited)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sqlalchemy import inspect, text

from scheduler.store import db
from scheduler.store.db import create_db_engine, migrate

PROCESSES = 4

# Imports first, says so, waits for the go file, then migrates: the migrations themselves start together.
_MIGRATE_ON_GO = """
import sys, time
from pathlib import Path
from scheduler.store.db import create_db_engine, migrate
engine = create_db_engine(sys.argv[1])
print("ready", flush=True)
while not Path(sys.argv[2]).exists():
    time.sleep(0.005)
migrate(engine)
"""


def _migrate_all_at_once(database_url: str, go: Path) -> list[str]:
    """Migrate the database from `PROCESSES` processes released together; the errors of those that failed."""
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _MIGRATE_ON_GO, database_url, str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    for process in processes:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    go.touch()
    errors = []
    for process in processes:
        _, stderr = process.communicate(timeout=120)
        if process.returncode != 0:
            errors.append(stderr[-600:])  # the exception, e.g. UniqueViolation ... alembic_version
    return errors


def test_processes_migrating_a_fresh_database_at_once_all_start(database_url, tmp_path):
    assert _migrate_all_at_once(database_url, tmp_path / "go") == []
    engine = create_db_engine(database_url)
    try:
        assert "tasks" in inspect(engine).get_table_names()
        with engine.connect() as connection:
            versions = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
        assert len(versions) == 1
    finally:
        engine.dispose()


# Holds a SQLite file's write lock (on a fresh file: before any table exists) for a while, then lets go.
_HOLD_LOCK = """
import sqlite3, sys, time
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
connection.execute("COMMIT")
"""


def test_a_start_waits_past_the_busy_timeout_for_a_sqlite_database_another_process_holds(
    tmp_path, monkeypatch, caplog
):
    # Given a fresh SQLite database that another process holds for longer than the busy timeout (cut to
    # 0.1 s here; 15 s in service, which a stalled disk under a migrating process once outlasted)
    monkeypatch.setattr(db, "SQLITE_BUSY_TIMEOUT_MS", 100)
    path = tmp_path / "nightshift.db"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(path), "1.5"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"

        # When this process migrates it
        engine = create_db_engine(f"sqlite:///{path}")
        migrate(engine)

        # Then it waited past its busy timeout until the other let go, and the schema is there
        assert "locked by another process: trying again" in caplog.text
        assert holder.wait(10) == 0
        assert "tasks" in inspect(engine).get_table_names()
        engine.dispose()
    finally:
        holder.kill()
        holder.wait()
