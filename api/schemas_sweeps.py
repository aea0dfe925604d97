"""Request and response models of sweeps, batches and results (`api/routes/sweeps.py`)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from api.schemas import TaskPublic
from scheduler.batches import SweepSummary, SweepView
from scheduler.results import Comparison
from scheduler.spec import MAX_RUNNING_LIMIT, TaskSpec
from scheduler.store.sweeps import SweepTally
from scheduler.store.tables import Sweep
from scheduler.sweeps import MAX_SWEEP_TASKS

Goal = Literal["min", "max"]


class BatchCreate(BaseModel):
    """Several specs submitted at once: every task is created, or none (each spec may carry a `sweep`)."""

    model_config = ConfigDict(extra="forbid")

    specs: list[TaskSpec] = Field(min_length=1, max_length=MAX_SWEEP_TASKS)
    name: str | None = Field(default=None, max_length=120, description="a label for the group")
    max_running: int | None = Field(
        default=None,
        strict=True,  # a number, not `true` or "4"
        ge=1,
        le=MAX_RUNNING_LIMIT,
        description="run at most this many of the batch's tasks at once; the others wait for a slot",
    )


class SweepFields(BaseModel):
    """What every view of a sweep or batch says: who submitted it, and its tasks counted by status."""

    id: int
    kind: str
    name: str
    command: str | None
    team: str
    user: str
    created_at: datetime
    status: str
    tasks_count: int
    counts: dict[str, int]
    held: int = Field(description="queued tasks held back (`POST /sweeps/{id}/hold`) until released")
    max_running: int | None = Field(
        default=None, description="at most this many tasks run at once (`PATCH /sweeps/{id}`); null: no limit"
    )
    waiting: int = Field(default=0, description="queued tasks waiting for a slot (`max_running`)")


def _sweep_fields(sweep: Sweep, status: str, tally: SweepTally) -> dict[str, Any]:
    """The `SweepFields` of a sweep row, given its counted tasks."""
    return {
        "id": sweep.id,
        "kind": sweep.kind,
        "name": sweep.name,
        "command": sweep.command,
        "team": sweep.team.name,
        "user": sweep.user.name,
        "created_at": sweep.created_at,
        "status": status,
        "tasks_count": sweep.tasks_count,
        "counts": tally.counts,
        "held": tally.held,
        "max_running": sweep.max_running,
        "waiting": tally.waiting,
    }


class SweepPublic(SweepFields):
    """A sweep or batch: its tasks, grouped under one id."""

    params: list[str]
    tasks: list[TaskPublic]

    @classmethod
    def of(cls, view: SweepView) -> SweepPublic:
        """Build from a sweep and its task rows."""
        names = dict.fromkeys(name for task in view.tasks for name in (task.params or {}))
        return cls(
            **_sweep_fields(view.sweep, view.status, view.tally),
            params=list(names),
            tasks=[TaskPublic.of(task) for task in view.tasks],
        )


class SweepRerun(BaseModel):
    """`POST /sweeps/{id}/rerun`: which of its tasks to run again, by how they ended."""

    model_config = ConfigDict(extra="forbid")

    status: list[Literal["failed", "cancelled", "succeeded"]] = Field(
        default=["failed"], min_length=1, description="run again the tasks that ended so (default: failed)"
    )
    task_ids: list[Annotated[int, Field(ge=1, le=2**63 - 1)]] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_SWEEP_TASKS,
        description="only these tasks of the sweep (each must have ended as `status` says)",
    )


class RerunPublic(BaseModel):
    """One task run again: the task replaced, and the new task that takes its place in the sweep."""

    replaced: int
    task_id: int


class SweepRerunPublic(SweepPublic):
    """The sweep after a rerun (its current tasks), and which new task replaced which."""

    reruns: list[RerunPublic]


class SweepSummaryPublic(SweepFields):
    """A sweep in a list: `SweepPublic` without its tasks and parameter names, with the span of its task
    ids (`first_task`-`last_task`)."""

    first_task: int | None = None
    last_task: int | None = None

    @classmethod
    def of(cls, summary: SweepSummary) -> SweepSummaryPublic:
        """Build from a sweep and its counted tasks."""
        return cls(
            **_sweep_fields(summary.sweep, summary.status, summary.tally),
            first_task=summary.tally.first_task,
            last_task=summary.tally.last_task,
        )


class SweepsPublic(BaseModel):
    """`GET /sweeps`: a page of sweeps, newest first; `count` is its length, `total` how many sweeps pass
    the filters in all (as `GET /tasks` says)."""

    sweeps: list[SweepSummaryPublic]
    count: int
    total: int


class ResultRowPublic(BaseModel):
    """One task of a comparison: its parameters and metrics; `best` marks the best row."""

    task_id: int
    name: str
    status: str
    params: dict[str, Any]
    metrics: dict[str, Any]
    note: str | None
    best: bool
    code: str | None = None  # the git commit it came from (`1a2b3c4`; `+`: with changes not committed)


class ResultsPublic(BaseModel):
    """Parameters vs metrics of a sweep's (or a tag's) tasks, sorted by `sort` toward `goal`, best first."""

    sweep_id: int | None = None
    tag: str | None = None
    params: list[str]
    metrics: list[str]
    sort: str | None
    goal: Goal | None
    best_task_id: int | None
    rows: list[ResultRowPublic]

    @classmethod
    def of(cls, table: Comparison, sweep_id: int | None = None, tag: str | None = None) -> ResultsPublic:
        """Build from a comparison."""
        return cls(
            sweep_id=sweep_id,
            tag=tag,
            params=table.params,
            metrics=table.metrics,
            sort=table.sort,
            goal=table.goal,
            best_task_id=table.best,
            rows=[
                ResultRowPublic(
                    task_id=row.task_id,
                    name=row.name,
                    status=row.status,
                    params=dict(row.params),
                    metrics=dict(row.metrics),
                    note=row.note,
                    code=row.code,
                    best=row.best,
                )
                for row in table.rows
            ],
        )
