"""When a used-up GPU-hour budget frees again: a team's (or a person's) rolling day and week usage over time,
from its spans.

A budget is used up while the team's GPU-seconds (a person's in that team, for their own budget) of the last
24 h (or 7 days) reach it; as old work ages out of that window the usage falls and new starts are allowed
again. With each span's end known (a running
task's expected end), the usage over time is piecewise linear, so the moment it falls under the budget is
found exactly. The live scheduler says it in the waiting reason and wakes then; start-time forecasts replay
it (`RollingUsage`), so a task held by its budget gets an expected start too.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, replace

from scheduler.policy.config import Budgets, PolicyConfig, TeamUsage
from scheduler.policy.estimate import expected_end_s
from scheduler.policy.quotas import budget_status, gpu_weight, member_budget_status
from scheduler.policy.types import RunningTask

DAY_S = 86400.0
WEEK_S = 7 * DAY_S
# a moment after the usage meets the budget, so the budget check sees it under (it uses >=)
_UNDER_S = 1.0
FinishedSpan = tuple[str, float, float, float, str]  # team, gpus, start_s, end_s, user of work that has ended


@dataclass(frozen=True, slots=True)
class UsageSpan:
    """`gpus` held from `start_s` to `end_s` (a running task's expected end) by `user`."""

    gpus: float
    start_s: float
    end_s: float
    user: str = ""


def rolling_gpu_s(spans: Iterable[UsageSpan], at_s: float, window_s: float) -> float:
    """GPU-seconds of `spans` inside the `window_s` before `at_s`."""
    since_s = at_s - window_s
    return sum(s.gpus * max(0.0, min(s.end_s, at_s) - max(s.start_s, since_s)) for s in spans)


def under_budget_at_s(
    spans: Sequence[UsageSpan], budget_gpu_s: float, window_s: float, from_s: float
) -> float:
    """The first moment from `from_s` at which the rolling usage of `spans` is under `budget_gpu_s`
    (`math.inf` for a budget of 0, which nothing is under). One sweep over the moments the usage changes
    slope: a span starts or ends (+/- its GPUs), or its start or end leaves the window (-/+)."""
    if budget_gpu_s <= 0:
        return math.inf
    used = rolling_gpu_s(spans, from_s, window_s)
    if used < budget_gpu_s:
        return from_s
    # The slope at `from_s` sums the same change moments the sweep below starts after (a span leaving the
    # window at `start_s + window_s`, as floats add it), so that no change is counted in neither.
    slope = sum(s.gpus for s in spans if s.start_s <= from_s < s.end_s) - sum(
        s.gpus for s in spans if s.start_s + window_s <= from_s < s.end_s + window_s
    )
    changes = sorted(
        (at_s, delta)
        for s in spans
        for at_s, delta in (
            (s.start_s, s.gpus),
            (s.end_s, -s.gpus),
            (s.start_s + window_s, -s.gpus),
            (s.end_s + window_s, s.gpus),
        )
        if at_s > from_s
    )
    now_s = from_s
    for at_s, delta in changes:
        if slope < 0 and now_s + (used - budget_gpu_s) / -slope + _UNDER_S < at_s:
            return now_s + (used - budget_gpu_s) / -slope + _UNDER_S
        used += slope * (at_s - now_s)
        if used < budget_gpu_s:  # crossed just before this change: under here, unless the sum drifted
            used = rolling_gpu_s(spans, at_s, window_s)
            if used < budget_gpu_s:
                return at_s
        now_s, slope = at_s, slope + delta
    return now_s  # every span has left the window: nothing is used


def budget_frees_at_s(budgets: Budgets, spans: Sequence[UsageSpan], now_s: float) -> float | None:
    """When a team (or person) whose day or week budget is used up at `now_s` by `spans` may start new work
    again (every used-up period under its budget); None when none of `budgets` is used up."""
    frees = budget_frees(budgets, spans, now_s)
    return None if frees is None else frees[0]


def budget_frees(budgets: Budgets, spans: Sequence[UsageSpan], now_s: float) -> tuple[float, str] | None:
    """`budget_frees_at_s`, with the period ("day" or "week") that holds new work back last: the running
    work, by its expected ends, may use the week budget up by the time the day budget frees."""
    frees: tuple[float, str] | None = None
    for period, budget_h, window_s in zip(("day", "week"), budgets, (DAY_S, WEEK_S), strict=True):
        if budget_h is None or rolling_gpu_s(spans, now_s, window_s) < budget_h * 3600.0:
            continue
        at_s = under_budget_at_s(spans, budget_h * 3600.0, window_s, now_s)
        if frees is None or at_s > frees[0]:
            frees = (at_s, period)
    if frees is not None and now_s < frees[0] < math.inf:  # the other period may still hold it then
        later = budget_frees(budgets, spans, frees[0])
        frees = later if later is not None else frees
    return frees


def used_up_teams(usage: Mapping[str, TeamUsage], config: PolicyConfig) -> set[str]:
    """The teams whose day or week budget is used up, or one of whose members' own budgets is."""
    if not config.has_budgets:
        return set()
    return {
        team
        for team in usage
        if budget_status(team, usage, config).level == "exhausted" or used_up_members(usage[team], config)
    }


def used_up_members(used: TeamUsage, config: PolicyConfig) -> list[str]:
    """The members of a team whose own day or week budget is used up by their work in it."""
    if not config.has_user_budgets:
        return []
    members = sorted(set(used.member_gpu_s_last_day) | set(used.member_gpu_s_last_week))
    usage = {used.team: used}
    return [u for u in members if member_budget_status(used.team, u, usage, config).level == "exhausted"]


def with_running_to(
    usage: Mapping[str, TeamUsage], running: Iterable[RunningTask], usage_at_s: float, now_s: float
) -> dict[str, TeamUsage]:
    """`usage` as computed at `usage_at_s` (running work counted up to then), with the running work since
    added up to `now_s`: a budget is checked against what has been used by now, not by its last reading,
    so a team cannot start more for the seconds that reading is old."""
    extra: dict[str, dict[str, float]] = {}  # team -> person -> GPU-seconds since the reading
    for task in running:
        held_s = now_s - max(task.started_at_s, usage_at_s)
        if held_s > 0:
            held = gpu_weight(len(task.gpu_indices), task.gpu_fraction)  # a shared GPU: its fraction
            by_member = extra.setdefault(task.team, {})
            by_member[task.user] = by_member.get(task.user, 0.0) + held * held_s
    out = dict(usage)
    for team, by_member in extra.items():
        now = out.get(team, TeamUsage(team))
        gpu_s = sum(by_member.values())
        out[team] = replace(
            now,
            gpu_s_last_day=now.gpu_s_last_day + gpu_s,
            gpu_s_last_week=now.gpu_s_last_week + gpu_s,
            member_gpu_s_last_day=_plus(now.member_gpu_s_last_day, by_member),
            member_gpu_s_last_week=_plus(now.member_gpu_s_last_week, by_member),
        )
    return out


def _plus(counts: Mapping[str, float], more: Mapping[str, float]) -> dict[str, float]:
    out = dict(counts)
    for key, value in more.items():
        out[key] = out.get(key, 0.0) + value
    return out


def team_spans(
    teams: Set[str],
    finished: Iterable[FinishedSpan],
    running: Sequence[RunningTask],
    now_s: float,
    config: PolicyConfig,
    factor: float = 1.0,
) -> dict[str, list[UsageSpan]]:
    """The spans of each of `teams`: `finished` (team, gpus, start_s, end_s, user) as they were, and the
    running tasks until their expected end (as forecasts expect it, the time left scaled by `factor`)."""
    out: dict[str, list[UsageSpan]] = {team: [] for team in teams}
    for team, gpus, start_s, end_s, user in finished:
        if team in out:
            out[team].append(UsageSpan(gpus, start_s, end_s, user))
    for task in running:
        if task.team not in out:
            continue
        expected_s = expected_end_s(task, now_s, config, config.forecast_overrun_factor)
        end_s = now_s + (expected_s - now_s) * factor
        gpus = gpu_weight(len(task.gpu_indices), task.gpu_fraction)
        out[task.team].append(UsageSpan(gpus, task.started_at_s, end_s, task.user))
    return out


def with_budget_frees(
    usage: Mapping[str, TeamUsage],
    spans: Mapping[str, Sequence[UsageSpan]],
    config: PolicyConfig,
    now_s: float,
) -> dict[str, TeamUsage]:
    """`usage` with when each used-up budget frees set: a team's (`budget_frees_at_s`) and its members'
    (`member_budget_frees_at_s`), from the team's `spans`."""
    out = dict(usage)
    for team in used_up_teams(usage, config):
        out[team] = _with_frees(usage[team], spans.get(team, []), config, now_s)
    return out


def _with_frees(used: TeamUsage, spans: Sequence[UsageSpan], config: PolicyConfig, now_s: float) -> TeamUsage:
    """`used` (one team's) with when its used-up budget, and each of its members' used-up budgets, frees."""
    team = used.team
    frees = None
    if budget_status(team, {team: used}, config).level == "exhausted":
        frees = budget_frees(config.team_budgets(team), spans, now_s)
    members: dict[str, float] = {}
    for user in used_up_members(used, config):
        at_s = budget_frees_at_s(config.user_budgets(user), [s for s in spans if s.user == user], now_s)
        if at_s is not None:
            members[user] = at_s
    return replace(
        used,
        budget_frees_at_s=None if frees is None else frees[0],
        budget_frees_by=None if frees is None else frees[1],
        member_budget_frees_at_s=members,
    )


class RollingUsage:
    """The usage a forecast replay sees over time: for the teams whose budget (or a member's own) is used up
    at its start, the rolling day and week usage at each moment, from their spans and the tasks the replay
    starts for them (so a budget frees when it would, and can be used up again); every other team as it was
    at the start.
    """

    def __init__(
        self,
        start: Mapping[str, TeamUsage],
        spans: Mapping[str, Sequence[UsageSpan]],
        config: PolicyConfig,
        now_s: float,
    ) -> None:
        self.start = with_budget_frees(start, spans, config, now_s)
        self.config = config
        self.spans = {
            team: list(spans.get(team, []))
            for team, used in self.start.items()
            if used.budget_frees_at_s is not None or used.member_budget_frees_at_s
        }
        # when the budget of a team (team, None) or member (team, user) frees, while its spans stay the same
        self._frees_at: dict[tuple[str, str | None], float | None] = {}

    def started(self, team: str, user: str, gpus: float, start_s: float, end_s: float) -> None:
        """The replay started a task of `team`, run by `user`."""
        if team in self.spans:
            self.spans[team].append(UsageSpan(gpus, start_s, end_s, user))
            self._frees_at.pop((team, None), None)
            self._frees_at.pop((team, user), None)

    def at(self, now_s: float) -> dict[str, TeamUsage]:
        """Every team's usage at `now_s` of the replay."""
        if not self.spans:
            return self.start
        out = dict(self.start)
        for team, spans in self.spans.items():
            by_member: defaultdict[str, list[UsageSpan]] = defaultdict(list)
            for span in spans:
                by_member[span.user].append(span)
            used = replace(
                out[team],
                gpu_s_last_day=rolling_gpu_s(spans, now_s, DAY_S),
                gpu_s_last_week=rolling_gpu_s(spans, now_s, WEEK_S),
                member_gpu_s_last_day={u: rolling_gpu_s(s, now_s, DAY_S) for u, s in by_member.items()},
                member_gpu_s_last_week={u: rolling_gpu_s(s, now_s, WEEK_S) for u, s in by_member.items()},
                budget_frees_at_s=None,
                member_budget_frees_at_s={},
            )
            frees_at = None
            if budget_status(team, {team: used}, self.config).level == "exhausted":
                frees_at = self._frees((team, None), self.config.team_budgets(team), spans, now_s)
            members: dict[str, float] = {}
            for user in used_up_members(used, self.config):
                at_s = self._frees((team, user), self.config.user_budgets(user), by_member[user], now_s)
                if at_s is not None:
                    members[user] = at_s
            out[team] = replace(used, budget_frees_at_s=frees_at, member_budget_frees_at_s=members)
        return out

    def _frees(
        self, key: tuple[str, str | None], budgets: Budgets, spans: Sequence[UsageSpan], now_s: float
    ) -> float | None:
        """`budget_frees_at_s`, kept while it lies ahead and the team's spans stay the same."""
        frees_at = self._frees_at.get(key)
        if frees_at is None or frees_at <= now_s:
            frees_at = self._frees_at[key] = budget_frees_at_s(budgets, spans, now_s)
        return frees_at
