"""How reasons name a time: a bare hour is today's, other days say which."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from scheduler.policy.reasons import amount, local_time

SHANGHAI = ZoneInfo("Asia/Shanghai")


def _at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=SHANGHAI).timestamp()


def test_a_time_later_today_is_a_bare_hour() -> None:
    assert local_time(_at("2026-12-02 23:00"), _at("2026-12-02 18:43"), "Asia/Shanghai") == "23:00"


def test_a_time_tomorrow_says_tomorrow_even_when_less_than_a_day_ahead() -> None:
    """At 18:43 a budget that frees at 18:40 frees tomorrow: "18:40" alone would read as three minutes ago."""
    now = _at("2026-12-02 18:43")

    assert local_time(_at("2026-12-03 18:40"), now, "Asia/Shanghai") == "tomorrow 18:40"
    assert local_time(_at("2026-12-01 23:00"), now, "Asia/Shanghai") == "yesterday 23:00"
    assert local_time(_at("2026-12-05 09:00"), now, "Asia/Shanghai") == "2026-12-05 09:00"


def test_the_day_is_counted_in_the_clusters_zone() -> None:
    """00:30 on the 3rd in Shanghai is still the 2nd in UTC."""
    now = _at("2026-12-02 22:00")

    assert local_time(_at("2026-12-03 00:30"), now, "Asia/Shanghai") == "tomorrow 00:30"
    assert local_time(_at("2026-12-03 00:30"), now, "UTC") == "16:30"


def test_a_time_beyond_the_calendar_is_named_not_raised() -> None:
    """A stored year-10000 time must not stop a scheduling pass."""
    assert local_time(253402318800.0 + 86400 * 400, 0.0, "UTC") == "a date out of range"


def test_gpu_hours_below_one_keep_two_significant_digits() -> None:
    """A 0.02 GPU-h budget used up must not read "0.0/0.02"."""
    assert [amount(h) for h in (0.0, 0.025, 0.4, 1.0, 40.04)] == ["0.0", "0.025", "0.4", "1.0", "40.0"]
