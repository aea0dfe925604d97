"""Database engine and sessions: SQLite (WAL) in the data folder by default, PostgreSQL when configured."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from scheduler.errors import ServiceUnavailable

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
SQLITE_BUSY_TIMEOUT_MS = 15_000


def _tune_sqlite(dbapi_connection: Any, _record: Any) -> None:
    # Let SQLAlchemy (not pysqlite) decide where transactions begin, and make writers wait, not fail.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.close()


# Execution option of connections that only read (`read_only`): they begin a plain (deferred) transaction.
READ_ONLY = "nightshift_read_only"
# One lock per SQLite engine, held by `transaction()` while it writes: threads of one process hand the
# database's single write lock to each other at once instead of through SQLite's busy handler, which
# sleeps (1, 2, 5, ... up to 100 ms) between tries.
_WRITE_LOCKS: weakref.WeakKeyDictionary[Engine, threading.RLock] = weakref.WeakKeyDictionary()


def _begin_immediate(connection: Any) -> None:
    # BEGIN IMMEDIATE takes the write lock up front, so read-then-write transactions never deadlock.
    # A connection marked read-only takes no write lock: WAL readers never wait for the writer.
    if connection.get_execution_options().get(READ_ONLY):
        connection.exec_driver_sql("BEGIN")
    else:
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def read_only(session: Session) -> Session:
    """Mark a fresh session as read-only (call before its first query): on SQLite it takes no write lock."""
    session.connection(execution_options={READ_ONLY: True})
    return session


def create_db_engine(url: str) -> Engine:
    """An engine for `url`; SQLite gets WAL, a busy timeout and up-front write locks."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 15})
        event.listen(engine, "connect", _tune_sqlite)
        event.listen(engine, "begin", _begin_immediate)
        _WRITE_LOCKS[engine] = threading.RLock()
        return engine
    if parsed.get_backend_name() == "postgresql" and parsed.drivername == "postgresql":
        url = str(parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False))
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest alembic revision (idempotent; run at every start)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    try:
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    except OperationalError as exc:
        raise ServiceUnavailable(f"cannot reach the database at {engine.url!r}: {exc.orig}") from None


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    """A session factory whose objects stay readable after commit."""
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One unit of work: commit on success, roll back on any error.

    On SQLite the engine's in-process write lock is held for the whole unit (see `_WRITE_LOCKS`).
    """
    bind = factory.kw.get("bind")
    lock = _WRITE_LOCKS.get(bind) if isinstance(bind, Engine) else None
    if lock is None:
        with factory() as session, session.begin():
            yield session
        return
    with lock, factory() as session, session.begin():
        yield session


@contextmanager
def write_connection(engine: Engine) -> Iterator[Connection]:
    """`transaction` without an ORM session, for Core statements on hot paths: commit or roll back.

    On SQLite the engine's in-process write lock is held for the whole unit, as in `transaction`.
    """
    lock = _WRITE_LOCKS.get(engine)
    if lock is None:
        with engine.begin() as connection:
            yield connection
        return
    with lock, engine.begin() as connection:
        yield connection
