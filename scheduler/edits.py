"""Changing a queued task (like Slurm's `scontrol update`): which fields may change, and the spec after the
change (pure: the `Cluster` stores it and re-queues the task with the score it now has). A running task may
change only how long it may run and what is said about it (`RUNNING_EDITABLE_FIELDS`).

Only fields that decide *when* a task starts (its time windows, priority, the tasks it waits for) or how
long it may run can change; fields that decide *what* runs or *where* (command, GPUs, memory, node,
environment) cannot, since a task already placed on a node would then start with what it was placed for.
For those, the answer names the way: submit it again (`--like ID`) and cancel the first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from scheduler.errors import ConflictError, SpecError
from scheduler.spec import TaskSpec, parse_spec

EDITABLE_FIELDS = (
    "name",
    "priority",
    "not_before",
    "deadline",
    "offpeak",
    "time_limit_minutes",
    "estimated_minutes",
    "retries",
    "tags",
    "depends_on",
    "depends_on_any",
)
# what may change once a task runs: how long it may run and what is said about it, nothing about when or
# where it starts (Slurm's `scontrol update TimeLimit=` on a running job)
RUNNING_EDITABLE_FIELDS = ("name", "tags", "time_limit_minutes", "estimated_minutes", "retries")
# what a change or a rerun may put back to its default ("remove the time limit", "no deadline"): each has
# one (the others are what runs, where, or a name the spec makes from the command)
CLEARABLE_FIELDS = (
    "priority",
    "not_before",
    "offpeak",
    "deadline",
    "time_limit_minutes",
    "estimated_minutes",
    "retries",
    "depends_on",
    "depends_on_any",
)


def check_clearable(fields: Iterable[str], clearable: tuple[str, ...] = CLEARABLE_FIELDS) -> None:
    """SpecError naming each of `fields` that cannot go back to a default, and those that can."""
    unknown = [name for name in dict.fromkeys(fields) if name not in clearable]
    if unknown:
        message = f"cannot clear {', '.join(unknown)}: clear takes {', '.join(clearable)}"
        raise SpecError(message, [{"field": name, "message": message} for name in unknown])


def check_changes(task_id: int, changes: Mapping[str, Any]) -> None:
    """SpecError naming each field that is not a spec field or cannot change, and what to do instead."""
    if not changes:
        message = (
            f"nothing to change: send one or more of these fields: {', '.join(EDITABLE_FIELDS)} "
            '(e.g. {"priority": "high"}; null puts one back to its default)'
        )
        raise SpecError(message, [{"field": None, "message": message}])
    errors = []
    for field in changes:
        if field in EDITABLE_FIELDS:
            continue
        if field == "max_running":  # a limit of the sweep, not of one of its tasks
            message = (
                "max_running limits how many of a sweep's tasks run at once: change it on the sweep, "
                "PATCH /api/v1/sweeps/{id} or `nightshift change --sweep ID --max-running N`"
            )
        elif field in TaskSpec.model_fields:
            message = (
                f"{field} cannot change once a task is queued (it decides what runs or where): submit it "
                f"again with `nightshift submit --like {task_id} ...` and cancel task {task_id}"
            )
        else:
            message = f"{field} is not a task spec field; these can change: {', '.join(EDITABLE_FIELDS)}"
        errors.append({"field": field, "message": message})
    if errors:
        raise SpecError("; ".join(error["message"] for error in errors), errors)


def changed_spec(task_id: int, stored: Mapping[str, Any], changes: Mapping[str, Any]) -> TaskSpec:
    """The task's stored spec with `changes` applied, validated as a submission is (SpecError when refused).

    A field set to null goes back to its default (`not_before: null` lets the task start at once).
    """
    check_changes(task_id, changes)
    merged = {key: value for key, value in {**stored, **changes}.items() if value is not None}
    return parse_spec(merged)


def spec_differences(
    task_id: int, stored: Mapping[str, Any], changes: Mapping[str, Any]
) -> dict[str, tuple[Any, Any]]:
    """Field -> (before, after) for the fields `changes` really changes: a field given the value it has (or
    its default, when absent) is left out, so a card or a CLI line shows only real changes. Values as
    written (stored and given), a default where none was. SpecError as `changed_spec` when refused."""
    after = changed_spec(task_id, stored, changes)
    before = parse_spec(dict(stored))
    defaults_before, defaults_after = before.model_dump(mode="json"), after.model_dump(mode="json")
    return {
        field: (
            stored[field] if stored.get(field) is not None else defaults_before[field],
            changes[field] if changes[field] is not None else defaults_after[field],
        )
        for field in changes
        if getattr(before, field) != getattr(after, field)
    }


def check_running_changes(task_id: int, changes: Mapping[str, Any]) -> None:
    """ConflictError naming the fields a running task cannot change (when and where it starts is decided)."""
    fixed = [field for field in changes if field not in RUNNING_EDITABLE_FIELDS]
    if fixed:
        raise ConflictError(
            f"task {task_id} is running: {', '.join(fixed)} can no longer change; a running task can change "
            f"only {', '.join(RUNNING_EDITABLE_FIELDS)}"
        )


def retagged(task_id: int, tags: Iterable[str], add: Iterable[str], remove: Iterable[str]) -> list[str]:
    """A task's tags with `add` appended (those it lacks, in order) and `remove` taken away ("tag 12 with
    exp7", `nightshift change 12 --tag exp7 --untag old`); SpecError for a tag to remove that it lacks or
    one both added and removed."""
    current, added, removed = list(tags), list(dict.fromkeys(add)), list(dict.fromkeys(remove))
    both = [tag for tag in added if tag in removed]
    if both:
        raise SpecError(f"tag {both[0]!r} is both added and taken away: say one")
    missing = [tag for tag in removed if tag not in current]
    if missing:
        has = ", ".join(repr(tag) for tag in current) or "none"
        raise SpecError(f"task {task_id} has no tag {missing[0]!r} to take away (its tags: {has})")
    return [tag for tag in current if tag not in removed] + [tag for tag in added if tag not in current]
