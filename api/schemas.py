"""Response models of the HTTP API (requests use `scheduler.spec.TaskSpec` directly)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel

from scheduler.store.tables import Task, TaskUsage


class TaskUsagePublic(BaseModel):
    """What a task used over all its attempts (recorded by its workers when each attempt ended)."""

    attempts: int
    gpu_hours: float
    energy_kwh: float
    energy_source: str  # measured (NVML power), estimated (from the GPU model) or mixed
    offpeak_share: float | None  # part of the energy drawn inside the off-peak windows
    cost: float
    currency: str
    peak_gpu_memory_mib: int | None  # the most it added to any one of its GPUs (beyond what others held)
    requested_gpu_memory_mib: int | None  # what the spec asked for (gpu_memory_gb), per GPU
    mean_utilization_pct: float | None
    cpu_hours: float | None = None  # CPU time of all its processes (where its node gave it a cgroup)

    @classmethod
    def of(cls, rows: list[TaskUsage]) -> TaskUsagePublic | None:
        """Sum the attempts' rows (None when there are none)."""
        if not rows:
            return None
        energy = sum(row.energy_kwh for row in rows)
        sources = {row.energy_source for row in rows}
        peaks = [row.peak_memory_mib for row in rows if row.peak_memory_mib is not None]
        utils = [
            (row.mean_utilization_pct, row.samples) for row in rows if row.mean_utilization_pct is not None
        ]
        weight = sum(n for _, n in utils)
        cpu = [row.cpu_seconds for row in rows if row.cpu_seconds is not None]
        return cls(
            attempts=len(rows),
            gpu_hours=round(sum(row.gpu_hours for row in rows), 6),
            energy_kwh=round(energy, 6),
            energy_source=sources.pop() if len(sources) == 1 else "mixed",
            offpeak_share=round(sum(row.offpeak_energy_kwh for row in rows) / energy, 4) if energy else None,
            cost=round(sum(row.cost for row in rows), 6),
            currency=rows[-1].currency,
            peak_gpu_memory_mib=max(peaks) if peaks else None,
            requested_gpu_memory_mib=rows[-1].requested_memory_mib,
            mean_utilization_pct=round(sum(u * n for u, n in utils) / weight, 2) if weight else None,
            cpu_hours=round(sum(cpu) / 3600, 6) if cpu else None,
        )


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
    held_by: str | None = None  # a queued task someone holds back (`POST /tasks/{id}/hold`) until released
    waits_for_slot: bool = False  # queued, its sweep runs at most `max_running` at once: waits for one to end
    spec: dict[str, Any]
    sweep_id: int | None = None
    params: dict[str, Any] | None = None
    metrics: dict[str, Any] | None = None
    metrics_note: str | None = None
    replaced_by: int | None = None  # a sweep's task run again: the task that took its place in the sweep
    usage: TaskUsagePublic | None = None  # GPU-hours, energy, cost, peak memory (ended attempts)
    # what whoever submits or changes it should know, in words (a deadline it cannot meet); empty elsewhere
    warnings: list[str] = []

    @classmethod
    def of(cls, task: Task, usage: TaskUsagePublic | None = None) -> TaskPublic:
        """Build from a row (and its usage, on `GET /tasks/{id}` and `GET /tasks`)."""
        return cls(
            usage=usage,
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
            held_by=task.held_by,
            waits_for_slot=bool(task.waits_for_slot),
            spec=task.spec,
            sweep_id=task.sweep_id,
            params=task.params,
            metrics=task.metrics,
            metrics_note=task.metrics_note,
            replaced_by=task.replaced_by,
        )


class TasksPublic(BaseModel):
    """A page of tasks: `count` is its length, `total` how many tasks pass the filters in all."""

    tasks: list[TaskPublic]
    count: int
    total: int


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
    # set while no scheduler runs: the entries' starts and reasons assume one does
    scheduler_warning: str | None = None


class OutsideProcessPublic(BaseModel):
    """A process using a GPU that is none of nightshift's tasks (a notebook, a run started by hand): its
    memory is not free and no task's end gives it back. `user`, `command`: None where the worker cannot see
    them (another pid namespace); `command` is shown to admins only (a command line may hold a secret)."""

    pid: int
    used_mib: int | None
    user: str | None
    command: str | None


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
    # the part of the GPU each task of `tasks` that shares it holds (`gpu_fraction` < 1), by task id
    shares: dict[int, float] = {}
    out_of_service: str | None = None  # why it takes no new tasks (too hot, memory left behind), if so
    outside: list[OutsideProcessPublic] = []  # processes on it that are no nightshift task's, largest first


class TeamReservationPublic(BaseModel):
    """A node kept for one team for a while (`nightshift node reserve`): a repeating one at its current or
    next time."""

    team: str
    start: datetime
    end: datetime
    repeat: str | None = None  # daily, weekdays, weekends, weekly; None: once
    gpus: list[int] | None = None  # the indices of the GPUs it holds; None: all of the node's


class NodePublic(BaseModel):
    """A worker node."""

    name: str
    alive: bool
    drained: bool
    source: str
    heartbeat_age_s: float
    gpus: int
    labels: dict[str, str] = {}
    job_isolation: str = "process group"  # "cgroup": each job in a cgroup of its own, nothing outlives a stop
    # a maintenance not over yet (a drain set for later): until then only tasks that end by then start there;
    # None: none
    drain_at: datetime | None = None
    # when that maintenance ends and the node is back in service by itself; None: when undrained
    drain_until: datetime | None = None
    # when its worker stopped cleanly (then it is not alive until a worker runs there again); None: it did not
    stopped_at: datetime | None = None
    # daily, weekdays, weekends, weekly: the maintenance comes round again (drain_at..drain_until: its current
    # or next time); None: once
    drain_repeat: str | None = None
    # its reservations for teams not over yet, soonest first: in each only that team's tasks start there
    reservations: list[TeamReservationPublic] = []


class NodeDrainedPublic(NodePublic):
    """A node just drained, with the running tasks asked back into the queue (`?requeue=true`, at once
    unless `at` is given); drained for later (`?at=`), the running tasks expected to run past it."""

    requeued: list[int] = []
    running_past: list[int] = []


class NodeReservedPublic(NodePublic):
    """A node just reserved for a team, with the other teams' running tasks expected to run past its start
    (they are not stopped: that team's tasks wait for them)."""

    running_past: list[int] = []
    reserved: TeamReservationPublic | None = None  # the reservation just made, at its current or next time


class GpusPublic(BaseModel):
    """Every GPU the cluster knows."""

    nodes: list[NodePublic]
    gpus: list[GpuPublic]


class ErrorPublic(BaseModel):
    """The body of every error answer."""

    detail: str
    errors: list[dict[str, Any]] | None = None
