"""Answers about the future for the live cluster: expected starts, plain reasons, quota standing.

The same policy code that decides (`policy.forecast`, `policy.explain`) replays the schedule forward from
the live state, like Slurm's `squeue --start`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence, Set
from dataclasses import replace
from datetime import datetime
from typing import Any

from scheduler.clock import from_epoch_s, now_ms, now_s, to_epoch_s
from scheduler.cluster_state import ClusterState, UsageCache, gather_state, with_learned_estimate
from scheduler.errors import NotFoundError, SpecError
from scheduler.logs import LAST_OUTPUT_LINES
from scheduler.policy import reasons
from scheduler.policy.aging import static_score, task_estimate_s
from scheduler.policy.config import Budgets, PolicyConfig, TeamUsage
from scheduler.policy.estimate import estimate_duration_s, expected_end_s
from scheduler.policy.explain import explain
from scheduler.policy.fairshare import fairshare_by_member, fairshare_factors
from scheduler.policy.forecast import StartEstimate, estimate_starts
from scheduler.policy.placement import cpu_node
from scheduler.policy.quotas import BudgetStatus, budget_status, gpus_in_use, member_budget_status
from scheduler.policy.reasons import human_duration, local_time
from scheduler.policy.tariff import estimate_cost, estimate_energy_kwh, gpu_power_w
from scheduler.policy.types import MIB_PER_GB, GpuSlot, PriorityClass, QueuedTask
from scheduler.policy_input import gpu_slots, queued_task_of, running_task_of
from scheduler.service import Cluster
from scheduler.spec import gpu_fraction_problem
from scheduler.store.identity import Identity, team_id_by_name
from scheduler.store.tables import Task
from scheduler.submission import deadline_out_of_reach
from scheduler.task_logs import failure_lines

FORECAST_WINDOW = 500
WHAT_IF_TASK_ID = -1


def _iso(epoch_s: float) -> str | None:
    return None if math.isinf(epoch_s) else from_epoch_s(epoch_s).isoformat()


def _state(cluster: Cluster, usage: UsageCache) -> ClusterState:
    return gather_state(cluster, usage, FORECAST_WINDOW)


def _forecast(
    state: ClusterState, cluster: Cluster, targets: list[int] | None, ranges: bool = True
) -> dict[int, StartEstimate]:
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
        ranges=ranges,
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


def deadline_notes_in_queue(cluster: Cluster, usage: UsageCache, tasks: Sequence[Task]) -> dict[int, str]:
    """Task id -> a note for each of these queued tasks that the forecast, behind the work queued ahead of
    it, expects to end after its deadline (`reasons.queue_ends_after_deadline`): what a submit or change
    answers in `warnings` when an idle cluster would have made it. One read of the cluster and one replay
    for them all; a held task, one beyond the forecast window or with no start in sight gets no note."""
    deadlines = {task.id: _deadline_s(task) for task in tasks if task.status == "queued" and not task.held_by}
    wanted = {task_id: deadline for task_id, deadline in deadlines.items() if deadline is not None}
    if not wanted:
        return {}
    state = _state(cluster, usage)
    queued = {task.task_id: task for task in state.queued if task.task_id in wanted}
    if not queued:
        return {}
    config = state.policy_config(cluster.policy_config)
    notes: dict[int, str] = {}
    for task_id, estimate in _forecast(state, cluster, list(queued), ranges=False).items():
        run_s = task_estimate_s(queued[task_id], config)
        note = _late_behind_queue(estimate.start_s, run_s, wanted[task_id], state.now_s, config.timezone)
        if note is not None:
            notes[task_id] = note
    return notes


def _late_behind_queue(
    start_s: float, run_s: float, deadline_s: float | None, now_s: float, timezone: str
) -> str | None:
    """`reasons.queue_ends_after_deadline` when a forecast start plus the run time ends after the deadline
    (None: no deadline, no start in sight, or it makes it)."""
    end_s = start_s + run_s
    if deadline_s is None or not math.isfinite(end_s) or end_s <= deadline_s:
        return None
    return reasons.queue_ends_after_deadline(start_s, end_s, deadline_s, now_s, timezone)


def scheduler_warning(cluster: Cluster) -> str | None:
    """`reasons.no_scheduler` while no scheduler runs (every expected start assumes one), else None."""
    return None if cluster.queue.scheduler_running() else reasons.no_scheduler()


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
    """Why a task is (not) running, when it should start, and its priority broken into parts; for a queued
    one also its energy and cost by its estimate, as `estimate_wait` gives them for a new one, and for a
    running one its energy and cost in all, to its expected end. When it was submitted and started say how
    long it has waited ("how long has 12 been queued", "when did 12 start"); its command and the settings
    people ask about (priority class, time limit, deadline, tags) are said too."""
    task = cluster.tasks.get_for(who, task_id)
    started = task.started_at if task.status != "queued" else None
    return {
        **_explanation(cluster, usage, task, task_id),
        "command": task.command,  # "what command did 12 run"
        # its settings, for "what is 12's time limit" ("priority" holds the parts of a queued one's)
        "priority_class": task.priority,
        **{field: (task.spec or {}).get(field) for field in ("time_limit_minutes", "deadline", "tags")},
        "submitted_at": _iso(to_epoch_s(task.submitted_at)),
        "started_at": _iso(to_epoch_s(started)) if started is not None else None,
        "attempts": task.attempts_count,
    }


def _explanation(cluster: Cluster, usage: UsageCache, task: Task, task_id: int) -> dict[str, Any]:
    """`explain_task`'s answer but for the task's own times."""
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
        if task.status == "running":
            ended.update(_running_energy_and_cost(cluster, task))
        if task.status == "failed":  # why, in its own words: the last lines its last attempt printed
            ended["last_output"] = failure_lines(cluster, task, LAST_OUTPUT_LINES)
            ended["could_not_start"] = task.reason == "executor"  # its job never began: it has no output
        return ended
    if task.held_by is not None:  # out of the queue until released: no place, no start
        reason = reasons.held(task.held_by, task_id)
        return {**base, "task_id": task_id, "status": "queued", "position": None, "reason": reason}
    if task.waits_for_slot and task.sweep_id is not None:  # out of the queue until its sweep admits it
        return {**base, **_explain_waiting_for_slot(cluster, usage, task, task.sweep_id)}
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
        "scheduler_warning": scheduler_warning(cluster),  # the start above assumes a scheduler runs
        "estimated_run_s": answer.estimated_run_s,
        # what it should cost, run as estimated from its expected start ("what will task 9 cost")
        **_energy_and_cost(queued, state.gpus, start, answer.estimated_run_s, config),
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


def _explain_waiting_for_slot(
    cluster: Cluster, usage: UsageCache, task: Task, sweep_id: int
) -> dict[str, Any]:
    """A task waiting for a slot of its sweep: the reason, and when it should start, by a replay in which
    the sweep's waiting tasks take its slots as they free (`slot_chain`), behind the rest of the queue."""
    limit = cluster.sweeps.get_any(sweep_id).max_running
    answer: dict[str, Any] = {
        "task_id": task.id,
        "status": "queued",
        "position": None,
        "reason": reasons.waiting_for_slot(sweep_id, limit),
    }
    if limit is None:  # the limit was just lifted: the next admission lets it in
        return answer
    state = _state(cluster, usage)
    config = state.policy_config(cluster.policy_config)
    _, history = usage.get(state.now_s)
    waiting: list[QueuedTask] = []
    for row, parent in slot_chain(cluster.sweeps.tasks_of(sweep_id), limit, task.id, state, config):
        view = with_learned_estimate(queued_task_of(row), history, config)
        if parent is not None:  # it starts once the task holding its slot has ended
            view = replace(view, depends_on_any=(*view.depends_on_any, parent))
        waiting.append(view)
    if not waiting or waiting[-1].task_id != task.id:
        return answer
    state.queued = [*state.queued, *waiting]
    estimate = _forecast(state, cluster, [task.id]).get(task.id)
    if estimate is None or not math.isfinite(estimate.start_s):
        return answer
    end_s = estimate.start_s + task_estimate_s(waiting[-1], config)
    return {
        **answer,
        "estimated_start": _iso(estimate.start_s),
        "estimated_start_low": _iso(estimate.low_s),
        "estimated_start_high": _iso(estimate.high_s),
        "estimated_end": _iso(end_s),
        "deadline_warning": deadline_warning(end_s, _deadline_s(task), config.timezone),
        "scheduler_warning": scheduler_warning(cluster),
    }


def slot_chain(
    siblings: Sequence[Task], limit: int, target_id: int, state: ClusterState, config: PolicyConfig
) -> list[tuple[Task, int | None]]:
    """The sweep's tasks waiting for a slot, lowest id first up to `target_id`, each with the task whose
    end frees the slot it will take (None: a slot is free now).

    Admission hands a freed slot to the lowest waiting id. The slots' holders (running tasks, and queued
    ones neither held nor waiting) free them soonest first: running ones by their expected end, then
    queued ones by id. With more holders than `limit` (it was lowered) the first slot frees when all but
    `limit - 1` of them have ended. Each waiting task then holds its slot for the one `limit` places after.
    """
    ends = {
        running.task_id: expected_end_s(running, state.now_s, config, config.forecast_overrun_factor)
        for running in state.running
    }
    holders = sorted(
        (
            row
            for row in siblings
            if row.status == "running"
            or (row.status == "queued" and row.held_by is None and not row.waits_for_slot)
        ),
        key=lambda row: (row.id not in ends, ends.get(row.id, 0.0), row.id),
    )
    lanes: list[int | None] = [row.id for row in holders[-limit:]] + [None] * max(0, limit - len(holders))
    waiting = sorted(
        (row for row in siblings if row.status == "queued" and row.waits_for_slot and row.held_by is None),
        key=lambda row: row.id,
    )
    chain: list[tuple[Task, int | None]] = []
    for index, row in enumerate(row for row in waiting if row.id <= target_id):
        lane = index % limit
        chain.append((row, lanes[lane]))
        lanes[lane] = row.id
    return chain


def _add_parent_statuses(cluster: Cluster, state: ClusterState, parents: tuple[int, ...]) -> None:
    """Put the what-if task's parents that ended into `state.succeeded` / `state.failed` (cancelled ones
    too), as the scheduler's pass sees them."""
    for parent, status in cluster.tasks.statuses(parents).items():
        if status == "succeeded":
            state.succeeded.add(parent)
        elif status in ("failed", "cancelled"):
            state.failed.add(parent)


_PRICED = ("energy_kwh", "energy_cost", "currency", "estimated_run_s")


def estimate_wait(
    cluster: Cluster,
    usage: UsageCache,
    who: Identity,
    *,
    task_id: int | None = None,
    gpus: int = 1,
    gpu_memory_gb: float | None = None,
    gpu_fraction: float = 1.0,
    estimated_minutes: float | None = None,
    priority: str = "normal",
    offpeak: bool = False,
    not_before_s: float | None = None,
    name: str | None = None,
    time_limit_minutes: float | None = None,
    depends_on: tuple[int, ...] = (),
    depends_on_any: tuple[int, ...] = (),
    deadline_s: float | None = None,
    gpu_model: str | None = None,
    node: str | None = None,
) -> dict[str, Any]:
    """When a task (existing, or one like this submitted now) should start, with a range and a reason, and
    its energy and cost as `explain` prices them. For one like this, also the run time assumed and where it
    came from (`name` lets it be learned from your finished tasks of that name and size, as the scheduler
    would); with `depends_on` it waits for those tasks to succeed, with `depends_on_any` for them to end, as
    it would once submitted; with `deadline_s`, the note a submit would answer when it is expected to end
    after it behind the queue; `gpu_model` and `node` pin it as a spec's would ("2 A100s")."""
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
            # a queued task's from its expected start, a running one's to its expected end (explain's)
            **{key: answer[key] for key in _PRICED if key in answer},
        }
    problem = gpu_fraction_problem(gpus, gpu_fraction)
    if problem is not None:
        raise SpecError(problem, [{"field": "gpu_fraction", "message": problem}])
    state = _state(cluster, usage)
    what_if = QueuedTask(
        task_id=WHAT_IF_TASK_ID,
        team=who.team,
        user=who.user,
        gpus=gpus,
        enqueued_at_s=state.now_s,
        priority=PriorityClass.parse(priority),
        gpu_memory_mib=int((gpu_memory_gb or 0) * MIB_PER_GB),
        gpu_fraction=gpu_fraction,
        estimated_s=estimated_minutes * 60 if estimated_minutes else None,
        time_limit_s=time_limit_minutes * 60 if time_limit_minutes else None,
        offpeak=offpeak,
        not_before_s=not_before_s,
        name=name or "",
        depends_on=tuple(depends_on),
        depends_on_any=tuple(depends_on_any),
        deadline_s=deadline_s,
        gpu_model=gpu_model or None,
        node=node or None,
    )
    if depends_on or depends_on_any:  # a parent of another team answers like a missing one (SpecError, 422)
        cluster.check_dependencies(who, depends_on, depends_on_any)
        _add_parent_statuses(cluster, state, (*depends_on, *depends_on_any))
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
    end_s = estimate.start_s + run_s
    late = deadline_out_of_reach(what_if, config, state.now_s)  # even on an idle cluster: the plainer why
    if late is None:
        late = _late_behind_queue(estimate.start_s, run_s, deadline_s, state.now_s, config.timezone)
    return {
        **_energy_and_cost(what_if, state.gpus, estimate.start_s, run_s, config),
        "start": _iso(estimate.start_s),
        "end": _iso(end_s),
        "deadline_warning": late,  # what a submit would answer now (a deadline is a goal: said)
        "low": _iso(estimate.low_s),
        "high": _iso(estimate.high_s),
        "wait_s": wait_s,
        "wait": _wait_words(wait_s),
        "estimated_run_s": run_s,
        "estimate_source": source,
        "reason": estimate.reason,
        "position": estimate.position,
    }


def estimate_for_spec(
    cluster: Cluster, usage: UsageCache, who: Identity, spec: Mapping[str, Any]
) -> dict[str, Any]:
    """`estimate_wait` of a new task with this resolved spec (as `resolve` stores it), submitted now."""

    def epoch_s(field: str) -> float | None:
        value = spec.get(field)
        return datetime.fromisoformat(str(value)).timestamp() if value else None

    return estimate_wait(
        cluster, usage, who, gpus=int(spec.get("gpus", 1)), gpu_memory_gb=spec.get("gpu_memory_gb"),
        gpu_fraction=float(spec.get("gpu_fraction") or 1.0), estimated_minutes=spec.get("estimated_minutes"),
        priority=str(spec.get("priority") or "normal"), offpeak=bool(spec.get("offpeak")),
        not_before_s=epoch_s("not_before"), name=spec.get("name"),
        time_limit_minutes=spec.get("time_limit_minutes"), depends_on=tuple(spec.get("depends_on") or ()),
        depends_on_any=tuple(spec.get("depends_on_any") or ()), deadline_s=epoch_s("deadline"),
        gpu_model=spec.get("gpu_model"), node=spec.get("node"),
    )  # fmt: skip


def _running_energy_and_cost(cluster: Cluster, task: Task) -> dict[str, Any]:
    """A running task's energy and cost in all, from its start to its expected end (by its spec's estimate
    or time limit), as a queued one's are given; nothing when no end is expected."""
    if task.node is None or task.started_at is None:
        return {}
    start_s = to_epoch_s(task.started_at)
    view = running_task_of(task, task.node, task.gpu_indices or [], start_s)
    if view.estimated_end_s is None:
        return {}
    held = set(view.gpu_indices)
    node = [n for n in cluster.nodes.all() if n.name == task.node]
    on = [g for g in gpu_slots(node, [], now_ms()) if g.index in held]
    queued = queued_task_of(task)
    return _energy_and_cost(queued, on, start_s, view.estimated_end_s - start_s, cluster.policy_config)


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
    kwh = estimate_energy_kwh(task.gpus, power * min(task.gpu_fraction, 1.0), run_s)  # a sharer: its part
    cost = None if math.isinf(start_s) else estimate_cost(start_s, start_s + run_s, kwh, config.tariff)
    return {
        "energy_kwh": round(kwh, 3),
        "energy_cost": None if cost is None else round(cost, 2),
        "currency": config.tariff.currency,
    }


def quota_status(cluster: Cluster, usage: UsageCache, team: str, user: str | None = None) -> dict[str, Any]:
    """A team's GPU cap and use, and its day/week budgets: used, budget, and ok / warning / exhausted; with
    `user`, that person's own cap and GPUs in use too (across their teams), and their own budgets in
    `team` (`user_budget`, where people have budgets)."""
    if team_id_by_name(cluster.factory, team) is None:
        raise NotFoundError(f"team {team!r} not found")
    config = cluster.policy_config
    # as the scheduler sees it: running work counted up to now, and when a used-up budget frees (as the
    # team's work, running tasks to their expected ends, ages out); the queue's window read for the teams
    # that share the fair-share credit with it, as a pass does
    state = gather_state(cluster, usage, config.window)
    usage_by_team = state.usage
    used = usage_by_team.get(team, TeamUsage(team))
    # as the cap counts them: tasks assigned or starting hold their GPUs too, a shared GPU its fraction
    in_use = _gpus(gpus_in_use(state.running).get(team, 0.0))
    used_s = (used.gpu_s_last_day, used.gpu_s_last_week)
    answer: dict[str, Any] = {
        "team": team,
        "gpu_cap": config.team_cap(team),
        "gpus_in_use": in_use,
        **_budgets(
            used_s,
            config.team_budgets(team),
            budget_status(team, usage_by_team, config),
            frees_at=used.budget_frees_at_s,
            config=config,
        ),
        "fair_share": _fair_share(team, {t.team for t in state.queued}, usage_by_team, config),
    }
    if user is not None:
        answer["user"] = user
        answer["user_gpu_cap"] = config.user_cap(user)
        answer["user_gpus_in_use"] = _gpus(gpus_in_use(state.running, by="user").get(user, 0.0))
        if config.has_user_budgets:
            own_s = (used.member_gpu_s_last_day.get(user, 0.0), used.member_gpu_s_last_week.get(user, 0.0))
            own = member_budget_status(team, user, usage_by_team, config)
            frees_at = used.member_budget_frees_at_s.get(user)
            answer["user_budget"] = _budgets(own_s, config.user_budgets(user), own, frees_at, config)
        if config.fairshare_within_teams:
            members = [(t.team, t.user) for t in state.queued]
            answer["fair_share"]["member"] = _member_share(team, user, members, usage_by_team, config)
    return answer


def _gpus(count: float) -> float | int:
    """A count of GPUs as the cap counts them (a shared GPU its fraction): 2, or 1.5."""
    held = round(count, 2)
    return int(held) if held.is_integer() else held


def _fair_share(
    team: str, waiting: Set[str], usage_by_team: Mapping[str, TeamUsage], config: PolicyConfig
) -> dict[str, Any]:
    """A team's fair-share standing, as Slurm's `sshare` shows it: its decayed use (half-life
    `fairshare_half_life_s`), its part of everyone's, the equal share (among the teams with recent use or
    `waiting` tasks, as a pass counts them), and the priority credit that gives its waiting tasks
    (`fairshare_max_credit_s` x 2^(-part/share); none under fifo and backfill)."""
    teams = set(usage_by_team) | set(waiting) | {team}
    factor = fairshare_factors(usage_by_team, teams)[team]
    total = sum(max(0.0, u.decayed_gpu_s) for u in usage_by_team.values())
    used_s = max(0.0, usage_by_team[team].decayed_gpu_s) if team in usage_by_team else 0.0
    return {
        "decayed_gpu_h": round(used_s / 3600, 4),
        "half_life_days": round(config.fairshare_half_life_s / 86400, 2),
        "part_of_use": round(used_s / total, 3) if total > 0 else 0.0,
        "equal_share": round(1 / len(teams), 3),
        "factor": round(factor, 3),
        "credit_h": round(config.fairshare_max_credit_s * factor / 3600, 2) if config.credits_on else 0.0,
        "max_credit_h": round(config.fairshare_max_credit_s / 3600, 2) if config.credits_on else 0.0,
    }


def _member_share(
    team: str,
    user: str,
    waiting: Sequence[tuple[str, str]],
    usage_by_team: Mapping[str, TeamUsage],
    config: PolicyConfig,
) -> dict[str, Any]:
    """A person's standing within their team (`fairshare_within_teams`): their decayed use, its part of the
    team's, among how many members (with recent use or waiting tasks, as a pass counts them), and the
    credit their waiting tasks get (`fairshare.fairshare_by_member`)."""
    factor = fairshare_by_member(usage_by_team, [*waiting, (team, user)])[(team, user)]
    used = dict(usage_by_team[team].member_decayed_gpu_s) if team in usage_by_team else {}
    total = sum(max(0.0, gpu_s) for gpu_s in used.values())
    members = (
        {name for name, gpu_s in used.items() if gpu_s > 0} | {u for t, u in waiting if t == team} | {user}
    )
    return {
        "user": user,
        "decayed_gpu_h": round(max(0.0, used.get(user, 0.0)) / 3600, 4),
        "part_of_team": round(max(0.0, used.get(user, 0.0)) / total, 3) if total > 0 else 0.0,
        "members": len(members),
        "factor": round(factor, 3),
        "credit_h": round(config.fairshare_max_credit_s * factor / 3600, 2) if config.credits_on else 0.0,
    }


def _budgets(
    used_s: tuple[float, float],
    budgets: Budgets,
    status: BudgetStatus,
    frees_at: float | None,
    config: PolicyConfig,
) -> dict[str, Any]:
    """Day and week use against `budgets`, their state and message, and when new starts come again."""
    new_starts_at = None
    if status.level == "exhausted" and frees_at is not None and math.isfinite(frees_at):
        new_starts_at = _iso(frees_at)
    return {
        "day": _period(used_s[0], budgets.day_h, config.budget_warn_fraction),
        "week": _period(used_s[1], budgets.week_h, config.budget_warn_fraction),
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
