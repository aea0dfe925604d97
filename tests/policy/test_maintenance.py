"""A node going down for maintenance (a drain set for later): until then only a task that ends by then
starts there, and no task is promised GPUs there."""

from __future__ import annotations

import math
from dataclasses import replace

from scheduler.policy.config import PolicyConfig
from scheduler.policy.engine import decide
from scheduler.policy.forecast import estimate_starts
from tests.policy.builders import make_gpus, make_running, make_task, occupy

H = 3600.0
NOW = 10 * 86400.0  # midnight UTC
CONFIG = PolicyConfig(timezone="UTC")


def _going_down(gpus: list, node: str, at_s: float) -> list:
    return [replace(g, down_at_s=at_s) if g.node == node else g for g in gpus]


def test_only_a_task_that_ends_before_the_maintenance_starts_on_that_node() -> None:
    gpus = _going_down(make_gpus(1, 2), "n0", NOW + H)
    long = make_task(1, estimated_s=2 * H)
    short = make_task(2, estimated_s=0.5 * H)

    d = decide([long, short], [], gpus, NOW, CONFIG)

    assert [s.task_id for s in d.starts] == [2]
    assert (
        d.pending_reasons[1]
        == "node n0 goes down for maintenance at 01:00: its ~2.0 h estimate would run past it"
    )


def test_a_long_task_goes_to_a_node_that_stays_and_none_starts_there_once_it_is_down() -> None:
    gpus = _going_down(make_gpus(2, 1), "n0", NOW + H)

    d = decide([make_task(1, estimated_s=2 * H)], [], gpus, NOW, CONFIG)
    after = decide([make_task(2, estimated_s=60)], [], gpus, NOW + 2 * H, CONFIG)

    assert [(s.task_id, s.node) for s in d.starts] == [(1, "n1")]
    assert [(s.task_id, s.node) for s in after.starts] == [(2, "n1")]
    only_down = _going_down(make_gpus(1, 1), "n0", NOW + H)
    assert decide([make_task(3, estimated_s=60)], [], only_down, NOW + 2 * H, CONFIG).starts == ()


def test_no_reservation_is_promised_on_a_node_going_down() -> None:
    # n0 (going down in 3 h) frees in 1 h, n1 in 5 h: a blocked 2-GPU task is promised n1, not n0
    gpus = make_gpus(2, 2)
    on_n0 = make_running(50, "n0", (0, 1), estimated_end_s=NOW + H)
    on_n1 = make_running(51, "n1", (0, 1), estimated_end_s=NOW + 5 * H)
    gpus = _going_down(occupy(occupy(gpus, on_n0), on_n1), "n0", NOW + 3 * H)
    wide = make_task(1, gpus=2, estimated_s=H)

    d = decide([wide], [on_n0, on_n1], gpus, NOW, CONFIG)

    assert d.reserved_on == {1: ("n1",)}
    no_maintenance = [replace(g, down_at_s=None) for g in gpus]
    assert decide([wide], [on_n0, on_n1], no_maintenance, NOW, CONFIG).reserved_on == {1: ("n0",)}


def test_forecasts_see_the_node_go_down() -> None:
    gpus = _going_down(make_gpus(1, 1), "n0", NOW + H)
    short, long = make_task(1, estimated_s=0.5 * H), make_task(2, estimated_s=2 * H)

    est = estimate_starts([short, long], [], gpus, NOW, CONFIG)
    alone = estimate_starts([long], [], gpus, NOW, CONFIG)

    assert est[1].start_s == NOW
    assert math.isinf(est[2].start_s)  # its only node goes down before it could end
    assert math.isinf(alone[2].start_s)
    assert alone[2].reason.startswith("node n0 goes down for maintenance at 01:00")


def _down_between(gpus: list, node: str, at_s: float, until_s: float) -> list:
    return [replace(g, down_at_s=at_s, up_at_s=until_s) if g.node == node else g for g in gpus]


def test_a_maintenance_with_an_end_keeps_tasks_off_its_node_until_then_and_the_pass_wakes_then() -> None:
    gpus = _down_between(make_gpus(1, 1), "n0", NOW + H, NOW + 3 * H)
    long = make_task(1, estimated_s=2 * H)

    before = decide([long], [], gpus, NOW, CONFIG)
    inside = decide([long], [], gpus, NOW + 2 * H, CONFIG)
    after = decide([long], [], gpus, NOW + 3 * H, CONFIG)

    assert before.starts == () and inside.starts == ()
    assert (
        before.pending_reasons[1]
        == "node n0 goes down for maintenance at 01:00 until 03:00: its ~2.0 h estimate would run past it"
    )
    assert inside.pending_reasons[1] == "node n0 is down for maintenance until 03:00"
    assert before.wake_at_s == inside.wake_at_s == NOW + 3 * H  # back in service then
    assert [(s.task_id, s.node) for s in after.starts] == [(1, "n0")]


def test_a_task_that_ends_before_a_maintenance_with_an_end_still_starts_there() -> None:
    gpus = _down_between(make_gpus(1, 1), "n0", NOW + H, NOW + 3 * H)

    d = decide([make_task(1, estimated_s=0.5 * H)], [], gpus, NOW, CONFIG)

    assert [s.task_id for s in d.starts] == [1]


def test_forecasts_see_the_node_come_back_at_the_end_of_its_maintenance() -> None:
    gpus = _down_between(make_gpus(1, 1), "n0", NOW + H, NOW + 3 * H)
    short, long = make_task(1, estimated_s=0.5 * H), make_task(2, estimated_s=2 * H)

    est = estimate_starts([short, long], [], gpus, NOW, CONFIG)
    inside = estimate_starts([long], [], gpus, NOW + 2 * H, CONFIG)

    assert est[1].start_s == NOW
    assert est[2].start_s == NOW + 3 * H  # not never: the node is back then
    assert inside[2].start_s == NOW + 3 * H
