"""`parse_past`: the times `nightshift ls --since/--until` reads, looking back, in the cluster's zone."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from scheduler.errors import SpecError
from scheduler.timeparse import parse_past

ZONE = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 3, 4, 10, 30, tzinfo=ZONE)  # a Wednesday, 10:30


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("today", datetime(2026, 3, 4, tzinfo=ZONE)),
        ("yesterday", datetime(2026, 3, 3, tzinfo=ZONE)),
        ("Monday", datetime(2026, 3, 2, tzinfo=ZONE)),
        ("mon", datetime(2026, 3, 2, tzinfo=ZONE)),
        ("wednesday", datetime(2026, 3, 4, tzinfo=ZONE)),  # today is one: today
        ("last wed", datetime(2026, 2, 25, tzinfo=ZONE)),  # ... unless it says last
        ("last fri at 9pm", datetime(2026, 2, 27, 21, tzinfo=ZONE)),
        ("yesterday 18:00", datetime(2026, 3, 3, 18, tzinfo=ZONE)),
        ("9am", datetime(2026, 3, 4, 9, tzinfo=ZONE)),  # its last occurrence
        ("11:00", datetime(2026, 3, 3, 11, tzinfo=ZONE)),
        ("-2d", datetime(2026, 3, 2, 10, 30, tzinfo=ZONE)),
        ("2d ago", datetime(2026, 3, 2, 10, 30, tzinfo=ZONE)),
        ("3 hours ago", datetime(2026, 3, 4, 7, 30, tzinfo=ZONE)),
        ("1w", datetime(2026, 2, 25, 10, 30, tzinfo=ZONE)),
        ("2026-12-01", datetime(2026, 12, 1, tzinfo=ZONE)),
        ("2026-12-01T09:00+00:00", datetime(2026, 12, 1, 17, tzinfo=ZONE)),
    ],
)
def test_parse_past_reads_days_clock_times_times_ago_and_iso(text, expected):
    assert parse_past(text, NOW, ZONE) == expected


@pytest.mark.parametrize(("text", "said"), [("someday", "cannot read"), ("99999999999d", "too far back")])
def test_parse_past_refuses_what_it_cannot_read(text, said):
    with pytest.raises(SpecError, match=said):
        parse_past(text, NOW, ZONE)
