"""/api/v1/sweeps and /api/v1/tasks/batch: many tasks at once (all or nothing); list them; cancel, hold and
release them together; their results."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Path, Query, Request, Response

from api.deps import (
    ClusterDep,
    IdentityDep,
    QueuedCap,
    UsageDep,
    forget_queued_estimate,
    refuse_team_out_of_sight,
    refuse_user_out_of_sight,
)
from api.schemas_sweeps import (
    BatchCreate,
    Goal,
    RerunPublic,
    ResultsPublic,
    SweepPublic,
    SweepRerun,
    SweepRerunPublic,
    SweepsPublic,
    SweepSummaryPublic,
)
from api.submitted import tasks_as_submitted
from scheduler.batches import (
    SweepView,
    cancel_sweep,
    change_sweep,
    check_sweep_change,
    get_sweep,
    hold_sweep,
    list_sweeps,
    release_sweep,
    rerun_sweep,
    submit_group,
    submit_sweep,
    sweep_results,
    tag_results,
)
from scheduler.cluster_state import UsageCache
from scheduler.service import Cluster
from scheduler.spec import TaskSpec
from scheduler.store.sweeps import SweepFilter, SweepStatus

router = APIRouter(prefix="/sweeps", tags=["sweeps"])
batch_router = APIRouter(prefix="/tasks", tags=["sweeps"])
results_router = APIRouter(prefix="/results", tags=["sweeps"])
SweepId = Annotated[int, Path(ge=1, le=2**63 - 1, description="the sweep's id")]
IdempotencyKey = Annotated[str | None, Header(max_length=128)]
SortMetric = Annotated[str | None, Query(max_length=64, description="the metric to sort by")]
GoalQuery = Annotated[
    Goal | None, Query(description="min or max; default: min for names like loss/error, else max")
]


@router.post("", status_code=201, response_model=SweepPublic, dependencies=[QueuedCap])
def create_sweep(
    spec: TaskSpec,
    cluster: ClusterDep,
    usage: UsageDep,
    who: IdentityDep,
    request: Request,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> SweepPublic:
    """Submit a spec with a `sweep`: one task per parameter set, all or none, grouped under one id.

    The same `Idempotency-Key` from the same user returns the first sweep (200).
    """
    view, created = submit_sweep(cluster, who, spec, idempotency_key)
    forget_queued_estimate(request, who)
    if not created:
        response.status_code = 200
    return _as_submitted(cluster, usage, view)


@batch_router.post("/batch", status_code=201, response_model=SweepPublic, dependencies=[QueuedCap])
def create_batch(
    batch: BatchCreate,
    cluster: ClusterDep,
    usage: UsageDep,
    who: IdentityDep,
    request: Request,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> SweepPublic:
    """Submit several specs at once: every task is created or none, grouped under one sweep id."""
    view, created = submit_group(
        cluster, who, batch.specs, "batch", idempotency_key, batch.name, batch.max_running
    )
    forget_queued_estimate(request, who)
    if not created:
        response.status_code = 200
    return _as_submitted(cluster, usage, view)


def _as_submitted(cluster: Cluster, usage: UsageCache, view: SweepView) -> SweepPublic:
    """The answer to a sweep or batch: each task with its deadline `warnings`, as a single submit has."""
    public = SweepPublic.of(view)
    public.tasks = tasks_as_submitted(cluster, usage, view.tasks)
    return public


@router.get("", response_model=SweepsPublic)
def list_all(
    cluster: ClusterDep,
    who: IdentityDep,
    limit: Annotated[int, Query(ge=1, le=1000, description="at most this many, newest first")] = 50,
    offset: Annotated[int, Query(ge=0, le=2**62, description="skip this many (the next page)")] = 0,
    user: Annotated[str | None, Query(max_length=64, description="only this user's sweeps")] = None,
    team: Annotated[str | None, Query(max_length=64, description="(admins) only this team's")] = None,
    status: Annotated[
        SweepStatus | None,
        Query(description="only sweeps in this status, as the list reports it (`status` of each)"),
    ] = None,
) -> SweepsPublic:
    """Your team's sweeps and batches, newest first (an admin sees every team's, or one `team`'s, as
    `GET /tasks`), each with its tasks counted by status but not listed (`GET /sweeps/{id}` has them).

    A sweep's `status` is `running` while any task runs, `queued` while any other has not ended, else
    `done` (`cancelled` when every task was); `status=` keeps those in one. `count` is the page's length,
    `total` how many sweeps pass the filters in all; `offset` pages on. Another team's asked for by a
    member answers 403, and a `user` outside the teams one may see 404, as `GET /tasks` does."""
    if team is not None:
        refuse_team_out_of_sight(cluster, who, team, "sweeps")
    if user is not None:
        refuse_user_out_of_sight(cluster, who, user)
    summaries, total = list_sweeps(cluster, who, SweepFilter(team, user, status), limit, offset)
    sweeps = [SweepSummaryPublic.of(summary) for summary in summaries]
    return SweepsPublic(sweeps=sweeps, count=len(sweeps), total=total)


@router.get("/{sweep_id}", response_model=SweepPublic)
def read_sweep(sweep_id: SweepId, cluster: ClusterDep, who: IdentityDep) -> SweepPublic:
    """A sweep with its tasks and how many are in each status."""
    return SweepPublic.of(get_sweep(cluster, who, sweep_id))


@router.post("/{sweep_id}/cancel", response_model=SweepPublic)
def cancel(sweep_id: SweepId, cluster: ClusterDep, who: IdentityDep) -> SweepPublic:
    """Cancel every queued task of the sweep and stop every running one (finished ones stay); 409 when
    every task has finished already, as hold answers when none is queued."""
    return SweepPublic.of(cancel_sweep(cluster, who, sweep_id))


@router.patch("/{sweep_id}", response_model=SweepPublic)
def change(
    sweep_id: SweepId,
    changes: Annotated[dict[str, Any], Body(description="as for PATCH /tasks/{id}: the fields to change")],
    cluster: ClusterDep,
    usage: UsageDep,
    who: IdentityDep,
    dry_run: Annotated[
        bool,
        Query(
            description="true: make every check of the change and answer the sweep as it is; change nothing"
        ),
    ] = False,
) -> SweepPublic:
    """The same change (priority, start window, limits, ...) to every queued task of the sweep; a refused
    change (422, 409) leaves them all as they were: each task's change is checked, and the owner's priority
    limit over them all, before any changes. `max_running` changes how many of its tasks run at once
    (null: no limit): a higher limit admits waiting tasks at once, a lower one applies as tasks end.
    Each task carries its deadline `warnings`, as a single change's answer does. With `dry_run=true` every
    check is made and nothing is changed."""
    if dry_run:
        return SweepPublic.of(check_sweep_change(cluster, who, sweep_id, changes)[0])
    return _as_submitted(cluster, usage, change_sweep(cluster, who, sweep_id, changes))


@router.post("/{sweep_id}/hold", response_model=SweepPublic)
def hold(sweep_id: SweepId, cluster: ClusterDep, who: IdentityDep) -> SweepPublic:
    """Hold back every queued task of the sweep until released (running and finished ones go on)."""
    return SweepPublic.of(hold_sweep(cluster, who, sweep_id))


@router.post("/{sweep_id}/release", response_model=SweepPublic)
def release(sweep_id: SweepId, cluster: ClusterDep, who: IdentityDep) -> SweepPublic:
    """Let every held task of the sweep start again, each with the priority and age it had."""
    return SweepPublic.of(release_sweep(cluster, who, sweep_id))


@router.post("/{sweep_id}/rerun", status_code=201, response_model=SweepRerunPublic, dependencies=[QueuedCap])
def rerun(
    sweep_id: SweepId,
    cluster: ClusterDep,
    usage: UsageDep,
    who: IdentityDep,
    request: Request,
    body: Annotated[SweepRerun | None, Body()] = None,
) -> SweepRerunPublic:
    """Run again the sweep's tasks that failed (or ended as `status` lists): each gets a new task with its
    parameters, which takes its place in the sweep's counts and results; the old task keeps its record,
    with `replaced_by`. All or none: 422 when a spec no longer fits the cluster, 409 when no task ended so."""
    asked = body or SweepRerun()
    view, replaced = rerun_sweep(cluster, who, sweep_id, asked.status, asked.task_ids)
    forget_queued_estimate(request, who)
    public = _as_submitted(cluster, usage, view)
    reruns = [RerunPublic(replaced=old, task_id=new) for old, new in replaced.items()]
    return SweepRerunPublic(**public.model_dump(), reruns=reruns)


@router.get("/{sweep_id}/results", response_model=ResultsPublic)
def results(
    sweep_id: SweepId,
    cluster: ClusterDep,
    who: IdentityDep,
    sort: SortMetric = None,
    goal: GoalQuery = None,
) -> ResultsPublic:
    """Parameters vs metrics of the sweep's tasks, best first (by `sort`, default the first metric)."""
    _, table = sweep_results(cluster, who, sweep_id, sort, goal)
    return ResultsPublic.of(table, sweep_id=sweep_id)


@results_router.get("", response_model=ResultsPublic)
def results_by_tag(
    cluster: ClusterDep,
    who: IdentityDep,
    tag: Annotated[str, Query(min_length=1, max_length=64, description="tasks carrying this tag")],
    sort: SortMetric = None,
    goal: GoalQuery = None,
) -> ResultsPublic:
    """Parameters vs metrics of your team's tasks with this tag, best first."""
    _, table = tag_results(cluster, who, tag, sort, goal)
    return ResultsPublic.of(table, tag=tag)
