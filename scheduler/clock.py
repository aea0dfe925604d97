"""Time in one place: the live system reads the wall clock here; the policy is handed `now_s` instead."""

from __future__ import annotations

import time
from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from scheduler.errors import SpecError


def now_s() -> float:
    """Seconds since the epoch (wall clock)."""
    return time.time()


def now_ms() -> int:
    """Milliseconds since the epoch (wall clock), as Redis scores and lease expiries use."""
    return int(time.time() * 1000)


def to_epoch_s(moment: datetime) -> float:
    """An aware datetime as seconds since the epoch."""
    return moment.timestamp()


def from_epoch_s(seconds: float) -> datetime:
    """Seconds since the epoch as an aware UTC datetime."""
    return datetime.fromtimestamp(seconds, UTC)


def local_zone(name: str) -> tzinfo:
    """The configured IANA zone, or the machine's local zone when `name` is empty."""
    if not name:
        local = datetime.now().astimezone().tzinfo
        return local if local is not None else UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise SpecError(
            f"unknown timezone {name!r}; use an IANA name like 'Asia/Shanghai' or 'UTC'"
        ) from None
