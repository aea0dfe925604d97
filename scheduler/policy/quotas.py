"""Quotas: caps on concurrent GPUs per team and per person, and rolling GPU-hour budgets per team and per
person that stop new starts (never kill)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from scheduler.policy import reasons
from scheduler.policy.config import Budgets, PolicyConfig, TeamUsage
from scheduler.policy.types import QueuedTask, RunningTask


def gpu_weight(gpus: int, gpu_fraction: float) -> float:
    """GPUs a task counts against its team's cap: a shared GPU counts its fraction."""
    return gpus * min(gpu_fraction, 1.0)


def gpus_in_use(running: Iterable[RunningTask], by: Literal["team", "user"] = "team") -> dict[str, float]:
    """GPUs in use per team (or per person)."""
    used: dict[str, float] = {}
    for r in running:
        key = r.team if by == "team" else r.user
        used[key] = used.get(key, 0.0) + gpu_weight(len(r.gpu_indices), r.gpu_fraction)
    return used


def over_cap(task: QueuedTask, used_gpus: float, config: PolicyConfig) -> int | None:
    """The team's cap when starting `task` would exceed it, else None."""
    return _over(config.team_cap(task.team), task, used_gpus)


def over_user_cap(task: QueuedTask, used_gpus: float, config: PolicyConfig) -> int | None:
    """The person's cap when starting `task` would exceed it (`used_gpus`: theirs), else None."""
    return _over(config.user_cap(task.user), task, used_gpus)


def _over(cap: int | None, task: QueuedTask, used_gpus: float) -> int | None:
    if cap is None:
        return None
    return cap if used_gpus + gpu_weight(task.gpus, task.gpu_fraction) > cap + 1e-9 else None


@dataclass(frozen=True, slots=True)
class BudgetStatus:
    """Where a team stands against its budgets: `ok`, `warn` (>= 80 %) or `exhausted` (no new starts)."""

    team: str
    level: Literal["ok", "warn", "exhausted"]
    message: str


def budget_status(team: str, usage: Mapping[str, TeamUsage] | None, config: PolicyConfig) -> BudgetStatus:
    """The day and week budget state of `team`, with a plain-language message (for `GET /quota` too)."""
    u = (usage or {}).get(team, TeamUsage(team))
    used_s = (u.gpu_s_last_day, u.gpu_s_last_week)
    return _status(team, (f"team {team}", "its"), config.team_budgets(team), used_s, config)


def member_budget_status(
    team: str, user: str, usage: Mapping[str, TeamUsage] | None, config: PolicyConfig
) -> BudgetStatus:
    """The state of `user`'s own day and week budgets, by their use in `team`."""
    u = (usage or {}).get(team, TeamUsage(team))
    used_s = (u.member_gpu_s_last_day.get(user, 0.0), u.member_gpu_s_last_week.get(user, 0.0))
    return _status(team, (f"{user} in team {team}", "their"), config.user_budgets(user), used_s, config)


def _status(
    team: str, who: tuple[str, str], budgets: Budgets, used_s: tuple[float, float], config: PolicyConfig
) -> BudgetStatus:
    """The worst of the day and week budgets: used up, else past the warning share, else ok (`who`: the
    holder's name and possessive, as the messages word them)."""
    whose, its = who
    worst: BudgetStatus = BudgetStatus(team, "ok", "")
    for period, budget_h, period_used_s in zip(("day", "week"), budgets, used_s, strict=True):
        if budget_h is None:
            continue
        used_h = period_used_s / 3600.0
        of_budget = f"{reasons.amount(used_h)}/{budget_h:g} GPU-h"
        if used_h >= budget_h:
            return BudgetStatus(team, "exhausted", f"{period} budget of {whose} is used up ({of_budget})")
        if used_h >= config.budget_warn_fraction * budget_h and worst.level == "ok":
            pct = 100 * used_h / budget_h if budget_h else 100.0
            message = f"{whose} has used {pct:.0f}% of {its} {period} budget ({of_budget})"
            worst = BudgetStatus(team, "warn", message)
    return worst
