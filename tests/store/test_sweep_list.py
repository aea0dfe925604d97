"""`GET /sweeps`'s store side on SQLite and PostgreSQL: the `status=` filter in SQL (`status_is`) keeps
exactly the sweeps whose reported status (`group_status` of their tasks) is that one, for every mix of task
statuses; pages and their total count the same filtered sweeps; a member never sees another team's."""

from __future__ import annotations

from itertools import combinations

import pytest
from sqlalchemy import update

from scheduler.store.identity import Identity
from scheduler.store.sweeps import (
    SWEEP_STATUSES,
    NewSweep,
    SweepFilter,
    SweepStore,
    group_status,
    status_is,
)
from scheduler.store.tables import TASK_STATUSES, Task
from tests.store.conftest import new_task


def _sweep(store, sweeps: SweepStore, who: Identity, statuses: tuple[str, ...], held: bool = False) -> int:
    """A sweep of `who` with one task in each of these statuses (set in SQL); its id."""
    tasks = [(new_task(f"python train.py {number}"), {"i": number}) for number in range(len(statuses))]
    sweep, rows, _ = sweeps.create(who, NewSweep("sweep", "s", "python train.py {i}", tasks))
    with store.factory.begin() as session:
        for row, status in zip(rows, statuses, strict=True):
            held_by = who.user_id if held and status == "queued" else None
            session.execute(update(Task).where(Task.id == row.id).values(status=status, held_by=held_by))
    return sweep.id


def test_the_status_filter_keeps_exactly_the_sweeps_the_list_reports_in_that_status(store):
    # Given one sweep for every mix of task statuses (and one without tasks, and one whose queued task is held)
    who = store.identity("alice", "vision")
    sweeps = SweepStore(store.factory)
    mixes = [mix for size in range(len(TASK_STATUSES) + 1) for mix in combinations(TASK_STATUSES, size)]
    reported = {_sweep(store, sweeps, who, mix): group_status(mix) for mix in mixes}
    reported[_sweep(store, sweeps, who, ("queued", "succeeded"), held=True)] = "queued"
    assert set(reported.values()) == set(SWEEP_STATUSES)  # every status has sweeps to find

    for status in SWEEP_STATUSES:
        # When the sweeps in one status are listed
        page = sweeps.page_for(who, SweepFilter(status=status), limit=1000)

        # Then they are exactly those the list reports in it, newest first, and all are counted
        expected = sorted((i for i, said in reported.items() if said == status), reverse=True)
        assert [sweep.id for sweep in page.sweeps] == expected, status
        assert page.total == len(expected)
        tallies = sweeps.tallies(expected)
        assert {group_status(tallies[i].counts) if i in tallies else "done" for i in expected} == {status}


def test_a_page_and_its_total_count_the_same_filtered_sweeps(store):
    alice, bob = store.identity("alice", "vision"), store.identity("bob", "vision")
    sweeps = SweepStore(store.factory)
    done = [_sweep(store, sweeps, alice, ("succeeded", "failed")) for _ in range(5)]
    _sweep(store, sweeps, alice, ("queued",))  # alice's, not done
    _sweep(store, sweeps, bob, ("succeeded",))  # done, but bob's
    mine_done = SweepFilter(user="alice", status="done")

    def page(limit: int, offset: int) -> tuple[list[int], int]:
        found = sweeps.page_for(alice, mine_done, limit=limit, offset=offset)
        return [sweep.id for sweep in found.sweeps], found.total

    assert page(2, 0) == ([done[4], done[3]], 5)  # a cut page is counted
    assert page(2, 4) == ([done[0]], 5)
    assert page(2, 10) == ([], 5)  # past the end: still counted
    assert page(50, 0) == (done[::-1], 5)
    assert sweeps.page_for(alice, limit=1).total == 7  # no filter: the team's every sweep


def test_a_member_sees_only_their_teams_sweeps_and_an_admin_any_one_teams(store):
    alice, carol = store.identity("alice", "vision"), store.identity("carol", "nlp")
    root = store.identity("root", "ops", admin=True)
    sweeps = SweepStore(store.factory)
    mine = _sweep(store, sweeps, alice, ("queued",))
    theirs = _sweep(store, sweeps, carol, ("queued",))

    def ids(who: Identity, team: str | None) -> list[int]:
        return [sweep.id for sweep in sweeps.page_for(who, SweepFilter(team=team)).sweeps]

    assert ids(alice, None) == [mine]
    assert ids(alice, "nlp") == [mine]  # a member's team is always their own (the API refuses first)
    assert ids(root, None) == [theirs, mine]
    assert ids(root, "nlp") == [theirs]
    assert ids(root, "nosuch") == []


def test_an_unknown_status_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="queued, running, done, cancelled"):
        status_is("active")
