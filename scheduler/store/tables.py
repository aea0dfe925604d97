"""SQLAlchemy tables: teams, users, API tokens, tasks and their attempts. SQL is the source of truth."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

TASK_STATUSES = ("queued", "running", "succeeded", "failed", "cancelled")
FINAL_STATUSES = frozenset({"succeeded", "failed", "cancelled"})


class UtcDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on every backend (SQLite keeps no offset by itself)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def utcnow() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)


class Base(DeclarativeBase):
    """Declarative base of every nightshift table."""

    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: UtcDateTime, dict[str, Any]: JSON}


class Team(Base):
    """A team: the unit of quotas, isolation and reports."""

    __tablename__ = "teams"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class User(Base):
    """A person (or a script) who submits tasks on behalf of one team."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"))
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    team: Mapped[Team] = relationship(lazy="joined")


class ApiToken(Base):
    """A bearer token, stored as its SHA-256 hash; `prefix` lets people recognise it in lists."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(default=None)

    user: Mapped[User] = relationship(lazy="joined")


class Secret(Base):
    """A person's secret (an API key, a token) by name: given to the jobs whose spec names it in `secrets`,
    never shown by the API, so teammates who see the task do not see the value."""

    __tablename__ = "secrets"
    __table_args__ = (UniqueConstraint("user_id", "name", name="uq_secrets_user_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    name: Mapped[str] = mapped_column(String(128))
    value: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class NodeSettings(Base):
    """What admins set on a node (drained, maintenance, reservations for teams), as the node's Redis record
    holds it (`NodeRegistry.ADMIN_FIELDS`, JSON): written after each change, put back by
    `Cluster.rebuild_redis` when Redis lost its data, so that a drained node is not given work again."""

    __tablename__ = "node_settings"

    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    fields: Mapped[str] = mapped_column(Text, default="{}")
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class NodeReservation(Base):
    """A node kept for one team for a while, as an admin asked it (`nightshift node reserve`): the record
    the reports read to say how much of it the team used (`cancelled_at`: called off early)."""

    __tablename__ = "node_reservations"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    node: Mapped[str] = mapped_column(String(255), index=True)
    team: Mapped[str] = mapped_column(String(64))
    start_at: Mapped[datetime] = mapped_column()
    end_at: Mapped[datetime] = mapped_column()
    created_by: Mapped[str] = mapped_column(String(64))
    cancelled_at: Mapped[datetime | None] = mapped_column(default=None)
    # a repeating one (`scheduler.repeats`): start_at..end_at is its first time, and it comes round in `zone`
    repeat: Mapped[str | None] = mapped_column(String(16), default=None)
    zone: Mapped[str] = mapped_column(String(64), default="UTC", server_default="UTC")
    # the indices of the GPUs it held, comma-separated; empty: all of the node's
    gpus: Mapped[str] = mapped_column(String(255), default="", server_default="")


class Task(Base):
    """One submitted task. `lease_token` fences state changes: only the current claim may finish it."""

    __tablename__ = "tasks"
    __table_args__ = (
        UniqueConstraint("user_id", "idempotency_key", name="uq_tasks_user_idempotency"),
        Index("ix_tasks_status_team", "status", "team_id"),
        Index("ix_tasks_team_id", "team_id", "id"),  # a team's tasks newest first, and their count
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    name: Mapped[str] = mapped_column(String(120))
    command: Mapped[str] = mapped_column(Text)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16), default="queued")
    priority: Mapped[str] = mapped_column(String(8), default="normal")
    gpus: Mapped[int] = mapped_column(Integer, default=1)
    gpu_memory_gb: Mapped[float | None] = mapped_column(Float, default=None)
    retries: Mapped[int] = mapped_column(Integer, default=0)
    idempotency_key: Mapped[str | None] = mapped_column(String(128), default=None)

    submitted_at: Mapped[datetime] = mapped_column(default=utcnow)
    enqueued_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(default=None)
    finished_at: Mapped[datetime | None] = mapped_column(default=None)

    attempts_count: Mapped[int] = mapped_column(Integer, default=0)
    # times its spec changed while queued (`nightshift change`): with attempts_count, the row's version
    revision: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    lease_token: Mapped[str | None] = mapped_column(String(64), default=None)
    node: Mapped[str | None] = mapped_column(String(128), default=None)
    gpu_indices: Mapped[list[int] | None] = mapped_column(JSON, default=None)
    exit_code: Mapped[int | None] = mapped_column(Integer, default=None)
    reason: Mapped[str | None] = mapped_column(String(32), default=None)
    message: Mapped[str | None] = mapped_column(Text, default=None)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    hold_until: Mapped[datetime | None] = mapped_column(default=None)  # retry backoff
    held_by: Mapped[str | None] = mapped_column(String(64), default=None)  # a person's hold: not started
    # a task of a sweep with `max_running` that has no slot yet: queued in SQL, nowhere in Redis
    waits_for_slot: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # sweeps and results (scheduler/sweeps.py, scheduler/results.py)
    sweep_id: Mapped[int | None] = mapped_column(ForeignKey("sweeps.id"), default=None, index=True)
    params: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)  # this task's sweep values
    metrics: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)  # its metrics.json
    metrics_note: Mapped[str | None] = mapped_column(Text, default=None)  # why metrics were not read
    # a sweep's task run again (`SweepStore.add_reruns`): the task that took its place in the sweep
    replaced_by: Mapped[int | None] = mapped_column(Integer, default=None)

    team: Mapped[Team] = relationship(lazy="joined")
    user: Mapped[User] = relationship(lazy="joined")


class Attempt(Base):
    """One run of a task on one node; a task has one attempt per claim."""

    __tablename__ = "attempts"
    __table_args__ = (UniqueConstraint("task_id", "number", name="uq_attempts_task_number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("tasks.id"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    token: Mapped[str] = mapped_column(String(64))
    node: Mapped[str] = mapped_column(String(128))
    gpu_indices: Mapped[list[int]] = mapped_column(JSON)
    pid: Mapped[int | None] = mapped_column(BigInteger, default=None)
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(default=None)
    exit_code: Mapped[int | None] = mapped_column(Integer, default=None)
    outcome: Mapped[str | None] = mapped_column(String(16), default=None)
    reason: Mapped[str | None] = mapped_column(String(32), default=None)


# --- telemetry and accounting (scheduler/telemetry) ------------------------------------------------
# Sample times are integer epoch seconds: the history is the biggest table and a number is 4-8 bytes where
# a datetime would be 26. `resolution_s` is 0 for a raw sample, else the width of the bucket it averages.
_BIG_ID = BigInteger().with_variant(Integer, "sqlite")


class GpuSample(Base):
    """One GPU reading (raw), or the mean of a bucket of them (downsampled), and the task it belongs to.

    Downsampled rows hold the mean utilization and power, the peak memory and the peak temperature.
    """

    __tablename__ = "gpu_samples"
    __table_args__ = (
        Index("ix_gpu_samples_node_ts", "node", "ts_s"),
        Index("ix_gpu_samples_task", "task_id"),
    )

    id: Mapped[int] = mapped_column(_BIG_ID, primary_key=True, autoincrement=True)
    node: Mapped[str] = mapped_column(String(128))
    gpu_index: Mapped[int] = mapped_column(Integer)
    ts_s: Mapped[int] = mapped_column(BigInteger)
    resolution_s: Mapped[int] = mapped_column(Integer, default=0)
    task_id: Mapped[int | None] = mapped_column(Integer, default=None)
    utilization_pct: Mapped[float | None] = mapped_column(Float, default=None)
    memory_used_mib: Mapped[int | None] = mapped_column(Integer, default=None)
    power_w: Mapped[float | None] = mapped_column(Float, default=None)
    temperature_c: Mapped[float | None] = mapped_column(Float, default=None)


class HostSample(Base):
    """One reading of a worker's host (CPU, memory and disk use in percent), raw or downsampled."""

    __tablename__ = "host_samples"
    __table_args__ = (Index("ix_host_samples_node_ts", "node", "ts_s"),)

    id: Mapped[int] = mapped_column(_BIG_ID, primary_key=True, autoincrement=True)
    node: Mapped[str] = mapped_column(String(128))
    ts_s: Mapped[int] = mapped_column(BigInteger)
    resolution_s: Mapped[int] = mapped_column(Integer, default=0)
    cpu_pct: Mapped[float | None] = mapped_column(Float, default=None)
    memory_pct: Mapped[float | None] = mapped_column(Float, default=None)
    disk_pct: Mapped[float | None] = mapped_column(Float, default=None)


class TaskUsage(Base):
    """What one attempt of a task used: GPU-hours, energy (measured or estimated), cost, memory, use."""

    __tablename__ = "task_usage"
    __table_args__ = (UniqueConstraint("task_id", "attempt", name="uq_task_usage_attempt"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("tasks.id"), index=True)
    attempt: Mapped[int] = mapped_column(Integer)
    node: Mapped[str] = mapped_column(String(128))
    gpus: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column()
    finished_at: Mapped[datetime] = mapped_column()
    gpu_hours: Mapped[float] = mapped_column(Float, default=0.0)
    energy_kwh: Mapped[float] = mapped_column(Float, default=0.0)
    energy_source: Mapped[str] = mapped_column(String(16), default="estimated")
    offpeak_energy_kwh: Mapped[float] = mapped_column(Float, default=0.0)
    cost: Mapped[float] = mapped_column(Float, default=0.0)
    currency: Mapped[str] = mapped_column(String(8), default="EUR")
    peak_memory_mib: Mapped[int | None] = mapped_column(Integer, default=None)
    requested_memory_mib: Mapped[int | None] = mapped_column(Integer, default=None)
    mean_utilization_pct: Mapped[float | None] = mapped_column(Float, default=None)
    samples: Mapped[int] = mapped_column(Integer, default=0)
    cpu_seconds: Mapped[float | None] = mapped_column(Float, default=None)  # where the job had a cgroup


class Sweep(Base):
    """A group of tasks submitted at once: a sweep (one spec, several parameter sets) or a batch of specs."""

    __tablename__ = "sweeps"
    __table_args__ = (UniqueConstraint("user_id", "idempotency_key", name="uq_sweeps_user_idempotency"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    kind: Mapped[str] = mapped_column(String(8), default="sweep")  # sweep | batch
    name: Mapped[str] = mapped_column(String(120))
    command: Mapped[str | None] = mapped_column(Text, default=None)  # the template of a sweep
    tasks_count: Mapped[int] = mapped_column(Integer, default=0)
    max_running: Mapped[int | None] = mapped_column(Integer, default=None)  # at most this many at once
    idempotency_key: Mapped[str | None] = mapped_column(String(128), default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    team: Mapped[Team] = relationship(lazy="joined")
    user: Mapped[User] = relationship(lazy="joined")
