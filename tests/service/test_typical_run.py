"""The live scheduler applies the cluster's observed typical run time as the simulator does."""

from __future__ import annotations

from scheduler.clock import now_ms
from scheduler.cluster_state import UsageCache, gather_state
from scheduler.dispatcher import Dispatcher
from scheduler.nodes import NodeGpu
from scheduler.policy.estimate import MIN_RECENT_RUNS

GB = 1024


def _run_to_success(cluster, who, tmp_path) -> None:
    task, _ = cluster.submit(who, {"command": "true", "workdir": str(tmp_path)})
    assert cluster.queue.assign(task.id, "node-a", (0,), now_ms())
    claim = cluster.queue.claim("node-a", now_ms(), 30_000)
    assert claim is not None and claim.task_id == task.id
    assert cluster.tasks.mark_running(task.id, claim.token, "node-a", claim.gpu_indices) == 1
    assert cluster.settle_attempt(task.id, claim.token, "exit", 0) == "succeeded"


def test_after_enough_runs_end_a_pass_applies_their_median_to_the_wide_task_delay(
    cluster, make_identity, tmp_path
) -> None:
    who, _ = make_identity()
    cluster.nodes.publish("node-a", [NodeGpu(0, "SIM", 24 * GB, 24 * GB)], now_ms(), "simulated")
    dispatcher = Dispatcher(cluster)
    # Given fewer finished tasks than it takes to know the typical run time
    for _ in range(MIN_RECENT_RUNS - 1):
        _run_to_success(cluster, who, tmp_path)
    state = gather_state(cluster, UsageCache(cluster), 8)
    assert state.typical_run_s is None
    assert dispatcher._pass_config(state).oldest_first_delay_s() == cluster.policy_config.oldest_first_after_s
    # When one more ends, Then a pass knows it (these run for milliseconds) and the delay shrinks with it
    _run_to_success(cluster, who, tmp_path)
    state = gather_state(cluster, UsageCache(cluster), 8)
    assert state.typical_run_s is not None and 0 <= state.typical_run_s < 5
    config = dispatcher._pass_config(state)
    assert config.typical_run_s == state.typical_run_s
    assert config.oldest_first_delay_s() == config.oldest_first_after_runs * state.typical_run_s
    assert dispatcher._pass_config(state) is config  # reused while it stays the same
