"""Fair share within a team, read from SQL: each member's decayed GPU use comes from the attempts they ran
(`gpu_spans` names whose they are), and explain shows the lighter member's waiting task with the larger
fair-share credit."""

from __future__ import annotations

from scheduler.clock import now_ms
from scheduler.cluster_state import UsageCache, gather_state
from scheduler.forecasts import explain_task, quota_status
from scheduler.nodes import NodeGpu
from scheduler.store.identity import authenticate, create_token
from tests.conftest import wait_until

GB = 1024


def test_the_member_who_ran_lately_gets_less_fair_share_credit_than_the_one_who_did_not(
    make_cluster, tmp_path
):
    cluster = make_cluster()
    cluster.nodes.publish("node-a", [NodeGpu(0, "SIM", 24 * GB, 24 * GB)], now_ms(), "simulated")
    alice, bob = (
        authenticate(cluster.factory, create_token(cluster.factory, user=name, team="lab"))
        for name in ("alice", "bob")
    )
    running, _ = cluster.submit(alice, {"command": "sleep 60", "workdir": str(tmp_path)})
    assert cluster.queue.assign(running.id, "node-a", [0], now_ms())
    claim = wait_until(lambda: cluster.queue.claim("node-a", now_ms(), 60_000))
    assert cluster.tasks.mark_running(running.id, claim.token, "node-a", claim.gpu_indices) == 1
    alices, _ = cluster.submit(alice, {"command": "true", "workdir": str(tmp_path)})
    bobs, _ = cluster.submit(bob, {"command": "true", "workdir": str(tmp_path)})
    usage = UsageCache(cluster)
    wait_until(lambda: gather_state(cluster, usage, 8).usage["lab"].member_decayed_gpu_s.get("alice", 0) > 0)

    members = gather_state(cluster, usage, 8).usage["lab"].member_decayed_gpu_s
    alice_part = explain_task(cluster, usage, alice, alices.id)["priority"]["fairshare_part_s"]
    bob_part = explain_task(cluster, usage, bob, bobs.id)["priority"]["fairshare_part_s"]

    assert set(members) == {"alice"}  # bob ran nothing
    max_credit_s = cluster.policy_config.fairshare_max_credit_s
    assert bob_part == max_credit_s  # none of the team's use: twice its factor (0.5), capped at 1
    assert alice_part == max_credit_s / 4  # all of it, of two members: half the team's factor

    # and `GET /quota` (nightshift quota, the chat) says where each stands within the team
    alices_quota = quota_status(cluster, usage, "lab", "alice")["fair_share"]["member"]
    bobs_quota = quota_status(cluster, usage, "lab", "bob")["fair_share"]["member"]
    assert (alices_quota["part_of_team"], alices_quota["members"], alices_quota["credit_h"]) == (1.0, 2, 1.5)
    assert (bobs_quota["part_of_team"], bobs_quota["decayed_gpu_h"], bobs_quota["credit_h"]) == (
        0.0,
        0.0,
        6.0,
    )
