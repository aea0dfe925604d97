"""`decide`: what starts, and the plain-language reason for each task that waits."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from zoneinfo import ZoneInfo

from scheduler.policy.config import PolicyConfig, TeamUsage
from scheduler.policy.engine import decide
from scheduler.policy.types import GpuSlot, PriorityClass
from tests.policy.builders import GB, make_gpus, make_running, make_task, occupy

CFG = PolicyConfig()


def started(decisions: object) -> list[int]:
    return [s.task_id for s in decisions.starts]  # type: ignore[attr-defined]


def test_tasks_start_in_priority_order_while_gpus_last() -> None:
    queued = [make_task(1), make_task(2, priority=PriorityClass.HIGH, enqueued_at_s=10.0), make_task(3)]
    d = decide(queued, [], make_gpus(per_node=2), 100.0, PolicyConfig(policy="fifo"))
    assert started(d) == [2, 1]
    assert d.pending_reasons[3].startswith("all GPUs are busy")


def test_waiting_for_off_peak_names_the_window_start() -> None:
    noon = datetime(2024, 3, 6, 12, 0, tzinfo=ZoneInfo("UTC")).timestamp()
    d = decide([make_task(1, offpeak=True)], [], make_gpus(), noon, CFG)
    assert d.pending_reasons[1] == "waiting for off-peak at 23:00"
    assert d.wake_at_s == noon + 11 * 3600


def test_off_peak_task_starts_inside_the_window_only_if_its_estimate_fits() -> None:
    late = datetime(2024, 3, 7, 5, 0, tzinfo=ZoneInfo("UTC")).timestamp()  # 2 h left in 23:00-07:00
    short, long = (
        make_task(1, offpeak=True, estimated_s=3600.0),
        make_task(2, offpeak=True, estimated_s=4 * 3600.0),
    )
    d = decide([short, long], [], make_gpus(), late, CFG)
    assert started(d) == [1]
    assert d.pending_reasons[2].startswith("waiting for off-peak at 23:00: its ~4.0 h estimate does not fit")
    # A task longer than any window starts anyway inside one: it could never fit.
    d = decide([make_task(3, offpeak=True, estimated_s=20 * 3600.0)], [], make_gpus(), late, CFG)
    assert started(d) == [3]


def test_team_at_its_cap_waits_with_the_cap_in_the_reason() -> None:
    cfg = PolicyConfig(team_gpu_caps={"vision": 4}, borrowing=False)
    running = [make_running(9, gpus=(0, 1, 2, 3), team="vision")]
    gpus = occupy(make_gpus(per_node=8), running[0])
    d = decide([make_task(1, team="vision")], running, gpus, 10.0, cfg)
    assert started(d) == [] and d.pending_reasons[1] == "team vision is at its 4-GPU cap"


def test_idle_capacity_is_borrowed_above_the_cap_only_when_no_other_team_waits() -> None:
    cfg = PolicyConfig(team_gpu_caps={"vision": 1})
    gpus = make_gpus(per_node=2)
    queued = [make_task(1, team="vision"), make_task(2, team="vision", enqueued_at_s=1.0)]
    assert started(decide(queued, [], gpus, 10.0, cfg)) == [1, 2]
    # When a task of another team waits for GPUs, nothing more is borrowed.
    queued.append(make_task(3, team="nlp", gpus=2, enqueued_at_s=2.0))
    d = decide(queued, [], gpus, 10.0, cfg)
    assert started(d) == [1] and d.pending_reasons[2] == "team vision is at its 1-GPU cap"


def test_a_person_at_their_cap_waits_while_a_teammate_starts() -> None:
    cfg = PolicyConfig(user_gpu_caps={"ann": 2}, default_user_gpu_cap=4, borrowing=False)
    running = [make_running(9, gpus=(0, 1), team="vision", user="ann")]
    gpus = occupy(make_gpus(per_node=8), running[0])
    queued = [make_task(1, team="vision", user="ann"), make_task(2, team="vision", user="bob", gpus=4)]
    d = decide(queued, running, gpus, 10.0, cfg)
    assert started(d) == [2] and d.pending_reasons[1] == "ann is at the 2-GPU cap per person"
    # the default cap holds anyone not named: bob's 4 GPUs are his whole cap
    d = decide([make_task(3, team="nlp", user="bob", gpus=5)], [], make_gpus(per_node=8), 10.0, cfg)
    assert started(d) == [] and d.pending_reasons[3] == "bob is at the 4-GPU cap per person"


def test_a_persons_cap_counts_their_gpus_in_every_team_and_is_borrowed_above_only_when_no_one_else_waits() -> (
    None
):
    cfg = PolicyConfig(user_gpu_caps={"ann": 1})
    gpus = make_gpus(per_node=2)
    queued = [
        make_task(1, team="vision", user="ann"),
        make_task(2, team="nlp", user="ann", enqueued_at_s=1.0),
    ]
    assert started(decide(queued, [], gpus, 10.0, cfg)) == [1, 2]  # idle GPUs, nobody else waits
    queued.append(make_task(3, team="vision", user="bob", gpus=2, enqueued_at_s=2.0))
    d = decide(queued, [], gpus, 10.0, cfg)
    assert started(d) == [1] and d.pending_reasons[2] == "ann is at the 1-GPU cap per person"


def test_a_used_up_budget_stops_new_starts_with_the_figures() -> None:
    cfg = PolicyConfig(day_budget_gpu_h={"nlp": 40.0})
    usage = {"nlp": TeamUsage("nlp", gpu_s_last_day=40 * 3600.0)}
    d = decide([make_task(1, team="nlp")], [], make_gpus(), 10.0, cfg, usage)
    assert d.pending_reasons[1] == "day budget of team nlp is used up (40.0/40 GPU-h)"


def test_a_used_up_gpu_hour_budget_does_not_hold_a_cpu_only_task() -> None:
    cfg = PolicyConfig(day_budget_gpu_h={"nlp": 40.0})
    usage = {"nlp": TeamUsage("nlp", gpu_s_last_day=41 * 3600.0)}
    queued = [make_task(1, team="nlp"), make_task(2, team="nlp", gpus=0, enqueued_at_s=1.0)]
    d = decide(queued, [], make_gpus(), 10.0, cfg, usage)
    assert started(d) == [2]  # it uses no GPU-hours
    assert d.pending_reasons[1].startswith("day budget of team nlp is used up")


def test_no_gpu_with_enough_memory_says_when_the_next_frees() -> None:
    running = [make_running(9, gpus=(0,), estimated_end_s=25 * 60.0)]
    gpus = occupy(make_gpus(per_node=1, gb=48), running[0])
    d = decide([make_task(1, gpu_memory_mib=40 * GB)], running, gpus, 0.0, PolicyConfig(policy="fifo"))
    assert d.pending_reasons[1] == "no GPU has 40 GB free; the next frees in ~25 min"


def test_memory_held_outside_nightshift_is_named_and_no_task_end_is_promised() -> None:
    # Given a 140 GB GPU where a notebook holds 100 GB, and a nightshift task holding 20 GB for 25 min
    running = [
        make_running(9, "gpu-box", (0,), gpu_memory_mib=20 * GB, gpu_fraction=0.5, estimated_end_s=25 * 60.0)
    ]
    gpu = GpuSlot("gpu-box", 0, 140 * GB, 20 * GB, "NVIDIA H200", shares_used=0.5, outside_mib=100 * GB)

    # When a task asks for 60 GB: the end of task 9 would leave 40 GB, not 60
    d = decide([make_task(1, gpu_memory_mib=60 * GB, gpu_fraction=0.5)], running, [gpu], 0.0, CFG)
    assert d.pending_reasons[1] == (
        "no GPU has 60 GB free, nor would one once nightshift's tasks end: 100 GB of GPU 0 of gpu-box is in "
        "use outside them; it starts when that is freed"
    )
    # And one asking for 30 GB waits for task 9's end, as usual
    fifo = PolicyConfig(policy="fifo")
    d = decide([make_task(1, gpu_memory_mib=30 * GB, gpu_fraction=0.5)], running, [gpu], 0.0, fifo)
    assert d.pending_reasons[1] == "no GPU has 30 GB free; the next frees in ~25 min"


def test_tasks_that_fit_but_would_delay_the_reservation_are_behind_higher_priority_ones() -> None:
    # Given 2 GPUs, one busy for 1 h; a 2-GPU task first in line; then a 1-GPU task of 2 h
    running = [make_running(9, gpus=(0,), estimated_end_s=3600.0)]
    gpus = occupy(make_gpus(per_node=2), running[0])
    big = make_task(1, gpus=2)
    long = make_task(2, estimated_s=7200.0, enqueued_at_s=1.0)
    short = make_task(3, estimated_s=600.0, enqueued_at_s=2.0)
    d = decide([big, long, short], running, gpus, 0.0, PolicyConfig(policy="backfill"))
    assert d.pending_reasons[1].startswith("next in line: 2 GPUs reserved on n0")
    assert d.pending_reasons[2] == "behind 1 higher-priority task"
    assert started(d) == [3]  # the short one ends before the reservation: backfilled


def test_a_task_with_no_room_says_when_the_gpus_that_free_next_are_reserved_ahead_of_it() -> None:
    # Given 2 GPUs both busy, one for 10 min and one for 1 h; a 2-GPU task first in line (it reserves both
    # at 1 h); then a 1-GPU task of 2 h, which would run into that reservation, and one of 5 min, which not
    running = [
        make_running(8, gpus=(0,), estimated_end_s=600.0),
        make_running(9, gpus=(1,), estimated_end_s=3600.0),
    ]
    gpus = occupy(occupy(make_gpus(per_node=2), running[0]), running[1])
    big = make_task(1, gpus=2)
    long = make_task(2, estimated_s=7200.0, enqueued_at_s=1.0)
    short = make_task(3, estimated_s=300.0, enqueued_at_s=2.0)

    d = decide([big, long, short], running, gpus, 0.0, PolicyConfig(policy="backfill"))

    # Then the long one is told that the GPU freeing in 10 min is promised ahead of it; the short one is not
    assert d.pending_reasons[2] == (
        "all GPUs are busy; the next frees in ~10 min; task 1, ahead of it, has 2 GPUs reserved on n0"
    )
    assert d.pending_reasons[3] == "all GPUs are busy; the next frees in ~10 min"


def test_a_reservation_on_gpus_other_than_those_freeing_first_is_not_in_the_way() -> None:
    # Given n0 (24 GB) busy for 10 min and n1 (80 GB) for 1 h; a 40-GB task first in line reserves n1
    running = [
        make_running(8, "n0", (0,), estimated_end_s=600.0),
        make_running(9, "n1", (0,), estimated_end_s=3600.0),
    ]
    gpus = [*make_gpus(per_node=1), GpuSlot("n1", 0, 80 * GB, 80 * GB)]
    gpus = occupy(occupy(gpus, running[0]), running[1])
    big = make_task(1, gpu_memory_mib=40 * GB)
    long = make_task(2, estimated_s=7200.0, enqueued_at_s=1.0)

    d = decide([big, long], running, gpus, 0.0, PolicyConfig(policy="backfill"))

    # Then the 2-h task, which may take n0 when it frees, is told only that
    assert d.reserved_on == {1: ("n1",)}
    assert d.pending_reasons[2] == "all GPUs are busy; the next frees in ~10 min"


def test_two_reservations_never_promise_the_same_gpus() -> None:
    # Given two 4-GPU nodes, n0 freeing in 1 h and n1 in 2 h, and two 4-GPU tasks that may both reserve
    running = [
        make_running(8, "n0", (0, 1, 2, 3), estimated_end_s=3600.0),
        make_running(9, "n1", (0, 1, 2, 3), estimated_end_s=7200.0),
    ]
    gpus = occupy(occupy(make_gpus(nodes=2), running[0]), running[1])
    first, second = make_task(1, gpus=4), make_task(2, gpus=4, enqueued_at_s=1.0)

    d = decide([first, second], running, gpus, 0.0, PolicyConfig(policy="backfill", reservations=2))

    # Then the first gets n0 and the second n1 (later, but its own), not both n0 at 1 h
    assert d.reserved_on == {1: ("n0",), 2: ("n1",)}
    assert d.pending_reasons[2].startswith("next in line: 4 GPUs reserved on n1, expected free in ~2.0 h")


def test_fifo_does_not_backfill() -> None:
    running = [make_running(9, gpus=(0,), estimated_end_s=3600.0)]
    gpus = occupy(make_gpus(per_node=2), running[0])
    d = decide(
        [make_task(1, gpus=2), make_task(3, estimated_s=60.0)],
        running,
        gpus,
        0.0,
        PolicyConfig(policy="fifo"),
    )
    assert started(d) == [] and d.pending_reasons[3] == "behind 1 higher-priority task"


def test_dependencies_hold_a_task_until_the_parent_succeeds_and_fail_it_if_the_parent_fails() -> None:
    child = make_task(2, depends_on=(12,))
    d = decide([child], [], make_gpus(), 0.0, CFG)
    assert d.pending_reasons[2] == "waiting for task 12 to succeed" and not d.starts
    assert started(decide([child], [], make_gpus(), 0.0, CFG, succeeded={12})) == [2]
    d = decide([child], [], make_gpus(), 0.0, CFG, failed={12})
    assert d.fail[2] == "task 12, which it depends on, did not succeed" and not d.starts


def test_a_failed_parent_fails_the_task_while_an_earlier_parent_still_waits() -> None:
    # the cluster state machine found it: depends_on [1, 3], 1 still queued, 3 cancelled; the task waited
    # for 1 (and, were 1 held for good, forever) although it could never start
    child = make_task(4, depends_on=(1, 3))

    d = decide([child], [], make_gpus(), 0.0, CFG, failed={3})

    assert d.fail[4] == "task 3, which it depends on, did not succeed" and not d.starts


def test_not_before_holds_a_task_until_its_time() -> None:
    d = decide([make_task(1, not_before_s=7200.0)], [], make_gpus(), 0.0, CFG)
    assert d.pending_reasons[1] == "waiting until 02:00 (not before)" and d.wake_at_s == 7200.0


def test_a_task_that_can_never_fit_says_so() -> None:
    d = decide([make_task(1, gpu_memory_mib=80 * GB)], [], make_gpus(gb=24), 0.0, CFG)
    assert d.pending_reasons[1].startswith("cannot start on this cluster: no GPU here has 80 GB")


def test_fair_share_ranks_a_light_team_ahead_of_a_heavy_one() -> None:
    usage = {"heavy": TeamUsage("heavy", decayed_gpu_s=1e6), "light": TeamUsage("light", decayed_gpu_s=0.0)}
    queued = [make_task(1, team="heavy"), make_task(2, team="light", enqueued_at_s=60.0)]
    assert started(decide(queued, [], make_gpus(per_node=1), 100.0, CFG, usage)) == [2]
    assert started(
        decide(queued, [], make_gpus(per_node=1), 100.0, replace(CFG, policy="backfill"), usage)
    ) == [1]


def test_only_the_window_is_looked_at() -> None:
    queued = [make_task(i, enqueued_at_s=float(i)) for i in range(10)]
    d = decide(queued, [], make_gpus(per_node=8), 100.0, PolicyConfig(window=3))
    assert started(d) == [0, 1, 2]


def test_the_oldest_wide_task_goes_first_so_a_stream_of_small_ones_cannot_pass_it_forever() -> None:
    # Given a 4-GPU task waiting since t=0 and 1-GPU tasks submitted later, which short-job credit ranks
    # ahead of it; 2 of 4 GPUs busy (by estimate) until 1000 s after it has waited `oldest_first_after_s`
    after_s = CFG.oldest_first_after_s
    wide = make_task(1, gpus=4, enqueued_at_s=0.0, estimated_s=3600.0)
    small = [make_task(10 + i, enqueued_at_s=after_s / 2 + i, estimated_s=2000.0) for i in range(2)]
    gpus = make_gpus(per_node=4)
    running = [make_running(100 + i, gpus=(i,), estimated_end_s=after_s + 1000.0) for i in range(2)]
    for r in running:
        gpus = occupy(gpus, r)
    # When it has waited less than that, Then credits order: the small ones start
    assert started(decide([wide, *small], running, gpus, after_s - 1.0, CFG)) == [10, 11]
    # When it has waited that long, Then it holds a reservation and the small ones, which would hold its
    # GPUs past the reservation, wait; without `oldest_first` they still take the free GPUs
    d = decide([wide, *small], running, gpus, after_s, CFG)
    assert started(d) == []
    assert "reserved" in d.pending_reasons[1]
    assert started(decide([wide, *small], running, gpus, after_s, replace(CFG, oldest_first=False))) == [
        10,
        11,
    ]
    # And a small task that ends before the reservation still backfills
    quick = make_task(12, enqueued_at_s=after_s / 2, estimated_s=600.0)
    assert started(decide([wide, quick], running, gpus, after_s, CFG)) == [12]


def test_the_oldest_one_gpu_task_keeps_its_rank_order_so_fair_share_still_decides() -> None:
    usage = {"heavy": TeamUsage("heavy", decayed_gpu_s=1e6), "light": TeamUsage("light", decayed_gpu_s=0.0)}
    queued = [make_task(1, team="heavy"), make_task(2, team="light", enqueued_at_s=60.0)]
    assert started(decide(queued, [], make_gpus(per_node=1), 100.0, CFG, usage)) == [2]


def test_a_task_that_fits_only_gpus_out_of_service_says_so_not_that_gpus_are_busy() -> None:
    gpus = make_gpus(nodes=2, per_node=4)
    drained = [replace(g, available=g.node != gpus[0].node) for g in gpus]  # the first node drained
    wide = make_task(1, gpus=4)
    gone = [replace(g, available=False) for g in gpus]

    assert started(decide([wide], [], drained, 0.0, CFG)) == [1]  # the other node serves it
    d = decide([wide, make_task(2, gpus=1)], [], gone, 0.0, CFG)
    assert started(d) == []
    assert d.pending_reasons[1].startswith("waiting for GPUs out of service (8 of 8: a drained or down node")
    # with the reasons the live cluster gives (`policy_input.gpu_slots`), they are named, once per node
    why = {gpus[0].node: "node n0 is drained", gpus[-1].node: "node n1 is down (no heartbeat for 90 s)"}
    named = [replace(g, why_unavailable=why[g.node]) for g in gone]
    assert decide([wide], [], named, 0.0, CFG).pending_reasons[1] == (
        "waiting for GPUs out of service (8 of 8: node n0 is drained; node n1 is down (no heartbeat for 90 s); "
        "`nightshift nodes` shows which)"
    )


def test_a_retried_task_waits_out_its_backoff_and_says_so() -> None:
    d = decide([make_task(1, retry_at_s=90.0)], [], make_gpus(), 0.0, CFG)
    assert (
        d.pending_reasons[1] == "retrying at 00:01 (backoff after a failed attempt)" and d.wake_at_s == 90.0
    )
    assert started(decide([make_task(1, retry_at_s=90.0)], [], make_gpus(), 90.0, CFG)) == [1]
