"""What the utilization report adds from telemetry: measured energy and cost, off-peak share, days, quotas.

- Energy of an attempt: the `task_usage` row (integrated measured power, priced piece by piece) when the
  worker stored one, prorated to the part of the attempt inside the report window; else (a running attempt)
  estimated from the mean power its GPUs' samples show, or without samples from the GPU model's power in
  the site's `gpu_power_w` table (`policy.tariff`).
- Off-peak share: the part of the GPU-hours that ran inside the off-peak windows.
- By day: GPU-hours, energy, cost, tasks and waits (p50/p90 of submit-to-first-start) per local day and team.
- Quota: each team's rolling 24 h and 7 day GPU-hours against its budgets; each person's against their own.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from scheduler.clock import to_epoch_s
from scheduler.policy.config import Budgets, PolicyConfig, TeamUsage
from scheduler.policy.tariff import estimate_cost, estimate_energy_kwh
from scheduler.policy.windows import parse_windows, zone
from scheduler.store.tables import GpuSample, TaskUsage
from scheduler.telemetry.accounting import offpeak_seconds
from scheduler.usage import gpu_spans, team_usage

DAY_S = 86400.0


class SpanLike(Protocol):
    """The fields of `reports.AttemptSpan` used here."""

    @property
    def task_id(self) -> int: ...
    @property
    def team(self) -> str: ...
    @property
    def gpus(self) -> tuple[int, ...]: ...
    @property
    def start_s(self) -> float: ...
    @property
    def end_s(self) -> float: ...
    @property
    def gpu_fraction(self) -> float: ...
    @property
    def wait_s(self) -> float | None: ...
    @property
    def attempt(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Measured:
    """An attempt's stored usage: its whole span and what it used over it."""

    start_s: float
    end_s: float
    energy_kwh: float
    cost: float
    cpu_s: float | None = None  # CPU time of the attempt's processes, where its job had a cgroup


def measured_usage(
    factory: sessionmaker[Session], task_ids: Iterable[int]
) -> dict[tuple[int, int], Measured]:
    """(task id, attempt) -> stored usage, for these tasks."""
    ids = sorted(set(task_ids))
    out: dict[tuple[int, int], Measured] = {}
    if not ids:
        return out
    with factory() as session:
        for chunk_start in range(0, len(ids), 500):
            chunk = ids[chunk_start : chunk_start + 500]
            for row in session.scalars(select(TaskUsage).where(TaskUsage.task_id.in_(chunk))):
                out[(row.task_id, row.attempt)] = Measured(
                    to_epoch_s(row.started_at),
                    to_epoch_s(row.finished_at),
                    row.energy_kwh,
                    row.cost,
                    row.cpu_seconds,
                )
    return out


def sampled_power_w(
    factory: sessionmaker[Session], attempts: Iterable[tuple[int, str, float]]
) -> dict[tuple[int, int], float]:
    """(task id, GPU index) -> mean measured power of the GPU while the task held it, from the samples its
    node's worker stored since the attempt began; for `attempts` given as (task id, node, start).

    A running attempt has no stored usage yet: its energy so far is estimated from this power (what the
    worker's meter integrates and will store at its end), not from its GPU model's default.
    """
    wanted = {task_id: (node, start_s) for task_id, node, start_s in attempts}
    out: dict[tuple[int, int], float] = {}
    if not wanted:
        return out
    ids = sorted(wanted)
    with factory() as session:
        for chunk_start in range(0, len(ids), 500):
            chunk = ids[chunk_start : chunk_start + 500]
            query = select(
                GpuSample.task_id, GpuSample.node, GpuSample.gpu_index, GpuSample.ts_s, GpuSample.power_w
            ).where(GpuSample.task_id.in_(chunk), GpuSample.power_w.is_not(None))
            sums: dict[tuple[int, int], list[float]] = {}
            for task_id, node, index, ts_s, power in session.execute(query):
                task_node, start_s = wanted.get(task_id or 0, ("", math.inf))
                if task_id is not None and power is not None and node == task_node and ts_s >= start_s // 1:
                    sums.setdefault((task_id, index), []).append(float(power))
            out.update({key: sum(values) / len(values) for key, values in sums.items()})
    return out


def span_energy(
    span: SpanLike,
    gpus: int,
    power_w: float,
    measured: Measured | None,
    config: PolicyConfig,
) -> tuple[float, float]:
    """(kWh, cost) of `gpus` of the span's GPUs over the span: measured and prorated when known."""
    if measured is not None and measured.end_s > measured.start_s and span.gpus:
        share = _share_of_attempt(span, gpus, measured)
        return measured.energy_kwh * share, measured.cost * share
    kwh = estimate_energy_kwh(gpus, power_w, span.end_s - span.start_s)
    return kwh, estimate_cost(span.start_s, span.end_s, kwh, config.tariff)


def span_cpu_s(span: SpanLike, gpus: int, measured: Measured | None) -> float | None:
    """CPU seconds of `gpus` of the span's GPUs' share of its attempt (all of it for a CPU-only task),
    prorated to the span like energy; None where the attempt's CPU time is not known (no cgroup)."""
    if measured is None or measured.cpu_s is None:
        return None
    return measured.cpu_s * _share_of_attempt(span, gpus, measured)


def _share_of_attempt(span: SpanLike, gpus: int, measured: Measured) -> float:
    """The part of a measured attempt's use that falls to `gpus` of the span's GPUs over the span (the
    span's part of the attempt's time, all of it for an attempt of no length)."""
    whole_s = measured.end_s - measured.start_s
    in_span = min(1.0, (span.end_s - span.start_s) / whole_s) if whole_s > 0 else 1.0
    return in_span * (gpus / len(span.gpus) if span.gpus else 1.0)


def offpeak_share_s(span: SpanLike, config: PolicyConfig) -> float:
    """Seconds of the span inside the off-peak windows."""
    return offpeak_seconds(span.start_s, span.end_s, parse_windows(config.offpeak), config.timezone)


def percentile(values: Sequence[float], pct: float) -> float | None:
    """Nearest-rank percentile (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100.0 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass
class _Day:
    gpu_s: float = 0.0
    energy_kwh: float = 0.0
    cost: float = 0.0
    tasks: set[int] = field(default_factory=set)
    waits_s: list[float] = field(default_factory=list)


def _day_pieces(start_s: float, end_s: float, tz_name: str) -> Iterable[tuple[str, float, float]]:
    """(local day ISO, piece start, piece end) for each local day [start_s, end_s) touches."""
    tz = zone(tz_name)
    t = start_s
    while t < end_s:
        local = datetime.fromtimestamp(t, tz)
        next_midnight = datetime.combine(
            local.date() + timedelta(days=1), datetime.min.time(), tz
        ).timestamp()
        piece_end = min(end_s, next_midnight)
        yield local.date().isoformat(), t, piece_end
        t = piece_end if piece_end > t else end_s


def by_day(
    spans: Sequence[SpanLike], energy: Sequence[tuple[float, float]], config: PolicyConfig
) -> list[dict[str, Any]]:
    """Rows per (local day, team): GPU-hours, energy, cost, tasks, wait p50/p90; `energy` is per span."""
    days: dict[tuple[str, str], _Day] = {}
    for span, (kwh, cost) in zip(spans, energy, strict=True):
        duration_s = span.end_s - span.start_s
        for day, start_s, end_s in _day_pieces(span.start_s, span.end_s, config.timezone):
            row = days.setdefault((day, span.team), _Day())
            share = (end_s - start_s) / duration_s if duration_s > 0 else 0.0
            row.gpu_s += len(span.gpus) * span.gpu_fraction * (end_s - start_s)
            row.energy_kwh += kwh * share
            row.cost += cost * share
            row.tasks.add(span.task_id)
        if span.wait_s is not None:
            first_day = next(iter(_day_pieces(span.start_s, span.start_s + 1, config.timezone)))[0]
            days.setdefault((first_day, span.team), _Day()).waits_s.append(max(0.0, span.wait_s))
    return [
        {
            "day": day,
            "team": team,
            "gpu_hours": round(row.gpu_s / 3600.0, 6),
            "tasks": len(row.tasks),
            "energy_kwh": round(row.energy_kwh, 4),
            "cost": round(row.cost, 4),
            "p50_wait_s": _round(percentile(row.waits_s, 50)),
            "p90_wait_s": _round(percentile(row.waits_s, 90)),
        }
        for (day, team), row in sorted(days.items())
    ]


def quota_use(
    factory: sessionmaker[Session], now_s: float, config: PolicyConfig, team: str | None = None
) -> list[dict[str, Any]]:
    """Each team's rolling 24 h / 7 day GPU-hours against its day/week budgets (teams with use or budget)."""
    usage = team_usage(gpu_spans(factory, now_s, 7 * DAY_S), now_s, config.fairshare_half_life_s)
    teams = set(usage) | set(config.day_budget_gpu_h) | set(config.week_budget_gpu_h)
    if team is not None:
        teams &= {team}
    rows = []
    for name in sorted(teams):
        used = usage.get(name, TeamUsage(name))
        used_s = (used.gpu_s_last_day, used.gpu_s_last_week)
        rows.append({"team": name, **_use_of_budgets(used_s, config.team_budgets(name))})
    return rows


def member_quota_use(
    factory: sessionmaker[Session], now_s: float, config: PolicyConfig, team: str | None = None
) -> list[dict[str, Any]]:
    """Each person's rolling 24 h / 7 day GPU-hours in each team they used GPUs in this week, against their
    own day/week budgets (none where no person has a budget)."""
    if not config.has_user_budgets:
        return []
    usage = team_usage(gpu_spans(factory, now_s, 7 * DAY_S), now_s, config.fairshare_half_life_s)
    rows = []
    for name in sorted(usage):
        if team is not None and name != team:
            continue
        used = usage[name]
        for user in sorted(set(used.member_gpu_s_last_day) | set(used.member_gpu_s_last_week)):
            used_s = (used.member_gpu_s_last_day.get(user, 0.0), used.member_gpu_s_last_week.get(user, 0.0))
            rows.append({"team": name, "user": user, **_use_of_budgets(used_s, config.user_budgets(user))})
    return rows


def _use_of_budgets(used_s: tuple[float, float], budgets: Budgets) -> dict[str, Any]:
    """GPU-hours of the last day and week, each with its budget and the share of it used."""
    out: dict[str, Any] = {}
    for period, period_used_s, budget in zip(("day", "week"), used_s, budgets, strict=True):
        used_h = period_used_s / 3600.0
        out[f"{period}_used_gpu_h"] = round(used_h, 4)
        out[f"{period}_budget_gpu_h"] = budget
        out[f"{period}_share"] = round(used_h / budget, 4) if budget else None
    return out


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)
