"""/metrics with telemetry: per-GPU readings, memory used, out-of-service GPUs, worker heartbeats, host
readings and task energy, parsed with prometheus_client's own parser; the Grafana dashboard uses only
metric names /metrics serves."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from api.main import create_app
from scheduler.clock import now_ms
from scheduler.nodes import NodeGpu, TeamReservation
from scheduler.telemetry.accounting import AttemptUsage
from scheduler.telemetry.store import TelemetryStore
from tests.conftest import wait_until

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "nightshift.json"
SUFFIXES = ("_bucket", "_count", "_sum", "_total", "_created")


def _families(cluster) -> dict:
    text = TestClient(create_app(cluster)).get("/metrics").text
    return {family.name: family for family in text_string_to_metric_families(text)}


def _samples(families, name):
    return {tuple(sorted(s.labels.items())): s.value for s in families[name].samples}


def test_metrics_carry_gpu_readings_heartbeats_hosts_and_energy(cluster, make_identity, start_node, tmp_path):
    who, _ = make_identity("alice", "vision")
    node = start_node(gpus="2x24", start_s=time.time())  # host readings count while fresh
    task = cluster.submit(who, {"command": "sleep 0.3", "workdir": str(tmp_path)})[0]
    wait_until(lambda: task.id in node.worker.gpu_holders())
    gpu = node.worker.gpu_holders()[task.id][0]
    node.gpus.set_reading(gpu, utilization_pct=88, memory_used_mib=2048, power_w=250, temperature_c=66)
    node.gpus.set_reading(1 - gpu, temperature_c=95)
    node.telemetry.sample_once(node.clock.advance(10))
    node.worker.publish_node()
    wait_until(lambda: cluster.tasks.get_any(task.id).status == "succeeded")

    families = _families(cluster)

    labels = (("gpu", str(gpu)), ("model", "Simulated GPU 24GB"), ("node", "node-a"))
    assert _samples(families, "nightshift_gpu_utilization_percent")[labels] == 88.0
    assert _samples(families, "nightshift_gpu_memory_used_bytes")[labels] == 2048 * 1024 * 1024
    assert _samples(families, "nightshift_gpu_power_watts")[labels] == 250.0
    assert _samples(families, "nightshift_gpu_temperature_celsius")[labels] == 66.0
    hot = _samples(families, "nightshift_gpu_out_of_service")
    assert hot == {  # the other GPU is too hot; this one still holds the ended task's 2 GiB
        (("gpu", str(1 - gpu)), ("node", "node-a"), ("reason", "too hot")): 1.0,
        (("gpu", str(gpu)), ("node", "node-a"), ("reason", "memory still held")): 1.0,
    }
    assert _samples(families, "nightshift_worker_alive") == {(("node", "node-a"),): 1.0}
    assert _samples(families, "nightshift_worker_last_heartbeat_timestamp_seconds")[(("node", "node-a"),)] > 0
    assert _samples(families, "nightshift_host_cpu_percent") == {(("node", "node-a"),): 12.5}
    energy = {k: v for k, v in _samples(families, "nightshift_task_energy_kwh").items()}
    assert energy[(("team", "vision"),)] >= 0.0


def test_the_grafana_dashboard_is_valid_json_and_uses_only_served_metric_names(cluster):
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    used = set()
    for expr in exprs:
        for name in re.findall(r"\bnightshift_[a-z_]+", expr):
            for suffix in SUFFIXES:
                if name.endswith(suffix):
                    name = name[: -len(suffix)]
                    break
            used.add(name)
    served = set(_families(cluster))
    assert used and used <= served, sorted(used - served)
    assert {"nightshift_gpu_utilization_percent", "nightshift_worker_heartbeat_age_seconds"} <= used


def test_task_usage_counters_have_one_sample_per_team_and_cpu_time_only_where_known(
    cluster, make_identity, tmp_path
):
    alice, _ = make_identity("alice", "vision")
    bob, _ = make_identity("bob", "nlp")
    first, second, other = (
        cluster.submit(who, {"command": "true", "workdir": str(tmp_path)})[0] for who in (alice, alice, bob)
    )
    store = TelemetryStore(cluster.factory)
    # vision: two attempts priced in two currencies (the tariff changed), both in a cgroup
    store.save_usage(AttemptUsage(first.id, 1, "box", 1, 0.0, 3600.0, 1.0, 0.3, "measured", 0.1, 0.09, "EUR",
                                  None, None, None, 0, cpu_s=600.0))  # fmt: skip
    store.save_usage(AttemptUsage(second.id, 1, "box", 2, 0.0, 3600.0, 2.0, 0.5, "measured", 0.2, 0.15, "USD",
                                  None, None, None, 0, cpu_s=900.0))  # fmt: skip
    # nlp: no cgroup, so no CPU time
    store.save_usage(AttemptUsage(other.id, 1, "box", 1, 0.0, 1800.0, 0.5, 0.1, "estimated", 0.0, 0.03, "EUR",
                                  None, None, None, 0))  # fmt: skip

    families = _families(cluster)

    assert _samples(families, "nightshift_task_gpu_hours") == {
        (("team", "vision"),): 3.0,
        (("team", "nlp"),): 0.5,
    }
    assert _samples(families, "nightshift_task_energy_kwh")[(("team", "vision"),)] == pytest.approx(0.8)
    assert _samples(families, "nightshift_task_energy_cost") == {
        (("currency", "EUR"), ("team", "vision")): pytest.approx(0.09),
        (("currency", "USD"), ("team", "vision")): pytest.approx(0.15),
        (("currency", "EUR"), ("team", "nlp")): pytest.approx(0.03),
    }
    assert _samples(families, "nightshift_task_cpu_seconds") == {(("team", "vision"),): 1500.0}


def test_reservations_and_maintenance_of_the_nodes_are_served(cluster):
    gpus = [NodeGpu(0, "NVIDIA A100", 80 * 1024, 80 * 1024)]
    for name in ("box-1", "box-2"):
        cluster.nodes.publish(name, gpus, now_ms(), "nvml")
    hour_ms, now = 3600 * 1000, now_ms()
    cluster.nodes.reserve("box-1", TeamReservation("vision", now - hour_ms, now + hour_ms), now)
    cluster.nodes.reserve("box-1", TeamReservation("nlp", now + 2 * hour_ms, now + 3 * hour_ms), now)
    cluster.nodes.set_drained("box-2", True, now + hour_ms, until_ms=now + 2 * hour_ms)

    families = _families(cluster)

    assert _samples(families, "nightshift_node_reserved") == {
        (("node", "box-1"), ("team", "vision")): 1.0,  # begun
        (("node", "box-1"), ("team", "nlp")): 0.0,  # ahead
    }
    starts = _samples(families, "nightshift_node_maintenance_start_timestamp_seconds")
    assert starts == {(("node", "box-2"),): (now + hour_ms) / 1000.0}


def test_a_team_with_several_reservations_of_a_node_is_one_series_set_while_any_holds_it(cluster):
    cluster.nodes.publish("box-1", [NodeGpu(0, "NVIDIA A100", 80 * 1024, 80 * 1024)], now_ms(), "nvml")
    hour_ms, day_ms, now = 3600 * 1000, 86_400_000, now_ms()
    for held in (
        TeamReservation("vision", now + 2 * hour_ms, now + 3 * hour_ms),
        TeamReservation("vision", now - day_ms - hour_ms, now - day_ms + hour_ms, "daily"),  # today's: begun
    ):
        assert cluster.nodes.reserve("box-1", held, now)

    samples = _families(cluster)["nightshift_node_reserved"].samples

    assert [(s.labels, s.value) for s in samples] == [({"node": "box-1", "team": "vision"}, 1.0)]


def test_a_team_whose_queue_drained_reads_zero_not_no_data(cluster, make_identity, tmp_path):
    alice, _ = make_identity("alice", "vision")
    make_identity("bob", "nlp")
    task, _ = cluster.submit(alice, {"command": "true", "priority": "high", "workdir": str(tmp_path)})
    before = _families(cluster)
    cluster.cancel(alice, task.id)

    after = _families(cluster)

    assert _samples(before, "nightshift_queue_length")[(("priority", "high"), ("team", "vision"))] == 1.0
    queued = _samples(after, "nightshift_queue_length")
    assert len(queued) == 8 and set(queued.values()) == {0.0}  # two teams x four classes
    assert _samples(after, "nightshift_tasks_running") == {
        (("team", "nlp"),): 0.0,
        (("team", "vision"),): 0.0,
    }
