"""Daily wall-clock windows ("23:00-07:00,12:00-13:00") in a time zone, read from epoch seconds.

The live scheduler and the simulator pass epoch seconds; a window is a local wall time in the configured
IANA zone, so "23:00-07:00" follows the clocks across daylight-saving changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_SPAN = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$")


@lru_cache(maxsize=64)
def zone(name: str) -> ZoneInfo:
    """The ZoneInfo for `name` ("" means UTC); raises ValueError naming an unknown zone."""
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {name!r}: use an IANA name such as 'Europe/Paris'") from exc


@dataclass(frozen=True, slots=True)
class DailyWindow:
    """One window of wall-clock minutes; `end_min <= start_min` means it crosses midnight."""

    start_min: int
    end_min: int

    @property
    def crosses_midnight(self) -> bool:
        """True for spans such as 23:00-07:00."""
        return self.end_min <= self.start_min

    def label(self) -> str:
        """`"23:00-07:00"`."""
        return f"{_hhmm(self.start_min)}-{_hhmm(self.end_min)}"


def _hhmm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def parse_windows(text: str) -> tuple[DailyWindow, ...]:
    """Parse `"23:00-07:00,12:00-13:00"` ("" = no window); raises ValueError naming the bad part."""
    windows: list[DailyWindow] = []
    for part in (p for p in text.split(",") if p.strip()):
        match = _SPAN.match(part)
        if not match:
            raise ValueError(f"bad off-peak window {part.strip()!r}: expected HH:MM-HH:MM, e.g. 23:00-07:00")
        h1, m1, h2, m2 = (int(g) for g in match.groups())
        if h1 > 23 or h2 > 24 or m1 > 59 or m2 > 59 or (h2 == 24 and m2 != 0):
            raise ValueError(f"bad off-peak window {part.strip()!r}: hours 00-23, minutes 00-59")
        windows.append(DailyWindow(h1 * 60 + m1, (h2 * 60 + m2) % 1440))
    return tuple(windows)


def _at(day: date, minute: int, tz: tzinfo) -> float:
    """Epoch seconds of local wall time `minute` on `day` (the earlier instant when ambiguous)."""
    return datetime.combine(day, time(minute // 60, minute % 60), tzinfo=tz).timestamp()


def _spans(windows: tuple[DailyWindow, ...], now_s: float, tz: tzinfo) -> list[tuple[float, float]]:
    """Every (start_s, end_s) occurrence of the windows on local days around `now_s`, sorted."""
    today = datetime.fromtimestamp(now_s, tz).date()
    spans: list[tuple[float, float]] = []
    for offset in (-1, 0, 1, 2):
        day = today + timedelta(days=offset)
        for w in windows:
            end_day = day + timedelta(days=1) if w.crosses_midnight else day
            spans.append((_at(day, w.start_min, tz), _at(end_day, w.end_min, tz)))
    spans.sort()
    return spans


def current_window(
    windows: tuple[DailyWindow, ...], now_s: float, tz_name: str | tzinfo
) -> tuple[float, float] | None:
    """The (start_s, end_s) of the window holding `now_s`, merged with touching windows; None outside.
    `tz_name`: the zone's name, or the zone itself."""
    return _current(windows, now_s, zone(tz_name) if isinstance(tz_name, str) else tz_name)


def _current(windows: tuple[DailyWindow, ...], now_s: float, tz: tzinfo) -> tuple[float, float] | None:
    if not windows:
        return None
    holding = [(s, e) for s, e in _spans(windows, now_s, tz) if s <= now_s < e]
    if not holding:
        return None
    start_s, end_s = min(s for s, _ in holding), max(e for _, e in holding)
    for s, e in _spans(windows, end_s, tz):
        if s <= end_s < e:
            end_s = max(end_s, e)
    return start_s, end_s


def next_window_start(windows: tuple[DailyWindow, ...], now_s: float, tz_name: str | tzinfo) -> float | None:
    """The first window start strictly after `now_s` (None when there is no window); `tz_name` as in
    `current_window`."""
    return _next_start(windows, now_s, zone(tz_name) if isinstance(tz_name, str) else tz_name)


def _next_start(windows: tuple[DailyWindow, ...], now_s: float, tz: tzinfo) -> float | None:
    if not windows:
        return None
    later = [s for s, _ in _spans(windows, now_s, tz) if s > now_s]
    return min(later) if later else None


def offpeak_start_s(windows: tuple[DailyWindow, ...], now_s: float, tz: tzinfo, run_s: float) -> float | None:
    """The first moment from `now_s` an off-peak task that runs `run_s` may start: now inside a window with
    room left for the run (or when the run is longer than the whole window, which no window could hold),
    else the next window's start. None when there is no window (no constraint)."""
    if not windows:
        return None
    current = _current(windows, now_s, tz)
    if current is not None:
        start_s, end_s = current
        if run_s > end_s - start_s or now_s + run_s <= end_s:
            return now_s
    return _next_start(windows, now_s, tz)


def local_hhmm(epoch_s: float, tz_name: str) -> str:
    """`"23:00"`: the local wall time of `epoch_s`, for plain-language reasons."""
    return datetime.fromtimestamp(epoch_s, zone(tz_name)).strftime("%H:%M")
