"""Expected start times, like Slurm's `squeue --start`: replay the schedule forward from now with `decide`,
using estimates as run times. The range comes from replaying again with every remaining run time multiplied
by `estimate_low_factor` (optimistic) and `estimate_high_factor` (pessimistic). A running task already past
its estimate is assumed to need `forecast_overrun_factor` × its elapsed time more (run times are heavy-tailed:
one that overran is likely to run long), a forecast-only assumption that never changes what `decide` does."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass

from scheduler.policy import reasons
from scheduler.policy.aging import order_key, task_estimate_s
from scheduler.policy.config import PolicyConfig, TeamUsage
from scheduler.policy.engine import decide
from scheduler.policy.estimate import expected_end_s
from scheduler.policy.fairshare import fairshare_of_tasks
from scheduler.policy.replay import Replay
from scheduler.policy.rolling import FinishedSpan, RollingUsage, team_spans, used_up_teams, with_budget_frees
from scheduler.policy.types import GpuSlot, QueuedTask, RunningTask


@dataclass(frozen=True, slots=True)
class StartEstimate:
    """When a queued task should start (epoch seconds; `math.inf` when not within the horizon)."""

    start_s: float
    low_s: float
    high_s: float
    position: int  # 1 = next to start
    reason: str


def queue_positions(
    queued: Sequence[QueuedTask], now_s: float, config: PolicyConfig, usage: Mapping[str, TeamUsage] | None
) -> dict[int, int]:
    """1-based position of each queued task in the order `decide` would consider them."""
    factors = fairshare_of_tasks(queued, usage, config)
    order = sorted(queued, key=lambda t: order_key(t, now_s, config, factors.get((t.team, t.user), 1.0)))
    return {t.task_id: i + 1 for i, t in enumerate(order)}


def _replay_starts(
    queued: Sequence[QueuedTask],
    running: Sequence[RunningTask],
    gpus: Sequence[GpuSlot],
    now_s: float,
    config: PolicyConfig,
    usage: Mapping[str, TeamUsage] | None,
    succeeded: Set[int],
    failed: Set[int],
    finished: Iterable[FinishedSpan],
    factor: float,
    targets: Set[int],
) -> dict[int, float]:
    """Start time of each task in one forward replay with run times scaled by `factor`; a team whose
    budget is used up frees as its work (`finished`, and running) ages out of the budget's window."""
    used_up = used_up_teams(usage or {}, config)
    spans = team_spans(used_up, finished, running, now_s, config, factor) if used_up else {}
    rolling = RollingUsage(usage or {}, spans, config, now_s)
    replay = Replay(gpus, config, lambda t: task_estimate_s(t, config) * factor, rolling.at)

    def on_start(task: QueuedTask, at_s: float, parts: tuple[RunningTask, ...]) -> None:
        gpus_held = sum(len(part.gpu_indices) for part in parts)
        rolling.started(task.team, task.user, gpus_held, at_s, at_s + task_estimate_s(task, config) * factor)

    replay.on_start = on_start
    replay.succeeded |= set(succeeded)
    replay.failed.update({f: "failed" for f in failed})
    by_task: dict[int, list[RunningTask]] = {}
    for r in running:
        by_task.setdefault(r.task_id, []).append(r)
    for parts in by_task.values():
        expected_s = expected_end_s(parts[0], now_s, config, config.forecast_overrun_factor)
        end_s = now_s + (expected_s - now_s) * factor
        replay.add_running(parts, end_s)
    for task in queued:
        replay.submit(task, at_s=now_s)
    replay.run(stop=lambda: targets <= replay.started_at.keys(), max_passes=config.estimate_horizon_steps)
    return dict(replay.started_at)


def estimate_starts(
    queued: Sequence[QueuedTask],
    running: Sequence[RunningTask],
    gpus: Sequence[GpuSlot],
    now_s: float,
    config: PolicyConfig,
    usage: Mapping[str, TeamUsage] | None = None,
    succeeded: Set[int] = frozenset(),
    failed: Set[int] = frozenset(),
    targets: Collection[int] | None = None,
    finished: Sequence[FinishedSpan] = (),
    ranges: bool = True,
) -> dict[int, StartEstimate]:
    """Expected start (with a range), position and current reason for each queued task (or only `targets`).

    `queued` is the whole queue (or as much as should be forecast) ordered by static score; run times are
    the tasks' estimates (`estimated_s`, else time limit, else the default), running tasks end at their
    expected end. `finished`: the GPU work of the last week that has ended (team, gpus, start_s, end_s,
    user), from which a used-up budget is seen to free. `ranges=False` replays once, for the expected start
    alone (low and high are that start): a third of the work, where only the expected end matters.
    """
    wanted = set(targets) if targets is not None else {t.task_id for t in queued}
    used_up = used_up_teams(usage or {}, config)
    if used_up:
        usage = with_budget_frees(
            usage or {}, team_spans(used_up, finished, running, now_s, config), config, now_s
        )
    now = decide(queued, running, gpus, now_s, config, usage, succeeded, failed)
    positions = queue_positions(queued, now_s, config, usage)
    args = (queued, running, gpus, now_s, config, usage, succeeded, failed, finished)
    mid = _replay_starts(*args, 1.0, wanted)
    low = _replay_starts(*args, config.estimate_low_factor, wanted) if ranges else {}
    high = _replay_starts(*args, config.estimate_high_factor, wanted) if ranges else {}
    started_now = {s.task_id for s in now.starts}
    out: dict[int, StartEstimate] = {}
    for task in queued:
        if task.task_id not in wanted:
            continue
        start = now_s if task.task_id in started_now else mid.get(task.task_id, math.inf)
        lo = min(start, low.get(task.task_id, math.inf)) if ranges else start
        hi = max(start, high.get(task.task_id, math.inf)) if ranges else start
        reason = now.fail.get(task.task_id) or now.pending_reasons.get(task.task_id)
        if task.task_id in now.reserved_on and not math.isinf(start):
            # worded with this forecast's start, which expects overrunning tasks to run on (the pass's own
            # reservation time, for backfill, assumes they end soon)
            reason = reasons.reserved(task.gpus, now.reserved_on[task.task_id], start - now_s)
            if task.task_id in now.blocked_by:  # what keeps it from starting now comes first
                reason = f"{now.blocked_by[task.task_id]}; {reason}"
        if reason is None:
            reason = (
                "starts now" if task.task_id in started_now else reasons.behind(positions[task.task_id] - 1)
            )
        out[task.task_id] = StartEstimate(start, lo, hi, positions[task.task_id], reason)
    return out
