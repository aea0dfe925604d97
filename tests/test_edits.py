"""`scheduler.edits.spec_differences`: what a change really changes, shown before -> after."""

from __future__ import annotations

import pytest

from scheduler.edits import EDITABLE_FIELDS, check_changes, spec_differences
from scheduler.errors import SpecError

STORED = {
    "command": "python train.py",
    "gpus": 1,
    "priority": "normal",
    "not_before": "2099-01-01T09:00:00+00:00",
}


def test_only_fields_whose_value_changes_are_listed_with_their_values_as_written():
    diff = spec_differences(7, STORED, {"priority": "urgent", "not_before": None, "offpeak": False})

    # offpeak was absent, so already false: not a change
    assert diff == {"priority": ("normal", "urgent"), "not_before": ("2099-01-01T09:00:00+00:00", None)}


def test_the_same_time_written_another_way_and_a_default_given_again_change_nothing():
    same = {"not_before": "2099-01-01T10:00:00+01:00", "retries": 0, "tags": []}

    assert spec_differences(7, STORED, same) == {}


def test_a_field_back_to_its_default_shows_the_default_it_gets():
    diff = spec_differences(7, {**STORED, "priority": "high"}, {"priority": None})

    assert diff == {"priority": ("high", "normal")}


def test_a_refused_change_raises_what_the_cluster_would_answer():
    with pytest.raises(SpecError, match="gpus cannot change once a task is queued"):
        spec_differences(7, STORED, {"gpus": 2})


def test_an_empty_change_says_which_fields_to_send_and_blames_no_field():
    with pytest.raises(SpecError) as refused:
        check_changes(7, {})

    assert refused.value.message.startswith("nothing to change: send one or more of these fields: name,")
    assert all(field in refused.value.message for field in EDITABLE_FIELDS)
    assert refused.value.errors == [{"field": None, "message": refused.value.message}]


def test_a_dependency_change_shows_the_tasks_waited_for_before_and_after():
    diff = spec_differences(7, {**STORED, "depends_on": [3]}, {"depends_on": [3, 5], "depends_on_any": None})

    assert diff == {"depends_on": ([3], [3, 5])}
