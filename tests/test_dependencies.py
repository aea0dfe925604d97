"""`scheduler.dependencies`: which parents a task may wait for, and no change that makes tasks wait for
each other (every loop refused, and nothing else)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.dependencies import refuse_dependency_loop, refuse_parent, waited_for
from scheduler.errors import SpecError


@pytest.mark.parametrize(
    ("field", "status", "message"),
    [
        ("depends_on", None, "depends_on names task 7, which does not exist"),
        ("depends_on_any", None, "depends_on_any names task 7, which does not exist"),
        ("depends_on", "failed", "depends_on names task 7, which failed: this task could never start"),
        ("depends_on", "cancelled", "depends_on names task 7, which was cancelled: this task could"),
    ],
)
def test_a_parent_that_is_missing_or_already_failed_is_refused_with_what_to_do(field, status, message):
    with pytest.raises(SpecError) as refused:
        refuse_parent(field, 7, status)

    assert refused.value.message.startswith(message)
    assert [error["field"] for error in refused.value.errors] == [field]


@pytest.mark.parametrize(
    ("field", "status"),
    [
        ("depends_on", "queued"),
        ("depends_on", "running"),
        ("depends_on", "succeeded"),
        ("depends_on_any", "failed"),
    ],
)
def test_a_parent_that_can_still_let_the_task_start_is_fine(field, status):
    refuse_parent(field, 7, status)


def test_only_a_queued_task_still_waits_for_its_parents():
    spec = {"depends_on": [3], "depends_on_any": [4]}

    assert waited_for("queued", spec) == [3, 4]
    assert waited_for("running", spec) == [] and waited_for("succeeded", spec) == []
    assert waited_for("queued", {}) == [] and waited_for("queued", None) == []


def _acyclic(graph: dict[int, list[int]]) -> bool:
    """True when no task waits on itself through `graph` (Kahn's algorithm empties it)."""
    waits = {task: set(parents) for task, parents in graph.items()}
    ready = [task for task, parents in waits.items() if not parents]
    done = 0
    while ready:
        task = ready.pop()
        done += 1
        for other, parents in waits.items():
            if task in parents:
                parents.discard(task)
                if not parents:
                    ready.append(other)
    return done == len(waits)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 8), st.lists(st.integers(1, 8), max_size=3)), max_size=25))
def test_changes_the_loop_check_lets_through_never_make_tasks_wait_for_each_other(changes):
    graph: dict[int, list[int]] = {task: [] for task in range(1, 9)}
    for task, parents in changes:
        proposed = {**graph, task: parents}
        try:
            refuse_dependency_loop(task, {"depends_on": parents}, graph.__getitem__)
        except SpecError as refused:
            assert not _acyclic(proposed)
            assert refused.errors[0]["field"] == "depends_on"
            continue
        assert _acyclic(proposed)
        graph = proposed
