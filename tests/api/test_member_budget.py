"""A person's own GPU-hour budget, live (real Redis, SQL, API): it holds their next GPU task, not a
teammate's; `GET /quota` and explain say when it frees; the report shows it and the person is warned."""

from __future__ import annotations

import os
import time
from datetime import datetime

import pytest

from api.main import create_app
from scheduler.dispatcher import Dispatcher
from scheduler.gpus import SimulatedGpus
from scheduler.notify.jobs import ClusterJobs
from scheduler.reports import utilization_report
from scheduler.store.identity import authenticate, create_token
from scheduler.worker import Worker
from tests.api.conftest import TestClient, bearer
from tests.observability.test_notify import _Collect
from tests.observability.test_reports import _ran

H = 3600.0


def test_a_person_past_their_own_budget_waits_while_a_teammate_starts_and_quota_says_when(
    make_cluster, tmp_path
):
    cluster = make_cluster(default_user_day_budget_gpu_h=2.0, borrowing=False, lease_ttl_s=300.0)
    Worker(cluster, "node-a", SimulatedGpus("4x24", node="node-a"), base_env=dict(os.environ)).publish_node()
    alice = create_token(cluster.factory, user="alice", team="vision")
    bob = create_token(cluster.factory, user="bob", team="vision")
    now = time.time()
    # alice ran 1 GPU for 2 h, ending 1 h ago: her 2 GPU-h of the day are used up until it starts ageing out
    _ran(cluster, authenticate(cluster.factory, alice), submitted=now - 3 * H, started=now - 3 * H,
         finished=now - H, tmp=tmp_path)  # fmt: skip
    with TestClient(create_app(cluster)) as client:
        ids = [
            client.post("/api/v1/tasks", json={"command": "true"}, headers=bearer(token)).json()["id"]
            for token in (alice, bob)
        ]
        cpu = client.post("/api/v1/tasks", json={"command": "true", "gpus": 0}, headers=bearer(alice)).json()
        Dispatcher(cluster).run_pass()
        mine = client.get("/api/v1/quota", headers=bearer(alice)).json()
        bobs = client.get("/api/v1/quota", headers=bearer(bob)).json()
        explained = client.get(f"/api/v1/tasks/{ids[0]}/explain", headers=bearer(alice)).json()

    assigned = cluster.queue.assignments()
    assert ids[1] in assigned and cpu["id"] in assigned  # bob's task, and her CPU-only one, start
    assert ids[0] not in assigned
    assert explained["reason"].startswith(
        "day budget of alice in team vision is used up (2.0/2 GPU-h); new starts again at "
    )
    # the span leaves the 24 h window from 21 h on: from then her use falls under the budget
    frees_at = datetime.fromisoformat(mine["user_budget"]["new_starts_at"]).timestamp()
    assert frees_at == pytest.approx(now + 21 * H, abs=30)
    assert datetime.fromisoformat(explained["estimated_start"]).timestamp() == pytest.approx(frees_at, abs=60)
    assert mine["user_budget"]["day"] == {"used_gpu_h": 2.0, "budget_gpu_h": 2.0, "state": "exhausted"}
    assert mine["user_budget"]["state"] == "exhausted" and mine["state"] == "ok"  # the team has no budget
    assert bobs["user_budget"]["state"] == "ok" and bobs["user_budget"]["day"]["budget_gpu_h"] == 2.0


def test_a_person_is_warned_of_their_own_budget_and_the_report_lists_it(make_cluster, tmp_path):
    cluster = make_cluster(user_week_budget_gpu_h={"alice": 2.5})
    alice = authenticate(cluster.factory, create_token(cluster.factory, user="alice", team="vision"))
    bob = authenticate(cluster.factory, create_token(cluster.factory, user="bob", team="vision"))
    now = time.time()
    _ran(cluster, alice, submitted=now - 3 * H, started=now - 3 * H, finished=now - H, tmp=tmp_path)
    _ran(cluster, bob, submitted=now - 3 * H, started=now - 3 * H, finished=now - H, gpus=4, tmp=tmp_path)
    notifier = _Collect()
    jobs = ClusterJobs(cluster, notifier)  # type: ignore[arg-type]

    warned = jobs.check_quotas()
    report = utilization_report(cluster.factory, now, 1, "team", cluster.policy_config, {}, 8)

    assert [(e.kind, e.user, e.team) for e in warned] == [("quota_warning", "alice", "vision")]
    assert warned[0].title == "alice in vision: 80% of their own week GPU-hour budget"
    assert "teammates" not in warned[0].text and "start as before" in warned[0].text
    assert jobs.check_quotas() == []  # once per window and day
    rows = {row["user"]: row for row in report["member_quota"]}
    assert rows["alice"]["week_share"] == pytest.approx(0.8, abs=0.001)
    assert rows["bob"]["week_budget_gpu_h"] is None and rows["bob"]["week_used_gpu_h"] == pytest.approx(8.0)
