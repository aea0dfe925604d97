"""Alembic environment: runs on the connection that `scheduler.store.db.migrate` hands over."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from scheduler.store.tables import Base

target_metadata = Base.metadata
connection = context.config.attributes.get("connection")

if connection is None:
    url = context.config.get_main_option("sqlalchemy.url") or "sqlite:///nightshift.db"
    with create_engine(url).connect() as fresh:
        context.configure(connection=fresh, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
else:
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()
