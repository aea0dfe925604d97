"""ix_tasks_team_id on tasks (team_id, id): a team's tasks newest first and their count (`GET /tasks` and its
`total`) without reading every team's rows (PostgreSQL cannot use ix_tasks_status_team without a status)

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tasks") as batch_op:
        batch_op.create_index("ix_tasks_team_id", ["team_id", "id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("tasks") as batch_op:
        batch_op.drop_index("ix_tasks_team_id")
