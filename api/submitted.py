"""The answer to a submit or change: each task with its deadline `warnings` (accepted all the same: a
deadline is a goal, said, never enforced)."""

from __future__ import annotations

from collections.abc import Sequence

from api.schemas import TaskPublic
from scheduler.clock import now_s
from scheduler.cluster_state import UsageCache
from scheduler.forecasts import deadline_notes_in_queue
from scheduler.policy_input import queued_task_of
from scheduler.service import Cluster
from scheduler.store.tables import Task
from scheduler.submission import deadline_out_of_reach


def tasks_as_submitted(cluster: Cluster, usage: UsageCache, tasks: Sequence[Task]) -> list[TaskPublic]:
    """These tasks as the answer to their submission (alone, in a sweep or a batch) or change. A queued
    task with a deadline gets a note when it cannot finish by it even if it started as early as it may
    (`deadline_out_of_reach`: its windows and run time alone), else when the forecast, behind the work
    queued ahead of it, expects it to end after it (one replay for all of them). Tasks without a deadline
    cost nothing."""
    answers = [TaskPublic.of(task) for task in tasks]
    with_deadline = [
        (task, public) for task, public in zip(tasks, answers, strict=True) if _waits_for_deadline(task)
    ]
    if not with_deadline:
        return answers
    now = now_s()
    behind_queue: list[Task] = []
    for task, public in with_deadline:
        note = deadline_out_of_reach(queued_task_of(task), cluster.policy_config, now)
        public.warnings = [note] if note else []
        if note is None:
            behind_queue.append(task)
    notes = deadline_notes_in_queue(cluster, usage, behind_queue) if behind_queue else {}
    for task, public in with_deadline:
        if task.id in notes:
            public.warnings = [notes[task.id]]
    return answers


def _waits_for_deadline(task: Task) -> bool:
    return task.status == "queued" and bool((task.spec or {}).get("deadline"))
