"""The telemetry history in SQL: GPU and host samples (raw and downsampled) and per-attempt usage rows."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import cast

from sqlalchemy import Engine, Table, bindparam, delete, func, insert, select
from sqlalchemy.orm import Session, sessionmaker

from scheduler.clock import from_epoch_s
from scheduler.store.db import transaction, write_connection
from scheduler.store.tables import GpuSample, HostSample, TaskUsage
from scheduler.telemetry.accounting import AttemptUsage
from scheduler.telemetry.host import HostReading

_USAGE = cast(Table, TaskUsage.__table__)
_DELETE_USAGE = delete(_USAGE).where(
    _USAGE.c.task_id == bindparam("b_task_id"), _USAGE.c.attempt == bindparam("b_attempt")
)
_INSERT_USAGE = insert(_USAGE)


@dataclass(frozen=True, slots=True)
class GpuPoint:
    """One GPU sample as written or read: who held the GPU and what it reported."""

    node: str
    gpu_index: int
    ts_s: int
    task_id: int | None
    utilization_pct: float | None
    memory_used_mib: int | None
    power_w: float | None
    temperature_c: float | None
    resolution_s: int = 0


class TelemetryStore:
    """Reads and writes the telemetry tables."""

    def __init__(self, factory: sessionmaker[Session]) -> None:
        self.factory = factory
        self._engine = cast(Engine, factory.kw["bind"])

    def add_gpu_samples(self, points: Sequence[GpuPoint]) -> None:
        """Append GPU samples (one row per GPU and holder)."""
        if not points:
            return
        rows = [
            {
                "node": p.node,
                "gpu_index": p.gpu_index,
                "ts_s": p.ts_s,
                "resolution_s": p.resolution_s,
                "task_id": p.task_id,
                "utilization_pct": p.utilization_pct,
                "memory_used_mib": p.memory_used_mib,
                "power_w": p.power_w,
                "temperature_c": p.temperature_c,
            }
            for p in points
        ]
        with transaction(self.factory) as session:
            session.execute(insert(GpuSample), rows)

    def add_host_sample(self, node: str, ts_s: int, reading: HostReading) -> None:
        """Append one host reading."""
        self.add_host_samples(node, [(ts_s, reading)])

    def add_host_samples(self, node: str, readings: Sequence[tuple[int, HostReading]]) -> None:
        """Append host readings `(ts_s, reading)` of one node."""
        if not readings:
            return
        rows = [
            {
                "node": node,
                "ts_s": ts_s,
                "resolution_s": 0,
                "cpu_pct": reading.cpu_pct,
                "memory_pct": reading.memory_pct,
                "disk_pct": reading.disk_pct,
            }
            for ts_s, reading in readings
        ]
        with transaction(self.factory) as session:
            session.execute(insert(HostSample), rows)

    def gpu_samples(
        self,
        *,
        task_id: int | None = None,
        node: str | None = None,
        since_s: float | None = None,
        until_s: float | None = None,
    ) -> list[GpuPoint]:
        """Samples matching every filter given, oldest first."""
        query = select(GpuSample)
        if task_id is not None:
            query = query.where(GpuSample.task_id == task_id)
        if node is not None:
            query = query.where(GpuSample.node == node)
        if since_s is not None:
            query = query.where(GpuSample.ts_s >= int(since_s))
        if until_s is not None:
            query = query.where(GpuSample.ts_s <= int(until_s))
        with self.factory() as session:
            rows = session.scalars(query.order_by(GpuSample.ts_s, GpuSample.gpu_index)).all()
        return [
            GpuPoint(
                r.node, r.gpu_index, r.ts_s, r.task_id, r.utilization_pct, r.memory_used_mib, r.power_w,
                r.temperature_c, r.resolution_s,
            )
            for r in rows
        ]  # fmt: skip

    def latest_hosts(self, since_s: float) -> dict[str, tuple[int, HostReading]]:
        """The newest host reading of each node seen since `since_s`: node -> (ts_s, reading)."""
        newest = (
            select(HostSample.node, func.max(HostSample.ts_s).label("ts"))
            .where(HostSample.ts_s >= int(since_s))
            .group_by(HostSample.node)
            .subquery()
        )
        query = select(HostSample).join(
            newest, (HostSample.node == newest.c.node) & (HostSample.ts_s == newest.c.ts)
        )
        out: dict[str, tuple[int, HostReading]] = {}
        with self.factory() as session:
            for row in session.scalars(query):
                out[row.node] = (
                    row.ts_s,
                    HostReading(row.cpu_pct or 0.0, row.memory_pct or 0.0, row.disk_pct or 0.0),
                )
        return out

    def save_usage(self, usage: AttemptUsage) -> None:
        """Store an attempt's usage (replacing an earlier row for the same attempt)."""
        self.save_usages([usage])

    def save_usages(self, usages: Sequence[AttemptUsage]) -> None:
        """Store several attempts' usage in one transaction (each replaces an earlier row of its attempt)."""
        if not usages:
            return
        rows = [
            {
                "task_id": usage.task_id,
                "attempt": usage.attempt,
                "node": usage.node,
                "gpus": usage.gpus,
                "started_at": from_epoch_s(usage.started_s),
                "finished_at": from_epoch_s(usage.finished_s),
                "gpu_hours": usage.gpu_hours,
                "energy_kwh": usage.energy_kwh,
                "energy_source": usage.energy_source,
                "offpeak_energy_kwh": usage.offpeak_energy_kwh,
                "cost": usage.cost,
                "currency": usage.currency,
                "peak_memory_mib": usage.peak_memory_mib,
                "requested_memory_mib": usage.requested_memory_mib,
                "mean_utilization_pct": usage.mean_utilization_pct,
                "samples": usage.samples,
                "cpu_seconds": usage.cpu_s,
            }
            for usage in usages
        ]
        attempts = [{"b_task_id": usage.task_id, "b_attempt": usage.attempt} for usage in usages]
        with write_connection(self._engine) as connection:
            connection.execute(_DELETE_USAGE, attempts)
            connection.execute(_INSERT_USAGE, rows)

    def usage_rows(self, task_ids: Iterable[int]) -> dict[int, list[TaskUsage]]:
        """Usage rows of these tasks, by task, in attempt order."""
        ids = sorted(set(task_ids))
        out: dict[int, list[TaskUsage]] = {}
        if not ids:
            return out
        with self.factory() as session:
            rows = session.scalars(
                select(TaskUsage).where(TaskUsage.task_id.in_(ids)).order_by(TaskUsage.attempt)
            ).all()
        for row in rows:
            out.setdefault(row.task_id, []).append(row)
        return out
