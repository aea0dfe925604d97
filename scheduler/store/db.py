"""Database engine and sessions: SQLite (WAL) in the data folder by default, PostgreSQL when configured."""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from scheduler.errors import ServiceUnavailable
from scheduler.private_files import private_file, restrict

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
SQLITE_BUSY_TIMEOUT_MS = 15_000
# How long `migrate` goes on waiting for a SQLite database that another process holds (its migration, on a
# machine whose disk stalls), past the busy timeout, before it gives up.
SQLITE_MIGRATION_WAIT_S = 120.0


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


def keep_sqlite_private(database: Path) -> None:
    """Create the SQLite file owner-only (its -wal and -shm files take its mode), or make an older one and
    its -wal and -shm owner-only: jobs of every team run on this machine, and it holds every team's specs."""
    private_file(database)
    for suffix in ("-wal", "-shm"):
        restrict(database.with_name(database.name + suffix))


def create_db_engine(url: str) -> Engine:
    """An engine for `url`; SQLite gets WAL, a busy timeout and up-front write locks."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:" and not parsed.database.startswith("file:"):
            keep_sqlite_private(Path(parsed.database))
        engine = create_engine(
            url, connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
        )
        event.listen(engine, "connect", _tune_sqlite)
        event.listen(engine, "begin", _begin_immediate)
        _WRITE_LOCKS[engine] = threading.RLock()
        return engine
    if parsed.get_backend_name() == "postgresql" and parsed.drivername == "postgresql":
        url = str(parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False))
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


# The key of the PostgreSQL advisory lock `migrate` holds: any 64-bit number other code does not use.
MIGRATION_LOCK_KEY = 0x6E69676874736869  # "nightshi"


def _lock_migrations(connection: Connection) -> None:
    """Make processes that migrate one PostgreSQL database at once take turns (the API, the scheduler and
    every node's worker start together on a fresh database, under systemd): without it two of them create
    `alembic_version` at once and one dies with a UniqueViolation. The lock ends with the transaction; the
    next one in turn finds the schema at head and changes nothing (SQLite's BEGIN IMMEDIATE does as much)."""
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest alembic revision (idempotent; run at every start, by any number of
    processes at once). A SQLite database still locked after the busy timeout (another process migrating
    it while the disk stalls) is tried again, up to `SQLITE_MIGRATION_WAIT_S`: a start waits, not fails."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    deadline = time.monotonic() + SQLITE_MIGRATION_WAIT_S
    while True:
        try:
            with engine.begin() as connection:
                _lock_migrations(connection)
                config.attributes["connection"] = connection
                command.upgrade(config, "head")
            return
        except OperationalError as exc:
            if not (_sqlite_locked(engine, exc) and time.monotonic() < deadline):
                raise ServiceUnavailable(f"cannot reach the database at {engine.url!r}: {exc.orig}") from None
            log.warning("the database %s is locked by another process: trying again", engine.url)
            time.sleep(0.5)


def _sqlite_locked(engine: Engine, error: OperationalError) -> bool:
    """True when SQLite refused for a lock another connection holds (worth waiting for), not a fault."""
    return engine.dialect.name == "sqlite" and "locked" in str(error.orig)


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
