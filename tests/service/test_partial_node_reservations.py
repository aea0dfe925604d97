"""Some of a node's GPUs kept for a team (Slurm's reservation of `gres/gpu:N`): the rest stay everyone's, two
teams may hold different GPUs of one node at once, and the reports count the GPUs held."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from functools import partial

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from scheduler.clock import now_ms
from scheduler.dispatcher import Dispatcher
from scheduler.errors import ConflictError
from scheduler.gpus import SimulatedGpus
from scheduler.nodes import TeamReservation, _reservations
from scheduler.policy.config import PolicyConfig
from scheduler.policy_input import gpu_slots
from scheduler.reports import utilization_report
from scheduler.worker import Worker
from tests.cli.conftest import cli_as

H_MS = 3_600_000


def _box(cluster, gpus: str = "4x24") -> Worker:
    worker = Worker(cluster, "box-1", SimulatedGpus(gpus, node="box-1"), base_env=dict(os.environ))
    worker.publish_node()
    return worker


def test_the_highest_free_gpus_are_chosen_and_a_third_team_finds_none_left(cluster):
    _box(cluster)
    now = now_ms()
    soon = TeamReservation("vision", now + H_MS, now + 3 * H_MS)

    vision = cluster.nodes.reserve("box-1", soon, now, gpu_count=2)
    nlp = cluster.nodes.reserve("box-1", soon._replace(team="nlp"), now, gpu_count=2)
    later = cluster.nodes.reserve(
        "box-1", soon._replace(team="ops", start_ms=now + 3 * H_MS, end_ms=now + 4 * H_MS), now, 4
    )
    with pytest.raises(ConflictError) as none_left:
        cluster.nodes.reserve("box-1", soon._replace(team="ops"), now, gpu_count=1)
    with pytest.raises(ConflictError, match="already reserved for team vision"):  # the whole node: overlaps
        cluster.nodes.reserve("box-1", soon._replace(team="ops", end_ms=now + 2 * H_MS), now)

    assert (vision.gpus, nlp.gpus, later.gpus) == ((2, 3), (0, 1), (0, 1, 2, 3))
    assert str(none_left.value) == (
        "only 0 of node box-1's GPUs are free of other reservations then, not 1: team vision (GPUs 2, 3), "
        "team nlp (GPUs 0, 1) hold the rest; ask for fewer GPUs or other times"
    )
    assert [(held.team, held.gpus) for held in cluster.nodes.all()[0].reservations] == [
        ("vision", (2, 3)), ("nlp", (0, 1)), ("ops", (0, 1, 2, 3))
    ]  # fmt: skip


def test_the_policy_keeps_other_teams_off_the_reserved_gpus_only(cluster, make_identity, tmp_path):
    alice, _ = make_identity("alice", "vision")
    bob, bob_token = make_identity("bob", "nlp")
    worker = _box(cluster)
    now = now_ms()
    assert cluster.nodes.reserve("box-1", TeamReservation("vision", now - 1000, now + 8 * H_MS), now, 2)
    wide, _ = cluster.submit(
        bob, {"command": "true", "gpus": 2, "estimated_minutes": 60, "workdir": str(tmp_path)}
    )
    more, _ = cluster.submit(  # ranked after the wide one (more GPU-seconds): no GPU is left open to it
        bob, {"command": "true", "gpus": 1, "estimated_minutes": 600, "workdir": str(tmp_path)}
    )
    own, _ = cluster.submit(  # ranked first (fewest GPU-seconds): it must not take the GPUs open to all
        alice, {"command": "true", "gpus": 2, "estimated_minutes": 30, "workdir": str(tmp_path)}
    )
    try:
        worker.publish_node()
        started = Dispatcher(cluster).run_pass()
        with TestClient(create_app(cluster)) as client:
            why = client.get(
                f"/api/v1/tasks/{more.id}/explain", headers={"Authorization": f"Bearer {bob_token}"}
            )
    finally:
        worker.shutdown()

    slots = {slot.index: slot.reserved for slot in gpu_slots(cluster.nodes.all(), [], now_ms())}
    assert [window.team for window in slots[2] + slots[3]] == ["vision", "vision"] and not slots[0] + slots[1]
    placed = {start.task_id: start.gpu_indices for start in started.starts}
    assert placed == {wide.id: (0, 1), own.id: (2, 3)}  # bob's on the GPUs not reserved, alice's on hers
    # it waits for one of the GPUs left open to it, not for vision's
    assert why.json()["reason"].startswith("next in line: 1 GPU reserved on box-1, expected free in ~60 min")


def test_an_admin_reserves_two_gpus_from_the_command_line_and_too_many_is_refused(
    cluster, make_identity, monkeypatch, tmp_path
):
    _admin, admin_token = make_identity("root", "ops", admin=True)
    make_identity("alice", "vision")
    _box(cluster)

    with cli_as(cluster, admin_token, monkeypatch, tmp_path / "home") as nightshift:
        reserved = nightshift("node", "reserve", "box-1", "--team", "vision", "--gpus", "2", "--until", "+8h")
        shown = nightshift("nodes")
        too_many = nightshift("node", "reserve", "box-1", "--team", "vision", "--gpus", "9", "--at", "+9h",
                              "--until", "+10h")  # fmt: skip

    assert reserved.exit_code == 0, reserved.output
    assert "node box-1 is reserved for team vision (GPUs 2,3) from " in " ".join(reserved.output.split())
    assert "reserved for vision (GPUs 2,3) from " in " ".join(shown.output.split())
    assert too_many.exit_code != 0
    assert "node box-1 has 4 GPUs, so a reservation of 9 cannot fit: ask for fewer" in " ".join(
        too_many.output.split()
    )


def test_the_report_counts_the_gpus_a_reservation_held_and_the_teams_use_of_them(
    cluster, make_identity, tmp_path
):
    admin, _ = make_identity("root", "ops", admin=True)
    monday = datetime(2026, 3, 2, tzinfo=UTC).timestamp()
    cluster.reservations.add("box", "vision", monday + 9 * 3600, monday + 11 * 3600, admin.user, gpus=(2, 3))
    report = partial(utilization_report, cluster.factory, monday + 86_400, 1, "team", PolicyConfig(), {}, 4)

    [row] = report(node_gpus={"box": 4})["reservations"]

    assert (row["gpus"], row["reserved_gpu_hours"]) == ([2, 3], 4.0)  # 2 GPUs x 2 h, not the node's 4


def test_reservations_written_before_some_gpus_could_be_held_read_as_the_whole_node():
    assert _reservations('[["vision", 1000, 2000]]')[0].gpus == ()
    assert _reservations('[["vision", 1000, 2000, null, "UTC", [2, 3]]]')[0].gpus == (2, 3)
    assert TeamReservation("v", 0, 1, gpus=(2, 3)).holds_gpu(3) and not TeamReservation(
        "v", 0, 1, gpus=(2,)
    ).holds_gpu(0)
    assert not TeamReservation("a", 0, 10, gpus=(0,)).overlap(TeamReservation("b", 0, 10, gpus=(1,)))
