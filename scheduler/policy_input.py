"""The policy's view of the live cluster: SQL rows and node records turned into plain policy data."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from scheduler.clock import to_epoch_s
from scheduler.nodes import NodeState
from scheduler.policy.placement import memory_need_mib
from scheduler.policy.types import GpuSlot, PriorityClass, QueuedTask, RunningTask, TeamWindow
from scheduler.spec import spec_gpu_fraction
from scheduler.store.tables import Task

MIB_PER_GB = 1024


def _epoch_or_none(text: str | None) -> float | None:
    return datetime.fromisoformat(text).timestamp() if text else None


def queued_task_of(task: Task) -> QueuedTask:
    """The policy's view of a queued task row."""
    spec = task.spec
    estimate = spec.get("estimated_minutes")
    limit = spec.get("time_limit_minutes")
    return QueuedTask(
        task_id=task.id,
        team=task.team.name,
        user=task.user.name,
        gpus=task.gpus,
        enqueued_at_s=to_epoch_s(task.enqueued_at),
        priority=PriorityClass.parse(task.priority),
        gpu_memory_mib=int((task.gpu_memory_gb or 0) * MIB_PER_GB),
        gpu_fraction=spec_gpu_fraction(spec),
        estimated_s=float(estimate) * 60 if estimate else None,
        time_limit_s=float(limit) * 60 if limit else None,
        not_before_s=_epoch_or_none(spec.get("not_before")),
        retry_at_s=to_epoch_s(task.hold_until) if task.hold_until is not None else None,
        deadline_s=_epoch_or_none(spec.get("deadline")),
        offpeak=bool(spec.get("offpeak")),
        name=task.name,
        depends_on=tuple(spec.get("depends_on") or ()),
        depends_on_any=tuple(spec.get("depends_on_any") or ()),
        node=spec.get("node"),
        gpu_model=spec.get("gpu_model"),
        revision=task.revision,
    )


def running_task_of(task: Task, node: str, gpu_indices: Sequence[int], started_at_s: float) -> RunningTask:
    """The policy's view of a task holding GPUs (running, or assigned and about to start)."""
    return holder_of(queued_task_of(task), node, gpu_indices, started_at_s)


def holder_of(queued: QueuedTask, node: str, gpu_indices: Sequence[int], started_at_s: float) -> RunningTask:
    """The policy's view of a task holding GPUs, from its queued view (the scheduler's cached rows)."""
    estimate = queued.estimated_s or queued.time_limit_s
    return RunningTask(
        task_id=queued.task_id,
        team=queued.team,
        user=queued.user,
        node=node,
        gpu_indices=tuple(gpu_indices),
        started_at_s=started_at_s,
        gpu_memory_mib=queued.gpu_memory_mib,
        gpu_fraction=queued.gpu_fraction,
        priority=queued.priority,
        estimated_end_s=started_at_s + estimate if estimate else None,
    )


def _node_out_of_service(node: NodeState, now_ms_: int, window: tuple[int, int | None] | None) -> str | None:
    """Why none of a node's GPUs takes new tasks ("node n0 is drained"), None when it is in service.

    A node inside a maintenance with an end is not out of service here: the maintenance, a reservation of
    its GPUs to that end (`GpuSlot.down_at_s`, `up_at_s`), keeps tasks off it, and the forecasts, replaying
    past the end, see it back. `window`: its `maintenance` now."""
    if node.drained or (window is not None and now_ms_ >= window[0] and window[1] is None):
        return f"node {node.name} is drained"
    if node.stopped_ms is not None:
        ago_s = (now_ms_ - node.stopped_ms) / 1000
        return f"node {node.name} is down (its worker was stopped {ago_s:.0f} s ago)"
    if not node.alive(now_ms_):
        return f"node {node.name} is down (no heartbeat for {(now_ms_ - node.heartbeat_ms) / 1000:.0f} s)"
    return None


def gpu_slots(nodes: Iterable[NodeState], holders: Sequence[RunningTask], now_ms_: int) -> list[GpuSlot]:
    """Each GPU of each live node, with what nightshift's own tasks already hold subtracted."""
    on_gpu: dict[tuple[str, int], list[RunningTask]] = {}
    for task in holders:
        for index in task.gpu_indices:
            on_gpu.setdefault((task.node, index), []).append(task)
    slots: list[GpuSlot] = []
    for node in nodes:
        window = node.maintenance(now_ms_)
        node_why = _node_out_of_service(node, now_ms_, window)
        down_at_s = window[0] / 1000.0 if window is not None else None
        up_at_s = window[1] / 1000.0 if window is not None and window[1] is not None else None
        team_windows = [
            (held, TeamWindow(held.team, held.start_ms / 1000, held.end_ms / 1000))
            for held in node.team_reservations(now_ms_)
        ]
        for gpu in node.gpus:
            why = node_why
            if why is None and gpu.out_of_service:
                why = f"GPU {gpu.index} of {node.name}: {gpu.out_of_service}"
            key = (node.name, gpu.index)
            held = on_gpu.get(key, [])
            shares = sum(task.gpu_fraction for task in held)
            shareable = gpu.shareable_mib
            # what its holders asked for (a sharer without a request: its fraction of what the GPU offers)
            needs = [memory_need_mib(t.gpu_memory_mib, t.gpu_fraction, shareable) for t in held]
            reserved = sum(needs)
            unsized = any(need <= 0 for need in needs)  # a holder that asked for none: its use is unknown
            if gpu.outside_mib is not None:
                # known from the driver's process list: a task's reservation it has not filled yet and
                # the memory of processes outside nightshift both count, whatever the reading shows
                outside = gpu.outside_mib
                free = min(gpu.memory_free_mib, shareable - outside - reserved)
            else:  # guessed: in use beyond the reservations (a task over its request counts in it)
                outside = shareable - gpu.memory_free_mib - reserved
                free = min(gpu.memory_free_mib, shareable - reserved)
            slots.append(
                GpuSlot(
                    node=node.name,
                    index=gpu.index,
                    memory_total_mib=gpu.memory_total_mib,
                    memory_free_mib=max(0, free),
                    model=gpu.name,
                    shares_used=shares,
                    power_w=gpu.power_w,
                    available=why is None,
                    why_unavailable=why,
                    outside_mib=0 if unsized and gpu.outside_mib is None else max(0, outside),
                    outside_by=gpu.outside[0].describe() if gpu.outside else None,
                    driver_reserved_mib=gpu.memory_total_mib - shareable,
                    down_at_s=down_at_s,
                    up_at_s=up_at_s,
                    reserved=tuple(window for held, window in team_windows if held.holds_gpu(gpu.index)),
                )
            )
    return slots
