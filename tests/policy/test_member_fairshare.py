"""Fair share within a team (Slurm's fair tree): the team's factor is shared out among its members by their
part of its recent use, so in a lab of one team the person who ran little lately goes ahead of the one who
ran a lot; a team of one person keeps the team's factor exactly (the philly replay, user = team, is
unchanged); the credit stays within its bound, so the aging guarantee holds."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.policy.config import PolicyConfig, TeamUsage
from scheduler.policy.engine import decide
from scheduler.policy.fairshare import fairshare_by_member, fairshare_factors, member_weights
from tests.policy.builders import make_gpus, make_task

CFG = PolicyConfig()


def started(decisions) -> list[int]:
    return [start.task_id for start in decisions.starts]


def _lab(alice_s: float, bob_s: float) -> dict[str, TeamUsage]:
    return {"lab": TeamUsage("lab", alice_s + bob_s, member_decayed_gpu_s={"alice": alice_s, "bob": bob_s})}


def test_in_a_lab_of_one_team_the_person_who_ran_little_goes_first():
    usage = _lab(alice_s=1e6, bob_s=0.0)
    alices = make_task(1, team="lab", user="alice", enqueued_at_s=0.0)
    bobs = make_task(2, team="lab", user="bob", enqueued_at_s=3600.0)  # an hour later

    assert started(decide([alices, bobs], [], make_gpus(per_node=1), 7200.0, CFG, usage)) == [2]
    # with equal use, the earlier one goes first, as before
    assert started(decide([alices, bobs], [], make_gpus(per_node=1), 7200.0, CFG, _lab(5e5, 5e5))) == [1]


def test_the_factors_share_the_teams_out_and_stay_within_one():
    usage = _lab(alice_s=3e5, bob_s=1e5)
    factors = fairshare_by_member(usage, [("lab", "alice"), ("lab", "bob"), ("lab", "carol")])
    team = fairshare_factors(usage, {"lab"})["lab"]

    assert team == 0.5
    assert factors[("lab", "alice")] == pytest.approx(team * 2 ** (1 - 3 * 0.75))
    assert factors[("lab", "bob")] == pytest.approx(team * 2 ** (1 - 3 * 0.25))
    assert factors[("lab", "carol")] == 1.0  # used nothing: twice the team's factor, capped at 1
    assert factors[("lab", "carol")] > factors[("lab", "bob")] > factors[("lab", "alice")]


def test_a_team_of_one_person_or_of_no_use_keeps_the_teams_factor():
    usage = {
        "solo": TeamUsage("solo", 2e5, member_decayed_gpu_s={"solo": 2e5}),
        "quiet": TeamUsage("quiet", 0.0, member_decayed_gpu_s={"ann": 0.0, "ben": 0.0}),
        "busy": TeamUsage("busy", 6e5, member_decayed_gpu_s={"cat": 6e5}),
    }
    members = [("solo", "solo"), ("quiet", "ann"), ("quiet", "ben"), ("busy", "cat")]
    by_team = fairshare_factors(usage, {"solo", "quiet", "busy"})

    by_member = fairshare_by_member(usage, members)

    assert {team: by_member[(team, user)] for team, user in members} == by_team
    assert member_weights(None, ["anyone", "other"]) == {"anyone": 1.0, "other": 1.0}


@given(
    st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.floats(0, 1e7), max_size=4),
    st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=1, max_size=5),
)
def test_every_factor_is_in_zero_one_so_the_credit_keeps_its_bound(used, waiting):
    usage = {"lab": TeamUsage("lab", sum(used.values()), member_decayed_gpu_s=used)}
    factors = fairshare_by_member(usage, [("lab", user) for user in waiting])

    assert all(0.0 < factor <= 1.0 for factor in factors.values())


def test_the_simulator_counts_each_members_use_as_the_live_side_does():
    # the simulator decays a run as a whole from its end, the live side integrates the decay over the run:
    # within 1 % over hours, as for the teams' totals
    from scheduler.simulate.usage import UsageTracker
    from scheduler.usage import GpuSpan, team_usage

    half_life_s = 7 * 86400.0
    runs = [
        (1, "lab", "alice", 2.0, 0.0, 3600.0),
        (2, "lab", "bob", 1.0, 600.0, None),
        (3, "cv", "cy", 1.0, 100.0, 900.0),
    ]
    tracker = UsageTracker(half_life_s)
    for task_id, team, user, gpus, start_s, _ in runs:
        tracker.started(task_id, team, gpus, start_s, user=user)
    for task_id, _, _, _, _, end_s in runs:
        if end_s is not None:
            tracker.ended(task_id, end_s)
    now_s = 7200.0

    simulated = tracker.snapshot(now_s)
    live = team_usage(
        [GpuSpan(team, gpus, start_s, end_s, user) for _, team, user, gpus, start_s, end_s in runs],
        now_s,
        half_life_s,
    )

    for team in ("lab", "cv"):
        members = simulated[team].member_decayed_gpu_s
        assert members == pytest.approx(dict(live[team].member_decayed_gpu_s), rel=0.01)
        assert simulated[team].decayed_gpu_s == pytest.approx(live[team].decayed_gpu_s, rel=0.01)
        assert sum(members.values()) == pytest.approx(simulated[team].decayed_gpu_s)


def test_a_site_may_keep_fair_share_between_teams_only():
    usage = _lab(alice_s=1e6, bob_s=0.0)
    alices = make_task(1, team="lab", user="alice", enqueued_at_s=0.0)
    bobs = make_task(2, team="lab", user="bob", enqueued_at_s=3600.0)
    teams_only = PolicyConfig(fairshare_within_teams=False)

    assert started(decide([alices, bobs], [], make_gpus(per_node=1), 7200.0, teams_only, usage)) == [1]
