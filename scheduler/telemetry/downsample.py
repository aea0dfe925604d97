"""Downsampling with age, so months of history stay small.

Tiers (age of a sample -> resolution it is kept at):

    younger than 1 day   raw (every sample, the default 10 s interval)
    1 to 7 days          1-minute means
    7 to 30 days         10-minute means
    30 days to retention hourly means; older than the retention, deleted

A downsampled GPU row keeps the mean utilization and power, and the peak memory and temperature of its
bucket; rows of different tasks on one GPU stay apart, so per-task history survives downsampling. Bucket
edges are aligned to whole buckets, so running `downsample` at any time and as often as wanted gives the
same result as running it once.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, Integer, delete, func, insert, literal, literal_column, select
from sqlalchemy.orm import InstrumentedAttribute, Session, sessionmaker

from scheduler.store.db import transaction
from scheduler.store.tables import GpuSample, HostSample

DAY_S = 86400


@dataclass(frozen=True, slots=True)
class Tier:
    """Samples older than `after_s` are kept as means over buckets of `bucket_s`."""

    after_s: int
    bucket_s: int


DEFAULT_TIERS: tuple[Tier, ...] = (Tier(DAY_S, 60), Tier(7 * DAY_S, 600), Tier(30 * DAY_S, 3600))


@dataclass(frozen=True, slots=True)
class DownsampleReport:
    """How many rows one pass read and wrote, and how many old ones it deleted."""

    merged: int = 0
    written: int = 0
    deleted: int = 0


def downsample(
    factory: sessionmaker[Session],
    now_s: float,
    retention_s: float,
    tiers: tuple[Tier, ...] = DEFAULT_TIERS,
) -> DownsampleReport:
    """Merge samples into the coarser buckets their age calls for and delete those past `retention_s`."""
    merged = written = deleted = 0
    with transaction(factory) as session:
        for tier in tiers:
            cutoff = (int(now_s) - tier.after_s) // tier.bucket_s * tier.bucket_s
            m, w = _merge_gpu(session, cutoff, tier.bucket_s)
            m2, w2 = _merge_host(session, cutoff, tier.bucket_s)
            merged, written = merged + m + m2, written + w + w2
        oldest = int(now_s - retention_s)
        for table in (GpuSample, HostSample):
            result = session.execute(delete(table).where(table.ts_s < oldest))
            deleted += int(getattr(result, "rowcount", 0) or 0)
    return DownsampleReport(merged, written, deleted)


def _merge_gpu(session: Session, cutoff: int, bucket_s: int) -> tuple[int, int]:
    finer = (GpuSample.ts_s < cutoff) & (GpuSample.resolution_s < bucket_s)
    count = session.scalar(select(func.count()).select_from(GpuSample).where(finer)) or 0
    if not count:
        return 0, 0
    bucket = _bucket(GpuSample.ts_s, bucket_s)
    grouped = (
        select(
            GpuSample.node,
            GpuSample.gpu_index,
            bucket.label("ts"),
            literal(bucket_s, Integer),
            GpuSample.task_id,
            func.avg(GpuSample.utilization_pct),
            func.max(GpuSample.memory_used_mib),
            func.avg(GpuSample.power_w),
            func.max(GpuSample.temperature_c),
        )
        .where(finer)
        .group_by(GpuSample.node, GpuSample.gpu_index, bucket, GpuSample.task_id)
    )
    rows = session.execute(grouped).all()
    session.execute(delete(GpuSample).where(finer))
    session.execute(
        insert(GpuSample),
        [
            {
                "node": node,
                "gpu_index": index,
                "ts_s": int(ts),
                "resolution_s": bucket_s,
                "task_id": task_id,
                "utilization_pct": _round(util),
                "memory_used_mib": None if mem is None else int(mem),
                "power_w": _round(power),
                "temperature_c": temp,
            }
            for node, index, ts, _res, task_id, util, mem, power, temp in rows
        ],
    )
    return int(count), len(rows)


def _merge_host(session: Session, cutoff: int, bucket_s: int) -> tuple[int, int]:
    finer = (HostSample.ts_s < cutoff) & (HostSample.resolution_s < bucket_s)
    count = session.scalar(select(func.count()).select_from(HostSample).where(finer)) or 0
    if not count:
        return 0, 0
    bucket = _bucket(HostSample.ts_s, bucket_s)
    grouped = (
        select(
            HostSample.node,
            bucket.label("ts"),
            func.avg(HostSample.cpu_pct),
            func.avg(HostSample.memory_pct),
            func.max(HostSample.disk_pct),
        )
        .where(finer)
        .group_by(HostSample.node, bucket)
    )
    rows = session.execute(grouped).all()
    session.execute(delete(HostSample).where(finer))
    session.execute(
        insert(HostSample),
        [
            {
                "node": node,
                "ts_s": int(ts),
                "resolution_s": bucket_s,
                "cpu_pct": _round(cpu),
                "memory_pct": _round(mem),
                "disk_pct": disk,
            }
            for node, ts, cpu, mem, disk in rows
        ],
    )
    return int(count), len(rows)


def _bucket(column: ColumnElement[int] | InstrumentedAttribute[int], bucket_s: int) -> ColumnElement[int]:
    """The start of the bucket holding `column` (integer division; the width inlined so that PostgreSQL
    sees the same expression in SELECT and GROUP BY)."""
    width = literal_column(str(int(bucket_s)), Integer)
    return (column // width) * width


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 2)
