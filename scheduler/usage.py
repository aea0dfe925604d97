"""Past GPU use from SQL: per-team usage for quotas and fair share, and learned run times for estimates."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import ColumnElement, or_, select
from sqlalchemy.orm import Session, sessionmaker

from scheduler.clock import from_epoch_s, to_epoch_s
from scheduler.policy.config import TeamUsage
from scheduler.policy.estimate import DurationHistory
from scheduler.policy.quotas import gpu_weight
from scheduler.store.tables import Attempt, Task, Team, User

DAY_S = 86400.0
WEEK_S = 7 * DAY_S


@dataclass(frozen=True, slots=True)
class GpuSpan:
    """GPUs held by one team from `start_s` to `end_s` (None while still running)."""

    team: str
    gpus: float  # a task sharing one GPU holds its fraction of it
    start_s: float
    end_s: float | None
    user: str = ""  # who ran it (fair share within the team)


def _overlap_s(span: GpuSpan, since_s: float, now_s: float) -> float:
    end = now_s if span.end_s is None else min(span.end_s, now_s)
    return max(0.0, end - max(span.start_s, since_s))


def _decayed_gpu_s(span: GpuSpan, now_s: float, half_life_s: float) -> float:
    """GPU-seconds weighted by 0.5 ** (age / half-life), integrated exactly over the span."""
    end = now_s if span.end_s is None else min(span.end_s, now_s)
    if end <= span.start_s:
        return 0.0
    rate = math.log(2) / half_life_s
    weight = (math.exp(-rate * (now_s - end)) - math.exp(-rate * (now_s - span.start_s))) / rate
    return span.gpus * weight


def team_usage(spans: Iterable[GpuSpan], now_s: float, half_life_s: float) -> dict[str, TeamUsage]:
    """Per-team GPU-seconds over the last day and week, and decayed over all history; each also per member."""
    members: dict[str, dict[str, list[float]]] = {}  # team -> person -> [decayed, day, week]
    for span in spans:
        acc = members.setdefault(span.team, {}).setdefault(span.user, [0.0, 0.0, 0.0])
        acc[0] += _decayed_gpu_s(span, now_s, half_life_s)
        acc[1] += span.gpus * _overlap_s(span, now_s - DAY_S, now_s)
        acc[2] += span.gpus * _overlap_s(span, now_s - WEEK_S, now_s)
    return {team: _team_of_members(team, by_member) for team, by_member in members.items()}


def _team_of_members(team: str, by_member: dict[str, list[float]]) -> TeamUsage:
    """A team's usage as the sums of its members' [decayed, day, week] GPU-seconds, with theirs kept."""
    return TeamUsage(
        team,
        sum(acc[0] for acc in by_member.values()),
        sum(acc[1] for acc in by_member.values()),
        sum(acc[2] for acc in by_member.values()),
        member_decayed_gpu_s={user: acc[0] for user, acc in by_member.items()},
        member_gpu_s_last_day={user: acc[1] for user, acc in by_member.items()},
        member_gpu_s_last_week={user: acc[2] for user, acc in by_member.items()},
    )


def gpu_spans(factory: sessionmaker[Session], now_s: float, history_s: float) -> list[GpuSpan]:
    """Every attempt that held GPUs during the last `history_s` seconds (running ones included)."""
    since = from_epoch_s(now_s - history_s)
    query = (
        select(
            Team.name, Task.gpus, gpu_fraction_of(Task), Attempt.started_at, Attempt.finished_at, User.name
        )
        .join(Task, Attempt.task_id == Task.id)
        .join(Team, Task.team_id == Team.id)
        .join(User, Task.user_id == User.id)
        .where(Task.gpus > 0, or_(Attempt.finished_at.is_(None), Attempt.finished_at >= since))
    )
    with factory() as session:
        return [
            GpuSpan(
                team,
                gpu_weight(gpus, fraction or 1.0),
                to_epoch_s(started),
                to_epoch_s(finished) if finished else None,
                user,
            )
            for team, gpus, fraction, started, finished, user in session.execute(query)
        ]


def gpu_fraction_of(task: type[Task]) -> ColumnElement[float | None]:
    """The SQL expression of a task's `gpu_fraction` (NULL for specs stored before it existed: 1)."""
    fraction: ColumnElement[float | None] = task.spec["gpu_fraction"].as_float()
    return fraction


def learned_durations(
    factory: sessionmaker[Session], now_s: float, runs: int = 9, days: int = 30
) -> DurationHistory:
    """Run times of tasks that succeeded in the last `days`, by (user, name, gpus)."""
    history = DurationHistory(runs)
    since = from_epoch_s(now_s) - timedelta(days=days)
    query = (
        select(User.name, Task.name, Task.gpus, Task.started_at, Task.finished_at)
        .join(User, Task.user_id == User.id)
        .where(Task.status == "succeeded", Task.finished_at >= since)
        .order_by(Task.finished_at)
    )
    with factory() as session:
        for user, name, gpus, started, finished in session.execute(query):
            if started is not None and finished is not None:
                history.add(user, name, gpus, max(0.0, to_epoch_s(finished) - to_epoch_s(started)))
    return history
