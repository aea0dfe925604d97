"""/api/v1/queue and /api/v1/gpus: the line of waiting tasks and the GPUs of every node."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

from fastapi import APIRouter, Query

from api.deps import ClusterDep, IdentityDep, UsageDep
from api.routes.nodes import node_public
from api.schemas import GpuPublic, GpusPublic, OutsideProcessPublic, QueueEntry, QueuePublic, TaskPublic
from scheduler.clock import now_ms
from scheduler.forecasts import queue_forecast, scheduler_warning
from scheduler.gpus.outside import OutsideProcess
from scheduler.spec import spec_gpu_fraction

router = APIRouter(tags=["cluster"])


@router.get("/queue", response_model=QueuePublic)
def queue(
    cluster: ClusterDep, usage: UsageDep, who: IdentityDep, limit: Annotated[int, Query(ge=1, le=1000)] = 200
) -> QueuePublic:
    """Queued tasks in the order they will start, with an expected start and the reason they wait.

    Positions count every team's tasks; other teams' tasks are not shown.
    """
    forecast = queue_forecast(cluster, usage)
    rows = cluster.tasks.by_ids(forecast)
    ordered = sorted(forecast.items(), key=lambda item: item[1]["position"])[:limit]
    entries = [
        QueueEntry(
            position=info["position"],
            task=TaskPublic.of(rows[task_id]),
            reason=info["reason"],
            estimated_start=info["estimated_start"],
        )
        for task_id, info in ordered
        if task_id in rows and (who.is_admin or rows[task_id].team_id == who.team_id)
    ]
    return QueuePublic(
        length=cluster.queue.length(), entries=entries, scheduler_warning=scheduler_warning(cluster)
    )


@router.get("/gpus", response_model=GpusPublic)
def gpus(cluster: ClusterDep, who: IdentityDep) -> GpusPublic:
    """Every node and GPU with free memory, utilization and which tasks hold it."""
    now = now_ms()
    holders: dict[tuple[str, int], list[int]] = {}
    shares: dict[tuple[str, int], dict[int, float]] = {}
    for task in cluster.tasks.with_status("running"):
        fraction = spec_gpu_fraction(task.spec)
        for index in task.gpu_indices or []:
            holders.setdefault((task.node or "", index), []).append(task.id)
            if fraction < 1:
                shares.setdefault((task.node or "", index), {})[task.id] = fraction
    nodes, gpu_rows = [], []
    for node in cluster.nodes.all():
        nodes.append(node_public(node, now))
        for gpu in node.gpus:
            gpu_rows.append(
                GpuPublic(
                    node=node.name,
                    index=gpu.index,
                    name=gpu.name,
                    memory_total_mib=gpu.memory_total_mib,
                    memory_free_mib=gpu.memory_free_mib,
                    utilization_pct=gpu.utilization_pct,
                    temperature_c=gpu.temperature_c,
                    power_w=gpu.power_w,
                    tasks=holders.get((node.name, gpu.index), []),
                    shares=shares.get((node.name, gpu.index), {}),
                    out_of_service=gpu.out_of_service,
                    outside=[_outside_public(process, who.is_admin) for process in gpu.outside],
                )
            )
    return GpusPublic(nodes=nodes, gpus=gpu_rows)


def _outside_public(process: OutsideProcess, admin: bool) -> OutsideProcessPublic:
    """A process outside nightshift as GET /gpus shows it: its command to admins only (a command line may
    hold a secret, and other teams' people read this list too)."""
    shown = asdict(process) if admin else {**asdict(process), "command": None}
    return OutsideProcessPublic(**shown)
