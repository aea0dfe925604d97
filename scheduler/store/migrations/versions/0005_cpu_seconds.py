"""task_usage.cpu_seconds: the CPU time of an attempt's processes, where its job had a cgroup

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("task_usage") as batch_op:
        batch_op.add_column(sa.Column("cpu_seconds", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("task_usage") as batch_op:
        batch_op.drop_column("cpu_seconds")
