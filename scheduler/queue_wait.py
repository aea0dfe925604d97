"""How long a task waited in the queue, from the times the API gives for it (ISO 8601): one still queued,
until now; one that started, until its start, when it started once (a retried task's start is its last
attempt's, so its wait is not known from these). Shared by the CLI's explain and the chat's answers."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any


def queue_wait_s(times: Mapping[str, Any], now: datetime | None) -> float | None:
    """Seconds `times` (`status`, `submitted_at`, `started_at`, `attempts`) waited, or None when they do not
    say (no submission time, a queued task without `now`, no start, or a retried task)."""
    try:
        submitted = datetime.fromisoformat(str(times["submitted_at"]))
        if times.get("status") == "queued":
            return None if now is None else max(0.0, (now - submitted).total_seconds())
        if not times.get("started_at") or int(times.get("attempts") or 1) > 1:
            return None
        return max(0.0, (datetime.fromisoformat(str(times["started_at"])) - submitted).total_seconds())
    except (KeyError, TypeError, ValueError):  # no time, or one that is not ISO 8601
        return None
