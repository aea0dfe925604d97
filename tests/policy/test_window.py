"""The tasks one pass looks at: the first `window` by static score, and the first few of each member of a
team in it who has none there (`policy.window`)."""

from __future__ import annotations

from dataclasses import replace

from scheduler.policy.config import PolicyConfig, TeamUsage
from scheduler.policy.engine import decide
from scheduler.policy.fairshare import fairshare_of_tasks
from scheduler.policy.window import absent_member_heads, pass_window
from tests.policy.builders import make_gpus, make_task

H = 3600.0


def _queue() -> list:
    """alice's five tasks of team lab first, then bob's three (lab), then dan's two (team ops)."""
    alice = [make_task(i, team="lab", user="alice", enqueued_at_s=float(i)) for i in range(1, 6)]
    bob = [make_task(i, team="lab", user="bob", enqueued_at_s=float(i)) for i in range(6, 9)]
    dan = [make_task(i, team="ops", user="dan", enqueued_at_s=float(i)) for i in range(9, 11)]
    return alice + bob + dan


def test_a_member_absent_from_the_window_has_their_first_tasks_added_not_another_teams() -> None:
    config = PolicyConfig(window=3, window_per_person=2)

    ids = [t.task_id for t in pass_window(_queue(), config)]

    assert ids == [1, 2, 3, 6, 7]  # bob's first two; dan's team has no task in the window
    assert [t.task_id for t in pass_window(_queue()[:3] + _queue()[5:], config)] == [1, 2, 3, 6, 7]
    # a member with a task among the first ones gets no more of theirs
    assert [t.task_id for t in pass_window(_queue()[4:], config)] == [5, 6, 7]


def test_fifo_backfill_and_a_short_queue_keep_the_first_window_only() -> None:
    for policy in ("fifo", "backfill"):
        assert len(pass_window(_queue(), PolicyConfig(policy=policy, window=3))) == 3
    assert len(pass_window(_queue(), PolicyConfig(window=3, window_per_person=0))) == 3
    assert len(pass_window(_queue()[:3], PolicyConfig(window=3))) == 3


def test_only_heads_of_members_absent_from_a_team_in_the_window_are_kept() -> None:
    window = _queue()[:3]  # alice's, of lab
    heads = [("lab", "alice", 4), ("lab", "bob", 6), ("lab", "bob", 7), ("ops", "dan", 9)]

    assert absent_member_heads(window, heads) == [6, 7]


def test_a_teammate_who_ran_less_goes_ahead_of_a_flood_the_window_would_hide() -> None:
    # alice queued 5 tasks an hour before bob's; she used the GPUs lately, he did not
    queue = [make_task(i, team="lab", user="alice", enqueued_at_s=0.0 + i) for i in range(1, 6)]
    queue.append(make_task(6, team="lab", user="bob", enqueued_at_s=H))
    usage = {"lab": TeamUsage("lab", 40 * H, member_decayed_gpu_s={"alice": 40 * H})}
    config = PolicyConfig(window=3)
    factors = fairshare_of_tasks(queue, usage, config)
    assert factors[("lab", "bob")] == 1.0 and factors[("lab", "alice")] == 0.25  # the team's credit, shared

    d = decide(queue, [], make_gpus(1, 1), 2 * H, config, usage)
    hidden = decide(queue, [], make_gpus(1, 1), 2 * H, replace(config, window_per_person=0), usage)

    assert [s.task_id for s in d.starts] == [6]
    assert [s.task_id for s in hidden.starts] == [1]  # without it: the window holds alice's alone
