"""node_reservations: each node kept for a team for a while, as asked, for the reports of their use

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import scheduler.store.tables

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "node_reservations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("node", sa.String(length=255), nullable=False),
        sa.Column("team", sa.String(length=64), nullable=False),
        sa.Column("start_at", scheduler.store.tables.UtcDateTime(timezone=True), nullable=False),
        sa.Column("end_at", scheduler.store.tables.UtcDateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("cancelled_at", scheduler.store.tables.UtcDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_node_reservations_node", "node_reservations", ["node"])


def downgrade() -> None:
    op.drop_index("ix_node_reservations_node", table_name="node_reservations")
    op.drop_table("node_reservations")
