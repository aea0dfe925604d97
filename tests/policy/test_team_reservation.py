"""A node reserved for one team for a while (Slurm's reservation for an account): from its start to its end
only that team's tasks start there; before it, another team's task starts there only if it ends first; the
team's own tasks are never kept off it; afterwards the node is everyone's again."""

from __future__ import annotations

from dataclasses import replace

from scheduler.policy.config import PolicyConfig
from scheduler.policy.engine import decide
from scheduler.policy.forecast import estimate_starts
from scheduler.policy.types import TeamWindow
from tests.policy.builders import make_gpus, make_running, make_task, occupy

H = 3600.0
NOW = 10 * 86400.0  # midnight UTC
CONFIG = PolicyConfig(timezone="UTC")


def _reserved(gpus: list, node: str, team: str, start_s: float, end_s: float) -> list:
    window = TeamWindow(team, start_s, end_s)
    return [replace(g, reserved=(*g.reserved, window)) if g.node == node else g for g in gpus]


def test_inside_the_reservation_only_the_teams_tasks_start_on_the_node() -> None:
    gpus = _reserved(make_gpus(1, 2), "n0", "vision", NOW - H, NOW + 8 * H)
    other = make_task(1, team="nlp", estimated_s=600)
    own = make_task(2, team="vision", estimated_s=2 * H)

    d = decide([other, own], [], gpus, NOW, CONFIG)

    assert [s.task_id for s in d.starts] == [2]
    assert d.pending_reasons[1] == "node n0 is reserved for team vision until 08:00"
    assert d.wake_at_s == NOW + 8 * H  # everyone's again then


def test_before_it_another_teams_task_starts_there_only_if_it_ends_first_and_the_teams_own_always() -> None:
    gpus = _reserved(make_gpus(1, 3), "n0", "vision", NOW + H, NOW + 8 * H)
    short = make_task(1, team="nlp", estimated_s=0.5 * H)
    long = make_task(2, team="nlp", estimated_s=2 * H)
    own = make_task(3, team="vision", estimated_s=20 * H)

    d = decide([short, long, own], [], gpus, NOW, CONFIG)

    assert sorted(s.task_id for s in d.starts) == [1, 3]
    assert d.pending_reasons[2] == (
        "node n0 is reserved for team vision from 01:00 until 08:00: its ~2.0 h estimate would run into it"
    )


def test_another_teams_task_goes_to_a_node_not_reserved_and_starts_anywhere_once_it_is_over() -> None:
    gpus = _reserved(make_gpus(2, 1), "n0", "vision", NOW - H, NOW + 8 * H)
    task = make_task(1, team="nlp", estimated_s=H)

    now = decide([task], [], gpus, NOW, CONFIG)
    over = decide(
        [task], [], _reserved(make_gpus(1, 1), "n0", "vision", NOW - H, NOW + 8 * H), NOW + 8 * H, CONFIG
    )

    assert [(s.task_id, s.node) for s in now.starts] == [(1, "n1")]
    assert [(s.task_id, s.node) for s in over.starts] == [(1, "n0")]


def test_no_other_team_is_promised_gpus_on_a_reserved_node_but_the_team_is() -> None:
    # n0 (reserved for vision from in 3 h) frees in 1 h, n1 in 5 h
    on_n0 = make_running(50, "n0", (0, 1), estimated_end_s=NOW + H)
    on_n1 = make_running(51, "n1", (0, 1), estimated_end_s=NOW + 5 * H)
    gpus = _reserved(occupy(occupy(make_gpus(2, 2), on_n0), on_n1), "n0", "vision", NOW + 3 * H, NOW + 9 * H)

    others = decide([make_task(1, team="nlp", gpus=2, estimated_s=4 * H)], [on_n0, on_n1], gpus, NOW, CONFIG)
    own = decide([make_task(2, team="vision", gpus=2, estimated_s=4 * H)], [on_n0, on_n1], gpus, NOW, CONFIG)

    assert others.reserved_on == {1: ("n1",)}
    assert own.reserved_on == {2: ("n0",)}


def test_forecasts_replay_the_reservation_for_each_team() -> None:
    gpus = _reserved(make_gpus(1, 1), "n0", "vision", NOW + H, NOW + 4 * H)
    other = make_task(1, team="nlp", estimated_s=2 * H)
    own = make_task(2, team="vision", estimated_s=2 * H)

    assert estimate_starts([other], [], gpus, NOW, CONFIG)[1].start_s == NOW + 4 * H
    assert estimate_starts([own], [], gpus, NOW, CONFIG)[2].start_s == NOW


def test_a_node_reserved_for_two_teams_one_after_the_other_keeps_each_off_the_others_time() -> None:
    gpus = _reserved(make_gpus(1, 2), "n0", "vision", NOW - H, NOW + 2 * H)
    gpus = _reserved(gpus, "n0", "nlp", NOW + 3 * H, NOW + 6 * H)
    theirs = make_task(1, team="nlp", estimated_s=H)
    short = make_task(2, team="vision", estimated_s=H)
    long = make_task(3, team="vision", estimated_s=20 * H)

    d = decide([theirs, short, long], [], gpus, NOW, CONFIG)

    assert [s.task_id for s in d.starts] == [2]
    assert d.pending_reasons[1] == "node n0 is reserved for team vision until 02:00"
    assert d.pending_reasons[3] == (
        "node n0 is reserved for team nlp from 03:00 until 06:00: its ~20 h estimate would run into it"
    )
    assert estimate_starts([theirs], [], gpus, NOW, CONFIG)[1].start_s == NOW + 2 * H


def test_the_next_in_line_held_off_a_free_node_by_another_teams_reservation_says_so_first() -> None:
    # n0 is vision's (free); n1 runs an nlp task for an hour: nlp's next task gets GPUs on n1 reserved
    gpus = occupy(_reserved(make_gpus(2, 1), "n0", "vision", NOW - H, NOW + 8 * H), make_running(9, "n1"))
    running = [make_running(9, "n1", estimated_end_s=NOW + H, started_at_s=NOW - H, team="nlp")]

    d = decide([make_task(1, team="nlp")], running, gpus, NOW, CONFIG, with_reasons=True)

    assert d.reserved_on == {1: ("n1",)}
    assert d.pending_reasons[1] == (
        "node n0 is reserved for team vision until 08:00; next in line: 1 GPU reserved on n1, expected free in "
        "~60 min"
    )
    assert estimate_starts([make_task(1, team="nlp")], running, gpus, NOW, CONFIG)[1].reason.startswith(
        "node n0 is reserved for team vision until 08:00; next in line: 1 GPU reserved on n1"
    )
