"""Prometheus metrics from telemetry: GPU memory used and service state, worker liveness, host readings,
and the energy, cost, GPU-hours and CPU time tasks used (from `task_usage`). Read fresh at each scrape."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import func, select

from scheduler.clock import now_ms, now_s
from scheduler.service import Cluster
from scheduler.store.tables import Task, TaskUsage, Team
from scheduler.telemetry.store import TelemetryStore

MIB = 1024 * 1024
HOST_FRESH_S = 600.0


class TelemetryCollector(Collector):
    """Yields the telemetry metric families of one cluster."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        """Every family, read fresh."""
        yield from self._nodes()
        yield from self._hosts()
        yield from self._usage()

    def _nodes(self) -> Iterator[GaugeMetricFamily]:
        used = GaugeMetricFamily(
            "nightshift_gpu_memory_used_bytes", "GPU memory in use", labels=["node", "gpu", "model"]
        )
        out = GaugeMetricFamily(
            "nightshift_gpu_out_of_service",
            "1 when the GPU takes no new tasks (too hot, memory still held, unreadable)",
            labels=["node", "gpu", "reason"],
        )
        beat = GaugeMetricFamily(
            "nightshift_worker_last_heartbeat_timestamp_seconds",
            "When a node's worker last heartbeated (epoch seconds)",
            labels=["node"],
        )
        alive = GaugeMetricFamily("nightshift_worker_alive", "1 when the worker heartbeats", labels=["node"])
        now = now_ms()
        for node in self.cluster.nodes.all():
            beat.add_metric([node.name], node.heartbeat_ms / 1000.0)
            alive.add_metric([node.name], 1.0 if node.alive(now) else 0.0)
            for gpu in node.gpus:
                used_mib = gpu.memory_total_mib - gpu.memory_free_mib
                used.add_metric([node.name, str(gpu.index), gpu.name], used_mib * MIB)
                if gpu.out_of_service:
                    reason = gpu.out_of_service.split(":", 1)[0]
                    out.add_metric([node.name, str(gpu.index), reason], 1.0)
        yield from (used, out, beat, alive)

    def _hosts(self) -> Iterator[GaugeMetricFamily]:
        families = {
            "cpu": GaugeMetricFamily("nightshift_host_cpu_percent", "Host CPU use", labels=["node"]),
            "memory": GaugeMetricFamily("nightshift_host_memory_percent", "Host memory use", labels=["node"]),
            "disk": GaugeMetricFamily("nightshift_host_disk_percent", "Data disk use", labels=["node"]),
        }
        for node, (_ts, reading) in (
            TelemetryStore(self.cluster.factory).latest_hosts(now_s() - HOST_FRESH_S).items()
        ):
            families["cpu"].add_metric([node], reading.cpu_pct)
            families["memory"].add_metric([node], reading.memory_pct)
            families["disk"].add_metric([node], reading.disk_pct)
        yield from families.values()

    def _usage(self) -> Iterator[CounterMetricFamily]:
        energy = CounterMetricFamily("nightshift_task_energy_kwh", "Energy tasks used", labels=["team"])
        cost = CounterMetricFamily(
            "nightshift_task_energy_cost", "Energy cost of tasks", labels=["team", "currency"]
        )
        hours = CounterMetricFamily(
            "nightshift_task_gpu_hours", "GPU-hours of ended attempts", labels=["team"]
        )
        cpu = CounterMetricFamily(
            "nightshift_task_cpu_seconds",
            "CPU time of ended attempts whose jobs ran in a cgroup",
            labels=["team"],
        )
        with self.cluster.factory() as session:
            rows = session.execute(
                select(
                    Team.name,
                    TaskUsage.currency,
                    func.sum(TaskUsage.energy_kwh),
                    func.sum(TaskUsage.cost),
                    func.sum(TaskUsage.gpu_hours),
                    func.sum(TaskUsage.cpu_seconds),
                )
                .join(Task, TaskUsage.task_id == Task.id)
                .join(Team, Task.team_id == Team.id)
                .group_by(Team.name, TaskUsage.currency)
            ).all()
        # one sample per team (rows are per team and currency, when the tariff's currency changed)
        by_team: dict[str, list[float]] = {}
        cpu_by_team: dict[str, float] = {}
        for team, currency, kwh, money, gpu_h, cpu_s in rows:
            cost.add_metric([team, currency], float(money or 0.0))
            sums = by_team.setdefault(team, [0.0, 0.0])
            sums[0] += float(kwh or 0.0)
            sums[1] += float(gpu_h or 0.0)
            if cpu_s is not None:  # none of its attempts had a cgroup: unknown, not 0
                cpu_by_team[team] = cpu_by_team.get(team, 0.0) + float(cpu_s)
        for team, (kwh_sum, gpu_h_sum) in by_team.items():
            energy.add_metric([team], kwh_sum)
            hours.add_metric([team], gpu_h_sum)
        for team, cpu_sum in cpu_by_team.items():
            cpu.add_metric([team], cpu_sum)
        yield from (energy, cost, hours, cpu)
