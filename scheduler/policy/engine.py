"""`decide`: one scheduling pass over plain data, the same for the live scheduler and the simulator.

Order of checks for each task of the window, in rank order:
dependencies → not_before → off-peak → budget → team cap → placement (with EASY reservation/backfill).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from functools import partial

from scheduler.policy import reasons
from scheduler.policy.aging import aging_bound_s, order_key, task_estimate_s
from scheduler.policy.backfill import Holding, Reservation, delays, find_reservation
from scheduler.policy.config import PolicyConfig, TeamUsage
from scheduler.policy.estimate import OVERRUN_FACTOR, expected_end_s
from scheduler.policy.fairshare import fairshare_of_tasks
from scheduler.policy.placement import GpuState, Pool, memory_need_mib, never_fits
from scheduler.policy.priority import queue_score
from scheduler.policy.quotas import (
    BudgetStatus,
    budget_status,
    gpu_weight,
    gpus_in_use,
    member_budget_status,
    over_cap,
    over_user_cap,
)
from scheduler.policy.types import Decisions, GpuSlot, QueuedTask, RunningTask, StartDecision
from scheduler.policy.window import pass_window
from scheduler.policy.windows import current_window, offpeak_start_s, zone

ShapeKey = tuple[int, int, float, str | None, str | None, bool]


@dataclass
class _Pass:
    """The state of one call to `decide`."""

    config: PolicyConfig
    now_s: float
    pool: Pool
    gpus: Sequence[GpuSlot]
    running: Sequence[RunningTask]
    usage: Mapping[str, TeamUsage]
    with_reasons: bool
    used_by_team: dict[str, float]
    used_by_user: dict[str, float]
    starts: list[StartDecision] = field(default_factory=list)
    started: list[Holding] = field(default_factory=list)
    pending: dict[int, str] = field(default_factory=dict)
    fail: dict[int, str] = field(default_factory=dict)
    capped: list[QueuedTask] = field(default_factory=list)
    teams_waiting_for_gpus: set[str] = field(default_factory=set)
    users_waiting_for_gpus: set[str] = field(default_factory=set)
    reservations: list[Reservation] = field(default_factory=list)
    # nodes going down for maintenance or reserved for a team, each as a reservation of all its GPUs for that
    # time (`_node_windows`)
    node_windows: list[Reservation] = field(default_factory=list)
    # the oldest task when it needs several GPUs and has waited `oldest_first_delay_s()`: considered first
    oldest: int | None = None
    blocked_ahead: int = 0
    fifo_blocked: bool = False
    wake_at_s: float | None = None
    failed_shapes: dict[ShapeKey, int] = field(default_factory=dict)
    blocked_by: dict[int, str] = field(default_factory=dict)  # `Decisions.blocked_by`
    all_gpus: frozenset[tuple[str, int]] | None = None  # every GPU of the pool, read when first needed
    budget_msgs: dict[tuple[str, str | None], str | None] = field(default_factory=dict)

    def wake(self, at_s: float | None) -> None:
        """Remember the earliest future time something time-based changes."""
        if at_s is not None and at_s > self.now_s and (self.wake_at_s is None or at_s < self.wake_at_s):
            self.wake_at_s = at_s

    def holdings(self, overrun_factor: float = OVERRUN_FACTOR) -> list[Holding]:
        """Everything holding GPUs: running tasks until their expected end, and tasks started this pass.

        `overrun_factor` as in `expected_end_s`: decisions keep the default; wording a wait for a person uses
        the forecasts' (`config.forecast_overrun_factor`), so a reason and a forecast agree.
        """
        held = [
            Holding(
                expected_end_s(r, self.now_s, self.config, overrun_factor),
                r.node,
                r.gpu_indices,
                r.gpu_memory_mib,
                r.gpu_fraction,
            )
            for r in self.running
        ]
        return held + self.started


def decide(
    queued: Sequence[QueuedTask],
    running: Sequence[RunningTask],
    gpus: Sequence[GpuSlot],
    now_s: float,
    config: PolicyConfig,
    usage: Mapping[str, TeamUsage] | None = None,
    succeeded: Set[int] = frozenset(),
    failed: Set[int] = frozenset(),
    *,
    with_reasons: bool = True,
    pool: Pool | None = None,
) -> Decisions:
    """Which of the window's queued tasks start now and where, and why the others wait.

    `queued` comes ordered by static score (or as a window of it: `policy.window`; the pass takes the first
    `config.window` and each person's first few after them, `pass_window`); `gpus` show what is free now
    (running tasks already counted); `succeeded`/`failed` hold the ids of parents (from `depends_on` and
    `depends_on_any`) that ended that way (`failed` also holds cancelled ones). With
    `with_reasons=False` (the simulator) the pass stops once no GPU has room and skips the wording.
    `pool`, when given, is a `Pool` the caller keeps equal to `gpus` (the simulator's incremental view): the
    pass works on a copy-on-write copy of it instead of building one from `gpus`, and leaves it unchanged.
    """
    work = Pool(gpus) if pool is None else pool.copy()
    # GPUs in use per team (per person) matter only for their caps; without one configured, skip the sum
    used = gpus_in_use(running) if config.team_capped else {}
    used_by_user = gpus_in_use(running, by="user") if config.user_capped else {}
    ps = _Pass(config, now_s, work, gpus, running, usage or {}, with_reasons, used, used_by_user)
    ps.node_windows = _node_windows(gpus, now_s)
    for held in ps.node_windows:  # the node is open to all again then: a pass must see it
        ps.wake(held.end_s if math.isfinite(held.end_s) else None)
    window = pass_window(queued, config)
    if config.oldest_first and config.credits_on and window:
        oldest = _oldest(window, config)
        waited_s = now_s - oldest.enqueued_at_s
        ps.oldest = oldest.task_id if oldest.gpus >= 2 and waited_s >= config.oldest_first_delay_s() else None
    ordered = _ordered(window, now_s, config, ps.usage)
    if ps.oldest is not None:  # the oldest goes first: it starts if it fits, else it reserves
        ordered.sort(key=lambda t: t.task_id != ps.oldest)
    for task in ordered:
        if not with_reasons and not ps.pool.any_room():
            break
        _consider(ps, task, succeeded, failed)
    if config.borrowing and ps.capped:
        _borrow(ps)
    reserved_on = {r.task_id: r.nodes for r in ps.reservations}
    return Decisions(tuple(ps.starts), ps.pending, ps.fail, ps.wake_at_s, reserved_on, ps.blocked_by)


def _ordered(
    window: Sequence[QueuedTask], now_s: float, config: PolicyConfig, usage: Mapping[str, TeamUsage]
) -> list[QueuedTask]:
    """The window sorted by `order_key`: overdue tasks first, then by `rank_key` (stable: ties keep the
    caller's order)."""
    factors = fairshare_of_tasks(window, usage, config)
    return sorted(window, key=lambda t: order_key(t, now_s, config, factors.get((t.team, t.user), 1.0)))


def _oldest(window: Sequence[QueuedTask], config: PolicyConfig) -> QueuedTask:
    """The task plain class-and-age order (no credits) puts first: the one FIFO with classes would run."""
    return min(window, key=lambda t: queue_score(t.priority, t.enqueued_at_s, config.class_step_s))


def _consider(ps: _Pass, task: QueuedTask, succeeded: Set[int], failed: Set[int]) -> None:
    """Start `task` or record why it waits."""
    hold = _hold_reason(ps, task, succeeded, failed)
    if hold is not None:
        ps.pending[task.task_id] = hold
        return
    capped = _cap_reason(ps, task)
    if capped is not None:
        ps.capped.append(task)
        ps.pending[task.task_id] = capped
        return
    if ps.fifo_blocked:
        _wait(ps, task, reasons.behind(ps.blocked_ahead) if ps.with_reasons else "")
        return
    if _try_start(ps, task):
        return
    _blocked_by_gpus(ps, task)


def _parents_reason(ps: _Pass, task: QueuedTask, succeeded: Set[int], failed: Set[int]) -> str | None:
    """Why `task` waits for its parents (None once they allow it): each `depends_on` parent must succeed (one
    that failed or was cancelled fails the task at once, whatever its other parents still do), each
    `depends_on_any` parent must end however it ends."""
    for parent in task.depends_on:
        if parent in failed:
            ps.fail[task.task_id] = reasons.parent_failed(parent)
            return reasons.parent_failed(parent)
    for parent in task.depends_on:
        if parent not in succeeded:
            return reasons.waiting_for_parent(parent)
    for parent in task.depends_on_any:
        if parent not in succeeded and parent not in failed:
            return reasons.waiting_for_parent_to_end(parent)
    return None


def _hold_reason(ps: _Pass, task: QueuedTask, succeeded: Set[int], failed: Set[int]) -> str | None:
    """Why `task` may not start yet for reasons other than GPUs and caps (None when it may)."""
    parents = _parents_reason(ps, task, succeeded, failed)
    if parents is not None:
        return parents
    if task.not_before_s is not None and ps.now_s < task.not_before_s:
        ps.wake(task.not_before_s)
        when = reasons.local_time(task.not_before_s, ps.now_s, ps.config.timezone)
        return f"waiting until {when} (not before)"
    if task.retry_at_s is not None and ps.now_s < task.retry_at_s:
        ps.wake(task.retry_at_s)
        when = reasons.local_time(task.retry_at_s, ps.now_s, ps.config.timezone)
        return f"retrying at {when} (backoff after a failed attempt)"
    if task.offpeak:
        offpeak = _offpeak_reason(ps, task)
        if offpeak is not None:
            return offpeak
    if task.gpus == 0:  # a CPU-only task uses no GPU-hours: a used-up GPU-hour budget does not hold it
        return None
    return _budget_reason(ps, task.team) or _member_budget_reason(ps, task.team, task.user)


def _offpeak_reason(ps: _Pass, task: QueuedTask) -> str | None:
    """None inside an off-peak window with room for the estimate (when any window could hold it)."""
    windows, tz = ps.config.offpeak_windows, ps.config.timezone
    est_s = task_estimate_s(task, ps.config)
    start_s = offpeak_start_s(windows, ps.now_s, zone(tz), est_s)
    if start_s is None or start_s <= ps.now_s:
        return None
    ps.wake(start_s)
    at = reasons.local_time(start_s, ps.now_s, tz)
    if current_window(windows, ps.now_s, tz) is not None:
        return (
            f"waiting for off-peak at {at}: its {reasons.human_duration(est_s)} estimate does not fit "
            "in what is left of this window"
        )
    return f"waiting for off-peak at {at}"


def _budget_reason(ps: _Pass, team: str) -> str | None:
    """The exhausted-budget message of `team` (with when it frees, where known), cached for the pass."""
    if not ps.config.has_budgets:
        return None
    if (team, None) not in ps.budget_msgs:
        status = budget_status(team, ps.usage, ps.config)
        used = ps.usage.get(team)
        frees_at, by = (used.budget_frees_at_s, used.budget_frees_by) if used is not None else (None, None)
        ps.budget_msgs[(team, None)] = _held_by_budget(ps, status, frees_at, by)
    return ps.budget_msgs[(team, None)]


def _member_budget_reason(ps: _Pass, team: str, user: str) -> str | None:
    """The exhausted-budget message of `user`'s own budget in `team` (with when it frees), cached."""
    if not ps.config.has_user_budgets:
        return None
    if (team, user) not in ps.budget_msgs:
        status = member_budget_status(team, user, ps.usage, ps.config)
        frees_at = ps.usage[team].member_budget_frees_at_s.get(user) if team in ps.usage else None
        ps.budget_msgs[(team, user)] = _held_by_budget(ps, status, frees_at)
    return ps.budget_msgs[(team, user)]


def _held_by_budget(
    ps: _Pass, status: BudgetStatus, frees_at: float | None, frees_by: str | None = None
) -> str | None:
    """A used-up budget's message, saying when new starts may come (and waking the pass then), and, when
    the other period's budget is what holds them until then, which; else None."""
    if status.level != "exhausted":
        return None
    message = status.message
    if frees_at is not None and math.isfinite(frees_at):
        ps.wake(frees_at)
        message += f"; new starts again at {reasons.local_time(frees_at, ps.now_s, ps.config.timezone)}"
        if frees_by is not None and not message.startswith(frees_by):
            message += (
                f", when its {frees_by} budget frees too: the work running now, by its estimates, uses "
                "that up meanwhile"
            )
    return message


def _node_windows(gpus: Sequence[GpuSlot], now_s: float) -> list[Reservation]:
    """Each node's maintenance (`GpuSlot.down_at_s` to `up_at_s`) and reservations for teams
    (`GpuSlot.reserved`) not over at `now_s`, each as a reservation of all its GPUs from its start to its
    end: a task may start there only if it ends first (a team's own tasks: at any time), as before any
    reservation, and no other task is promised GPUs there (Slurm's maintenance and account reservations)."""
    windows: dict[tuple[str, str | None, float, float], set[tuple[str, int]]] = {}
    for g in gpus:
        end_s = math.inf if g.up_at_s is None else g.up_at_s
        if g.down_at_s is not None and now_s < end_s:
            windows.setdefault((g.node, None, g.down_at_s, end_s), set()).add((g.node, g.index))
        for team, start_s, until_s in g.reserved:
            if now_s < until_s:
                windows.setdefault((g.node, team, start_s, until_s), set()).add((g.node, g.index))
    return [
        Reservation(-1, start_s, frozenset(keys), (node,), end_s, team)
        for (node, team, start_s, end_s), keys in windows.items()
    ]


def _find(ps: _Pass, task: QueuedTask) -> list[GpuState] | None:
    """Placement now that respects the reservations, maintenance and other teams' reservations (a task may
    use reserved GPUs only if it ends first); on GPUs reserved for its team now when it fits there, so that
    its work fills them before it takes GPUs others could use."""
    end_s = ps.now_s + task_estimate_s(task, ps.config)
    exclude: frozenset[tuple[str, int]] = frozenset()
    for r in (*ps.reservations, *ps.node_windows):
        if r.keeps_off(task.team, end_s):
            exclude = exclude | r.gpus
    own = [r.gpus for r in ps.node_windows if r.team == task.team and r.start_s <= ps.now_s]
    if own:
        if ps.all_gpus is None:  # once a pass, for the first task with GPUs reserved for its team
            nodes = ps.pool.nodes.values()
            ps.all_gpus = frozenset((node.name, g.index) for node in nodes for g in node.gpus)
        elsewhere = ps.all_gpus - frozenset().union(*own)
        chosen = _clear_of_others(ps, task, ps.pool.find(task, exclude | elsewhere), end_s)
        if chosen is not None:
            return chosen
    shape: ShapeKey = (
        task.gpus,
        task.gpu_memory_mib,
        task.gpu_fraction,
        task.node,
        task.gpu_model,
        bool(exclude),
    )
    if not exclude and ps.failed_shapes.get(shape) == ps.pool.version:
        return None
    chosen = ps.pool.find(task, exclude)
    if chosen is None and not exclude:
        ps.failed_shapes[shape] = ps.pool.version
    return _clear_of_others(ps, task, chosen, end_s)


def _clear_of_others(
    ps: _Pass, task: QueuedTask, chosen: list[GpuState] | None, end_s: float
) -> list[GpuState] | None:
    """`chosen`, unless running there until `end_s` would delay another team's reservation."""
    if chosen is not None and any(
        delays(chosen, end_s, r) for r in (*ps.reservations, *ps.node_windows) if r.team != task.team
    ):
        return None
    return chosen


def _try_start(ps: _Pass, task: QueuedTask) -> bool:
    """Start `task` if it can be placed without delaying a reservation."""
    chosen = _find(ps, task)
    if chosen is None:
        return False
    ps.pool.take(chosen, task.gpu_memory_mib, task.gpu_fraction)
    end_s = ps.now_s + task_estimate_s(task, ps.config)
    by_node: dict[str, list[int]] = {}
    for g in chosen:
        by_node.setdefault(g.node, []).append(g.index)
    for node, indices in by_node.items():
        ps.starts.append(StartDecision(task.task_id, node, tuple(indices)))
        ps.started.append(Holding(end_s, node, tuple(indices), task.gpu_memory_mib, task.gpu_fraction))
    if not chosen:
        ps.starts.append(StartDecision(task.task_id, "", ()))
    weight = gpu_weight(task.gpus, task.gpu_fraction)
    ps.used_by_team[task.team] = ps.used_by_team.get(task.team, 0.0) + weight
    ps.used_by_user[task.user] = ps.used_by_user.get(task.user, 0.0) + weight
    ps.pending.pop(task.task_id, None)
    return True


def _blocked_by_gpus(ps: _Pass, task: QueuedTask) -> None:
    """`task` is eligible but cannot start now: reserve for it (EASY) or explain the wait."""
    ps.teams_waiting_for_gpus.add(task.team)
    ps.users_waiting_for_gpus.add(task.user)
    if ps.config.policy == "fifo":
        ps.fifo_blocked = True
        _wait(ps, task, _no_room_reason(ps, task) if ps.with_reasons else "")
        return
    if _may_reserve(ps, task):
        held = (*ps.reservations, *(r for r in ps.node_windows if r.team != task.team))
        reserved = frozenset().union(*(r.gpus for r in held))
        res = find_reservation(task, ps.pool, ps.holdings(), reserved)
        if res is not None:
            ps.reservations.append(res)
            msg = reasons.reserved(task.gpus, res.nodes, res.start_s - ps.now_s) if ps.with_reasons else ""
            if ps.with_reasons and (why := _why_no_start(ps, task)) is not None:
                ps.blocked_by[task.task_id] = why  # "no GPU has 40 GB free ...; next in line: ..."
                msg = f"{why}; {msg}"
            _wait(ps, task, msg)
            return
    if not ps.with_reasons:
        _wait(ps, task, "")
    elif (held_off := _node_window_in_the_way(ps, task)) is not None:
        _wait(ps, task, held_off)
    elif ps.pool.find(task) is not None:
        _wait(ps, task, reasons.behind(ps.blocked_ahead))
    else:
        _wait(ps, task, _no_room_reason(ps, task))


def _why_no_start(ps: _Pass, task: QueuedTask) -> str | None:
    """What keeps `task`, which just got a reservation, from starting now when it is more than busy GPUs
    (which "next in line" says): a maintenance or another team's reservation, GPUs out of service, or the
    GPU memory it asks for; else None."""
    held_off = _node_window_in_the_way(ps, task)
    if held_off is not None or ps.pool.find(task) is not None:
        return held_off
    in_service = [g for g in ps.gpus if g.available]
    if never_fits(task, in_service) is not None:  # it fits the cluster, not the GPUs in service now
        return reasons.out_of_service([g for g in ps.gpus if not g.available], len(ps.gpus))
    if task.gpu_memory_mib > 0:
        return _held_outside(task, in_service) or reasons.no_room(task.gpus, task.gpu_memory_mib, None)
    return None


def _node_window_in_the_way(ps: _Pass, task: QueuedTask) -> str | None:
    """ "node n0 goes down for maintenance at 09:00: its ~4 h estimate would run past it", "node n0 is
    reserved for team vision until 18:00", where only a maintenance or another team's reservation keeps
    `task` off GPUs that are free now; else None."""
    end_s = ps.now_s + task_estimate_s(task, ps.config)
    ahead = [r for r in ps.node_windows if r.keeps_off(task.team, end_s)]
    if not ahead:
        return None
    others = frozenset().union(*(r.gpus for r in ps.reservations if end_s > r.start_s))
    if ps.pool.find(task, others) is None:
        return None  # no room even on the nodes held off: the usual reason says why
    first = min(ahead, key=lambda r: r.start_s)
    alike = [
        r for r in ahead if r.team == first.team and (r.start_s <= ps.now_s) == (first.start_s <= ps.now_s)
    ]
    names = sorted(node for r in alike for node in r.nodes)
    at = partial(reasons.local_time, now_s=ps.now_s, tz_name=ps.config.timezone)
    which = f"node {names[0]} is" if len(names) == 1 else f"nodes {', '.join(names)} are"
    estimate = reasons.human_duration(end_s - ps.now_s)
    if first.team is not None:
        if first.start_s <= ps.now_s:
            return f"{which} reserved for team {first.team} until {at(first.end_s)}"
        return (
            f"{which} reserved for team {first.team} from {at(first.start_s)} until {at(first.end_s)}: "
            f"its {estimate} estimate would run into it"
        )
    if first.start_s <= ps.now_s:  # begun (with an end: else the node is drained)
        return f"{which} down for maintenance until {at(first.end_s)}"
    which = f"node {names[0]} goes" if len(names) == 1 else f"nodes {', '.join(names)} go"
    when = at(first.start_s)
    if math.isfinite(first.end_s):
        when += f" until {at(first.end_s)}"
    return f"{which} down for maintenance at {when}: its {estimate} estimate would run past it"


def _may_reserve(ps: _Pass, task: QueuedTask) -> bool:
    """EASY: the first blocked task reserves; so does the oldest (`oldest_first`), and tasks past their
    aging bound may reserve too (up to a limit)."""
    n = len(ps.reservations)
    if n < ps.config.reservations or task.task_id == ps.oldest:
        return True
    return _overdue(ps, task) and n < ps.config.reservations + ps.config.overdue_reservations


def _overdue(ps: _Pass, task: QueuedTask) -> bool:
    """True when `task` has waited its aging bound."""
    return ps.now_s - task.enqueued_at_s >= aging_bound_s(task.priority, ps.config)


def _wait(ps: _Pass, task: QueuedTask, reason: str) -> None:
    ps.pending[task.task_id] = reason
    ps.blocked_ahead += 1


def _no_room_reason(ps: _Pass, task: QueuedTask) -> str:
    """ "no GPU has 40 GB free; the next frees in ~25 min", or why it can never start here."""
    never = never_fits(task, ps.gpus)
    if never is not None:
        return f"cannot start on this cluster: {never}"
    in_service = [g for g in ps.gpus if g.available]
    if never_fits(task, in_service) is not None:  # it fits the cluster, not the GPUs in service now
        return reasons.out_of_service([g for g in ps.gpus if not g.available], len(ps.gpus))
    held = _held_outside(task, in_service)
    if held is not None:
        return held
    usable = [
        h
        for h in ps.holdings(ps.config.forecast_overrun_factor)
        if any(
            (g := ps.pool.gpu(h.node, i)) is not None
            and g.total_mib >= memory_need_mib(task.gpu_memory_mib, task.gpu_fraction, g.shareable_mib)
            for i in h.gpu_indices
        )
    ]
    if not usable:
        return reasons.no_room(task.gpus, task.gpu_memory_mib, None)
    first_end_s = min(h.end_s for h in usable)
    reason = reasons.no_room(task.gpus, task.gpu_memory_mib, first_end_s - ps.now_s)
    freeing = {(h.node, i) for h in usable if h.end_s == first_end_s for i in h.gpu_indices}
    in_the_way = _reservation_in_the_way(ps, task, first_end_s, freeing)
    if in_the_way is None:
        return reason
    return f"{reason}; " + reasons.reserved_ahead(in_the_way.task_id, len(in_the_way.gpus), in_the_way.nodes)


def _held_outside(task: QueuedTask, in_service: Sequence[GpuSlot]) -> str | None:
    """The wait of a task that would not fit even once every nightshift task ended, because processes
    outside nightshift hold memory of the GPUs (a notebook on a shared GPU): no end is worth naming then."""
    if task.gpu_memory_mib <= 0 or not any(g.outside_mib > 0 for g in in_service):
        return None
    emptied = [
        replace(g, memory_free_mib=g.memory_total_mib - g.outside_mib, shares_used=0.0) for g in in_service
    ]
    if Pool(emptied).find(task) is not None:
        return None
    held = [g for g in in_service if g.outside_mib > 0 and g.memory_total_mib >= task.gpu_memory_mib]
    if not held:
        return None
    closest = max(held, key=lambda g: (g.memory_total_mib - g.outside_mib, g.node, -g.index))
    return reasons.held_outside(task.gpus, task.gpu_memory_mib, closest)


def _reservation_in_the_way(
    ps: _Pass, task: QueuedTask, free_at_s: float, freeing: set[tuple[str, int]]
) -> Reservation | None:
    """The first reservation of a task ahead that holds GPUs freeing at `free_at_s` and that `task`,
    started then, would run into (by its estimate): those GPUs are promised to it, so "the next frees in
    ~10 min" alone would promise too soon a start."""
    end_s = free_at_s + task_estimate_s(task, ps.config)
    ahead = [
        r
        for r in ps.reservations
        if r.task_id != task.task_id and r.start_s < end_s and not r.gpus.isdisjoint(freeing)
    ]
    return min(ahead, key=lambda r: r.start_s, default=None)


def _cap_reason(ps: _Pass, task: QueuedTask) -> str | None:
    """Why starting `task` would pass its team's or its person's concurrent GPU cap; None if it would not."""
    cap = over_cap(task, ps.used_by_team.get(task.team, 0.0), ps.config)
    if cap is not None:
        return reasons.team_cap(task.team, cap)
    cap = over_user_cap(task, ps.used_by_user.get(task.user, 0.0), ps.config)
    return None if cap is None else reasons.user_cap(task.user, cap)


def _borrow(ps: _Pass) -> None:
    """Start capped tasks above their cap when no one else waits for GPUs in this window: no other team's
    task for a team's cap, no other person's for a person's."""
    for task in ps.capped:
        if ps.teams_waiting_for_gpus - {task.team}:
            return
        if over_user_cap(task, ps.used_by_user.get(task.user, 0.0), ps.config) is not None and (
            ps.users_waiting_for_gpus - {task.user}
        ):
            continue
        if not ps.with_reasons and not ps.pool.any_room():
            return
        _try_start(ps, task)
