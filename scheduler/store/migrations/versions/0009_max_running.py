"""sweeps.max_running and tasks.waits_for_slot: a sweep that runs at most N of its tasks at once (Slurm's
`--array=0-99%4`); a task beyond that waits queued in SQL, in Redis nowhere, until a slot frees

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sweeps") as batch_op:
        batch_op.add_column(sa.Column("max_running", sa.Integer(), nullable=True))
    with op.batch_alter_table("tasks") as batch_op:
        waits: sa.Column[bool] = sa.Column(
            "waits_for_slot", sa.Boolean(), nullable=False, server_default=sa.false()
        )
        batch_op.add_column(waits)


def downgrade() -> None:
    with op.batch_alter_table("tasks") as batch_op:
        batch_op.drop_column("waits_for_slot")
    with op.batch_alter_table("sweeps") as batch_op:
        batch_op.drop_column("max_running")
