"""node_reservations.gpus: reservations of some of a node's GPUs (their indices; empty: all of them)

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("node_reservations") as batch:
        batch.add_column(sa.Column("gpus", sa.String(length=255), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("node_reservations") as batch:
        batch.drop_column("gpus")
