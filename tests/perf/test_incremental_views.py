"""The faster paths decide exactly like the plain ones: a copy-on-write `Pool`, the simulator's kept pool,
and the scheduler's batched Redis/SQL reads (behaviour only; no timings)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.clock import now_ms, now_s
from scheduler.dispatcher import Dispatcher
from scheduler.nodes import NodeGpu, nodes_from_raw
from scheduler.policy.config import PolicyConfig
from scheduler.policy.engine import decide
from scheduler.policy.placement import Pool
from scheduler.policy.replay import Replay
from scheduler.store.queue import Claim
from tests.policy.builders import GB, make_gpus, make_task


def _state(pool: Pool) -> dict[tuple[str, int], tuple[int, float]]:
    return {(g.node, g.index): (g.free_mib, g.shares) for n in pool.nodes.values() for g in n.gpus}


def test_a_copy_and_its_original_change_independently() -> None:
    # Given a pool and a copy-on-write copy of it
    pool = Pool(make_gpus(nodes=2, per_node=2))
    before = _state(pool)
    copy = pool.copy()
    # When each side takes different GPUs
    copy.take(copy.nodes["n0"].gpus[:1], 0, 1.0)
    pool.take(pool.nodes["n1"].gpus[:2], 4 * GB, 0.5)
    # Then neither sees the other's change, and the counts follow each side's own GPUs
    assert _state(copy)[("n0", 0)] == (24 * GB, 1.0) and _state(copy)[("n1", 0)] == before[("n1", 0)]
    assert _state(pool)[("n0", 0)] == before[("n0", 0)] and _state(pool)[("n1", 0)] == (20 * GB, 0.5)
    assert copy.nodes["n0"].whole_free == 1 and pool.nodes["n0"].whole_free == 2
    assert pool.nodes["n1"].whole_free == 0 and copy.nodes["n1"].whole_free == 2
    # And a copy of a copy is independent too
    again = copy.copy()
    again.release("n0", (0,), 0, 1.0)
    assert _state(again)[("n0", 0)] == (24 * GB, 0.0) and _state(copy)[("n0", 0)] == (24 * GB, 1.0)


def test_set_gpu_keeps_a_kept_pool_equal_to_a_fresh_one() -> None:
    gpus = make_gpus(nodes=2, per_node=4)
    kept = Pool(gpus)
    kept.copy()  # shares every node: set_gpu must clone before changing
    gpus[5] = replace(gpus[5], memory_free_mib=10 * GB, shares_used=0.5)
    kept.set_gpu(gpus[5])
    fresh = Pool(gpus)
    assert _state(kept) == _state(fresh)
    assert kept.open == fresh.open
    assert {n: s.whole_free for n, s in kept.nodes.items()} == {
        n: s.whole_free for n, s in fresh.nodes.items()
    }


job = st.tuples(
    st.integers(1, 4),  # gpus
    st.sampled_from([0.5, 1.0]),  # fraction
    st.integers(0, 20),  # GB
    st.integers(10, 900),  # duration
    st.integers(0, 200),  # inter-arrival
)


@settings(max_examples=40, deadline=None)
@given(st.lists(job, min_size=1, max_size=30))
def test_each_pass_over_the_kept_pool_decides_like_a_pool_built_from_the_slots(jobs: list) -> None:
    # Given a replay (which passes its kept pool to decide), When each pass runs, Then decide over a pool
    # built from the replay's slots at that moment returns the very same decisions.
    cfg = PolicyConfig(policy="nightshift")
    durations: dict[int, float] = {}
    sim = Replay(make_gpus(nodes=2, per_node=4), cfg, lambda t: durations[t.task_id])
    t = 0.0
    for i, (gpus, fraction, gb, duration, gap) in enumerate(jobs):
        t += gap
        durations[i] = float(duration)
        sim.submit(make_task(i, gpus=gpus, gpu_fraction=fraction, gpu_memory_mib=gb * GB, enqueued_at_s=t))
    checked = 0

    def check() -> bool:
        nonlocal checked
        if not sim.queue:
            return False
        window = [sim.tasks[i] for _, i in sim.queue[: cfg.window]]
        running = [p for parts in sim.running.values() for p in parts]
        slots = list(sim.slots.values())
        args = (window, running, slots, sim.now_s, cfg, None, sim.succeeded, sim.failed.keys())
        kept = decide(*args, with_reasons=False, pool=sim.pool)
        fresh = decide(*args, with_reasons=False)
        assert kept == fresh
        assert _state(sim.pool) == _state(Pool(slots))  # the pass left the kept pool as it was
        checked += 1
        return False

    sim.run(stop=check)
    assert len(sim.started_at) == len(jobs)


def test_the_pass_snapshot_reads_what_the_separate_calls_read(cluster, make_identity, tmp_path) -> None:
    who, _ = make_identity()
    gpus = [NodeGpu(i, "SIM", 24 * GB, 24 * GB) for i in range(2)]
    cluster.nodes.publish("node-b", gpus, now_ms(), "simulated")
    cluster.nodes.publish("node-a", gpus, now_ms(), "simulated")
    ids = [cluster.submit(who, {"command": "true", "workdir": str(tmp_path)})[0].id for _ in range(5)]
    cluster.queue.assign(ids[0], "node-a", (1,), now_ms())
    cluster.queue.assign(ids[1], "node-b", (0,), now_ms())
    claim = cluster.queue.claim("node-b", now_ms(), 30_000)
    assert claim is not None and claim.task_id == ids[1]
    snap = cluster.queue.pass_snapshot(2, now_s())
    assert snap.head == cluster.queue.head_ids(2) == ids[2:4]
    assert snap.assignments == cluster.queue.assignments() == {ids[0]: ("node-a", (1,))}
    assert snap.leased == {ids[1]}
    lease = cluster.queue.lease(ids[1])
    assert lease is not None and snap.next_lease_expiry_ms == lease.expires_ms
    assert cluster.queue.leased_gpus([ids[1], ids[0]]) == {ids[1]: ("node-b", (0,))}
    assert nodes_from_raw(snap.nodes) == cluster.nodes.all()
    versions, tokens = cluster.tasks.pass_versions(ids)
    assert versions == cluster.tasks.queued_versions(ids) and tokens == cluster.tasks.running_tokens()


def _one_gpu_first_task_claimed(cluster, make_identity, tmp_path) -> tuple[Dispatcher, Any, Any, Claim]:
    """One GPU, two tasks: the first assigned to it by a pass and claimed by the worker (not yet running)."""
    who, _ = make_identity()
    cluster.nodes.publish("node-a", [NodeGpu(0, "SIM", 24 * GB, 24 * GB)], now_ms(), "simulated")
    first, _ = cluster.submit(who, {"command": "true", "workdir": str(tmp_path)})
    second, _ = cluster.submit(who, {"command": "true", "workdir": str(tmp_path)})
    dispatcher = Dispatcher(cluster)
    assert [s.task_id for s in dispatcher.run_pass().starts] == [first.id]
    claim = cluster.queue.claim("node-a", now_ms(), 30_000)
    assert claim is not None and claim.task_id == first.id
    return dispatcher, first, second, claim


def test_a_claimed_task_not_yet_running_in_sql_keeps_its_gpus(cluster, make_identity, tmp_path) -> None:
    # Given one GPU, a task assigned to it and claimed by the worker, which has not yet marked it running
    dispatcher, first, second, claim = _one_gpu_first_task_claimed(cluster, make_identity, tmp_path)
    # When the scheduler passes in that moment, Then the GPU is still taken: nothing else starts on it
    assert dispatcher.run_pass().starts == ()
    # And once SQL says running, still nothing; once it ended and the lease is released, the next starts
    assert cluster.tasks.mark_running(first.id, claim.token, "node-a", claim.gpu_indices) == 1
    assert dispatcher.run_pass().starts == ()
    assert cluster.settle_attempt(first.id, claim.token, "exit", 0) == "succeeded"
    assert [s.task_id for s in dispatcher.run_pass().starts] == [second.id]


def test_an_assigned_task_whose_assignment_is_gone_keeps_its_gpus(cluster, make_identity, tmp_path) -> None:
    # Given one GPU and a task assigned to it and claimed, but Redis left in the state a pass reading in two
    # round trips used to see (still in the assigned set, its assignment gone, not yet in the leases index):
    # the snapshot is one script now, yet a member without its assignment still counts as maybe leased
    dispatcher, first, second, claim = _one_gpu_first_task_claimed(cluster, make_identity, tmp_path)
    keys = cluster.queue.keys
    expires = cluster.queue.client.zscore(keys.leases, str(first.id))
    cluster.queue.client.sadd(keys.assigned, str(first.id))
    cluster.queue.client.zrem(keys.leases, str(first.id))
    # When the pass reads on, Then the claimed task counts as leased and its GPU is not handed out again
    snap = cluster.queue.pass_snapshot(8, now_s())
    assert first.id in snap.leased and first.id not in snap.assignments
    assert dispatcher.run_pass().starts == ()
    cluster.queue.client.srem(keys.assigned, str(first.id))
    cluster.queue.client.zadd(keys.leases, {str(first.id): expires})
    assert cluster.tasks.mark_running(first.id, claim.token, "node-a", claim.gpu_indices) == 1
    assert cluster.settle_attempt(first.id, claim.token, "exit", 0) == "succeeded"
    assert [s.task_id for s in dispatcher.run_pass().starts] == [second.id]
