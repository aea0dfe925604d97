"""Turn a validated spec into a task row: resolve times and defaults, check it against this cluster."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta, tzinfo
from typing import Any

from scheduler.errors import SpecError
from scheduler.nodes import NodeState
from scheduler.policy.aging import task_estimate_s
from scheduler.policy.config import PolicyConfig
from scheduler.policy.reasons import human_duration, local_time
from scheduler.policy.types import QueuedTask
from scheduler.policy.windows import offpeak_start_s, zone
from scheduler.spec import TaskSpec
from scheduler.store.tasks import NewTask
from scheduler.task_names import default_name

MIB_PER_GB = 1024
MAX_YEARS_AHEAD = 10  # the furthest ahead a task may be told to start or finish: beyond is a typo


def _localize(moment: datetime | None, zone: tzinfo) -> datetime | None:
    if moment is None:
        return None
    return moment.replace(tzinfo=zone) if moment.tzinfo is None else moment


def _matches_model(wanted: str | None, model: str) -> bool:
    return wanted is None or wanted.strip().casefold() in model.casefold()


def _check_node_and_model(spec: TaskSpec, nodes: Sequence[NodeState]) -> list[NodeState]:
    """The nodes the spec allows (its `node`, GPUs of its `gpu_model`); SpecError when there are none."""
    if spec.node is not None:
        named = [node for node in nodes if node.name.casefold() == spec.node.casefold()]
        if not named:
            known = ", ".join(node.name for node in nodes) or "none"
            raise SpecError(
                f"there is no node named {spec.node!r} on this cluster (nodes: {known})",
                [{"field": "node", "message": f"no node named {spec.node!r}; nodes: {known}"}],
            )
        nodes = named
    if spec.gpu_model is not None:
        models = sorted({gpu.name for node in nodes for gpu in node.gpus})
        with_model = [
            replace(node, gpus=tuple(gpu for gpu in node.gpus if _matches_model(spec.gpu_model, gpu.name)))
            for node in nodes
        ]
        nodes = [node for node in with_model if node.gpus]
        if not nodes:
            where = f"node {spec.node} has" if spec.node else "GPU models here"
            raise SpecError(
                f"no GPU model matches {spec.gpu_model!r} ({where}: {', '.join(models) or 'none'})",
                [{"field": "gpu_model", "message": f"no GPU model contains {spec.gpu_model!r}"}],
            )
    return list(nodes)


def check_against_cluster(spec: TaskSpec, nodes: Sequence[NodeState], max_task_gpus: int) -> None:
    """Refuse what no node of this cluster could ever run, with a message naming the limit.

    With no node registered yet (a fresh cluster) only the configured `max_task_gpus` applies.
    """
    if nodes and (spec.node is not None or (spec.gpu_model is not None and spec.gpus > 0)):
        nodes = _check_node_and_model(spec, nodes)
    live = [node for node in nodes if node.gpus]
    most_gpus = max((len(node.gpus) for node in live), default=max_task_gpus)
    limit = min(most_gpus, max_task_gpus) if live else max_task_gpus
    if spec.gpus > limit:
        where = f"node {spec.node} has" if spec.node else "the largest node has"
        model = f" {spec.gpu_model}" if spec.gpu_model else ""
        raise SpecError(
            f"gpus must be between 0 and {limit} on this cluster ({where} {most_gpus}{model} GPUs); "
            f"you asked for {spec.gpus}",
            [{"field": "gpus", "message": f"gpus must be between 0 and {limit} on this cluster"}],
        )
    if spec.gpu_memory_gb is not None and live:
        largest_mib = max((gpu.memory_total_mib for node in live for gpu in node.gpus), default=0)
        if largest_mib and spec.gpu_memory_gb * MIB_PER_GB > largest_mib:
            largest_gb = largest_mib / MIB_PER_GB
            # a pinned task is refused for its node's GPUs, not the cluster's (which may be larger)
            where = f"on node {spec.node}" if spec.node else "on this cluster"
            raise SpecError(
                f"no GPU {where} has {spec.gpu_memory_gb:g} GB (the largest has {largest_gb:.0f} GB)",
                [{"field": "gpu_memory_gb", "message": f"at most {largest_gb:.0f} GB per GPU {where}"}],
            )
        need_mib = spec.gpu_memory_gb * MIB_PER_GB
        most_big = max(
            (sum(1 for gpu in node.gpus if gpu.memory_total_mib >= need_mib) for node in live), default=0
        )
        if spec.gpus > most_big:
            raise SpecError(
                f"no node has {spec.gpus} GPUs with {spec.gpu_memory_gb:g} GB each (at most {most_big} "
                "on one node); ask for fewer GPUs or less memory",
                [{"field": "gpus", "message": f"at most {most_big} GPUs of {spec.gpu_memory_gb:g} GB"}],
            )


def check_times_ahead(spec: TaskSpec, zone: tzinfo, now: datetime) -> None:
    """Refuse a `deadline` that has already passed (a naive one read in the cluster's zone): the task
    could only miss it, and it would rank as if it were urgent. Refuse a `not_before` or `deadline` more
    than `MAX_YEARS_AHEAD` ahead: a typo like year 9999 would hold a task forever (and overflow clocks)."""
    deadline = _localize(spec.deadline, zone)
    if deadline is not None and deadline <= now:
        raise SpecError(
            f"deadline {_shown(deadline, zone)} is in the past; give a later time or leave it out",
            [{"field": "deadline", "message": "deadline must be in the future"}],
        )
    check_within_reach("not_before", spec.not_before, zone, now)
    check_within_reach("deadline", deadline, zone, now)


def check_within_reach(field: str, moment: datetime | None, zone: tzinfo, now: datetime) -> None:
    """Refuse a time more than `MAX_YEARS_AHEAD` years ahead (naive: read in the cluster's zone)."""
    moment = _localize(moment, zone)
    latest = now + timedelta(days=365.25 * MAX_YEARS_AHEAD)
    if moment is not None and moment > latest:
        raise SpecError(
            f"{field} {_shown(moment, zone)} is more than {MAX_YEARS_AHEAD} years ahead; give a time "
            f"before {_shown(latest, zone)}",
            [{"field": field, "message": f"at most {MAX_YEARS_AHEAD} years ahead"}],
        )


def _shown(moment: datetime, zone: tzinfo) -> str:
    with contextlib.suppress(OverflowError):  # a time near datetime.max cannot move to an eastern zone
        moment = moment.astimezone(zone)
    return moment.strftime("%Y-%m-%d %H:%M %Z").strip()


def earliest_start(task: QueuedTask, config: PolicyConfig, now_s: float) -> tuple[float, str | None]:
    """The first moment the scheduler may start `task` on an idle cluster, and what holds it until then
    (`"not before"`, `"off-peak window"`; None: now), as `engine` holds it (the off-peak start for its
    assumed run time)."""
    start_s, why = now_s, None
    if task.not_before_s is not None and task.not_before_s > start_s:
        start_s, why = task.not_before_s, "not before"
    if task.offpeak:
        run_s = task_estimate_s(task, config)
        offpeak_s = offpeak_start_s(config.offpeak_windows, start_s, zone(config.timezone), run_s)
        if offpeak_s is not None and offpeak_s > start_s:
            start_s, why = offpeak_s, "off-peak window"
    return start_s, why


def deadline_out_of_reach(task: QueuedTask, config: PolicyConfig, now_s: float) -> str | None:
    """A note when `task` cannot finish by its deadline even on an idle cluster: its earliest start plus
    the run time it gave (estimate, else time limit; none: the start alone) falls after it. A deadline is a
    goal, not a limit: the task is accepted all the same, and the note says so to whoever submits it."""
    if task.deadline_s is None:
        return None
    start_s, why = earliest_start(task, config, now_s)
    run_s, kind = (task.estimated_s, "estimate") if task.estimated_s else (task.time_limit_s, "time limit")
    end_s = start_s + (run_s or 0.0)
    if end_s <= task.deadline_s:
        return None
    tz = config.timezone
    start = f"{local_time(start_s, now_s, tz)} ({why})" if why else "now"
    note = f"it cannot finish by its deadline {local_time(task.deadline_s, now_s, tz)}: the earliest it may "
    note += f"start is {start}"
    if run_s:
        note += f", and its {human_duration(run_s)} {kind} ends it around {local_time(end_s, now_s, tz)}"
    return note


def resolve(spec: TaskSpec, zone: tzinfo, default_workdir: str) -> NewTask:
    """The row to insert: naive times read in the cluster's zone, name and workdir filled in."""
    data: dict[str, Any] = spec.model_dump(mode="json")
    data.pop("max_running", None)  # the sweep's, not the task's (`sweeps.max_running`)
    not_before = _localize(spec.not_before, zone)
    deadline = _localize(spec.deadline, zone)
    data["not_before"] = not_before.isoformat() if not_before else None
    data["deadline"] = deadline.isoformat() if deadline else None
    data["name"] = spec.name or default_name(spec.command)
    data["workdir"] = spec.workdir or default_workdir
    return NewTask(
        name=data["name"],
        command=spec.command,
        spec=data,
        priority=spec.priority,
        gpus=spec.gpus,
        gpu_memory_gb=spec.gpu_memory_gb,
        retries=spec.retries,
    )
