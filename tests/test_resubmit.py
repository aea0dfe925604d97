"""Running a task again: an earlier task's spec as the start of a new one."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from scheduler.errors import SpecError
from scheduler.resubmit import spec_again, with_command
from scheduler.spec import parse_spec

NOW = datetime(2026, 3, 2, 15, 0, tzinfo=UTC)
STORED = {  # as GET /tasks/{id} shows a task's spec: every field, unset ones as null
    "command": "python train.py --lr 0.1",
    "name": "train.py",
    "workdir": "/data/exp",
    "gpus": 2,
    "gpu_memory_gb": 40.0,
    "priority": "high",
    "not_before": "2026-03-01T09:00:00+00:00",
    "offpeak": False,
    "deadline": "2026-03-05T08:00:00+00:00",
    "retries": 0,
    "env": {},
    "depends_on": [],
    "tags": ["lr"],
    "sweep": None,
    "stop_signal": "TERM",
}


def test_the_spec_again_keeps_what_was_set_and_leaves_out_times_that_have_passed() -> None:
    again = spec_again(STORED, NOW)

    assert again.spec == {
        "command": "python train.py --lr 0.1",
        "name": "train.py",
        "workdir": "/data/exp",  # where it ran, not where it is asked from
        "gpus": 2,
        "gpu_memory_gb": 40.0,
        "priority": "high",
        "offpeak": False,
        "deadline": "2026-03-05T08:00:00+00:00",  # still ahead
        "retries": 0,
        "tags": ["lr"],
        "stop_signal": "TERM",
    }
    assert again.passed == {"not_before": "2026-03-01T09:00:00+00:00"}
    assert again.notes() == ["its not_before (2026-03-01T09:00:00+00:00) has passed: left out"]
    assert parse_spec(again.spec).gpus == 2  # a valid spec as it is


def test_a_deadline_that_has_passed_is_left_out_too() -> None:
    again = spec_again({**STORED, "deadline": "2026-03-02T14:59:00+00:00"}, NOW)

    assert "deadline" not in again.spec and set(again.passed) == {"not_before", "deadline"}


def test_a_new_command_takes_a_name_made_from_the_old_one_with_it_but_keeps_a_given_name() -> None:
    derived = with_command(spec_again(STORED, NOW).spec, "python eval.py")
    given = with_command({**spec_again(STORED, NOW).spec, "name": "lr-search"}, "python eval.py")

    assert derived["command"] == "python eval.py" and "name" not in derived
    assert given["command"] == "python eval.py" and given["name"] == "lr-search"
    assert with_command(STORED, STORED["command"])["name"] == "train.py"  # the same command: nothing to drop


def test_cleared_fields_are_left_out_back_to_their_defaults_and_said() -> None:
    again = spec_again({**STORED, "time_limit_minutes": 120}, NOW, ["time_limit_minutes", "priority"])

    assert "time_limit_minutes" not in again.spec and "priority" not in again.spec
    assert again.cleared == {"time_limit_minutes": 120, "priority": "high"}
    assert again.notes()[1:] == ["without its time_limit_minutes (120)", "without its priority (high)"]
    assert parse_spec(again.spec).time_limit_minutes is None and parse_spec(again.spec).priority == "normal"


def test_clearing_a_field_the_earlier_task_did_not_have_changes_nothing() -> None:
    again = spec_again(STORED, NOW, ["time_limit_minutes"])
    retries = spec_again(STORED, NOW, ["retries"])  # it had 0, the default: nothing to say

    assert again.cleared == {} and again.spec == spec_again(STORED, NOW).spec
    assert retries.cleared == {} and retries.notes() == spec_again(STORED, NOW).notes()
    assert parse_spec(retries.spec).retries == 0


def test_a_field_with_no_default_to_go_back_to_cannot_be_cleared() -> None:
    with pytest.raises(SpecError, match="cannot clear command, gpus: clear takes priority"):
        spec_again(STORED, NOW, ["command", "gpus"])
