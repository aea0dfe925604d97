"""Placement honours a spec's `node` and `gpu_model`; `never_fits` says which of them no GPU meets."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.policy.config import PolicyConfig
from scheduler.policy.engine import decide
from scheduler.policy.placement import cpu_node, never_fits, place_on_gpus
from scheduler.policy.types import GpuSlot
from tests.policy.builders import GB, make_task


def _cluster() -> list[GpuSlot]:
    a100 = [GpuSlot("box-1", i, 80 * GB, 80 * GB, "NVIDIA A100-SXM4-80GB") for i in range(2)]
    l4 = [GpuSlot("box-2", i, 24 * GB, 24 * GB, "NVIDIA L4") for i in range(4)]
    return a100 + l4


def test_a_gpu_model_matches_case_insensitively_on_part_of_the_name() -> None:
    chosen = place_on_gpus(make_task(gpu_model="a100"), _cluster())

    assert chosen is not None and {g.node for g in chosen} == {"box-1"}


def test_a_pinned_node_is_used_even_when_best_fit_would_pick_another() -> None:
    # best fit alone prefers the small L4s; the pin sends it to the A100 box
    assert place_on_gpus(make_task(), _cluster())[0].node == "box-2"  # type: ignore[index]
    chosen = place_on_gpus(make_task(node="BOX-1"), _cluster())

    assert chosen is not None and chosen[0].node == "box-1"


def test_a_pinned_node_that_is_full_makes_the_task_wait_rather_than_go_elsewhere() -> None:
    gpus = [replace(g, shares_used=1.0) if g.node == "box-1" else g for g in _cluster()]

    assert place_on_gpus(make_task(node="box-1"), gpus) is None
    assert never_fits(make_task(node="box-1"), gpus) is None  # it could, once the box frees up


def test_never_fits_names_the_missing_node_or_model() -> None:
    assert never_fits(make_task(node="box-9"), _cluster()) == "there is no node named 'box-9'"
    reason = never_fits(make_task(gpu_model="H100"), _cluster())
    assert reason is not None and "no GPU model matches 'H100'" in reason and "NVIDIA L4" in reason
    assert (
        never_fits(make_task(gpus=3, gpu_model="A100"), _cluster())
        == "no node has 3 GPUs (at most 2 on one node)"
    )


def test_never_fits_says_how_many_gpus_one_node_has_with_that_much_memory() -> None:
    # (5 GPUs would fit the simulator's gang of whole nodes; 7 are more than the cluster has)
    assert never_fits(make_task(gpus=7), _cluster()) == "no node has 7 GPUs (at most 4 on one node)"
    assert never_fits(make_task(gpus=3, gpu_memory_mib=40 * GB), _cluster()) == (
        "no node has 3 GPUs with 40 GB each (at most 2 on one node)"
    )
    assert never_fits(make_task(gpus=3, node="box-1"), _cluster()) == "node box-1 has 2 GPUs"
    assert never_fits(make_task(gpus=2, node="box-2", gpu_memory_mib=40 * GB), _cluster()) == (
        "no GPU here has 40 GB (the largest has 24 GB)"
    )


def test_cpu_only_tasks_go_to_their_pinned_node_or_take_turns() -> None:
    nodes = ["box-1", "box-2"]

    assert [cpu_node(make_task(gpus=0), nodes, turn) for turn in range(3)] == ["box-1", "box-2", "box-1"]
    assert cpu_node(make_task(gpus=0, node="box-2"), nodes, 0) == "box-2"
    assert cpu_node(make_task(gpus=0, node="gone"), nodes, 0) is None
    assert cpu_node(make_task(gpus=0), [], 0) is None


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(1, 3),
            st.sampled_from([None, "box-1", "box-2"]),
            st.sampled_from([None, "a100", "l4"]),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_every_start_honours_its_tasks_node_and_model(jobs: list[tuple[int, str | None, str | None]]) -> None:
    gpus = _cluster()
    models = {(g.node, g.index): g.model for g in gpus}
    tasks = [make_task(i, gpus=n, node=node, gpu_model=model) for i, (n, node, model) in enumerate(jobs)]

    decisions = decide(tasks, [], gpus, 0.0, PolicyConfig())

    by_id = {t.task_id: t for t in tasks}
    for start in decisions.starts:
        task = by_id[start.task_id]
        assert task.node is None or start.node == task.node
        for index in start.gpu_indices:
            assert task.gpu_model is None or task.gpu_model in models[(start.node, index)].lower()
