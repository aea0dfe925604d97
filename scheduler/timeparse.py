"""Parse the times people type for `--after`: ISO 8601, `23:00`, `9pm`, `tomorrow 09:00`, `+2h`, `30m`,
`in 2 hours` — in the cluster's zone."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, tzinfo

from scheduler.errors import SpecError

# a delay: `+2h`, `30m`, `in 2 hours`, `in 45 minutes`
_RELATIVE = re.compile(
    r"^(?:\+|in\s+)?(\d+(?:\.\d+)?)\s*(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?)$"
)
# a clock time, `23:00`, `9pm` or `9:30am`, after `today` or `tomorrow` or alone (its next occurrence)
_CLOCK = re.compile(
    r"^(?:(?P<day>today|tomorrow)\s+(?:at\s+)?)?(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ampm>am|pm)?$"
)
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}  # by the unit's first letter (`mins` -> `m`)


def parse_when(text: str, now: datetime, zone: tzinfo) -> datetime:
    """An aware datetime for `text`; a bare clock time means its next occurrence after `now`."""
    value = text.strip().lower()
    relative = _RELATIVE.match(value)
    if relative:
        return now + timedelta(seconds=float(relative.group(1)) * _UNIT_S[relative.group(2)[0]])
    clock = _CLOCK.match(value)
    if clock and (clock["m"] is not None or clock["ampm"] is not None):
        return _clock_time(text, clock, now, zone)
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise SpecError(
            f"cannot read the time {text!r}: use ISO 8601 (2026-12-01T23:00), a clock time (23:00, 9pm, "
            "tomorrow 09:00) or a delay (+2h, 30m, in 2 hours)"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=zone)


def _clock_time(text: str, clock: re.Match[str], now: datetime, zone: tzinfo) -> datetime:
    """`23:00` or `9pm` alone: its next occurrence; after `today` or `tomorrow`: on that day."""
    hour, minute = int(clock["h"]), int(clock["m"] or 0)
    if clock["ampm"] is not None:
        if not 1 <= hour <= 12:
            raise SpecError(f"{text!r} is not a time of day (with am/pm, the hour is 1-12)")
        hour = hour % 12 + (12 if clock["ampm"] == "pm" else 0)
    if hour > 23 or minute > 59:
        raise SpecError(f"{text!r} is not a time of day (use HH:MM, 00:00-23:59)")
    local_now = now.astimezone(zone)
    moment = local_now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    # an aware datetime plus a day keeps its wall-clock time (zoneinfo works out the offset of that day)
    if clock["day"] == "tomorrow":
        return moment + timedelta(days=1)
    if clock["day"] == "today" and moment <= local_now:
        raise SpecError(f"{text!r} has already passed (it is {local_now:%H:%M} now)")
    return moment if moment > local_now else moment + timedelta(days=1)
