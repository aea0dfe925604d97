"""Parse the times people type for `--after`: ISO 8601, `23:00`, `+2h`, `30m` — in the cluster's zone."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, tzinfo

from scheduler.errors import SpecError

_RELATIVE = re.compile(r"^\+?(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|hour|hours|d|day|days)$")
_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})$")
_UNIT_S = {
    "s": 1,
    "sec": 1,
    "m": 60,
    "min": 60,
    "h": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
}


def parse_when(text: str, now: datetime, zone: tzinfo) -> datetime:
    """An aware datetime for `text`; a bare clock time means its next occurrence after `now`."""
    value = text.strip().lower()
    relative = _RELATIVE.match(value)
    if relative:
        return now + timedelta(seconds=float(relative.group(1)) * _UNIT_S[relative.group(2)])
    clock = _CLOCK.match(value)
    if clock:
        hour, minute = int(clock.group(1)), int(clock.group(2))
        if hour > 23 or minute > 59:
            raise SpecError(f"{text!r} is not a time of day (use HH:MM, 00:00-23:59)")
        local_now = now.astimezone(zone)
        moment = local_now.replace(hour=hour, minute=minute, second=0, microsecond=0)
        return moment if moment > local_now else moment + timedelta(days=1)
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise SpecError(
            f"cannot read the time {text!r}: use ISO 8601 (2026-12-01T23:00), a clock time (23:00) "
            "or a delay (+2h, 30m)"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=zone)
