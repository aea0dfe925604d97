"""Utilization reports aggregate by team, user and GPU; /metrics parses with Prometheus' own parser."""

from __future__ import annotations

import os

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from api.main import create_app
from scheduler.dispatcher import Dispatcher
from scheduler.gpus import SimulatedGpus
from scheduler.worker import Worker
from tests.conftest import wait_until


def _run_two_teams(cluster, make_identity, run_in_thread, tmp_path):
    alice, alice_token = make_identity("alice", "vision")
    bob, bob_token = make_identity("bob", "nlp")
    _admin, admin_token = make_identity("root", "ops", admin=True)
    worker = Worker(cluster, "box", SimulatedGpus("4x24", node="box"), base_env=dict(os.environ))
    worker.publish_node()
    run_in_thread(worker.run)
    run_in_thread(Dispatcher(cluster).run)
    ids = [
        cluster.submit(alice, {"command": "sleep 0.3", "gpus": 2, "workdir": str(tmp_path)})[0].id,
        cluster.submit(alice, {"command": "exit 1", "gpus": 1, "workdir": str(tmp_path)})[0].id,
        cluster.submit(bob, {"command": "sleep 0.2", "gpus": 1, "workdir": str(tmp_path)})[0].id,
    ]
    for task_id in ids:
        wait_until(lambda task_id=task_id: cluster.tasks.get_any(task_id).status in ("succeeded", "failed"))
    return alice_token, bob_token, admin_token


def test_the_utilization_report_groups_gpu_hours_and_outcomes_by_team(
    cluster, make_identity, run_in_thread, tmp_path
):
    alice_token, _, admin_token = _run_two_teams(cluster, make_identity, run_in_thread, tmp_path)
    client = TestClient(create_app(cluster))
    report = client.get(
        "/api/v1/reports/utilization?days=1", headers={"Authorization": f"Bearer {admin_token}"}
    ).json()
    rows = {row["key"]: row for row in report["rows"]}
    assert set(rows) == {"vision", "nlp"}
    assert (rows["vision"]["tasks"], rows["vision"]["succeeded"], rows["vision"]["failed"]) == (2, 1, 1)
    assert rows["vision"]["gpu_hours"] > rows["nlp"]["gpu_hours"] > 0
    assert report["capacity_gpu_hours"] == 4 * 24
    assert abs(report["total_gpu_hours"] - sum(row["gpu_hours"] for row in report["rows"])) < 1e-3

    by_gpu = client.get(
        "/api/v1/reports/utilization?days=1&by=gpu", headers={"Authorization": f"Bearer {admin_token}"}
    )
    assert all(row["key"].startswith("box:") for row in by_gpu.json()["rows"])
    own = client.get(
        "/api/v1/reports/utilization?days=1&by=user", headers={"Authorization": f"Bearer {alice_token}"}
    )
    assert [row["key"] for row in own.json()["rows"]] == ["vision/alice"]
    bad = client.get("/api/v1/reports/utilization?days=0", headers={"Authorization": f"Bearer {admin_token}"})
    assert bad.status_code == 422


def test_metrics_parse_and_count_outcomes_queue_and_gpus(cluster, make_identity, run_in_thread, tmp_path):
    _run_two_teams(cluster, make_identity, run_in_thread, tmp_path)
    text = TestClient(create_app(cluster)).get("/metrics").text
    families = {family.name: family for family in text_string_to_metric_families(text)}
    outcomes = {
        (sample.labels["status"], sample.labels["reason"]): sample.value
        for sample in families["nightshift_task_outcomes"].samples
        if sample.name.endswith("_total")
    }
    assert outcomes == {("succeeded", "exit"): 2, ("failed", "nonzero_exit"): 1}
    gpu_total = [
        s for s in families["nightshift_gpu_memory_total_bytes"].samples if s.labels["node"] == "box"
    ]
    assert len(gpu_total) == 4
    waits = {
        s.labels.get("le"): s.value
        for s in families["nightshift_task_wait_seconds"].samples
        if "le" in s.labels
    }
    assert waits["+Inf"] == 3
    passes = [s for s in families["nightshift_scheduler_pass_seconds"].samples if s.name.endswith("_count")]
    assert passes[0].value > 0
