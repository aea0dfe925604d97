"""Utilization reports: who used how many GPU-hours (and CPU-hours), at what energy and cost, and how long
they waited."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any, Literal

from sqlalchemy import or_, select
from sqlalchemy.orm import Session, sessionmaker

from scheduler.clock import from_epoch_s, to_epoch_s
from scheduler.policy.config import PolicyConfig
from scheduler.policy.tariff import gpu_power_w
from scheduler.policy.windows import zone
from scheduler.store.node_settings import ReservationHistory, ReservationRecord
from scheduler.store.tables import Attempt, Task, Team, User
from scheduler.telemetry.report import (
    Measured,
    by_day,
    measured_usage,
    member_quota_use,
    offpeak_share_s,
    quota_use,
    sampled_power_w,
    span_cpu_s,
    span_energy,
)
from scheduler.usage import gpu_fraction_of

GroupBy = Literal["team", "user", "gpu"]
DAY_S = 86400.0
MAX_REPORT_DAYS = 366  # the longest window a utilization report covers (API and UI)
HOUR_S = 3600.0
ENERGY_DIGITS = 4  # kWh and cost, in rows and totals alike, so the rows add up to the totals


@dataclass
class _Row:
    gpu_s: float = 0.0
    energy_kwh: float = 0.0
    cost: float = 0.0
    tasks: set[int] = field(default_factory=set)
    succeeded: set[int] = field(default_factory=set)
    failed: set[int] = field(default_factory=set)
    waits_s: list[float] = field(default_factory=list)
    offpeak_gpu_s: float = 0.0
    cpu_s: float | None = None  # None until one of its attempts has a known CPU time


@dataclass(frozen=True, slots=True)
class AttemptSpan:
    """One attempt's share of the report window."""

    task_id: int
    team: str
    user: str
    gpus: tuple[int, ...]
    node: str
    start_s: float
    end_s: float
    status: str
    wait_s: float | None
    attempt: int = 0
    gpu_fraction: float = 1.0  # a task sharing one GPU: its GPU-hours and estimated energy are this part


def _spans(
    factory: sessionmaker[Session], since_s: float, now_s: float, team: str | None
) -> list[AttemptSpan]:
    since = from_epoch_s(since_s)
    query = (
        select(
            Attempt.task_id,
            Team.name,
            User.name,
            Attempt.gpu_indices,
            Attempt.node,
            Attempt.started_at,
            Attempt.finished_at,
            Task.status,
            Task.submitted_at,
            Attempt.number,
            gpu_fraction_of(Task),
        )
        .join(Task, Attempt.task_id == Task.id)
        .join(Team, Task.team_id == Team.id)
        .join(User, Task.user_id == User.id)
        .where(or_(Attempt.finished_at.is_(None), Attempt.finished_at >= since))
    )
    if team:
        query = query.where(Team.name == team)
    spans: list[AttemptSpan] = []
    with factory() as session:
        for (
            task_id,
            team_name,
            user,
            gpu_indices,
            node,
            started,
            finished,
            status,
            submitted,
            number,
            fraction,
        ) in session.execute(query):
            start = max(to_epoch_s(started), since_s)
            end = min(to_epoch_s(finished), now_s) if finished else now_s
            if end <= start:  # CPU-only tasks count too: as tasks, waits and CPU time, with no GPU-hours
                continue
            wait = to_epoch_s(started) - to_epoch_s(submitted) if number == 1 else None
            spans.append(
                AttemptSpan(
                    task_id,
                    team_name,
                    user,
                    tuple(gpu_indices or ()),
                    node,
                    start,
                    end,
                    status,
                    wait,
                    number,
                    min(fraction or 1.0, 1.0),
                )
            )
    return spans


def _keys(span: AttemptSpan, by: GroupBy) -> Iterable[tuple[str, int]]:
    """Report keys of a span with the number of GPUs counted under each."""
    if by == "team":
        yield span.team, len(span.gpus)
    elif by == "user":
        yield f"{span.team}/{span.user}", len(span.gpus)
    else:
        for index in span.gpus:
            yield f"{span.node}:{index}", 1


def _percentile(sorted_values: list[float], pct: float) -> float:
    """Nearest-rank percentile of sorted, non-empty values."""
    rank = max(1, math.ceil(pct / 100.0 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def _bucket_start(t_s: float, bucket_s: float, tz: tzinfo) -> datetime:
    """The local hour (or day, for `bucket_s` of a day) in `tz` that holds `t_s`."""
    local = datetime.fromtimestamp(t_s, tz).replace(minute=0, second=0, microsecond=0)
    return local.replace(hour=0) if bucket_s >= DAY_S else local


def waits_over_time(
    spans: Iterable[AttemptSpan], since_s: float, days: float, tz_name: str = "UTC"
) -> dict[str, Any]:
    """p50 and p90 of the waits (submit to first start) per hour (windows up to 2 days) or per day.

    Buckets are whole hours or days of the cluster's zone `tz_name` (the days of `by_day`), each point's
    `start` with its offset; each first attempt counts in the one where it started (or where the window
    begins, when it started before); buckets without starts are left out.
    """
    bucket_s = HOUR_S if days <= 2 else DAY_S
    tz = zone(tz_name)
    buckets: dict[datetime, list[float]] = {}
    for span in spans:
        if span.wait_s is not None:
            start = _bucket_start(max(span.start_s, since_s), bucket_s, tz)
            buckets.setdefault(start, []).append(max(0.0, span.wait_s))
    points = []
    for start, waits in sorted(buckets.items()):
        waits.sort()
        points.append(
            {
                "start": start.isoformat(),
                "tasks": len(waits),
                "p50_wait_s": round(_percentile(waits, 50), 1),
                "p90_wait_s": round(_percentile(waits, 90), 1),
            }
        )
    return {"bucket_s": bucket_s, "points": points}


def utilization_report(
    factory: sessionmaker[Session],
    now_s: float,
    days: float,
    by: GroupBy,
    config: PolicyConfig,
    gpu_models: dict[str, str],
    capacity_gpus: int,
    team: str | None = None,
    node_gpus: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """GPU-hours, energy, cost, outcomes, waits and CPU time over the last `days`, grouped `by` team, user
    or GPU. CPU time counts the attempts whose jobs ran in a cgroup (None for a row with none).

    `gpu_models` maps "node:index" to the GPU's model name (for its default power); `capacity_gpus` is the
    number of GPUs the cluster has now (the utilization's denominator); `team` limits the report to one team;
    `node_gpus` (each node's GPU count now) sizes the nodes' reservations for teams in the period.
    """
    since_s = now_s - days * DAY_S
    rows: dict[str, _Row] = {}
    total = _Row()  # every span once, whatever the grouping (a CPU-only task has no GPU row by GPU)
    spans = _spans(factory, since_s, now_s, team)
    measured = measured_usage(factory, (span.task_id for span in spans))
    sampled = sampled_power_w(
        factory,
        ((s.task_id, s.node, s.start_s) for s in spans if s.gpus and (s.task_id, s.attempt) not in measured),
    )
    energy: list[tuple[float, float]] = []  # (kWh, cost) of each span: measured when stored, else estimated
    for span in spans:
        power_w = _span_power_w(span, gpu_models, sampled, config)
        stored = measured.get((span.task_id, span.attempt))
        use = _SpanUse(*span_energy(span, len(span.gpus), power_w * span.gpu_fraction, stored, config),
                       offpeak_share_s(span, config), stored)  # fmt: skip
        energy.append((use.kwh, use.cost))
        _add_span(total, span, len(span.gpus), use)
        for key, gpus in _keys(span, by):
            _add_span(rows.setdefault(key, _Row()), span, gpus, use)
    total_gpu_h = total.gpu_s / 3600.0
    capacity_gpu_h = capacity_gpus * days * 24.0
    return {
        "days": days,
        "by": by,
        "team": team,
        "rows": [_row_json(key, row) for key, row in sorted(rows.items(), key=lambda item: -item[1].gpu_s)],
        "total_gpu_hours": round(total_gpu_h, 6),
        "capacity_gpu_hours": round(capacity_gpu_h, 3),
        "utilization": round(total_gpu_h / capacity_gpu_h, 4) if capacity_gpu_h else None,
        "currency": config.tariff.currency,
        "waits_over_time": waits_over_time(spans, since_s, days, config.timezone),
        **accounting_totals(total, spans, energy, config),
        "quota": quota_use(factory, now_s, config, team),
        "member_quota": member_quota_use(factory, now_s, config, team),
        "quota_warn_fraction": config.budget_warn_fraction,
        "reservations": reservation_use(
            ReservationHistory(factory).overlapping(since_s, now_s, team),
            spans,
            since_s,
            now_s,
            node_gpus or {},
        ),
    }


def reservation_use(
    reservations: Sequence[ReservationRecord],
    spans: Sequence[AttemptSpan],
    since_s: float,
    now_s: float,
    node_gpus: Mapping[str, int],
) -> list[dict[str, Any]]:
    """How much of each node's reservation for a team (within `since_s`..`now_s`) the team used: its GPU-hours
    on the GPUs it held then against those GPUs over that time (Slurm's `sreport reservation utilization`)."""
    rows = []
    for held in reservations:
        gpus = held.gpu_count(node_gpus.get(held.node, 0))
        for start, end in held.times(since_s, now_s):  # a repeating one: a row for each time it held it
            used_s = sum(
                _held_of(span.gpus, held.gpus)
                * span.gpu_fraction
                * max(0.0, min(span.end_s, end) - max(span.start_s, start))
                for span in spans
                if span.node == held.node and span.team == held.team
            )
            rows.append(_reservation_row(held, start, end, gpus * (end - start), used_s))
    return rows


def _held_of(span_gpus: Sequence[int], held: Sequence[int]) -> int:
    """How many of a span's GPUs a reservation held (one of some GPUs: those; else all of them)."""
    return len(span_gpus) if not held else len(set(span_gpus) & set(held))


def _reservation_row(
    held: ReservationRecord, start_s: float, end_s: float, reserved_gpu_s: float, used_gpu_s: float
) -> dict[str, Any]:
    return {
        "node": held.node,
        "team": held.team,
        "start": from_epoch_s(start_s).isoformat(),
        "end": from_epoch_s(end_s).isoformat(),
        "called_off": held.cancelled_s is not None and held.cancelled_s <= end_s,
        "repeat": held.repeat,
        "gpus": list(held.gpus) or None,  # the GPUs it held; None: all of the node's
        "created_by": held.created_by,
        "reserved_gpu_hours": round(reserved_gpu_s / 3600, 6),
        "used_gpu_hours": round(used_gpu_s / 3600, 6),
        "use": round(used_gpu_s / reserved_gpu_s, 4) if reserved_gpu_s > 0 else None,
    }


def _span_power_w(
    span: AttemptSpan, gpu_models: dict[str, str], sampled: dict[tuple[int, int], float], config: PolicyConfig
) -> float:
    """Mean power of one of the span's GPUs, for an attempt without stored usage: its samples' mean when
    its worker stored some, else its model's power from the site's table (`gpu_power_w` setting)."""
    return statistics.fmean(
        [
            gpu_power_w(
                gpu_models.get(f"{span.node}:{index}", ""),
                sampled.get((span.task_id, index)),
                config.gpu_power_w,
            )
            for index in span.gpus
        ]
        or [0.0]
    )


@dataclass(frozen=True, slots=True)
class _SpanUse:
    """What one span used: energy and cost (all its GPUs), seconds off-peak, the attempt's stored usage."""

    kwh: float
    cost: float
    offpeak_s: float
    stored: Measured | None


def _add_span(row: _Row, span: AttemptSpan, gpus: int, use: _SpanUse) -> None:
    """Add `gpus` of the span's GPUs (its share of energy, cost and CPU time) and its task to `row`."""
    share = gpus / len(span.gpus) if span.gpus else 1.0
    held = gpus * span.gpu_fraction
    row.gpu_s += held * (span.end_s - span.start_s)
    row.energy_kwh += use.kwh * share
    row.cost += use.cost * share
    row.offpeak_gpu_s += held * use.offpeak_s
    cpu_s = span_cpu_s(span, gpus, use.stored)
    if cpu_s is not None:
        row.cpu_s = (row.cpu_s or 0.0) + cpu_s
    row.tasks.add(span.task_id)
    if span.status == "succeeded":
        row.succeeded.add(span.task_id)
    elif span.status == "failed":
        row.failed.add(span.task_id)
    if span.wait_s is not None:
        row.waits_s.append(span.wait_s)


def _row_json(key: str, row: _Row) -> dict[str, Any]:
    """One report row as JSON, rounded as the totals are."""
    return {
        "key": key,
        "gpu_hours": round(row.gpu_s / 3600.0, 6),
        "tasks": len(row.tasks),
        "succeeded": len(row.succeeded),
        "failed": len(row.failed),
        "mean_wait_s": round(statistics.fmean(row.waits_s), 1) if row.waits_s else None,
        "energy_kwh": round(row.energy_kwh, ENERGY_DIGITS),
        "cost": round(row.cost, ENERGY_DIGITS),
        "offpeak_share": round(row.offpeak_gpu_s / row.gpu_s, 4) if row.gpu_s else None,
        "cpu_hours": None if row.cpu_s is None else round(row.cpu_s / 3600.0, 6),
    }


def accounting_totals(
    total: _Row, spans: list[AttemptSpan], energy: list[tuple[float, float]], config: PolicyConfig
) -> dict[str, Any]:
    """Energy, cost, CPU-hours and off-peak share over the whole window (`total`: every span once), and
    the same per local day and team."""
    return {
        "total_energy_kwh": round(total.energy_kwh, ENERGY_DIGITS),
        "total_cost": round(total.cost, ENERGY_DIGITS),
        "total_cpu_hours": None if total.cpu_s is None else round(total.cpu_s / 3600.0, 6),
        "offpeak_share": round(total.offpeak_gpu_s / total.gpu_s, 4) if total.gpu_s else None,
        "by_day": by_day(spans, energy, config),
    }
