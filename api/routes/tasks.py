"""/api/v1/tasks: submit, list, get, change, cancel, hold and release, logs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, tzinfo
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Header, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import PlainTextResponse, StreamingResponse
from pydantic import TypeAdapter, ValidationError

from api.deps import (
    ClusterDep,
    IdentityDep,
    QueuedCap,
    TaskId,
    UsageDep,
    enforce_queued_cap,
    refuse_team_out_of_sight,
    refuse_user_out_of_sight,
    submission_queue,
)
from api.schemas import TaskPublic, TasksPublic, TaskUsagePublic
from api.submitted import tasks_as_submitted
from scheduler.batches import check_group
from scheduler.edits import EDITABLE_FIELDS
from scheduler.errors import NodeDidNotAnswer, SpecError
from scheduler.forecasts import estimate_for_spec
from scheduler.spec import TaskSpec
from scheduler.store.tables import FINAL_STATUSES
from scheduler.store.task_filter import TaskFilter
from scheduler.submission import resolve
from scheduler.task_logs import read_log_from, read_log_tail
from scheduler.telemetry.store import TelemetryStore

router = APIRouter(prefix="/tasks", tags=["tasks"])
Status = Literal["queued", "running", "succeeded", "failed", "cancelled"]
FOLLOW_POLL_S = 0.25
FOLLOW_SILENT_POLL_S = 1.0  # while the followed node does not answer (each try may wait 3 s)


@router.post("", status_code=201, response_model=TaskPublic, dependencies=[QueuedCap])
async def submit_task(
    spec: TaskSpec,
    request: Request,
    cluster: ClusterDep,
    usage: UsageDep,
    who: IdentityDep,
    idempotency_key: Annotated[str | None, Header(max_length=128)] = None,
) -> Response:
    """Submit a task. The same `Idempotency-Key` from the same user returns the first task (200).
    `warnings` says when it cannot finish by its deadline, even on an idle cluster or behind the work
    queued ahead of it (it is queued all the same).

    Concurrent submissions share one SQL transaction and one Redis round trip (`api.submissions`).
    """
    task, created = await submission_queue(request, cluster).submit(who, spec, idempotency_key)
    if spec.deadline is None:  # the common case: no forecast, nothing to leave the event loop for
        public = tasks_as_submitted(cluster, usage, [task])[0]
    else:  # a forecast replays the queue: off the event loop
        public = (await run_in_threadpool(tasks_as_submitted, cluster, usage, [task]))[0]
    # serialized here, once (the model is built from our own row: no second validation of the answer)
    return Response(
        public.model_dump_json(), status_code=201 if created else 200, media_type="application/json"
    )


@router.post("/check")
def check_task(
    spec: TaskSpec,
    cluster: ClusterDep,
    usage: UsageDep,
    who: IdentityDep,
    estimate: Annotated[bool, Query(description="false: check only, no start estimate (cheaper)")] = True,
) -> dict[str, Any]:
    """Check a spec as `POST /tasks` (or, with `sweep`, `POST /sweeps`) would, and create nothing, as Slurm's
    `sbatch --test-only`: the spec as it would be stored (each task's, for a sweep) and, for one task, when
    it would start and end if submitted now (`estimate`, as `GET /estimate` answers). A refused spec gets
    the error the submission would get."""
    if spec.sweep is not None:
        expanded = check_group(cluster, who, [spec], "sweep")
        workdir = cluster.default_workdir()
        return {
            "tasks": [resolve(item.spec, cluster.zone, workdir).spec for item in expanded],
            "estimate": None,
        }
    enforce_queued_cap(cluster, who)  # counted in SQL: a check leaves the submissions' estimate alone
    new = cluster.prepare(who, spec)
    return {
        "tasks": [new.spec],
        "estimate": estimate_for_spec(cluster, usage, who, new.spec) if estimate else None,
    }


Moment = Annotated[
    str | None,
    Query(
        max_length=64,
        description="ISO 8601 (2026-12-01, 2026-12-01T09:00+08:00); without an offset, the cluster's zone",
        json_schema_extra={"format": "date-time"},
    ),
]
_DATETIME = TypeAdapter(datetime)  # pydantic reads these as it reads a spec's `not_before` and `deadline`


@router.get("", response_model=TasksPublic)
def list_tasks(
    cluster: ClusterDep,
    who: IdentityDep,
    status: Status | None = None,
    team: Annotated[str | None, Query(max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    offset: Annotated[int, Query(ge=0, le=2**62)] = 0,
    user: Annotated[str | None, Query(max_length=64, description="only this user's tasks")] = None,
    since: Moment = None,
    until: Moment = None,
    name: Annotated[
        str | None,
        Query(min_length=1, max_length=121, description="this exact name; `train*`: every name starting so"),
    ] = None,
    tag: Annotated[
        str | None, Query(min_length=1, max_length=64, description="tasks carrying this tag")
    ] = None,
    node: Annotated[
        str | None, Query(min_length=1, max_length=128, description="tasks that ran there")
    ] = None,
    held: Annotated[
        bool | None, Query(description="true: only tasks held back (`nightshift hold`); false: no held one")
    ] = None,
    sweep_id: Annotated[int | None, Query(ge=1, le=2**62, description="the tasks of this sweep")] = None,
) -> TasksPublic:
    """Your team's tasks, newest first (an admin sees every team's, or one `team`'s; `user`: one person's),
    each with its usage once it has run (one query for the page). `since`/`until` bound the submission
    time (both included); `name`, `tag`, `node`, `held` and `sweep_id` narrow further. `count` is the
    page's length, `total` how many tasks pass the filters in all. Another team's asked for by a member
    answers 403, as `/quota?team=` does (not their own tasks in its place); a user outside the teams one may
    see, 404 (whether they exist elsewhere is not said); a window that ends before it starts, 422."""
    if team is not None:
        refuse_team_out_of_sight(cluster, who, team, "tasks")
    if user is not None:
        refuse_user_out_of_sight(cluster, who, user)
    since_utc, until_utc = submission_window(since, until, cluster.zone)
    filters = TaskFilter(
        status, team, user, since_utc, until_utc, name=name, tag=tag, node=node, held=held, sweep_id=sweep_id
    )
    page = cluster.tasks.page_for(who, filters, limit=limit, offset=offset)
    usage = TelemetryStore(cluster.factory).usage_rows(row.id for row in page.tasks)
    tasks = [TaskPublic.of(row, usage=TaskUsagePublic.of(usage.get(row.id, []))) for row in page.tasks]
    return TasksPublic(tasks=tasks, count=len(tasks), total=page.total)


def submission_window(
    since: str | None, until: str | None, zone: tzinfo
) -> tuple[datetime | None, datetime | None]:
    """`since` and `until` in UTC (a time without an offset is the cluster's, as `not_before` is); a
    window that ends before it starts, or a time UTC cannot hold, is refused with what to fix."""
    since_utc, until_utc = _in_utc("since", since, zone), _in_utc("until", until, zone)
    if since_utc is not None and until_utc is not None and since_utc > until_utc:
        raise SpecError(
            f"since ({since_utc.isoformat()}) is after until ({until_utc.isoformat()}): no task can match; "
            "give the earlier time as since",
            [{"field": "since", "message": "must not be after until"}],
        )
    return since_utc, until_utc


def _in_utc(field: str, text: str | None, zone: tzinfo) -> datetime | None:
    """`text` read as a spec's times are, in UTC; refused with an example of what is understood."""
    if text is None:
        return None
    try:
        moment = _DATETIME.validate_python(text)
        return (moment if moment.tzinfo is not None else moment.replace(tzinfo=zone)).astimezone(UTC)
    except ValidationError:
        why = f"cannot read {text!r} as a time"
    except OverflowError:
        why = f"{text} is out of range (years 1 to 9999, UTC)"
    message = f"{field}: {why}: use ISO 8601, e.g. 2026-12-01 or 2026-12-01T09:00+08:00"
    raise SpecError(message, [{"field": field, "message": message}]) from None


@router.get("/{task_id}", response_model=TaskPublic)
def get_task(task_id: TaskId, cluster: ClusterDep, who: IdentityDep) -> TaskPublic:
    """One task."""
    task = cluster.tasks.get_for(who, task_id)
    usage = TelemetryStore(cluster.factory).usage_rows([task.id]).get(task.id, [])
    return TaskPublic.of(task, usage=TaskUsagePublic.of(usage))


Changes = Annotated[
    dict[str, Any],
    Body(
        description=f"the fields to change, any of: {', '.join(EDITABLE_FIELDS)}; null puts one back to its "
        "default (`not_before: null` lets the task start now)",
        examples=[{"priority": "high", "not_before": None}],
    ),
]


@router.patch("/{task_id}", response_model=TaskPublic)
def change_task(
    task_id: TaskId,
    changes: Changes,
    cluster: ClusterDep,
    usage: UsageDep,
    who: IdentityDep,
    dry_run: Annotated[
        bool, Query(description="true: check the change and answer the task as it would be; change nothing")
    ] = False,
) -> TaskPublic:
    """Change a queued task's priority, start window, limits, retries, name or tags; it keeps its age. A
    running task may change its time limit (its worker applies it within a second), estimate, retries,
    name and tags.

    422 names a field that cannot change (command, GPUs, memory, node, ...: submit it again with
    `--like ID` instead); 409 when the task has ended, when a running task is asked to change when or
    where it starts, or given a limit it has already run past. `warnings` says when it can no longer
    finish by its deadline. With `dry_run=true` every check is made and nothing is changed: the answer is
    the task with the spec (and priority) it would have.
    """
    if dry_run:
        task, would_be = cluster.check_update(who, task_id, changes)
        return TaskPublic.of(task).model_copy(update={"spec": would_be.spec, "priority": would_be.priority})
    return tasks_as_submitted(cluster, usage, [cluster.update(who, task_id, changes)])[0]


@router.post("/{task_id}/cancel", response_model=TaskPublic)
def cancel_task(task_id: TaskId, cluster: ClusterDep, who: IdentityDep) -> TaskPublic:
    """Cancel a queued task, or stop a running one (its stop signal, SIGTERM by default, to its process
    group; its grace period; SIGKILL)."""
    return TaskPublic.of(cluster.cancel(who, task_id))


@router.post("/{task_id}/requeue", response_model=TaskPublic)
def requeue_task(
    task_id: TaskId,
    cluster: ClusterDep,
    who: IdentityDep,
    hold: Annotated[
        bool, Query(description="true: held in the queue until released (`requeuehold`)")
    ] = False,
) -> TaskPublic:
    """Stop a running task (its stop signal, its grace period, SIGKILL) and put it back in the queue with its
    age, not counted against its `retries` (Slurm's `scontrol requeue`; `hold=true`: held there until
    `POST /tasks/{id}/release`); its next attempt resumes from its checkpoint when it has one. The answer
    is the task still running: its worker stops it within a second or two, then its grace period. 409
    unless it is running."""
    return TaskPublic.of(cluster.requeue(who, task_id, hold))


@router.post("/{task_id}/hold", response_model=TaskPublic)
def hold_task(task_id: TaskId, cluster: ClusterDep, who: IdentityDep) -> TaskPublic:
    """Keep a queued task from starting until it is released; 409 when it is not queued or already held."""
    return TaskPublic.of(cluster.hold(who, task_id))


@router.post("/{task_id}/release", response_model=TaskPublic)
def release_task(task_id: TaskId, cluster: ClusterDep, who: IdentityDep) -> TaskPublic:
    """Let a held task start again, with the priority and age it had; 409 when it is not held."""
    return TaskPublic.of(cluster.release(who, task_id))


@router.get("/{task_id}/logs", response_class=PlainTextResponse)
async def task_logs(
    task_id: TaskId,
    cluster: ClusterDep,
    who: IdentityDep,
    tail: Annotated[
        int | None, Query(ge=0, le=100_000, description="only the last N lines (0: none, as `tail -n 0`)")
    ] = None,
    follow: Annotated[bool, Query(description="keep streaming until the task ends")] = False,
) -> Response:
    """The task's output (stdout and stderr, every attempt in order), each attempt's part read here or,
    when its log is not here, from the node that ran it: a node that does not answer leaves a line naming
    it (503 only when no part could be read). `tail` counts over all attempts; `follow` reads on from
    the current attempt's node, and through its silence (a dead worker: the task comes back) until the
    task ends."""
    task = cluster.tasks.get_for(who, task_id)
    text, cursor = await asyncio.to_thread(read_log_tail, cluster, task, tail)
    if not follow or task.status in FINAL_STATUSES:
        return PlainTextResponse(text)

    async def stream() -> AsyncIterator[bytes]:
        position = cursor  # in the current attempt's file; `read_log_from` moves it to a new attempt's
        yield text.encode()
        said_silent = False  # the followed node's silence is said once, not at every poll
        while True:
            now = await asyncio.to_thread(cluster.tasks.get_any, task_id)  # it may have started since
            try:
                chunk, position = await asyncio.to_thread(read_log_from, cluster, now, position)
            except NodeDidNotAnswer as error:
                if now.status in FINAL_STATUSES:
                    yield f"\n==> {error}\n".encode()
                    return
                if not said_silent:  # its worker died or restarts: the task comes back, here or elsewhere
                    yield f"\n==> {error}; following on until task {task_id} ends\n".encode()
                    said_silent = True
                await asyncio.sleep(FOLLOW_SILENT_POLL_S)
                continue
            said_silent = said_silent and not chunk
            if chunk:
                yield chunk
            if now.status in FINAL_STATUSES:
                return
            await asyncio.sleep(FOLLOW_POLL_S)

    return StreamingResponse(stream(), media_type="text/plain; charset=utf-8")
