"""node_reservations.repeat and zone: reservations that come round every day, working day or week

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("node_reservations") as batch:
        batch.add_column(sa.Column("repeat", sa.String(length=16), nullable=True))
        batch.add_column(sa.Column("zone", sa.String(length=64), nullable=False, server_default="UTC"))


def downgrade() -> None:
    with op.batch_alter_table("node_reservations") as batch:
        batch.drop_column("zone")
        batch.drop_column("repeat")
