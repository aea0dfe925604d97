"""Parse the times people type for `--after`: ISO 8601, `23:00`, `9pm`, `tomorrow 09:00`, `+2h`, `30m`,
`in 2 hours` — in the cluster's zone; and for `ls --since/--until`, times past: `yesterday`, `monday`,
`2026-12-01`, `-2d`, `3 hours ago`."""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta, tzinfo

from scheduler.errors import SpecError

# a delay: `+2h`, `30m`, `in 2 hours`, `in 45 minutes`
_RELATIVE = re.compile(
    r"^(?:\+|in\s+)?(\d+(?:\.\d+)?)\s*(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?)$"
)
# a clock time, `23:00`, `9pm` or `9:30am`, after `today` or `tomorrow` or alone (its next occurrence)
_CLOCK = re.compile(
    r"^(?:(?P<day>today|tomorrow)\s+(?:at\s+)?)?(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ampm>am|pm)?$"
)
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}  # by the unit's first letter (`mins`: m)
# a time ago: `-2d`, `2d`, `2d ago`, `3 hours ago`, `1w`
_AGO = re.compile(
    r"^-?\s*(\d+(?:\.\d+)?)\s*(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|w|weeks?)(?:\s+ago)?$"
)
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY_INDEX = {name: i for i, day in enumerate(_WEEKDAYS) for name in (day, day[:3])}  # `mon`: 0
_DAY_WORDS = "|".join(sorted(_WEEKDAY_INDEX, key=len, reverse=True))
# a day past (`today`, `yesterday`, `monday`, `last fri`), alone (its midnight) or with a clock time
_PAST_DAY = re.compile(
    rf"^(?:(?P<day>today|yesterday)|(?P<last>last\s+)?(?P<weekday>{_DAY_WORDS}))"
    r"(?:\s+(?:at\s+)?(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ampm>am|pm)?)?$"
)


def parse_when(text: str, now: datetime, zone: tzinfo) -> datetime:
    """An aware datetime for `text`; a bare clock time means its next occurrence after `now`."""
    value = text.strip().lower()
    relative = _RELATIVE.match(value)
    if relative:
        return now + timedelta(seconds=float(relative.group(1)) * _UNIT_S[relative.group(2)[0]])
    clock = _CLOCK.match(value)
    if clock and (clock["m"] is not None or clock["ampm"] is not None):
        return _clock_time(text, clock, now, zone)
    return _iso_time(
        text,
        zone,
        "ISO 8601 (2026-12-01T23:00), a clock time (23:00, 9pm, tomorrow 09:00) or a delay (+2h, "
        "30m, in 2 hours)",
    )


def _hour_minute(text: str, clock: re.Match[str]) -> tuple[int, int]:
    """The hour (0-23) and minute of a match with groups `h`, `m` and `ampm`; refused when out of range."""
    hour, minute = int(clock["h"]), int(clock["m"] or 0)
    if clock["ampm"] is not None:
        if not 1 <= hour <= 12:
            raise SpecError(f"{text!r} is not a time of day (with am/pm, the hour is 1-12)")
        hour = hour % 12 + (12 if clock["ampm"] == "pm" else 0)
    if hour > 23 or minute > 59:
        raise SpecError(f"{text!r} is not a time of day (use HH:MM, 00:00-23:59)")
    return hour, minute


def _clock_time(text: str, clock: re.Match[str], now: datetime, zone: tzinfo) -> datetime:
    """`23:00` or `9pm` alone: its next occurrence; after `today` or `tomorrow`: on that day."""
    hour, minute = _hour_minute(text, clock)
    local_now = now.astimezone(zone)
    moment = local_now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    # an aware datetime plus a day keeps its wall-clock time (zoneinfo works out the offset of that day)
    if clock["day"] == "tomorrow":
        return moment + timedelta(days=1)
    if clock["day"] == "today" and moment <= local_now:
        raise SpecError(f"{text!r} has already passed (it is {local_now:%H:%M} now)")
    return moment if moment > local_now else moment + timedelta(days=1)


def parse_past(text: str, now: datetime, zone: tzinfo) -> datetime:
    """An aware datetime for a time people look back to (`ls --since/--until`, as `sacct -S`): a day
    (`today`, `yesterday`, `monday`, `last fri`: its midnight, or `yesterday 18:00`), a clock time alone
    (`9am`: its last occurrence), a time ago (`-2d`, `2d`, `3 hours ago`, `1w`) or ISO 8601 (`2026-12-01`,
    `2026-12-01T09:00+08:00`); without an offset, in `zone`. A weekday is its latest one, today included
    (`last monday` on a Monday: a week ago)."""
    value = " ".join(text.strip().lower().split())
    ago = _AGO.match(value)
    if ago:
        try:
            return now - timedelta(seconds=float(ago.group(1)) * _UNIT_S[ago.group(2)[0]])
        except OverflowError:
            raise SpecError(f"{text!r} is too far back (before the year 1)") from None
    local_now = now.astimezone(zone)
    day = _PAST_DAY.match(value)
    if day:
        hour, minute = _hour_minute(text, day) if day["h"] is not None else (0, 0)
        return datetime.combine(_past_day(day, local_now.date()), time(hour, minute), tzinfo=zone)
    clock = _CLOCK.match(value)
    if clock and clock["day"] is None and (clock["m"] is not None or clock["ampm"] is not None):
        hour, minute = _hour_minute(text, clock)
        moment = datetime.combine(local_now.date(), time(hour, minute), tzinfo=zone)
        return moment if moment <= local_now else moment - timedelta(days=1)
    return _iso_time(
        text,
        zone,
        "a date (2026-12-01), a day (today, yesterday, monday), a clock time (9am, 18:30), a "
        "time ago (-2d, 3h ago, 1w) or ISO 8601 (2026-12-01T09:00)",
    )


def _iso_time(text: str, zone: tzinfo, accepted: str) -> datetime:
    """`text` read as ISO 8601, in `zone` without an offset; refused with what is `accepted` instead."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise SpecError(f"cannot read the time {text!r}: use {accepted}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=zone)


def _past_day(day: re.Match[str], today: date) -> date:
    """The date a `_PAST_DAY` match names, on or before `today`."""
    if day["day"] == "today":
        return today
    if day["day"] == "yesterday":
        return today - timedelta(days=1)
    back = (today.weekday() - _WEEKDAY_INDEX[day["weekday"]]) % 7
    return today - timedelta(days=back or (7 if day["last"] else 0))
