"""Running a task again: the spec of an earlier task as the start of a new one (`nightshift submit --like`,
the chat's "run 12 again"). The earlier task keeps its record; the new one is a task of its own."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scheduler.edits import check_clearable
from scheduler.spec import TaskSpec
from scheduler.task_names import default_name

# a time that has passed would hold nothing back (not_before) or be refused (deadline)
PASSING_TIMES = ("not_before", "deadline")
# how a sweep's task may have ended to be run again in its place (`batches.rerun_sweep`), in the order said
RERUNNABLE = ("failed", "cancelled", "succeeded")


@dataclass(frozen=True)
class SpecAgain:
    """The spec to submit again, and the times of the earlier spec that had passed (left out)."""

    spec: dict[str, Any]
    passed: dict[str, str] = field(default_factory=dict)
    cleared: dict[str, Any] = field(default_factory=dict)

    def notes(self) -> list[str]:
        """What was left out, in words: `its not_before (2026-03-01T09:00:00+00:00) has passed: left out`,
        `without its time_limit_minutes (120)`."""
        return [f"its {key} ({value}) has passed: left out" for key, value in self.passed.items()] + [
            f"without its {key} ({value})" for key, value in self.cleared.items()
        ]


def spec_again(stored: Mapping[str, Any], now: datetime, clear: Iterable[str] = ()) -> SpecAgain:
    """Task `stored`'s spec (as `GET /tasks/{id}` shows it) to submit again: every field as it was (its
    workdir and name too, so learned run times still apply), less unset fields, a sweep (a sweep's task
    holds its own parameters already), its git commit (what runs again is the workdir as it is now), the
    times that have passed (`SpecAgain.passed`) and the fields `clear` puts back to their defaults ("run 12
    again without its time limit": `SpecAgain.cleared`, those it had set to something else). SpecError for a
    field in `clear` that has no default to go back to."""
    check_clearable(clear)
    spec = {
        key: value
        for key, value in stored.items()
        if value is not None and value != [] and value != {} and key not in ("sweep", "git")
    }
    taken = {key: spec.pop(key) for key in dict.fromkeys(clear) if key in spec}
    cleared = {key: value for key, value in taken.items() if value != TaskSpec.model_fields[key].default}
    passed = {
        key: str(spec.pop(key)) for key in PASSING_TIMES if key in spec and _moment(spec[key], now) <= now
    }
    return SpecAgain(spec, passed, cleared)


def _moment(text: str, now: datetime) -> datetime:
    moment = datetime.fromisoformat(str(text))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=now.tzinfo)


def with_command(spec: Mapping[str, Any], command: str) -> dict[str, Any]:
    """`spec` running `command` instead: a name that was made from the old command goes with it (the new
    one gets its own); a name the person gave stays."""
    again = dict(spec)
    if again.get("command") != command and again.get("name") == default_name(str(again.get("command", ""))):
        again.pop("name")
    again["command"] = command
    return again
