"""Answers about the future for the live cluster: expected starts, plain reasons, quota standing.

The same policy code that decides (`policy.forecast`, `policy.explain`) replays the schedule forward from
the live state, like Slurm's `squeue --start`.
"""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import datetime
from typing import Any

from scheduler.clock import from_epoch_s, now_ms, now_s, to_epoch_s
from scheduler.cluster_state import ClusterState, UsageCache, gather_state, with_learned_estimate
from scheduler.errors import NotFoundError
from scheduler.logs import LAST_OUTPUT_LINES
from scheduler.policy import reasons
from scheduler.policy.aging import static_score, task_estimate_s
from scheduler.policy.config import PolicyConfig, TeamUsage
from scheduler.policy.estimate import estimate_duration_s
from scheduler.policy.explain import explain
from scheduler.policy.forecast import StartEstimate, estimate_starts
from scheduler.policy.placement import cpu_node
from scheduler.policy.quotas import budget_status
from scheduler.policy.reasons import human_duration, local_time
from scheduler.policy.tariff import estimate_cost, estimate_energy_kwh, gpu_power_w
from scheduler.policy.types import MIB_PER_GB, GpuSlot, PriorityClass, QueuedTask
from scheduler.policy_input import running_task_of
from scheduler.service import Cluster
from scheduler.store.identity import Identity, team_id_by_name
from scheduler.store.tables import Task
from scheduler.task_logs import failure_lines

FORECAST_WINDOW = 500
WHAT_IF_TASK_ID = -1


def _iso(epoch_s: float) -> str | None:
    return None if math.isinf(epoch_s) else from_epoch_s(epoch_s).isoformat()


def _state(cluster: Cluster, usage: UsageCache) -> ClusterState:
    return gather_state(cluster, usage, FORECAST_WINDOW)


def _forecast(state: ClusterState, cluster: Cluster, targets: list[int] | None) -> dict[int, StartEstimate]:
    return estimate_starts(
        state.queued,
        state.running,
        state.gpus,
        state.now_s,
        state.policy_config(cluster.policy_config),
        state.usage,
        state.succeeded,
        state.failed,
        targets=targets,
        finished=state.finished,
    )


def _deadline_s(task: Task) -> float | None:
    """The task's `deadline` in epoch seconds (None when it has none)."""
    deadline = (task.spec or {}).get("deadline")
    return datetime.fromisoformat(deadline).timestamp() if deadline else None


def deadline_warning(end_s: float | None, deadline_s: float | None, timezone: str) -> str | None:
    """`reasons.ends_after_deadline` when the expected end is known and falls after the deadline, else None
    (no deadline, no estimate of the end, or it should make it)."""
    if end_s is None or deadline_s is None or not math.isfinite(end_s) or end_s <= deadline_s:
        return None
    return reasons.ends_after_deadline(end_s, deadline_s, now_s(), timezone)


def _stranded(task: QueuedTask, in_service: list[str]) -> str | None:
    """Why a CPU-only task cannot start while no node (or not its pinned node) is in service: no GPU picks
    a node for it, so the policy would say it starts now, and the dispatcher would leave it queued."""
    if task.gpus > 0 or cpu_node(task, in_service, 0) is not None:
        return None
    return reasons.no_node_in_service(task.node)


def queue_forecast(cluster: Cluster, usage: UsageCache) -> dict[int, dict[str, Any]]:
    """Position, expected start and reason of every task in the head of the queue."""
    state = _state(cluster, usage)
    in_service = state.nodes_in_service(now_ms())
    tasks = {task.task_id: task for task in state.queued}
    answer: dict[int, dict[str, Any]] = {}
    for task_id, estimate in _forecast(state, cluster, None).items():
        stranded = _stranded(tasks[task_id], in_service) if task_id in tasks else None
        answer[task_id] = {
            "position": estimate.position,
            "reason": stranded or estimate.reason,
            "estimated_start": None if stranded else _iso(estimate.start_s),
        }
    return answer


def _not_queued(task: Task, timezone: str) -> dict[str, Any]:
    """Explain a task that is not waiting: it runs (where, since when in the cluster's zone, and when it
    should end by its spec's estimate or time limit), or it ended (and how)."""
    end: str | None = None
    warning: str | None = None
    if task.status == "running":
        where = (
            f"{task.node} GPUs {','.join(map(str, task.gpu_indices or []))}"
            if task.gpu_indices
            else task.node
        )
        since = local_time(to_epoch_s(task.started_at), now_s(), timezone) if task.started_at else "?"
        reason = f"running on {where} since {since}"
        if task.node is not None and task.started_at is not None:  # by its spec's estimate or time limit
            view = running_task_of(task, task.node, task.gpu_indices or [], to_epoch_s(task.started_at))
            end = _iso(view.estimated_end_s) if view.estimated_end_s is not None else None
            warning = deadline_warning(view.estimated_end_s, _deadline_s(task), timezone)
    elif task.status == "succeeded":
        reason = "finished successfully"
    else:  # how it ended ("exit code 3", "cancelled by alice"); the status is said beside it
        reason = task.message or task.reason or "no details"
    return {
        "task_id": task.id,
        "status": task.status,
        "position": None,
        "reason": reason,
        "estimated_end": end,
        "deadline_warning": warning,
    }


def explain_task(cluster: Cluster, usage: UsageCache, who: Identity, task_id: int) -> dict[str, Any]:
    """Why a task is (not) running, when it should start, and its priority broken into parts."""
    task = cluster.tasks.get_for(who, task_id)
    base: dict[str, Any] = {
        "estimated_start": None,
        "estimated_start_low": None,
        "estimated_start_high": None,
        "estimated_end": None,
        "deadline_warning": None,  # the expected end is after the deadline, in words (a soft goal: said)
        "priority": None,
    }
    if task.status != "queued":
        ended = {**base, **_not_queued(task, cluster.policy_config.timezone)}
        if task.status == "failed":  # why, in its own words: the last lines its last attempt printed
            ended["last_output"] = failure_lines(cluster, task, LAST_OUTPUT_LINES)
        return ended
    if task.held_by is not None:  # out of the queue until released: no place, no start
        reason = reasons.held(task.held_by, task_id)
        return {**base, "task_id": task_id, "status": "queued", "position": None, "reason": reason}
    state = _state(cluster, usage)
    queued = next((queued for queued in state.queued if queued.task_id == task_id), None)
    if queued is None:
        reason = "deep in the queue (beyond the forecast window)"
        return {**base, "task_id": task_id, "status": "queued", "position": None, "reason": reason}
    config = state.policy_config(cluster.policy_config)
    answer = explain(
        task_id, state.queued, state.running, state.gpus, state.now_s, config, state.usage, state.succeeded,
        state.failed, state.finished,
    )  # fmt: skip
    stranded = _stranded(queued, state.nodes_in_service(now_ms()))
    start = math.inf if stranded else answer.estimate.start_s
    end_s = start + answer.estimated_run_s
    parts = answer.priority
    return {
        "task_id": task_id,
        "status": "queued",
        "position": answer.position,
        "queued_total": answer.queued_total,
        "reason": stranded or answer.reason,
        "estimated_start": _iso(start),
        "estimated_start_low": None if stranded else _iso(answer.estimate.low_s),
        "estimated_start_high": None if stranded else _iso(answer.estimate.high_s),
        "estimated_end": _iso(end_s),
        "deadline_warning": deadline_warning(end_s, queued.deadline_s, config.timezone),
        "estimated_run_s": answer.estimated_run_s,
        "aging_bound_s": answer.aging_bound_s,
        "priority": {
            "class": task.priority,
            "class_part_s": parts.class_s,
            "age_part_s": parts.age_s,
            "short_job_part_s": parts.short_job_s,
            "fairshare_part_s": parts.fair_share_s,
            "deadline_part_s": parts.deadline_s,
            "effective_s": parts.total_s,
        },
    }


def estimate_wait(
    cluster: Cluster,
    usage: UsageCache,
    who: Identity,
    *,
    task_id: int | None = None,
    gpus: int = 1,
    gpu_memory_gb: float | None = None,
    estimated_minutes: float | None = None,
    priority: str = "normal",
    offpeak: bool = False,
    not_before_s: float | None = None,
    name: str | None = None,
    time_limit_minutes: float | None = None,
    depends_on: tuple[int, ...] = (),
) -> dict[str, Any]:
    """When a task (existing, or one like this submitted now) should start, with a range and a reason; for
    one like this, also its energy and cost, and the run time assumed with where it came from (`name`
    lets it be learned from your finished tasks of that name and size, as the scheduler would; with
    `depends_on` it waits for those tasks, as it would once submitted)."""
    if task_id is not None:
        answer = explain_task(cluster, usage, who, task_id)
        start = answer.get("estimated_start")
        wait_s = max(0.0, datetime.fromisoformat(start).timestamp() - now_s()) if start else None
        return {
            "start": start,
            "low": answer.get("estimated_start_low"),
            "high": answer.get("estimated_start_high"),
            "wait_s": wait_s,
            "wait": _wait_words(wait_s) if start else "unknown",
            "reason": answer["reason"],
            "position": answer.get("position"),
            "status": answer["status"],  # a task that runs or ended has no start to wait for
            "end": answer.get("estimated_end"),
            "deadline_warning": answer.get("deadline_warning"),
        }
    state = _state(cluster, usage)
    what_if = QueuedTask(
        task_id=WHAT_IF_TASK_ID,
        team=who.team,
        user=who.user,
        gpus=gpus,
        enqueued_at_s=state.now_s,
        priority=PriorityClass.parse(priority),
        gpu_memory_mib=int((gpu_memory_gb or 0) * MIB_PER_GB),
        estimated_s=estimated_minutes * 60 if estimated_minutes else None,
        time_limit_s=time_limit_minutes * 60 if time_limit_minutes else None,
        offpeak=offpeak,
        not_before_s=not_before_s,
        name=name or "",
        depends_on=tuple(depends_on),
    )
    if depends_on:  # a parent of another team answers like a missing one (SpecError, 422)
        cluster.check_dependencies(who, list(depends_on))
        for parent, status in cluster.tasks.statuses(depends_on).items():
            if status == "succeeded":
                state.succeeded.add(parent)
            elif status in ("failed", "cancelled"):
                state.failed.add(parent)
    config = cluster.policy_config
    history = usage.get(state.now_s)[1]
    source = estimate_duration_s(what_if, history, config).source
    what_if = with_learned_estimate(what_if, history, config)
    state.queued = sorted([*state.queued, what_if], key=lambda t: static_score(t, config))
    estimate = _forecast(state, cluster, [WHAT_IF_TASK_ID])[WHAT_IF_TASK_ID]
    stranded = _stranded(what_if, state.nodes_in_service(now_ms()))
    if stranded:
        estimate = replace(estimate, start_s=math.inf, low_s=math.inf, high_s=math.inf, reason=stranded)
    wait_s = None if math.isinf(estimate.start_s) else max(0.0, estimate.start_s - state.now_s)
    run_s = task_estimate_s(what_if, config)
    return {
        **_energy_and_cost(what_if, state.gpus, estimate.start_s, run_s, config),
        "start": _iso(estimate.start_s),
        "low": _iso(estimate.low_s),
        "high": _iso(estimate.high_s),
        "wait_s": wait_s,
        "wait": _wait_words(wait_s),
        "estimated_run_s": run_s,
        "estimate_source": source,
        "reason": estimate.reason,
        "position": estimate.position,
    }


def _wait_words(wait_s: float | None) -> str:
    """`"none"` when it would start at once, else the wait rounded for people (`"~25 min"`)."""
    if wait_s is None:
        return "unknown"
    return "none" if wait_s < 30 else human_duration(wait_s)


def _energy_and_cost(
    task: QueuedTask, gpus: list[GpuSlot], start_s: float, run_s: float, config: PolicyConfig
) -> dict[str, Any]:
    """A task's energy by its estimate (its GPUs' model's typical draw under load; a GPU's power read now,
    mostly idle, would understate it) and its cost at the tariff's rates from its expected start: an
    off-peak start is cheaper."""
    fitting = [g for g in gpus if g.memory_total_mib >= task.gpu_memory_mib] or gpus
    power = max((gpu_power_w(g.model, None, config.gpu_power_w) for g in fitting), default=None)
    if power is None:
        power = gpu_power_w("", None, config.gpu_power_w)
    kwh = estimate_energy_kwh(task.gpus, power, run_s)
    cost = None if math.isinf(start_s) else estimate_cost(start_s, start_s + run_s, kwh, config.tariff)
    return {
        "energy_kwh": round(kwh, 3),
        "energy_cost": None if cost is None else round(cost, 2),
        "currency": config.tariff.currency,
    }


def quota_status(cluster: Cluster, usage: UsageCache, team: str) -> dict[str, Any]:
    """A team's GPU cap and use, and its day/week budgets: used, budget, and ok / warning / exhausted."""
    if team_id_by_name(cluster.factory, team) is None:
        raise NotFoundError(f"team {team!r} not found")
    config = cluster.policy_config
    # as the scheduler sees it: running work counted up to now, and when a used-up budget frees (as the
    # team's work, running tasks to their expected ends, ages out); one queued task read, not the queue
    usage_by_team = gather_state(cluster, usage, 1).usage
    used = usage_by_team.get(team, TeamUsage(team))
    in_use = sum(task.gpus for task in cluster.tasks.with_status("running") if task.team.name == team)
    status = budget_status(team, usage_by_team, config)
    new_starts_at = None
    if status.level == "exhausted" and used.budget_frees_at_s is not None:
        new_starts_at = _iso(used.budget_frees_at_s)
    return {
        "team": team,
        "gpu_cap": config.team_cap(team),
        "gpus_in_use": in_use,
        "day": _period(used.gpu_s_last_day, config.day_budget_gpu_h.get(team), config.budget_warn_fraction),
        "week": _period(
            used.gpu_s_last_week, config.week_budget_gpu_h.get(team), config.budget_warn_fraction
        ),
        "state": {"ok": "ok", "warn": "warning", "exhausted": "exhausted"}[status.level],
        "message": status.message or "within budget",
        "new_starts_at": new_starts_at,
    }


def _period(used_s: float, budget_h: float | None, warn_fraction: float) -> dict[str, Any]:
    used_h = used_s / 3600.0
    if budget_h is None:
        state = "ok"
    elif used_h >= budget_h:
        state = "exhausted"
    elif used_h >= warn_fraction * budget_h:
        state = "warning"
    else:
        state = "ok"
    return {"used_gpu_h": round(used_h, 3), "budget_gpu_h": budget_h, "state": state}
