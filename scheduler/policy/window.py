"""Which queued tasks one pass looks at: its window.

A pass ranks only a window of the queue (`PolicyConfig.window`, 128): the overdue tasks, then the head of
the static-score order (`window_ids`). Fair share and the other credits re-rank inside it, so a person whose
tasks all sit behind a teammate's hundreds would not be seen until fewer than a window's worth were ahead,
however little they ran. So a member of a team in the window who has no task in it has their first
`window_per_person` queued tasks looked at as well (`pass_window`), where fair share within the team ranks
them. The live scheduler reads each person's first tasks from a per-person index in Redis and the simulator
from its own, and both keep those of absent members (`absent_member_heads`) before loading them;
`pass_window` picks the same tasks of either, or of a whole queue.

Only members absent from a team already in the window: adding other teams' tasks from deep in the queue
(each team one person, as in the Philly trace) is a larger window by another name, which there costs mean
completion time and utilization (docs/scheduling.md, "A larger window").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from scheduler.policy.config import PolicyConfig
from scheduler.policy.types import QueuedTask


def window_ids(overdue: Iterable[int], head: Iterable[int], size: int) -> list[int]:
    """The ids one pass looks at: the overdue tasks (from the overdue index, earliest first), then the head
    of the static-score order without them, `size` in all. The live scheduler and the simulator both build
    their window with this, so they consider the same tasks."""
    ids = list(dict.fromkeys(overdue))[:size]
    seen = set(ids)
    for task_id in head:
        if len(ids) >= size:
            break
        if task_id not in seen:
            ids.append(task_id)
            seen.add(task_id)
    return ids


def absent_member_heads(window: Iterable[QueuedTask], heads: Iterable[tuple[str, str, int]]) -> list[int]:
    """Of `heads` ((team, person, task id): each member's first queued tasks), the ids of those of members
    with no task in `window` whose team has one: the tasks `pass_window` adds to it."""
    teams: set[str] = set()
    present: set[tuple[str, str]] = set()
    for task in window:
        teams.add(task.team)
        present.add(member_of(task))
    return [task_id for team, user, task_id in heads if team in teams and (team, user) not in present]


def person_heads_apply(config: PolicyConfig) -> bool:
    """True when each person's first tasks join the window: under the `nightshift` policy, whose credits
    (fair share) can rank them ahead; `fifo` and `backfill` keep to the head of the queue."""
    return config.credits_on and config.window_per_person > 0


def pass_window(queued: Sequence[QueuedTask], config: PolicyConfig) -> Sequence[QueuedTask]:
    """The tasks `decide` considers of `queued` (ordered by static score, or a window built as above): the
    first `config.window`, then, of the rest in order, up to `window_per_person` tasks of each person who
    has none among those first ones but whose team has."""
    size = config.window
    if len(queued) <= size or not person_heads_apply(config):
        return queued[:size]
    window = list(queued[:size])
    teams = {task.team for task in window}
    seen = {member_of(task) for task in window}
    added: Counter[tuple[str, str]] = Counter()
    for task in queued[size:]:
        member = member_of(task)
        if task.team in teams and member not in seen and added[member] < config.window_per_person:
            window.append(task)
            added[member] += 1
    return window


def member_of(task: QueuedTask) -> tuple[str, str]:
    """Whose task it is: (team, person)."""
    return (task.team, task.user)
