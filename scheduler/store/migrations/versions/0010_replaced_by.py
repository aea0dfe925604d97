"""tasks.replaced_by: a sweep's task that was run again (`POST /sweeps/{id}/rerun`) names the task that took
its place; the sweep's counts, status and comparison read the newest run of each parameter set

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tasks") as batch_op:
        batch_op.add_column(sa.Column("replaced_by", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tasks") as batch_op:
        batch_op.drop_column("replaced_by")
