"""Prometheus metrics, collected at scrape time from SQL (the truth) and Redis (what the processes count).

Counters that only grow with history (task outcomes, wait and run-time histograms) are computed from SQL,
so every API process reports the same numbers; the scheduler's own counts (pass durations, lease expiries)
live in one Redis hash that any process can read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast, get_args

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry
from sqlalchemy import func, select

from scheduler.clock import now_ms
from scheduler.service import Cluster
from scheduler.spec import Priority
from scheduler.store.tables import Attempt, Task, Team
from scheduler.telemetry.metrics import TelemetryCollector

WAIT_BUCKETS_S = (1.0, 10.0, 60.0, 300.0, 900.0, 3600.0, 4 * 3600.0, 12 * 3600.0, 86400.0, 3 * 86400.0)
RUN_BUCKETS_S = (10.0, 60.0, 600.0, 3600.0, 4 * 3600.0, 12 * 3600.0, 86400.0, 3 * 86400.0, 7 * 86400.0)
PASS_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)


def record_pass(cluster: Cluster, duration_s: float) -> None:
    """Count one scheduling pass and its duration (called by the scheduler loop)."""
    key = cluster.queue.keys.prefix + "metrics"
    bucket = next((f"pass_le_{b}" for b in PASS_BUCKETS_S if duration_s <= b), "pass_le_inf")
    pipe = cluster.queue.client.pipeline(transaction=False)
    pipe.hincrbyfloat(key, "pass_seconds_sum", duration_s)
    pipe.hincrby(key, "pass_count", 1)
    pipe.hincrby(key, bucket, 1)
    pipe.execute()


def record_lease_expiries(cluster: Cluster, count: int) -> None:
    """Count leases the reaper took (each one a worker that stopped heartbeating)."""
    if count:
        cluster.queue.client.hincrby(cluster.queue.keys.prefix + "metrics", "lease_expiries", count)


def _histogram(
    name: str, doc: str, durations: list[float], buckets: tuple[float, ...]
) -> HistogramMetricFamily:
    counts = [sum(1 for d in durations if d <= b) for b in buckets]
    family = HistogramMetricFamily(name, doc)
    family.add_metric(
        [], [(str(b), c) for b, c in zip(buckets, counts, strict=True)] + [("+Inf", len(durations))],
        sum(durations),
    )  # fmt: skip
    return family


class ClusterCollector(Collector):
    """Yields nightshift's metrics for one cluster at each scrape."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily | HistogramMetricFamily]:
        """Every metric family, read fresh."""
        yield from self._tasks()
        yield from self._gpus()
        yield from self._scheduler()

    def _tasks(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily | HistogramMetricFamily]:
        queued = GaugeMetricFamily("nightshift_queue_length", "Queued tasks", labels=["team", "priority"])
        running = GaugeMetricFamily("nightshift_tasks_running", "Running tasks", labels=["team"])
        outcomes = CounterMetricFamily(
            "nightshift_task_outcomes", "Finished tasks", labels=["status", "reason"]
        )
        with self.cluster.factory() as session:
            by_team = session.execute(
                select(Team.name, Task.status, Task.priority, func.count())
                .join(Team, Task.team_id == Team.id)
                .where(Task.status.in_(("queued", "running")))
                .group_by(Team.name, Task.status, Task.priority)
            )
            # every team's series, 0 when it has none: a series that vanishes when a queue drains reads as
            # "no data" to a dashboard or an alert, not as an empty queue
            teams = sorted(session.scalars(select(Team.name)).all())
            queued_by = {(team, priority): 0 for team in teams for priority in get_args(Priority)}
            running_by_team: dict[str, int] = dict.fromkeys(teams, 0)
            for team, status, priority, count in by_team:
                if status == "queued":
                    queued_by[(team, priority)] = int(count)
                else:
                    running_by_team[team] = running_by_team.get(team, 0) + int(count)
            for (team, priority), count in queued_by.items():
                queued.add_metric([team, priority], count)
            for team, count in running_by_team.items():
                running.add_metric([team], count)
            finished = session.execute(
                select(Task.status, func.coalesce(Task.reason, "none"), func.count())
                .where(Task.status.in_(("succeeded", "failed", "cancelled")))
                .group_by(Task.status, Task.reason)
            )
            for status, reason, count in finished:
                outcomes.add_metric([status, reason], count)
            times = session.execute(
                select(Task.started_at, Task.finished_at).where(Task.started_at.is_not(None))
            ).all()
            firsts = session.execute(
                select(Task.submitted_at, Attempt.started_at)
                .join(Attempt, Attempt.task_id == Task.id)
                .where(Attempt.number == 1)
            ).all()
        # a wait ends at the first start, as the utilization report counts it: a retried task's earlier
        # attempts ran, they did not wait
        waits = [(started - submitted).total_seconds() for submitted, started in firsts]
        runs = [(finished - started).total_seconds() for started, finished in times if started and finished]
        yield queued
        yield running
        yield outcomes
        yield _histogram("nightshift_task_wait_seconds", "Submit to first start", waits, WAIT_BUCKETS_S)
        yield _histogram("nightshift_task_run_seconds", "Start to end of finished tasks", runs, RUN_BUCKETS_S)

    def _gpus(self) -> Iterator[GaugeMetricFamily]:
        labels = ["node", "gpu", "model"]
        util = GaugeMetricFamily("nightshift_gpu_utilization_percent", "GPU utilization", labels=labels)
        free = GaugeMetricFamily("nightshift_gpu_memory_free_bytes", "Free GPU memory", labels=labels)
        total = GaugeMetricFamily("nightshift_gpu_memory_total_bytes", "GPU memory", labels=labels)
        power = GaugeMetricFamily("nightshift_gpu_power_watts", "GPU power draw", labels=labels)
        temp = GaugeMetricFamily("nightshift_gpu_temperature_celsius", "GPU temperature", labels=labels)
        heartbeat = GaugeMetricFamily(
            "nightshift_worker_heartbeat_age_seconds", "Seconds since a node's worker spoke", labels=["node"]
        )
        drained = GaugeMetricFamily(
            "nightshift_node_drained", "1 when the node takes no new tasks", labels=["node"]
        )
        reserved = GaugeMetricFamily(
            "nightshift_node_reserved",
            "A node's reservation for a team not over: 1 once begun, 0 while ahead",
            labels=["node", "team"],
        )
        maintenance = GaugeMetricFamily(
            "nightshift_node_maintenance_start_timestamp_seconds",
            "When a node's maintenance not over begins (Unix time)",
            labels=["node"],
        )
        now = now_ms()
        for node in self.cluster.nodes.all():
            heartbeat.add_metric([node.name], (now - node.heartbeat_ms) / 1000.0)
            drained.add_metric([node.name], 1.0 if node.drained_at(now) else 0.0)
            holding: dict[str, float] = {}  # team -> 1 while one of its reservations holds the node
            for held in node.next_reservations(now):
                holding[held.team] = max(holding.get(held.team, 0.0), 1.0 if held.start_ms <= now else 0.0)
            for team, value in holding.items():
                reserved.add_metric([node.name, team], value)
            if (window := node.maintenance(now)) is not None:
                maintenance.add_metric([node.name], window[0] / 1000.0)
            for gpu in node.gpus:
                values = [node.name, str(gpu.index), gpu.name]
                free.add_metric(values, gpu.memory_free_mib * 1024 * 1024)
                total.add_metric(values, gpu.memory_total_mib * 1024 * 1024)
                for family, reading in (
                    (util, gpu.utilization_pct),
                    (power, gpu.power_w),
                    (temp, gpu.temperature_c),
                ):
                    if reading is not None:
                        family.add_metric(values, reading)
        yield from (util, free, total, power, temp, heartbeat, drained, reserved, maintenance)

    def _scheduler(self) -> Iterator[CounterMetricFamily | HistogramMetricFamily]:
        raw = cast(
            dict[str, str], self.cluster.queue.client.hgetall(self.cluster.queue.keys.prefix + "metrics")
        )
        expiries = CounterMetricFamily("nightshift_lease_expiries", "Leases the reaper took (lost workers)")
        expiries.add_metric([], float(raw.get("lease_expiries", 0)))
        yield expiries
        cumulative, buckets = 0, []
        for bound in PASS_BUCKETS_S:
            cumulative += int(raw.get(f"pass_le_{bound}", 0))
            buckets.append((str(bound), cumulative))
        count = int(raw.get("pass_count", 0))
        passes = HistogramMetricFamily("nightshift_scheduler_pass_seconds", "Duration of one scheduling pass")
        passes.add_metric([], [*buckets, ("+Inf", count)], float(raw.get("pass_seconds_sum", 0.0)))
        yield passes


def registry_for(cluster: Cluster) -> CollectorRegistry:
    """A registry holding only nightshift's cluster metrics."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ClusterCollector(cluster))
    registry.register(TelemetryCollector(cluster))
    return registry


__all__ = ["ClusterCollector", "record_lease_expiries", "record_pass", "registry_for"]
