"""Response models of the HTTP API (requests use `scheduler.spec.TaskSpec` directly)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel

from scheduler.store.tables import Task


class TaskPublic(BaseModel):
    """A task as the API shows it."""

    id: int
    name: str
    command: str
    status: str
    team: str
    user: str
    priority: str
    gpus: int
    gpu_memory_gb: float | None
    submitted_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    node: str | None
    gpu_indices: list[int] | None
    attempts: int
    exit_code: int | None
    reason: str | None
    message: str | None
    cancel_requested: bool
    spec: dict[str, Any]

    @classmethod
    def of(cls, task: Task) -> TaskPublic:
        """Build from a row."""
        return cls(
            id=task.id,
            name=task.name,
            command=task.command,
            status=task.status,
            team=task.team.name,
            user=task.user.name,
            priority=task.priority,
            gpus=task.gpus,
            gpu_memory_gb=task.gpu_memory_gb,
            submitted_at=task.submitted_at,
            started_at=task.started_at,
            finished_at=task.finished_at,
            node=task.node,
            gpu_indices=task.gpu_indices,
            attempts=task.attempts_count,
            exit_code=task.exit_code,
            reason=task.reason,
            message=task.message,
            cancel_requested=task.cancel_requested,
            spec=task.spec,
        )


class TasksPublic(BaseModel):
    """A page of tasks."""

    tasks: list[TaskPublic]
    count: int


class QueueEntry(BaseModel):
    """One queued task and its place in line."""

    position: int
    task: TaskPublic
    reason: str | None = None
    estimated_start: str | None = None


class QueuePublic(BaseModel):
    """The queue, best first."""

    length: int
    entries: list[QueueEntry]


class GpuPublic(BaseModel):
    """One GPU of one node."""

    node: str
    index: int
    name: str
    memory_total_mib: int
    memory_free_mib: int
    utilization_pct: float | None
    temperature_c: float | None
    power_w: float | None
    tasks: list[int]


class NodePublic(BaseModel):
    """A worker node."""

    name: str
    alive: bool
    drained: bool
    source: str
    heartbeat_age_s: float
    gpus: int
    labels: dict[str, str] = {}


class GpusPublic(BaseModel):
    """Every GPU the cluster knows."""

    nodes: list[NodePublic]
    gpus: list[GpuPublic]


class ErrorPublic(BaseModel):
    """The body of every error answer."""

    detail: str
    errors: list[dict[str, Any]] | None = None
