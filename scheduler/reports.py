"""Utilization reports: who used how many GPU-hours (and CPU-hours), at what energy and cost, and how long
they waited."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy import or_, select
from sqlalchemy.orm import Session, sessionmaker

from scheduler.clock import from_epoch_s, to_epoch_s
from scheduler.policy.config import PolicyConfig
from scheduler.policy.tariff import gpu_power_w
from scheduler.store.tables import Attempt, Task, Team, User
from scheduler.telemetry.report import (
    by_day,
    measured_usage,
    offpeak_share_s,
    quota_use,
    span_cpu_s,
    span_energy,
)

GroupBy = Literal["team", "user", "gpu"]
DAY_S = 86400.0
MAX_REPORT_DAYS = 366  # the longest window a utilization report covers (API and UI)
HOUR_S = 3600.0


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
        ) in session.execute(query):
            start = max(to_epoch_s(started), since_s)
            end = min(to_epoch_s(finished), now_s) if finished else now_s
            if end <= start:  # CPU-only tasks count too: as tasks, waits and CPU time, with no GPU-hours
                continue
            wait = to_epoch_s(started) - to_epoch_s(submitted) if number == 1 else None
            spans.append(
                AttemptSpan(
                    task_id, team_name, user, tuple(gpu_indices or ()), node, start, end, status, wait, number
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


def waits_over_time(spans: Iterable[AttemptSpan], since_s: float, days: float) -> dict[str, Any]:
    """p50 and p90 of the waits (submit to first start) per hour (windows up to 2 days) or per day.

    Buckets are whole UTC hours or days; each first attempt counts in the one where it started (or where
    the window begins, when it started before); buckets without starts are left out.
    """
    bucket_s = HOUR_S if days <= 2 else DAY_S
    buckets: dict[int, list[float]] = {}
    for span in spans:
        if span.wait_s is not None:
            buckets.setdefault(int(max(span.start_s, since_s) // bucket_s), []).append(max(0.0, span.wait_s))
    points = []
    for number, waits in sorted(buckets.items()):
        waits.sort()
        points.append(
            {
                "start": from_epoch_s(number * bucket_s).isoformat(),
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
) -> dict[str, Any]:
    """GPU-hours, energy, cost, outcomes, waits and CPU time over the last `days`, grouped `by` team, user
    or GPU. CPU time counts the attempts whose jobs ran in a cgroup (None for a row with none).

    `gpu_models` maps "node:index" to the GPU's model name (for its default power); `capacity_gpus` is the
    number of GPUs the cluster has now (the utilization's denominator); `team` limits the report to one team.
    """
    since_s = now_s - days * DAY_S
    rows: dict[str, _Row] = {}
    spans = _spans(factory, since_s, now_s, team)
    measured = measured_usage(factory, (span.task_id for span in spans))
    energy: list[tuple[float, float]] = []  # (kWh, cost) of each span: measured when stored, else estimated
    for span in spans:
        duration_s = span.end_s - span.start_s
        power_w = statistics.fmean(
            [gpu_power_w(gpu_models.get(f"{span.node}:{index}", "")) for index in span.gpus] or [0.0]
        )
        stored = measured.get((span.task_id, span.attempt))
        span_kwh, span_cost = span_energy(span, len(span.gpus), power_w, stored, config)
        energy.append((span_kwh, span_cost))
        offpeak_s = offpeak_share_s(span, config)
        for key, gpus in _keys(span, by):
            row = rows.setdefault(key, _Row())
            share = gpus / max(1, len(span.gpus))
            row.gpu_s += gpus * duration_s
            row.energy_kwh += span_kwh * share
            row.cost += span_cost * share
            row.offpeak_gpu_s += gpus * offpeak_s
            cpu_s = span_cpu_s(span, gpus, stored)
            if cpu_s is not None:
                row.cpu_s = (row.cpu_s or 0.0) + cpu_s
            row.tasks.add(span.task_id)
            if span.status == "succeeded":
                row.succeeded.add(span.task_id)
            elif span.status == "failed":
                row.failed.add(span.task_id)
            if span.wait_s is not None:
                row.waits_s.append(span.wait_s)
    total_gpu_h = sum(row.gpu_s for row in rows.values()) / 3600.0
    capacity_gpu_h = capacity_gpus * days * 24.0
    return {
        "days": days,
        "by": by,
        "team": team,
        "rows": [
            {
                "key": key,
                "gpu_hours": round(row.gpu_s / 3600.0, 6),
                "tasks": len(row.tasks),
                "succeeded": len(row.succeeded),
                "failed": len(row.failed),
                "mean_wait_s": round(statistics.fmean(row.waits_s), 1) if row.waits_s else None,
                "energy_kwh": round(row.energy_kwh, 3),
                "cost": round(row.cost, 2),
                "offpeak_share": round(row.offpeak_gpu_s / row.gpu_s, 4) if row.gpu_s else None,
                "cpu_hours": None if row.cpu_s is None else round(row.cpu_s / 3600.0, 6),
            }
            for key, row in sorted(rows.items(), key=lambda item: -item[1].gpu_s)
        ],
        "total_gpu_hours": round(total_gpu_h, 6),
        "capacity_gpu_hours": round(capacity_gpu_h, 3),
        "utilization": round(total_gpu_h / capacity_gpu_h, 4) if capacity_gpu_h else None,
        "currency": config.tariff.currency,
        "waits_over_time": waits_over_time(spans, since_s, days),
        **accounting_totals(rows.values(), spans, energy, config),
        "quota": quota_use(factory, now_s, config, team),
        "quota_warn_fraction": config.budget_warn_fraction,
    }


def accounting_totals(
    rows: Iterable[_Row], spans: list[AttemptSpan], energy: list[tuple[float, float]], config: PolicyConfig
) -> dict[str, Any]:
    """Energy, cost and off-peak share over the whole window, and the same per local day and team."""
    rows = list(rows)
    gpu_s = sum(row.gpu_s for row in rows)
    return {
        "total_energy_kwh": round(sum(row.energy_kwh for row in rows), 4),
        "total_cost": round(sum(row.cost for row in rows), 4),
        "total_cpu_hours": _total_cpu_hours(rows),
        "offpeak_share": round(sum(row.offpeak_gpu_s for row in rows) / gpu_s, 4) if gpu_s else None,
        "by_day": by_day(spans, energy, config),
    }


def _total_cpu_hours(rows: list[_Row]) -> float | None:
    """CPU-hours of the rows that know theirs; None when none does."""
    known = [row.cpu_s for row in rows if row.cpu_s is not None]
    return round(sum(known) / 3600.0, 6) if known else None
