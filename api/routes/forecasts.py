"""/api/v1/tasks/{id}/explain, /estimate and /quota: when things will run, why not yet, what is left."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from api.deps import ClusterDep, IdentityDep, TaskId, UsageDep
from scheduler.clock import from_epoch_s, now_s
from scheduler.errors import PermissionDenied
from scheduler.forecasts import estimate_wait, explain_task, quota_status
from scheduler.submission import check_within_reach

router = APIRouter(tags=["forecasts"])


@router.get("/tasks/{task_id}/explain")
def explain(task_id: TaskId, cluster: ClusterDep, usage: UsageDep, who: IdentityDep) -> dict[str, Any]:
    """Position, expected start (with a range), the reason in plain words, and the priority's parts."""
    return explain_task(cluster, usage, who, task_id)


@router.get("/estimate")
def estimate(
    cluster: ClusterDep,
    usage: UsageDep,
    who: IdentityDep,
    task_id: Annotated[int | None, Query(description="a queued task; or describe a new one below")] = None,
    gpus: Annotated[int, Query(ge=0, le=64)] = 1,
    gpu_memory_gb: Annotated[float | None, Query(gt=0, le=4096, allow_inf_nan=False)] = None,
    gpu_fraction: Annotated[
        float, Query(gt=0, le=1, allow_inf_nan=False, description="part of one GPU it shares (gpus 1)")
    ] = 1.0,
    estimated_minutes: Annotated[float | None, Query(gt=0, le=60 * 24 * 60, allow_inf_nan=False)] = None,
    priority: Literal["low", "normal", "high", "urgent"] = "normal",
    offpeak: Annotated[bool, Query(description="starts only in an off-peak window")] = False,
    not_before: Annotated[datetime | None, Query(description="starts no earlier (ISO 8601)")] = None,
    time_limit_minutes: Annotated[float | None, Query(gt=0, le=60 * 24 * 60, allow_inf_nan=False)] = None,
    name: Annotated[
        str | None, Query(max_length=120, description="its name: the run time is learned from your past runs")
    ] = None,
    depends_on: Annotated[
        list[int] | None, Query(max_length=64, description="tasks it waits for (repeat the parameter)")
    ] = None,
    depends_on_any: Annotated[
        list[int] | None,
        Query(max_length=64, description="tasks it waits to end, however they end (repeat the parameter)"),
    ] = None,
    deadline: Annotated[
        datetime | None,
        Query(description="should finish by (ISO 8601): `deadline_warning` says when it would not"),
    ] = None,
    gpu_model: Annotated[
        str | None, Query(max_length=64, description='only GPUs of this model, as a spec\'s ("A100")')
    ] = None,
    node: Annotated[str | None, Query(max_length=253, description="only this node, as a spec's")] = None,
) -> dict[str, Any]:
    """How long a task waits: an existing one by id, or one like this if submitted now; with its energy
    and its cost at the tariff's rates from the expected start, and the run time assumed
    (`estimated_run_s`) with where it came from (`estimate_source`: your estimate, the median of your
    recent runs of that name and size, or of its sweep's other settings, the time limit, or the default).
    With a `deadline`, `deadline_warning` is what a submit would answer now: it cannot make it even on an
    idle cluster, or not behind the work queued ahead of it."""
    if not_before is not None and not_before.tzinfo is None:
        not_before = not_before.replace(tzinfo=cluster.zone)
    if deadline is not None and deadline.tzinfo is None:
        deadline = deadline.replace(tzinfo=cluster.zone)
    check_within_reach("not_before", not_before, cluster.zone, from_epoch_s(now_s()))
    check_within_reach("deadline", deadline, cluster.zone, from_epoch_s(now_s()))
    return estimate_wait(
        cluster, usage, who, task_id=task_id, gpus=gpus, gpu_memory_gb=gpu_memory_gb,
        gpu_fraction=gpu_fraction, estimated_minutes=estimated_minutes, priority=priority, offpeak=offpeak,
        not_before_s=not_before.timestamp() if not_before is not None else None,
        name=name, time_limit_minutes=time_limit_minutes, depends_on=tuple(depends_on or ()),
        depends_on_any=tuple(depends_on_any or ()),
        deadline_s=deadline.timestamp() if deadline is not None else None,
        gpu_model=gpu_model, node=node,
    )  # fmt: skip


@router.get("/quota")
def quota(
    cluster: ClusterDep,
    usage: UsageDep,
    who: IdentityDep,
    team: Annotated[str | None, Query(max_length=64)] = None,
) -> dict[str, Any]:
    """Your team's GPU cap and GPU-hour budgets (admins may ask for any team)."""
    wanted = team or who.team
    if wanted != who.team and not who.is_admin:
        raise PermissionDenied("you can see only your own team's quota")
    return quota_status(cluster, usage, wanted, who.user if wanted == who.team else None)
