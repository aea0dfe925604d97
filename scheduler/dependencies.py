"""What a task may wait for (`depends_on`: parents that must succeed, `depends_on_any`: parents that must
end), checked alike when it is submitted, when what it waits for changes, and on a chat's card: a parent
must exist for the caller, a `depends_on` parent must not have failed already, and no change may close a
loop of tasks waiting for each other (each check pure: the caller looks the tasks up)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from scheduler.errors import SpecError

PARENT_FIELDS = ("depends_on", "depends_on_any")


def refuse_parent(field: str, parent: int, status: str | None) -> None:
    """SpecError when task `parent` (of `field`, with `status`; None when the caller has no such task)
    cannot be waited for: it does not exist, or a `depends_on` parent already failed or was cancelled, so
    the task could never start (as Slurm refuses it). A `depends_on_any` parent that ended is fine."""
    if status is None:
        raise SpecError(
            f"{field} names task {parent}, which does not exist",
            [{"field": field, "message": f"task {parent} does not exist"}],
        )
    if field == "depends_on" and status in ("failed", "cancelled"):
        ended = "failed" if status == "failed" else "was cancelled"
        raise SpecError(
            f"depends_on names task {parent}, which {ended}: this task could never start "
            f"(run {parent} again and depend on the new one, leave it out, or wait for it to end "
            "however it ends with depends_on_any)",
            [{"field": "depends_on", "message": f"task {parent} {status}"}],
        )


def waited_for(status: str, spec: Mapping[str, Any] | None) -> list[int]:
    """The tasks a task (of `status`, with `spec`) still waits for: its parents while it is queued, none
    once it runs or has ended."""
    if status != "queued" or not spec:
        return []
    return [*(spec.get("depends_on") or ()), *(spec.get("depends_on_any") or ())]


def refuse_dependency_loop(
    task_id: int, parents: Mapping[str, Sequence[int]], parents_of: Callable[[int], Sequence[int]]
) -> None:
    """SpecError when making task `task_id` wait for `parents` (field -> task ids) would close a loop: a
    parent that is the task itself, or that already waits (through the tasks it waits for) on it; neither
    could ever start, as Slurm refuses a circular dependency. `parents_of(id)` gives the tasks a task still
    waits for (none once it runs or has ended)."""
    for field, ids in parents.items():
        for parent in dict.fromkeys(ids):
            chain = _chain_to(task_id, parent, parents_of)
            if chain is None:
                continue
            if len(chain) == 1:
                message = f"{field}: task {task_id} cannot wait for itself"
            else:
                through = f" ({' → '.join(f'task {link}' for link in chain)})" if len(chain) > 2 else ""
                message = (
                    f"{field}: task {parent} already waits for task {task_id}{through}; if {task_id} waited "
                    "for it too, neither could ever start"
                )
            raise SpecError(message, [{"field": field, "message": message}])


def _chain_to(target: int, start: int, parents_of: Callable[[int], Sequence[int]]) -> list[int] | None:
    """The tasks from `start` to `target` along what each waits for ([start, ..., target]); None when
    `start` does not wait on `target`, however indirectly."""
    paths: dict[int, list[int]] = {start: [start]}
    waiting = [start]
    while waiting:
        current = waiting.pop()
        if current == target:
            return paths[current]
        for parent in parents_of(current):
            if parent not in paths:
                paths[parent] = [*paths[current], parent]
                waiting.append(parent)
    return None
