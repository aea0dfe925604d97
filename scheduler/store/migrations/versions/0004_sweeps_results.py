"""sweeps and results: the sweeps table; tasks.sweep_id, params, metrics, metrics_note

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import scheduler.store.tables

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sweeps",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("team_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("command", sa.Text(), nullable=True),
        sa.Column("tasks_count", sa.Integer(), nullable=False),
        sa.Column("idempotency_key", sa.String(length=128), nullable=True),
        sa.Column("created_at", scheduler.store.tables.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["team_id"], ["teams.id"]),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("user_id", "idempotency_key", name="uq_sweeps_user_idempotency"),
    )
    with op.batch_alter_table("tasks") as batch_op:
        batch_op.add_column(sa.Column("sweep_id", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("params", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("metrics", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("metrics_note", sa.Text(), nullable=True))
        batch_op.create_foreign_key("fk_tasks_sweep_id", "sweeps", ["sweep_id"], ["id"])
        batch_op.create_index("ix_tasks_sweep_id", ["sweep_id"])


def downgrade() -> None:
    with op.batch_alter_table("tasks") as batch_op:
        batch_op.drop_index("ix_tasks_sweep_id")
        batch_op.drop_constraint("fk_tasks_sweep_id", type_="foreignkey")
        batch_op.drop_column("metrics_note")
        batch_op.drop_column("metrics")
        batch_op.drop_column("params")
        batch_op.drop_column("sweep_id")
    op.drop_table("sweeps")
