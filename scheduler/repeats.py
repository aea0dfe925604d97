"""When a repeating reservation of a node comes round again (Slurm's reservation flags DAILY, WEEKDAY,
WEEKEND, WEEKLY): every day, working day, weekend day or week at the same wall-clock time in its time zone,
for as long as its first time lasted, until it is called off."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Literal, get_args

from scheduler.errors import SpecError
from scheduler.policy.windows import zone

Repeat = Literal["daily", "weekdays", "weekends", "weekly"]
REPEATS: tuple[str, ...] = get_args(Repeat)
# how long each may last at most: under the gap between two of its days
_LONGEST_S = {"daily": 86_400, "weekdays": 86_400, "weekends": 86_400, "weekly": 7 * 86_400}


def check_repeat(repeat: str, start_s: float, end_s: float, zone_name: str) -> None:
    """Refuse an unknown repeat, a time that lasts as long as the gap to its next, or a first time on a day
    the repeat skips (a weekday for `weekends`), with a message that says what to change."""
    if repeat not in REPEATS:
        raise SpecError(
            f"unknown repeat {repeat!r}: use one of {', '.join(REPEATS)}",
            [{"field": "repeat", "message": f"one of {', '.join(REPEATS)}"}],
        )
    if end_s - start_s >= _LONGEST_S[repeat]:
        gap = "a week" if repeat == "weekly" else "a day"
        raise SpecError(
            f"a {repeat} reservation must last less than {gap} (this one lasts "
            f"{(end_s - start_s) / 3600:.1f} h): give an end sooner after its start",
            [{"field": "until", "message": f"less than {gap} after the start"}],
        )
    first = datetime.fromtimestamp(start_s, zone(zone_name))
    if not _counts(repeat, first):
        day = "a Saturday or Sunday" if repeat == "weekends" else "a Monday to Friday"
        raise SpecError(
            f"a {repeat} reservation starts on {day}; {first:%A %Y-%m-%d} is not one: choose another start",
            [{"field": "at", "message": day}],
        )


def occurrences(
    repeat: str, start_s: float, end_s: float, zone_name: str, since_s: float, until_s: float
) -> Iterator[tuple[float, float]]:
    """(start, end) of each time the reservation first held `start_s`..`end_s` comes round that is not over
    at `since_s` and starts before `until_s`, in order: the same wall-clock start in `zone_name` (so a
    summer-time change keeps it at 14:00), each lasting as long as the first."""
    length_s = end_s - start_s
    tz = zone(zone_name)
    first = datetime.fromtimestamp(start_s, tz)
    step = 7 if repeat == "weekly" else 1
    # skip whole weeks that are over before `since_s` (a week is a multiple of every step), so that a
    # reservation made long ago costs no more than a new one
    weeks_over = max(0, int((since_s - length_s - start_s) // (7 * 86_400)) - 1)
    day = weeks_over * 7
    while True:
        local = first.replace(tzinfo=None) + timedelta(days=day)
        begin_s = local.replace(tzinfo=tz).timestamp()
        if begin_s >= until_s:
            return
        if _counts(repeat, local) and begin_s + length_s > since_s:
            yield begin_s, begin_s + length_s
        day += step


def _counts(repeat: str, local: datetime) -> bool:
    """True when the reservation comes round on `local`'s day."""
    if repeat == "weekdays":
        return local.weekday() < 5
    if repeat == "weekends":
        return local.weekday() >= 5
    return True
