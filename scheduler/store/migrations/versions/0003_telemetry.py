"""telemetry: gpu_samples and host_samples (downsampled with age), task_usage (per-attempt accounting)

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import scheduler.store.tables

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "gpu_samples",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("node", sa.String(length=128), nullable=False),
        sa.Column("gpu_index", sa.Integer(), nullable=False),
        sa.Column("ts_s", sa.BigInteger(), nullable=False),
        sa.Column("resolution_s", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=True),
        sa.Column("utilization_pct", sa.Float(), nullable=True),
        sa.Column("memory_used_mib", sa.Integer(), nullable=True),
        sa.Column("power_w", sa.Float(), nullable=True),
        sa.Column("temperature_c", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_gpu_samples_node_ts", "gpu_samples", ["node", "ts_s"])
    op.create_index("ix_gpu_samples_task", "gpu_samples", ["task_id"])
    op.create_table(
        "host_samples",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("node", sa.String(length=128), nullable=False),
        sa.Column("ts_s", sa.BigInteger(), nullable=False),
        sa.Column("resolution_s", sa.Integer(), nullable=False),
        sa.Column("cpu_pct", sa.Float(), nullable=True),
        sa.Column("memory_pct", sa.Float(), nullable=True),
        sa.Column("disk_pct", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_host_samples_node_ts", "host_samples", ["node", "ts_s"])
    op.create_table(
        "task_usage",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("node", sa.String(length=128), nullable=False),
        sa.Column("gpus", sa.Integer(), nullable=False),
        sa.Column("started_at", scheduler.store.tables.UtcDateTime(timezone=True), nullable=False),
        sa.Column("finished_at", scheduler.store.tables.UtcDateTime(timezone=True), nullable=False),
        sa.Column("gpu_hours", sa.Float(), nullable=False),
        sa.Column("energy_kwh", sa.Float(), nullable=False),
        sa.Column("energy_source", sa.String(length=16), nullable=False),
        sa.Column("offpeak_energy_kwh", sa.Float(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=False),
        sa.Column("currency", sa.String(length=8), nullable=False),
        sa.Column("peak_memory_mib", sa.Integer(), nullable=True),
        sa.Column("requested_memory_mib", sa.Integer(), nullable=True),
        sa.Column("mean_utilization_pct", sa.Float(), nullable=True),
        sa.Column("samples", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("task_id", "attempt", name="uq_task_usage_attempt"),
    )
    op.create_index(op.f("ix_task_usage_task_id"), "task_usage", ["task_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_task_usage_task_id"), table_name="task_usage")
    op.drop_table("task_usage")
    op.drop_index("ix_host_samples_node_ts", table_name="host_samples")
    op.drop_table("host_samples")
    op.drop_index("ix_gpu_samples_task", table_name="gpu_samples")
    op.drop_index("ix_gpu_samples_node_ts", table_name="gpu_samples")
    op.drop_table("gpu_samples")
