"""/api/v1/tasks: submit, list, get, change, cancel, hold and release, logs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Header, Query, Request, Response
from fastapi.responses import PlainTextResponse, StreamingResponse

from api.deps import ClusterDep, IdentityDep, QueuedCap, TaskId, submission_queue
from api.schemas import TaskPublic, TasksPublic, TaskUsagePublic
from scheduler.clock import now_s
from scheduler.edits import EDITABLE_FIELDS
from scheduler.errors import NodeDidNotAnswer, NotFoundError, PermissionDenied
from scheduler.policy_input import queued_task_of
from scheduler.service import Cluster
from scheduler.spec import TaskSpec
from scheduler.store.identity import Identity, team_id_by_name, team_of_user
from scheduler.store.tables import FINAL_STATUSES, Task
from scheduler.submission import deadline_out_of_reach
from scheduler.task_logs import read_log_from, read_log_tail
from scheduler.telemetry.store import TelemetryStore

router = APIRouter(prefix="/tasks", tags=["tasks"])
Status = Literal["queued", "running", "succeeded", "failed", "cancelled"]
FOLLOW_POLL_S = 0.25


@router.post("", status_code=201, response_model=TaskPublic, dependencies=[QueuedCap])
async def submit_task(
    spec: TaskSpec,
    request: Request,
    cluster: ClusterDep,
    who: IdentityDep,
    idempotency_key: Annotated[str | None, Header(max_length=128)] = None,
) -> Response:
    """Submit a task. The same `Idempotency-Key` from the same user returns the first task (200).
    `warnings` says when it cannot finish by its deadline (it is queued all the same).

    Concurrent submissions share one SQL transaction and one Redis round trip (`api.submissions`).
    """
    task, created = await submission_queue(request, cluster).submit(who, spec, idempotency_key)
    # serialized here, once (the model is built from our own row: no second validation of the answer)
    return Response(
        task_as_submitted(cluster, task).model_dump_json(),
        status_code=201 if created else 200,
        media_type="application/json",
    )


def task_as_submitted(cluster: Cluster, task: Task) -> TaskPublic:
    """The task as the answer to its submission (alone, in a sweep or a batch) or change: with a note when
    it cannot finish by its deadline even if it started as early as it may (accepted all the same: a
    deadline is a goal)."""
    public = TaskPublic.of(task)
    if task.status == "queued" and task.spec.get("deadline"):  # the common case costs nothing
        note = deadline_out_of_reach(queued_task_of(task), cluster.policy_config, now_s())
        public.warnings = [note] if note else []
    return public


@router.get("", response_model=TasksPublic)
def list_tasks(
    cluster: ClusterDep,
    who: IdentityDep,
    status: Status | None = None,
    team: Annotated[str | None, Query(max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    offset: Annotated[int, Query(ge=0, le=2**62)] = 0,
    user: Annotated[str | None, Query(max_length=64, description="only this user's tasks")] = None,
) -> TasksPublic:
    """Your team's tasks, newest first (an admin sees every team's, or one `team`'s; `user`: one person's),
    each with its usage once it has run (one query for the page). Another team's asked for by a member
    answers 403, as `/quota?team=` does (not their own tasks in its place); a user outside the teams one
    may see, 404 (whether they exist elsewhere is not said)."""
    if team is not None and team != who.team and not who.is_admin:
        raise PermissionDenied(
            f"you can see only your own team's tasks (team {who.team}); only admins may list another team's"
        )
    if team is not None and who.is_admin and team_id_by_name(cluster.factory, team) is None:
        raise NotFoundError(f"team {team!r} not found")
    if user is not None and _user_out_of_sight(cluster, who, user):
        where = "" if who.is_admin else f" in team {who.team}"
        raise NotFoundError(f"no user {user!r}{where}")
    rows = cluster.tasks.list_for(who, status=status, team=team, limit=limit, offset=offset, user=user)
    usage = TelemetryStore(cluster.factory).usage_rows(row.id for row in rows)
    tasks = [TaskPublic.of(row, usage=TaskUsagePublic.of(usage.get(row.id, []))) for row in rows]
    return TasksPublic(tasks=tasks, count=len(rows))


def _user_out_of_sight(cluster: Cluster, who: Identity, user: str) -> bool:
    """True when `user` does not exist, or (for a member) is not in the caller's team."""
    user_team = team_of_user(cluster.factory, user)
    return user_team is None or (user_team != who.team_id and not who.is_admin)


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
def change_task(task_id: TaskId, changes: Changes, cluster: ClusterDep, who: IdentityDep) -> TaskPublic:
    """Change a queued task's priority, start window, limits, retries, name or tags; it keeps its age.

    422 names a field that cannot change (command, GPUs, memory, node, ...: submit it again with
    `--like ID` instead); 409 when the task is no longer queued. `warnings` says when it can no longer
    finish by its deadline.
    """
    return task_as_submitted(cluster, cluster.update(who, task_id, changes))


@router.post("/{task_id}/cancel", response_model=TaskPublic)
def cancel_task(task_id: TaskId, cluster: ClusterDep, who: IdentityDep) -> TaskPublic:
    """Cancel a queued task, or stop a running one (its stop signal, SIGTERM by default, to its process
    group; its grace period; SIGKILL)."""
    return TaskPublic.of(cluster.cancel(who, task_id))


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
    """The task's output (stdout and stderr, every attempt), read here or, when its log is not here, from
    the node that ran it (503 when that node's worker does not answer)."""
    task = cluster.tasks.get_for(who, task_id)
    text, offset = await asyncio.to_thread(read_log_tail, cluster, task, tail)
    if not follow or task.status in FINAL_STATUSES:
        return PlainTextResponse(text)

    async def stream() -> AsyncIterator[bytes]:
        position = offset
        yield text.encode()
        while True:
            now = await asyncio.to_thread(cluster.tasks.get_any, task_id)  # it may have started since
            try:
                chunk, position = await asyncio.to_thread(read_log_from, cluster, now, position)
            except NodeDidNotAnswer as error:
                yield f"\n==> {error}\n".encode()
                return
            if chunk:
                yield chunk
            if now.status in FINAL_STATUSES:
                return
            await asyncio.sleep(FOLLOW_POLL_S)

    return StreamingResponse(stream(), media_type="text/plain; charset=utf-8")
