"""Overdue tasks (waited their aging bound) enter the window and rank first, however deep they sit."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.policy.aging import aging_bound_s, order_key, overdue_at_s, rank_key
from scheduler.policy.config import PolicyConfig, TeamUsage
from scheduler.policy.engine import decide
from scheduler.policy.forecast import queue_positions
from scheduler.policy.replay import Replay
from scheduler.policy.types import PriorityClass
from scheduler.policy.window import window_ids
from tests.policy.builders import make_gpus, make_running, make_task, occupy

CFG = PolicyConfig()
NO_OLDEST_FIRST = PolicyConfig(oldest_first=False)


def test_an_overdue_big_job_of_the_heaviest_team_ranks_first_and_gets_the_reservation() -> None:
    # Given a 4-GPU job of the team that used the most, and later 1-GPU jobs of a light team whose short-job
    # and fair-share credits rank them ahead; two of the four GPUs busy for another 1000 s; the aging bound
    # alone protects it here (`oldest_first`, which would reserve for it at once, is off)
    big = make_task(1, team="heavy", gpus=4, enqueued_at_s=0.0, estimated_s=3600.0)
    small = [make_task(10 + i, team="light", enqueued_at_s=3600.0 + i, estimated_s=2000.0) for i in range(2)]
    usage = {"heavy": TeamUsage("heavy", 1e7), "light": TeamUsage("light", 0.0)}
    due_s = overdue_at_s(big, NO_OLDEST_FIRST)
    gpus = make_gpus(per_node=4)
    running = [make_running(100 + i, gpus=(i,), estimated_end_s=due_s + 1000.0) for i in range(2)]
    for r in running:
        gpus = occupy(gpus, r)
    # When it is not yet overdue, Then the small jobs rank ahead and start on the free GPUs
    before = decide([big, *small], running, gpus, due_s - 1.0, NO_OLDEST_FIRST, usage)
    assert sorted(s.task_id for s in before.starts) == [10, 11]
    assert queue_positions([big, *small], due_s - 1.0, NO_OLDEST_FIRST, usage)[1] == 3
    # When it has waited its bound, Then it ranks first: it holds the reservation and the small jobs, which
    # would end after it could start, wait
    after = decide([big, *small], running, gpus, due_s, NO_OLDEST_FIRST, usage)
    assert after.starts == ()
    assert "reserved" in after.pending_reasons[1]
    assert queue_positions([big, *small], due_s, NO_OLDEST_FIRST, usage)[1] == 1


def test_an_overdue_task_deep_in_the_static_order_enters_the_window_and_starts_next() -> None:
    # Given one GPU held by a first job, a window of 2, a long low-priority job, and six short-looking jobs
    # submitted a little later that rank ahead of it by short-job credit but really run far past their
    # estimates
    cfg = PolicyConfig(window=2)
    first = make_task(99, priority=PriorityClass.HIGH, estimated_s=60.0)
    low = make_task(0, priority=PriorityClass.LOW, estimated_s=20 * 3600.0)
    shorts = [make_task(i, enqueued_at_s=8000.0 + i, estimated_s=60.0) for i in range(1, 7)]
    durations = {0: 10.0, 99: 100_000.0, **{t.task_id: 100_000.0 for t in shorts}}
    sim = Replay(make_gpus(per_node=1), cfg, lambda t: durations[t.task_id])
    for task in [first, low, *shorts]:
        sim.submit(task)
    # When the replay runs
    sim.run()
    # Then the low job starts when the GPU first frees after its aging bound, ahead of the short jobs still
    # waiting (which were always ahead of it in the static order, and the window held only them)
    due_s = overdue_at_s(low, cfg)
    assert due_s == low.enqueued_at_s + aging_bound_s(PriorityClass.LOW, cfg) < overdue_at_s(shorts[0], cfg)
    assert sim.started_at[0] == min(end for end in sim.ended_at.values() if end >= due_s) == 200_000.0
    assert [t.task_id for t in shorts if sim.started_at[t.task_id] < sim.started_at[0]] == [1]


def test_the_window_puts_the_overdue_tasks_first_without_repeats_and_keeps_its_size() -> None:
    assert window_ids([7, 3], [1, 3, 4, 5], 4) == [7, 3, 1, 4]
    assert window_ids([7, 3, 9], [1], 2) == [7, 3]
    assert window_ids([], [1, 2, 3], 2) == [1, 2]


task_st = st.builds(
    make_task,
    st.integers(1, 10_000),
    priority=st.sampled_from(list(PriorityClass)),
    enqueued_at_s=st.floats(0.0, 1e6),
    gpus=st.integers(1, 8),
    estimated_s=st.floats(60.0, 1e6),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(task_st, min_size=1, max_size=30), st.floats(0.0, 2e6), st.sampled_from(["fifo", "backfill"]))
def test_fifo_and_backfill_order_is_unchanged_by_overdue_first(
    tasks: list, now_s: float, policy: str
) -> None:
    # Without credits the overdue tasks are exactly the first ones by class and age
    cfg = PolicyConfig(policy=policy)  # type: ignore[arg-type]
    by_rank = sorted(tasks, key=lambda t: (rank_key(t, now_s, cfg, 1.0), t.task_id))
    by_order = sorted(tasks, key=lambda t: (order_key(t, now_s, cfg, 1.0), t.task_id))
    assert [rank_key(t, now_s, cfg, 1.0) for t in by_rank] == [rank_key(t, now_s, cfg, 1.0) for t in by_order]
