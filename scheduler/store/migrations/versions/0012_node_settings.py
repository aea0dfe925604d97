"""node_settings: what admins set on a node (drained, maintenance, reservations for teams), so that a
rebuild of Redis from SQL puts it back

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import scheduler.store.tables

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "node_settings",
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("fields", sa.Text(), nullable=False),
        sa.Column("updated_at", scheduler.store.tables.UtcDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )


def downgrade() -> None:
    op.drop_table("node_settings")
