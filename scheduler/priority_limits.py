"""How many tasks of one priority class a person may have queued or running at once (`priority_limits`,
e.g. `{urgent = 2, high = 10}`; Slurm's per-QOS `MaxJobsPerUser`). Without it `urgent` means nothing on a
shared cluster once everyone marks everything urgent. Admins are exempt, as is a class with no limit.

The check counts in SQL before the insert or change, as the per-team cap on queued tasks does: two
submissions racing each other can pass it together, which the limit tolerates (it keeps a class rare, it
does not ration GPUs). A refused request changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from scheduler.errors import SpecError
from scheduler.store.identity import Identity
from scheduler.store.tasks import TaskStore


def check_priority_room(
    tasks: TaskStore, limits: Mapping[str, int], who: Identity, adding: Mapping[str, int]
) -> None:
    """SpecError when `adding[class]` more of `who`'s tasks in a class would pass their limit of it."""
    if who.is_admin:
        return
    for priority, count in adding.items():
        limit = limits.get(priority)
        if limit is None or count <= 0:
            continue
        live = tasks.live_in_class(who.user_id, priority)
        if len(live) + count > limit:
            have = f"{len(live)} {priority} task{'' if len(live) == 1 else 's'} queued or running"
            ids = f" ({', '.join(map(str, live[:10]))})" if live else ""
            message = (
                f"{who.user} has {have}{ids} and this would add {count}: at most {limit} per person. "
                f"Ask for a lower priority, or wait until one ends"
            )
            raise SpecError(message, [{"field": "priority", "message": message}])
