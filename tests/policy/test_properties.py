"""Property tests: quotas, memory, backfill and the starvation bound hold for any workload."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.policy.aging import aging_bound_s
from scheduler.policy.backfill import Holding, find_reservation
from scheduler.policy.config import PolicyConfig
from scheduler.policy.engine import decide
from scheduler.policy.placement import Pool
from scheduler.policy.replay import Replay
from scheduler.policy.rolling import DAY_S
from scheduler.policy.types import PriorityClass, QueuedTask, RunningTask
from scheduler.simulate import TraceJob, simulate_jobs
from tests.policy.builders import GB, make_gpus, make_running, make_task, occupy

job = st.tuples(
    st.sampled_from(["a", "b", "c"]),  # team
    st.integers(1, 4),  # gpus
    st.sampled_from([0.5, 1.0]),  # fraction
    st.integers(0, 30),  # GB
    st.integers(10, 2000),  # duration
    st.floats(0.3, 3.0),  # estimate / duration
    st.integers(0, 500),  # inter-arrival
)


def _replay(
    jobs: list[tuple[str, int, float, int, int, float, int]],
    cfg: PolicyConfig,
    user_of: Callable[[int], str] = lambda i: "u",
) -> Replay:
    gpus = [replace(g, memory_total_mib=g.memory_total_mib) for g in make_gpus(nodes=2, per_node=4, gb=32)]
    durations: dict[int, float] = {}
    sim = Replay(gpus, cfg, lambda t: durations[t.task_id])
    at = 0.0
    for i, (team, n, frac, gb, dur, ratio, gap) in enumerate(jobs):
        at += gap
        durations[i] = float(dur)
        sim.submit(make_task(i, team=team, user=user_of(i), gpus=n, gpu_fraction=frac if n == 1 else 1.0, gpu_memory_mib=gb * GB,
                             enqueued_at_s=at, estimated_s=dur * ratio))  # fmt: skip
    return sim


@settings(max_examples=40, deadline=None)
@given(st.lists(job, min_size=1, max_size=40), st.sampled_from(["fifo", "backfill", "nightshift"]))
def test_no_team_ever_exceeds_its_concurrent_cap_and_no_gpu_is_oversubscribed(
    jobs: list[tuple[str, int, float, int, int, float, int]], policy: str
) -> None:
    caps = {"a": 2, "b": 3, "c": 4}
    cfg = PolicyConfig(policy=policy, team_gpu_caps=caps, borrowing=False)  # type: ignore[arg-type]
    sim = _replay(jobs, cfg)

    def check(task: QueuedTask, at_s: float, parts: tuple[RunningTask, ...]) -> None:
        used: dict[str, float] = {}
        for p in (p for ps in sim.running.values() for p in ps):
            used[p.team] = used.get(p.team, 0.0) + len(p.gpu_indices) * min(p.gpu_fraction, 1.0)
        assert all(used[t] <= caps[t] + 1e-9 for t in used), used
        for slot in sim.slots.values():
            assert slot.memory_free_mib >= 0 and slot.shares_used <= 1.0 + 1e-9, slot

    sim.on_start = check
    sim.run()
    # every task within its team's cap starts in the end (each fits a 4-GPU node of 32 GB)
    assert {i for i, j in enumerate(jobs) if j[1] <= caps[j[0]]} <= sim.started_at.keys()


@settings(max_examples=40, deadline=None)
@given(st.lists(job, min_size=1, max_size=40), st.sampled_from(["fifo", "backfill", "nightshift"]))
def test_no_person_ever_exceeds_their_concurrent_cap_across_their_teams(
    jobs: list[tuple[str, int, float, int, int, float, int]], policy: str
) -> None:
    caps = {"ann": 1, "bob": 3}  # everyone else: 2
    cfg = PolicyConfig(policy=policy, user_gpu_caps=caps, default_user_gpu_cap=2, borrowing=False)  # type: ignore[arg-type]
    people = ["ann", "bob", "cy"]
    sim = _replay(jobs, cfg, user_of=lambda i: people[i % 3])

    def check(task: QueuedTask, at_s: float, parts: tuple[RunningTask, ...]) -> None:
        used: dict[str, float] = {}
        for p in (p for ps in sim.running.values() for p in ps):
            used[p.user] = used.get(p.user, 0.0) + len(p.gpu_indices) * min(p.gpu_fraction, 1.0)
        assert all(used[u] <= caps.get(u, 2) + 1e-9 for u in used), used

    sim.on_start = check
    sim.run()
    # every task within its person's cap starts in the end
    assert {i for i, j in enumerate(jobs) if j[1] <= caps.get(people[i % 3], 2)} <= sim.started_at.keys()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(60, 5000)), min_size=4, max_size=4),
    st.lists(st.tuples(st.integers(1, 3), st.integers(30, 8000)), min_size=1, max_size=12),
    st.sampled_from(["backfill", "nightshift"]),
)
def test_backfill_never_delays_the_reserved_task_by_the_estimates_it_had(
    busy: list[tuple[int, int]], later: list[tuple[int, int]], policy: str
) -> None:
    # Given one node of 4 GPUs, each busy until its own end, and an urgent 4-GPU task first in line
    gpus = make_gpus(per_node=4)
    running = [
        make_running(100 + i, gpus=(i,), estimated_end_s=float(end)) for i, (_, end) in enumerate(busy)
    ]
    for r in running:
        gpus = occupy(gpus, r)
    cfg = PolicyConfig(policy=policy)  # type: ignore[arg-type]
    top = make_task(1, gpus=4, priority=PriorityClass.URGENT, enqueued_at_s=-1e6)
    queued = [top] + [make_task(10 + k, gpus=n, estimated_s=float(e)) for k, (n, e) in enumerate(later)]

    def holding(r: RunningTask) -> Holding:
        return Holding(r.estimated_end_s or 0.0, r.node, r.gpu_indices, 0, 1.0)

    before = find_reservation(top, Pool(gpus), [holding(r) for r in running])
    assert before is not None
    # When decide backfills
    d = decide(queued, running, gpus, 0.0, cfg)
    assert 1 not in {s.task_id for s in d.starts}
    pool = Pool(gpus)
    held = [holding(r) for r in running]
    for s in d.starts:
        task = next(t for t in queued if t.task_id == s.task_id)
        pool.take([g for g in pool.nodes[s.node].gpus if g.index in s.gpu_indices], 0, 1.0)
        held.append(Holding(task.estimated_s or 0.0, s.node, s.gpu_indices, 0, 1.0))
    # Then the reserved task can still start as early as it could before
    after = find_reservation(top, pool, held)
    assert after is not None and after.start_s <= before.start_s


@settings(max_examples=25, deadline=None)
@given(
    st.integers(60, 600),  # run time of the urgent stream
    st.floats(0.2, 0.9),  # inter-arrival / run time: the stream overloads 2 GPUs
    st.integers(300, 1800),  # class step
    st.integers(1, 2),  # GPUs of the low task
    st.sampled_from(["backfill", "nightshift"]),
)
def test_a_low_task_never_waits_past_its_aging_bound_under_sustained_urgent_load(
    run_s: int, gap_ratio: float, step_s: int, low_gpus: int, policy: str
) -> None:
    cfg = PolicyConfig(
        policy=policy,  # type: ignore[arg-type]
        class_step_s=float(step_s),
        short_job_max_credit_s=step_s / 2,
        fairshare_max_credit_s=step_s / 4,
        deadline_credit_s=0.0,
    )
    low = make_task(
        0, team="low", gpus=low_gpus, priority=PriorityClass.LOW, enqueued_at_s=1.0, estimated_s=100.0
    )
    bound_s = aging_bound_s(PriorityClass.LOW, cfg)
    horizon_s = 20 * bound_s  # the urgent stream goes on long after the bound
    durations = {0: 100.0}
    sim = Replay(make_gpus(per_node=2), cfg, lambda t: durations[t.task_id])
    sim.submit(low)
    at, i, ahead_gpu_s = 0.0, 1, 0.0
    while at < horizon_s:
        sim.submit(
            make_task(i, team="urgent", priority=PriorityClass.URGENT, enqueued_at_s=at, estimated_s=run_s)
        )
        durations[i] = float(run_s)
        if at <= low.enqueued_at_s + bound_s:
            ahead_gpu_s += run_s  # only these can ever rank ahead of the low task
        at += run_s * gap_ratio
        i += 1
    sim.run(stop=lambda: 0 in sim.started_at)
    wait_s = sim.started_at[0] - low.enqueued_at_s
    # Bound: B, plus draining what may rank ahead (GPU-seconds / 2 GPUs), plus one run to free the GPUs.
    assert wait_s <= bound_s + ahead_gpu_s / 2 + run_s + 1e-6
    assert sim.started_at[0] < horizon_s / 2  # it did not wait for the stream to end


def _day_use_at_start(
    trace: list[TraceJob], starts_s: dict[int, float], job: TraceJob, same: Callable[[TraceJob], bool]
) -> float:
    """GPU-seconds of the other jobs `same` picks (same team, same person) in the 24 h before `job` started."""
    start_s = starts_s[job.index]
    return sum(
        k.gpus
        * max(0.0, min(starts_s[k.index] + k.duration_s, start_s) - max(starts_s[k.index], start_s - DAY_S))
        for k in trace
        if same(k) and k.index != job.index and starts_s[k.index] <= start_s
    )


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b"]),  # team
            st.integers(1, 4),  # gpus
            st.integers(600, 30_000),  # duration
            st.integers(0, 20_000),  # inter-arrival
        ),
        min_size=1,
        max_size=30,
    ),
    st.sampled_from(["backfill", "nightshift"]),
)
def test_no_team_starts_a_task_once_its_day_budget_is_used_up_and_every_task_starts_in_the_end(
    jobs: list[tuple[str, int, int, int]], policy: str
) -> None:
    budgets_h = {"a": 4.0, "b": 10.0}
    cfg = PolicyConfig(policy=policy, day_budget_gpu_h=budgets_h)  # type: ignore[arg-type]
    trace, at = [], 0.0
    for i, (team, gpus, duration, gap) in enumerate(jobs):
        at += gap
        trace.append(TraceJob(i, f"j{i}", at, float(duration), gpus, team))

    result = simulate_jobs(trace, "4x24", 2, policy, config=cfg)

    assert result.jobs == len(trace)  # the budget only delays: every task starts once old work ages out
    for j in trace:
        used_s = _day_use_at_start(trace, result.starts_s, j, lambda k, j=j: k.team == j.team)
        assert used_s < budgets_h[j.team] * 3600.0, (j, used_s)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["ann", "bob", "cy"]),  # person, all of one team
            st.integers(1, 4),  # gpus
            st.integers(600, 30_000),  # duration
            st.integers(0, 20_000),  # inter-arrival
        ),
        min_size=1,
        max_size=30,
    ),
    st.sampled_from(["backfill", "nightshift"]),
)
def test_no_person_starts_a_task_once_their_own_day_budget_is_used_up_and_every_task_starts_in_the_end(
    jobs: list[tuple[str, int, int, int]], policy: str
) -> None:
    budgets_h = {"ann": 4.0, "bob": 10.0, "cy": 6.0}  # cy: the default of everyone unnamed
    cfg = PolicyConfig(
        policy=policy,  # type: ignore[arg-type]
        user_day_budget_gpu_h={"ann": 4.0, "bob": 10.0},
        default_user_day_budget_gpu_h=6.0,
    )
    trace, at = [], 0.0
    for i, (user, gpus, duration, gap) in enumerate(jobs):
        at += gap
        trace.append(TraceJob(i, f"j{i}", at, float(duration), gpus, "lab", user))

    result = simulate_jobs(trace, "4x24", 2, policy, config=cfg)

    assert result.jobs == len(trace)  # the budget only delays: every task starts once old work ages out
    for j in trace:
        used_s = _day_use_at_start(trace, result.starts_s, j, lambda k, j=j: k.user == j.user)
        assert used_s < budgets_h[j.user] * 3600.0, (j, used_s)
