"""What the assistant says about a tool's answer when it words the reply itself (the offline model)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from assistant.replies import reply_for

NOW = datetime(2026, 12, 1, 13, 0, tzinfo=UTC)


def _estimate(wait_s: float, low: str, high: str, reason: str = "") -> str:
    start = "2026-12-01T23:00:00+00:00"
    return json.dumps(
        {"estimate": {"start": start, "low": low, "high": high, "wait_s": wait_s, "reason": reason}}
    )


def test_a_wait_reads_as_one_sentence_with_its_range_and_reason() -> None:
    content = _estimate(
        36000, "2026-12-01T22:00:00+00:00", "2026-12-02T01:00:00+00:00", "waiting for off-peak"
    )

    assert reply_for("estimate_wait", content, "en", NOW) == (
        "Estimated start today 23:00 (range today 22:00–tomorrow 01:00), a wait of about 10 h 0 min"
        " — waiting for off-peak."
    )
    assert reply_for("estimate_wait", content, "zh", NOW) == (
        "预计 今天 23:00 开始（范围 今天 22:00–明天 01:00），大约要等 10小时0分钟（waiting for off-peak）。"
    )


def test_a_wait_with_no_range_or_no_wait_says_so_plainly() -> None:
    same = "2026-12-01T23:00:00+00:00"
    assert reply_for("estimate_wait", _estimate(36000, same, same), "en", NOW) == (
        "Estimated start today 23:00, a wait of about 10 h 0 min."
    )
    assert (
        reply_for("estimate_wait", _estimate(0, same, same, "starts now"), "en", NOW) == "It would start now."
    )


def test_why_a_task_waits_reads_as_sentences() -> None:
    content = json.dumps(
        {
            "explain": {
                "task_id": 2,
                "status": "queued",
                "position": 1,
                "reason": "waiting for off-peak at 23:00",
                "estimated_start": "2026-12-01T23:00:00+00:00",
            }
        }
    )

    assert reply_for("explain_task", content, "en", NOW) == (
        "Task #2 is queued, number 1 in the queue: waiting for off-peak at 23:00. Estimated start today 23:00."
    )
    assert reply_for("explain_task", content, "zh", NOW) == (
        "任务 #2 当前状态：queued，排第 1 位：waiting for off-peak at 23:00。预计 今天 23:00 开始。"
    )
