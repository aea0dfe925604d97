"""A reservation of a node that repeats (every day, working day, weekend day or week): when it comes round,
which repeats overlap, what cannot repeat, and how the policy sees it."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from scheduler.errors import SpecError
from scheduler.nodes import NodeGpu, NodeState, TeamReservation, _reservations
from scheduler.repeats import check_repeat, occurrences

PARIS = ZoneInfo("Europe/Paris")
H = 3600.0


def _at(*fields: int) -> float:
    return datetime(*fields, tzinfo=PARIS).timestamp()  # type: ignore[misc]


def _local(times: list[tuple[float, float]]) -> list[str]:
    return [
        f"{datetime.fromtimestamp(start, PARIS):%a %m-%d %H:%M}-{datetime.fromtimestamp(end, PARIS):%H:%M}"
        for start, end in times
    ]


def test_a_weekly_reservation_keeps_its_wall_clock_time_across_a_summer_time_change() -> None:
    first = _at(2026, 10, 20, 14, 0)  # a Tuesday; summer time ends on Sunday 10-25

    times = list(occurrences("weekly", first, first + 3 * H, "Europe/Paris", first, first + 15 * 86_400))

    assert _local(times) == ["Tue 10-20 14:00-17:00", "Tue 10-27 14:00-17:00", "Tue 11-03 14:00-17:00"]
    assert times[1][0] - times[0][0] == 7 * 86_400 + H  # the week that gained an hour


def test_working_days_and_weekend_days_come_round_on_their_days_only() -> None:
    monday = _at(2026, 12, 7, 9, 0)
    week = (monday, monday + 7 * 86_400)

    weekdays = _local(list(occurrences("weekdays", monday, monday + 2 * H, "Europe/Paris", *week)))
    weekends = _local(
        list(occurrences("weekends", monday + 5 * 86_400, monday + 5 * 86_400 + H, "Europe/Paris", *week))
    )

    assert weekdays == [f"{day} 12-{date:02d} 09:00-11:00" for day, date in zip(
        ["Mon", "Tue", "Wed", "Thu", "Fri"], range(7, 12), strict=True)]  # fmt: skip
    assert weekends == ["Sat 12-12 09:00-10:00", "Sun 12-13 09:00-10:00"]


def test_a_reservation_made_long_ago_gives_the_times_around_now_only() -> None:
    first = _at(2024, 1, 2, 14, 0)
    now = _at(2026, 12, 8, 15, 0)  # inside Tuesday's time

    times = list(occurrences("daily", first, first + 3 * H, "Europe/Paris", now, now + 2 * 86_400))

    assert _local(times) == ["Tue 12-08 14:00-17:00", "Wed 12-09 14:00-17:00", "Thu 12-10 14:00-17:00"]


@pytest.mark.parametrize(
    ("repeat", "start", "hours", "field", "words"),
    [
        (
            "monthly",
            _at(2026, 12, 8, 14, 0),
            3,
            "repeat",
            "unknown repeat 'monthly': use one of daily, weekdays",
        ),
        (
            "daily",
            _at(2026, 12, 8, 14, 0),
            24,
            "until",
            "a daily reservation must last less than a day (this one",
        ),
        (
            "weekly",
            _at(2026, 12, 8, 14, 0),
            7 * 24,
            "until",
            "a weekly reservation must last less than a week",
        ),
        ("weekends", _at(2026, 12, 8, 14, 0), 3, "at", "Tuesday 2026-12-08 is not one: choose another start"),
        (
            "weekdays",
            _at(2026, 12, 12, 14, 0),
            3,
            "at",
            "a weekdays reservation starts on a Monday to Friday",
        ),
    ],
)
def test_a_repeat_that_cannot_be_kept_is_refused_naming_what_to_change(
    repeat: str, start: float, hours: float, field: str, words: str
) -> None:
    with pytest.raises(SpecError, match=words.replace("(", r"\(")) as refused:
        check_repeat(repeat, start, start + hours * H, "Europe/Paris")

    assert refused.value.errors[0]["field"] == field


def _held(team: str, start: float, hours: float, repeat: str | None = None) -> TeamReservation:
    return TeamReservation(
        team, round(start * 1000), round((start + hours * H) * 1000), repeat, "Europe/Paris"
    )


def test_repeating_reservations_overlap_when_any_of_their_times_do() -> None:
    tuesday = _at(2026, 12, 8, 14, 0)
    weekly = _held("vision", tuesday, 3, "weekly")

    next_tuesday = _held("nlp", tuesday + 7 * 86_400 + H, 1)  # inside its second time
    clash = weekly.overlap(next_tuesday)
    assert clash is not None and clash.team == "nlp"
    assert (c := next_tuesday.overlap(weekly)) is not None and c.start_ms == round(
        (tuesday + 7 * 86_400) * 1000
    )
    assert weekly.overlap(_held("nlp", tuesday + 3 * H, 20, "daily")) is None  # 17:00 to 13:00 next day
    assert weekly.overlap(_held("nlp", tuesday + 2 * H, 20, "daily")) is not None  # from 16:00: an hour of it
    saturday = _held("nlp", tuesday + 4 * 86_400, 3, "weekends")
    assert _held("vision", tuesday, 3, "weekdays").overlap(saturday) is None  # the same hours, other days
    assert _held("vision", tuesday - 86_400, 3, "daily").overlap(saturday) is not None


def test_the_policy_sees_each_time_ahead_and_nodes_shows_each_reservation_once() -> None:
    now = _at(2026, 12, 8, 15, 0)  # inside Tuesday's time of a daily reservation made a week ago
    node = NodeState(
        "box-1",
        (NodeGpu(0, "NVIDIA A100", 80 * 1024, 80 * 1024),),
        heartbeat_ms=round(now * 1000),
        reservations=(_held("vision", now - 7 * 86_400 - H, 3, "daily"), _held("nlp", now + 3 * 86_400, 2)),
    )
    now_ms = round(now * 1000)

    ahead = node.team_reservations(now_ms)
    shown = node.next_reservations(now_ms)

    # its times that start within 14 days: today's, begun, and 14 more (the last, 12-22 14:00, starts before 15:00)
    assert [held.team for held in ahead] == ["vision"] * 4 + ["nlp"] + ["vision"] * 11
    assert _local([(held.start_ms / 1000, held.end_ms / 1000) for held in ahead[:2]]) == [
        "Tue 12-08 14:00-17:00",
        "Wed 12-09 14:00-17:00",
    ]
    assert [(held.team, held.repeat, held.start_ms) for held in shown] == [
        ("vision", "daily", round((now - H) * 1000)),
        ("nlp", None, round((now + 3 * 86_400) * 1000)),
    ]
    assert not node.reservations[0].over(now_ms + 10**12)  # a repeating one never ends by itself


def test_the_node_record_reads_reservations_written_before_they_could_repeat() -> None:
    assert _reservations('[["vision", 1000, 2000]]') == [TeamReservation("vision", 1000, 2000)]
    assert _reservations('[["vision", 1000, 2000, "weekly", "Asia/Shanghai"]]') == [
        TeamReservation("vision", 1000, 2000, "weekly", "Asia/Shanghai")
    ]


def test_weekly_is_one_week_apart_in_utc_where_no_clock_changes() -> None:
    first = datetime(2026, 12, 8, 14, 0, tzinfo=ZoneInfo("UTC")).timestamp()
    times = list(
        occurrences(
            "weekly", first, first + H, "UTC", first + timedelta(days=1).total_seconds(), first + 20 * 86_400
        )
    )
    assert [start - first for start, _ in times] == [7 * 86_400, 14 * 86_400]


def test_a_repeating_maintenance_holds_the_node_each_time_and_lets_it_work_between() -> None:
    now = _at(2026, 12, 8, 3, 0)  # inside Tuesday's time of a daily 02:00-04:00 maintenance set a week ago
    first = now - 7 * 86_400 - H
    node = NodeState(
        "box-1",
        (NodeGpu(0, "NVIDIA A100", 80 * 1024, 80 * 1024),),
        heartbeat_ms=round(now * 1000),
        drain_at_ms=round(first * 1000),
        drain_until_ms=round((first + 2 * H) * 1000),
        drain_repeat="daily",
        drain_zone="Europe/Paris",
    )

    inside, after = round(now * 1000), round((now + 2 * H) * 1000)

    assert node.maintenance(inside) == (round((now - H) * 1000), round((now + H) * 1000))
    assert node.drained_at(inside) and not node.drained_at(after)
    assert node.maintenance(after) == (
        round((now + 23 * H) * 1000),
        round((now + 25 * H) * 1000),
    )  # tomorrow's
