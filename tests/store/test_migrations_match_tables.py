"""The migrations build exactly the tables the code declares, on SQLite and on PostgreSQL: a column added to
`tables.py` without a migration (or a migration changed in place after databases applied it) shows here."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from scheduler.store.db import create_db_engine, migrate
from scheduler.store.tables import Base


def test_a_database_migrated_to_the_head_has_the_declared_tables(database_url: str) -> None:
    engine = create_db_engine(database_url)
    try:
        migrate(engine)
        with engine.connect() as connection:
            differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    finally:
        engine.dispose()

    assert differences == []
