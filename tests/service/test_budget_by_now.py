"""A used-up budget is seen at once, not when the team's usage is next read from SQL (every 10 s): the
scheduler adds the running work since that reading, so a team cannot start more in those seconds."""

from __future__ import annotations

from scheduler.clock import now_ms
from scheduler.cluster_state import UsageCache, gather_state
from scheduler.dispatcher import Dispatcher
from scheduler.nodes import NodeGpu
from scheduler.policy.config import TeamUsage
from scheduler.policy.rolling import with_running_to
from scheduler.policy.types import RunningTask
from scheduler.store.identity import authenticate, create_token
from tests.conftest import wait_until

GB = 1024
BUDGET_GPU_H = 0.0005  # 1.8 GPU-seconds


def test_running_work_since_the_reading_is_added_up_to_now() -> None:
    usage = {"nlp": TeamUsage("nlp", gpu_s_last_day=100.0, gpu_s_last_week=500.0)}
    running = [
        RunningTask(1, "nlp", "ana", "n0", (0, 1), started_at_s=0.0),  # from before the reading
        RunningTask(2, "nlp", "ana", "n0", (2,), started_at_s=1_005.0),  # started since
        RunningTask(3, "cv", "bo", "n1", (0,), started_at_s=1_020.0),  # a team not in the reading
    ]

    now = with_running_to(usage, running, usage_at_s=1_000.0, now_s=1_010.0)

    assert (now["nlp"].gpu_s_last_day, now["nlp"].gpu_s_last_week) == (125.0, 525.0)  # 2 x 10 s + 1 x 5 s
    assert "cv" not in now and usage["nlp"].gpu_s_last_day == 100.0  # nothing yet; the reading untouched


def test_a_pass_sees_a_budget_used_up_since_the_last_reading(make_cluster, tmp_path) -> None:
    cluster = make_cluster(day_budget_gpu_h={"vision": BUDGET_GPU_H})
    gpus = [NodeGpu(i, "SIM", 24 * GB, 24 * GB) for i in range(2)]
    cluster.nodes.publish("node-a", gpus, now_ms(), "simulated")
    who = authenticate(cluster.factory, create_token(cluster.factory, user="alice", team="vision"))
    first, _ = cluster.submit(who, {"command": "sleep 60", "workdir": str(tmp_path)})
    assert cluster.queue.assign(first.id, "node-a", [0], now_ms())
    claim = wait_until(lambda: cluster.queue.claim("node-a", now_ms(), 60_000))
    assert cluster.tasks.mark_running(first.id, claim.token, "node-a", claim.gpu_indices) == 1
    usage = UsageCache(cluster)
    assert gather_state(cluster, usage, 8).usage.get("vision", TeamUsage("vision")).gpu_s_last_day < 1.8
    second, _ = cluster.submit(who, {"command": "true", "workdir": str(tmp_path)})

    # When the running task has used the budget up, but the usage was read before that (and is not again)
    def used_up() -> bool:
        return gather_state(cluster, usage, 8).usage["vision"].gpu_s_last_day >= 1.8

    wait_until(used_up, timeout_s=9)
    state = gather_state(cluster, usage, 8)
    decisions = Dispatcher(cluster)._policy(state, state.queued, state.gpus, with_reasons=True)

    # Then the second task does not start: the pass saw the budget used up by now
    assert second.id not in {start.task_id for start in decisions.starts}
    assert decisions.pending_reasons[second.id].startswith("day budget of team vision is used up")
