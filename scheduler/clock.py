"""Time in one place: the live system reads the wall clock here; the policy is handed `now_s` instead."""

from __future__ import annotations

import os
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


def machine_zone_name() -> str:
    """The machine's IANA zone name: `TZ`, else the /etc/localtime link, else `UTC`."""
    candidate = os.environ.get("TZ", "").lstrip(":")
    if not candidate:
        try:
            target = os.path.realpath("/etc/localtime")
            candidate = target.split("zoneinfo/", 1)[1] if "zoneinfo/" in target else ""
        except OSError:
            candidate = ""
    try:
        ZoneInfo(candidate)
    except (ZoneInfoNotFoundError, ValueError):
        return "UTC"
    return candidate or "UTC"


def local_zone(name: str) -> tzinfo:
    """The configured IANA zone, or the machine's zone when `name` is empty."""
    name = name or machine_zone_name()
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise SpecError(
            f"unknown timezone {name!r}; use an IANA name like 'Asia/Shanghai' or 'UTC'"
        ) from None
