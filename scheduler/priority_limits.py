"""How many tasks of one priority class a person may have queued or running at once (`priority_limits`,
e.g. `{urgent = 2, high = 10}`; Slurm's per-QOS `MaxJobsPerUser`). Without it `urgent` means nothing on a
shared cluster once everyone marks everything urgent. Admins are exempt, as is a class with no limit.

The check counts in SQL before the insert or change, and again inside the transaction that writes it,
under a lock per person (`TaskStore.create`/`update_queued`, `SweepStore.create`/`add_reruns`:
`check_class_rooms`), so racing submissions, sweeps, reruns and changes of one task cannot together pass
it. A change of a whole sweep's priority is checked for all its tasks first, then applied task by task,
each counted as it is written: a race can leave it partly applied, never past the limit. A refused request
changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from scheduler.errors import SpecError
from scheduler.store.identity import Identity
from scheduler.store.tasks import TaskStore


def limit_for(limits: Mapping[str, int], who: Identity, priority: str) -> int | None:
    """The limit on `who`'s tasks of `priority` (None: no limit, or an admin)."""
    return None if who.is_admin else limits.get(priority)


def over_limit(who: Identity, priority: str, live: list[int], count: int, limit: int) -> SpecError:
    """The refusal of `count` more tasks of `priority` for `who`, who has `live` queued or running."""
    have = f"{len(live)} {priority} task{'' if len(live) == 1 else 's'} queued or running"
    ids = f" ({', '.join(map(str, live[:10]))})" if live else ""
    message = (
        f"{who.user} has {have}{ids} and this would add {count}: at most {limit} per person. "
        f"Ask for a lower priority, or wait until one ends"
    )
    return SpecError(message, [{"field": "priority", "message": message}])


def check_priority_room(
    tasks: TaskStore, limits: Mapping[str, int], who: Identity, adding: Mapping[str, int]
) -> None:
    """SpecError when `adding[class]` more of `who`'s tasks in a class would pass their limit of it."""
    for priority, count in adding.items():
        limit = limit_for(limits, who, priority)
        if limit is None or count <= 0:
            continue
        live = tasks.live_in_class(who.user_id, priority)
        if len(live) + count > limit:
            raise over_limit(who, priority, live, count, limit)
