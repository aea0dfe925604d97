"""Per-team usage the simulator keeps from its own history, in the form the live side computes from SQL."""

from __future__ import annotations

from collections import deque
from dataclasses import replace

from scheduler.policy.config import PolicyConfig, TeamUsage
from scheduler.policy.estimate import expected_end_s
from scheduler.policy.fairshare import decay_factor
from scheduler.policy.rolling import DAY_S, WEEK_S, UsageSpan, used_up_teams, with_budget_frees
from scheduler.policy.types import RunningTask


class UsageTracker:
    """Decayed GPU-seconds per team (fair share) and, when budgets matter, rolling day/week GPU-seconds and
    when a used-up budget frees (as the live side computes it, so the replay wakes then)."""

    def __init__(self, half_life_s: float, rolling: bool = False, config: PolicyConfig | None = None) -> None:
        self.half_life_s = half_life_s
        self.rolling = rolling
        self.config = config
        self._parts: dict[int, RunningTask] = {}  # a running task's first part: its expected end
        self._running: dict[int, tuple[str, str, float, float]] = {}  # task -> (team, user, gpus, start_s)
        # team -> (start_s, end_s, gpus, user) of the work of the last week that has ended
        self._done: dict[str, deque[tuple[float, float, float, str]]] = {}
        # decayed GPU-seconds per (team, person) as (value, at_s), and what each runs now as (gpus, sum of
        # gpus * start_s); a team's are the sums of its members' (the decay is linear)
        self._member_decayed: dict[tuple[str, str], tuple[float, float]] = {}
        self._member_running: dict[tuple[str, str], tuple[float, float]] = {}

    def started(
        self,
        task_id: int,
        team: str,
        gpus: float,
        at_s: float,
        part: RunningTask | None = None,
        user: str = "",
    ) -> None:
        """A task of `team` (run by `user`) started holding `gpus` (`part`: how the policy sees it run)."""
        self._running[task_id] = (team, user, gpus, at_s)
        held, start_sum = self._member_running.get((team, user), (0.0, 0.0))
        self._member_running[(team, user)] = (held + gpus, start_sum + gpus * at_s)
        if part is not None:
            self._parts[task_id] = part

    def ended(self, task_id: int, at_s: float) -> None:
        """A task ended: its GPU-seconds move from running to the decayed total."""
        team, user, gpus, start_s = self._running.pop(task_id)
        self._parts.pop(task_id, None)
        member = (team, user)
        held, start_sum = self._member_running[member]
        self._member_running[member] = (held - gpus, start_sum - gpus * start_s)
        value, ref_s = self._member_decayed.get(member, (0.0, at_s))
        self._member_decayed[member] = (
            value * decay_factor(at_s - ref_s, self.half_life_s) + gpus * (at_s - start_s),
            at_s,
        )
        if self.rolling:
            done = self._done.setdefault(team, deque())
            done.append((start_s, at_s, gpus, user))
            while done and done[0][1] < at_s - WEEK_S:
                done.popleft()

    def snapshot(self, now_s: float) -> dict[str, TeamUsage]:
        """Usage of every team seen, at `now_s`, running work included."""
        out: dict[str, TeamUsage] = {}
        members = self._members(now_s)
        for team, by_member in members.items():
            used = TeamUsage(team, sum(by_member.values()), member_decayed_gpu_s=by_member)
            out[team] = self._rolling(used, now_s) if self.rolling else used
        if self.rolling and self.config is not None:
            out = self._with_budget_frees(out, now_s, self.config)
        return out

    def _members(self, now_s: float) -> dict[str, dict[str, float]]:
        """Decayed GPU-seconds of each person, by team, at `now_s` (running work included)."""
        out: dict[str, dict[str, float]] = {}
        for member in set(self._member_decayed) | set(self._member_running):
            value, ref_s = self._member_decayed.get(member, (0.0, now_s))
            held, start_sum = self._member_running.get(member, (0.0, 0.0))
            decayed = value * decay_factor(now_s - ref_s, self.half_life_s) + max(
                0.0, held * now_s - start_sum
            )
            out.setdefault(member[0], {})[member[1]] = decayed
        return out

    def _with_budget_frees(
        self, usage: dict[str, TeamUsage], now_s: float, config: PolicyConfig
    ) -> dict[str, TeamUsage]:
        teams = used_up_teams(usage, config)
        if not teams:
            return usage
        spans = {team: [UsageSpan(g, s, e, u) for s, e, g, u in self._done.get(team, ())] for team in teams}
        for task_id, (team, user, gpus, start_s) in self._running.items():
            if team in spans:
                part = self._parts.get(task_id)
                end_s = expected_end_s(part, now_s, config, config.forecast_overrun_factor) if part else now_s
                spans[team].append(UsageSpan(gpus, start_s, end_s, user))
        return with_budget_frees(usage, spans, config, now_s)

    def _rolling(self, used: TeamUsage, now_s: float) -> TeamUsage:
        """`used` with the team's rolling day and week GPU-seconds at `now_s`, in all and per member."""
        day: dict[str, float] = {}
        week: dict[str, float] = {}
        spans = list(self._done.get(used.team, ()))
        spans += [(s, now_s, g, u) for (t, u, g, s) in self._running.values() if t == used.team]
        for start_s, end_s, gpus, user in spans:
            day[user] = day.get(user, 0.0) + gpus * max(0.0, end_s - max(start_s, now_s - DAY_S))
            week[user] = week.get(user, 0.0) + gpus * max(0.0, end_s - max(start_s, now_s - WEEK_S))
        return replace(
            used,
            gpu_s_last_day=sum(day.values()),
            gpu_s_last_week=sum(week.values()),
            member_gpu_s_last_day=day,
            member_gpu_s_last_week=week,
        )
