"""Placement: per-GPU memory, one node, best fit, sharing without oversubscription."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.clock import now_ms
from scheduler.nodes import NodeGpu, NodeState
from scheduler.policy.config import PolicyConfig
from scheduler.policy.engine import decide
from scheduler.policy.placement import Pool, place_on_gpus
from scheduler.policy.types import GpuSlot, RunningTask
from scheduler.policy_input import gpu_slots
from tests.policy.builders import GB, make_gpus, make_task


def test_best_fit_keeps_large_gpus_free_for_large_jobs() -> None:
    gpus = [GpuSlot("n0", 0, 80 * GB, 80 * GB), GpuSlot("n0", 1, 24 * GB, 24 * GB)]
    chosen = place_on_gpus(make_task(gpu_memory_mib=20 * GB), gpus)
    assert chosen is not None and [g.index for g in chosen] == [1]


def test_a_tasks_gpus_are_given_in_index_order_whichever_best_fit_took_first() -> None:
    # two 80 GB GPUs then two 24 GB ones: best fit takes the small ones first, the job sees them in order
    gpus = [GpuSlot("n0", i, gb * GB, gb * GB) for i, gb in enumerate((80, 80, 24, 24))]
    whole_node = place_on_gpus(make_task(gpus=4), gpus)
    three = place_on_gpus(make_task(gpus=3), gpus)
    assert whole_node is not None and [g.index for g in whole_node] == [0, 1, 2, 3]
    assert three is not None and [g.index for g in three] == [0, 2, 3]


def test_a_task_asking_more_memory_than_any_free_gpu_does_not_fit() -> None:
    assert place_on_gpus(make_task(gpu_memory_mib=40 * GB), make_gpus(gb=24)) is None


def test_all_gpus_of_a_task_are_on_one_node() -> None:
    # Given two 4-GPU nodes with 2 GPUs free on each
    gpus = [replace(g, shares_used=1.0) if g.index < 2 else g for g in make_gpus(nodes=2, per_node=4)]
    chosen = place_on_gpus(make_task(gpus=2), gpus)
    assert chosen is not None and len({g.node for g in chosen}) == 1
    # Then a 3-GPU task does not fit, though 4 GPUs are free in all
    assert place_on_gpus(make_task(gpus=3), gpus) is None


def test_exclusive_task_needs_an_unshared_gpu() -> None:
    gpus = [replace(g, shares_used=0.25, memory_free_mib=20 * GB) for g in make_gpus(per_node=1)]
    assert place_on_gpus(make_task(), gpus) is None
    assert place_on_gpus(make_task(gpu_fraction=0.5), gpus) is not None


def test_fractional_tasks_pack_onto_an_already_shared_gpu() -> None:
    gpus = make_gpus(per_node=2)
    gpus[1] = replace(gpus[1], shares_used=0.5, memory_free_mib=12 * GB)
    chosen = place_on_gpus(make_task(gpu_fraction=0.5), gpus)
    assert chosen is not None and chosen[0].index == 1


def test_a_task_larger_than_any_node_takes_whole_nodes() -> None:
    pool = Pool(make_gpus(nodes=3, per_node=2))
    pool.take([g for g in pool.nodes["n1"].gpus[:1]], 0, 1.0)
    chosen = pool.find(make_task(gpus=4))
    assert chosen is not None and sorted({g.node for g in chosen}) == ["n0", "n2"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 3), st.sampled_from([0.25, 0.5, 1.0]), st.integers(0, 30)),
        min_size=1,
        max_size=25,
    )
)
def test_memory_and_shares_are_never_oversubscribed(requests: list[tuple[int, float, int]]) -> None:
    # Given mixed GPUs, When tasks are placed one after another, Then no GPU goes over memory or shares.
    gpus = [GpuSlot(f"n{n}", i, gb * GB, gb * GB) for n, gb in ((0, 24), (1, 40)) for i in range(3)]
    pool = Pool(gpus)
    for k, (n, fraction, mem_gb) in enumerate(requests):
        task = make_task(k, gpus=n, gpu_fraction=fraction, gpu_memory_mib=mem_gb * GB)
        chosen = pool.find(task)
        if chosen is not None:
            assert len(chosen) == n and len({g.node for g in chosen}) == 1
            pool.take(chosen, task.gpu_memory_mib, task.gpu_fraction)
        for node in pool.nodes.values():
            for g in node.gpus:
                assert g.free_mib >= 0
                assert g.shares <= 1.0 + 1e-9


def test_halves_of_a_gpu_whose_memory_is_an_odd_number_of_mib_both_fit() -> None:
    # Given an H200 as NVML reports it (143,771 MiB, 615 of them the driver's), half of it held by a task
    gpu = NodeGpu(0, "NVIDIA H200", 143_771, 143_156)
    node = NodeState("gpu-box", (gpu,), heartbeat_ms=now_ms())
    half = RunningTask(1, "t", "u", "gpu-box", (0,), 0.0, gpu_fraction=0.5)
    # Then the other half fits beside it (each holds half its memory, rounded down), and no third one
    assert place_on_gpus(make_task(2, gpu_fraction=0.5), gpu_slots([node], [half], now_ms())) is not None
    both = [half, replace(half, task_id=2)]
    assert place_on_gpus(make_task(3, gpu_fraction=0.5), gpu_slots([node], both, now_ms())) is None


def test_a_gpus_halves_are_halves_of_what_its_driver_leaves_so_both_fit_when_the_first_is_filled() -> None:
    # Given the H200 with its driver's 615 MiB known, and a half-GPU task that has filled its half
    half_mib = (143_771 - 615) // 2
    gpu = NodeGpu(0, "NVIDIA H200", 143_771, 143_771 - 615 - half_mib, driver_reserved_mib=615)
    node = NodeState("gpu-box", (gpu,), heartbeat_ms=now_ms())
    half = RunningTask(1, "t", "u", "gpu-box", (0,), 0.0, gpu_fraction=0.5)
    [slot] = gpu_slots([node], [half], now_ms())
    assert (slot.shareable_mib, slot.memory_free_mib) == (143_156, half_mib)
    # Then the other half still fits beside it (halves of the total would not: 71,885 MiB > 71,578 free)
    assert place_on_gpus(make_task(2, gpu_fraction=0.5), [slot]) is not None
    # and a task that asked for more than what is left does not
    assert place_on_gpus(make_task(3, gpu_memory_mib=half_mib + 1), [slot]) is None


def test_both_halves_of_an_idle_gpu_start_in_one_pass() -> None:
    # Given the idle H200 as NVML reads it: 615 MiB in use by the driver, the rest free
    gpu = NodeGpu(0, "NVIDIA H200", 143_771, 143_156, driver_reserved_mib=615)
    slots = gpu_slots([NodeState("gpu-box", (gpu,), heartbeat_ms=now_ms())], [], now_ms())
    halves = [make_task(n, gpu_fraction=0.5) for n in (1, 2, 3)]

    decisions = decide(halves, [], slots, 0.0, PolicyConfig())

    # Then two halves start at once (within one pass the first's share is taken from the free reading)
    assert sorted(s.task_id for s in decisions.starts) == [1, 2]
    assert 3 in decisions.pending_reasons
