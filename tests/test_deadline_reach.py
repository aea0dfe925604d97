"""`submission.deadline_out_of_reach`: the note a submit or a change gets when the task cannot finish by its
deadline even on an idle cluster (its earliest start, plus the run time it gave, falls after it)."""

from __future__ import annotations

from scheduler.policy.config import PolicyConfig
from scheduler.submission import deadline_out_of_reach, earliest_start
from tests.policy.builders import make_task

NOON = 1_796_126_400.0  # 2026-12-01T12:00:00Z
HOUR = 3600.0
CONFIG = PolicyConfig(offpeak="23:00-07:00", timezone="UTC")


def test_tonight_with_a_deadline_in_30_minutes_cannot_make_it():
    task = make_task(offpeak=True, estimated_s=None, deadline_s=NOON + 1800)

    note = deadline_out_of_reach(task, CONFIG, NOON)

    assert (
        note == "it cannot finish by its deadline 12:30: the earliest it may start is 23:00 (off-peak window)"
    )


def test_a_not_before_plus_the_estimate_after_the_deadline_names_both():
    task = make_task(not_before_s=NOON + HOUR, estimated_s=2 * HOUR, deadline_s=NOON + 2 * HOUR)

    assert deadline_out_of_reach(task, CONFIG, NOON) == (
        "it cannot finish by its deadline 14:00: the earliest it may start is 13:00 (not before), "
        "and its ~2.0 h estimate ends it around 15:00"
    )


def test_a_time_limit_counts_where_no_estimate_was_given_even_starting_now():
    task = make_task(estimated_s=None, time_limit_s=3 * HOUR, deadline_s=NOON + HOUR)

    assert deadline_out_of_reach(task, CONFIG, NOON) == (
        "it cannot finish by its deadline 13:00: the earliest it may start is now, "
        "and its ~3.0 h time limit ends it around 15:00"
    )


def test_a_deadline_within_reach_or_none_at_all_gets_no_note():
    assert deadline_out_of_reach(make_task(deadline_s=NOON + 2 * HOUR), CONFIG, NOON) is None
    assert deadline_out_of_reach(make_task(offpeak=True, estimated_s=None), CONFIG, NOON) is None
    # with no run time given, only a start after the deadline is out of reach
    tonight = make_task(offpeak=True, estimated_s=None, deadline_s=NOON + 12 * HOUR)
    assert deadline_out_of_reach(tonight, CONFIG, NOON) is None


def test_the_earliest_start_is_the_off_peak_start_after_a_not_before():
    task = make_task(offpeak=True, not_before_s=NOON + 14 * HOUR)  # 02:00 tomorrow: inside the window

    assert earliest_start(task, CONFIG, NOON) == (NOON + 14 * HOUR, "not before")
    assert earliest_start(make_task(offpeak=True), CONFIG, NOON) == (NOON + 11 * HOUR, "off-peak window")
    assert earliest_start(make_task(), CONFIG, NOON) == (NOON, None)
