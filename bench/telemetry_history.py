"""Telemetry history size: N days of samples for G GPUs (and the host) at the default interval, written
the way a worker writes them (one batch per sample) and downsampled as the worker's job does (raw 1 day,
1-minute means to 7 days, 10-minute means to 30 days, hourly beyond), in SQLite on disk.

Samples carry changing readings and task attributions (a task per GPU every few hours, some idle gaps) so
downsampling keeps realistic per-task rows. Reports the database size (after a WAL checkpoint, free pages
included: what the disk holds) and the rows per resolution. Target: 30 days x 8 GPUs < 50 MB.
Prints one JSON line.

Usage: python bench/telemetry_history.py [--days 30] [--gpus 8] [--interval-s 10]
"""

from __future__ import annotations

import argparse
import random
import time

from _harness import emit, machine, temp_home
from sqlalchemy import func, select, text

from scheduler.settings import Settings
from scheduler.store.db import create_db_engine, make_session_factory, migrate
from scheduler.store.tables import GpuSample, HostSample
from scheduler.telemetry.downsample import downsample
from scheduler.telemetry.host import HostReading
from scheduler.telemetry.store import GpuPoint, TelemetryStore

DAY_S = 86400
DOWNSAMPLE_EVERY_S = 6 * 3600  # the worker does it every 15 min; the result does not depend on it


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument(
        "--interval-s", type=float, default=Settings.model_fields["telemetry_interval_s"].default
    )
    args = parser.parse_args()
    rng = random.Random(7)
    with temp_home("telemetry") as home:
        path = home / "nightshift.db"
        engine = create_db_engine(f"sqlite:///{path}")
        migrate(engine)
        factory = make_session_factory(engine)
        store = TelemetryStore(factory)
        start = int(time.time()) - args.days * DAY_S
        step = args.interval_s
        samples = int(args.days * DAY_S / step)
        holder = [None] * args.gpus
        switch_at = [0.0] * args.gpus
        task_ids = iter(range(1, 10**9))
        began = time.perf_counter()
        next_downsample = start + DOWNSAMPLE_EVERY_S
        retention_s = Settings.model_fields["telemetry_retention_days"].default * DAY_S
        batch: list[GpuPoint] = []
        hosts: list[tuple[int, HostReading]] = []
        for n in range(samples):
            ts = start + n * step
            for gpu in range(args.gpus):
                if ts >= switch_at[gpu]:  # a new task (or an idle gap) every 1-6 hours
                    holder[gpu] = next(task_ids) if rng.random() < 0.8 else None
                    switch_at[gpu] = ts + rng.uniform(3600, 6 * 3600)
                busy = holder[gpu] is not None
                batch.append(
                    GpuPoint(
                        "node-a", gpu, int(ts), holder[gpu],
                        round(rng.uniform(60, 100), 1) if busy else 0.0,
                        rng.randint(10_000, 70_000) if busy else 0,
                        round(rng.uniform(200, 400), 1) if busy else 60.0,
                        float(rng.randint(40, 80)),
                    )
                )  # fmt: skip
            hosts.append((int(ts), HostReading(round(rng.uniform(0, 100), 1), 40.0, 55.0)))
            if len(hosts) >= 360 or ts >= next_downsample:  # batched: the point is the size, not the speed
                store.add_gpu_samples(batch)
                store.add_host_samples("node-a", hosts)
                batch, hosts = [], []
            if ts >= next_downsample:
                downsample(factory, ts, retention_s)
                next_downsample += DOWNSAMPLE_EVERY_S
        store.add_gpu_samples(batch)
        store.add_host_samples("node-a", hosts)
        downsample(factory, start + args.days * DAY_S, retention_s)
        raw = engine.raw_connection()
        try:
            raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            raw.close()
        with factory() as session:
            by_resolution = dict(
                session.execute(
                    select(GpuSample.resolution_s, func.count()).group_by(GpuSample.resolution_s)
                ).all()
            )
            host_rows = session.scalar(select(func.count()).select_from(HostSample))
            free_pages = session.execute(text("PRAGMA freelist_count")).scalar()
            page_size = session.execute(text("PRAGMA page_size")).scalar()
        engine.dispose()
        size_mb = sum(p.stat().st_size for p in home.glob("nightshift.db*")) / 1e6
        emit(
            {
                "bench": "telemetry_history",
                "days": args.days,
                "gpus": args.gpus,
                "interval_s": step,
                "samples_written": samples * args.gpus,
                "gpu_rows_by_resolution_s": {str(k): v for k, v in sorted(by_resolution.items())},
                "host_rows": host_rows,
                "size_mb": round(size_mb, 2),
                "free_mb": round((free_pages or 0) * (page_size or 0) / 1e6, 2),
                "target_mb": 50,
                "ok": size_mb < 50,
                "wall_s": round(time.perf_counter() - began, 1),
                "machine": machine(),
            }
        )


if __name__ == "__main__":
    main()
