"""A virtual clock around `decide`: the event loop shared by the simulator and by start-time estimates.

Events are arrivals, ends and wake-ups (off-peak, not_before) in a heap; after all events of one instant,
one `decide` pass runs over the first `window` queued tasks, and its starts are applied. Ends come from
`duration_of(task)`: the true run time in the simulator, the estimate when forecasting. Pure: no I/O and
no clock reads.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence

from scheduler.policy.aging import overdue_at_s, static_score
from scheduler.policy.config import PolicyConfig, TeamUsage
from scheduler.policy.engine import decide
from scheduler.policy.placement import EPS, Pool, memory_need_mib
from scheduler.policy.types import GpuSlot, QueuedTask, RunningTask, StartDecision
from scheduler.policy.window import absent_member_heads, member_of, person_heads_apply, window_ids

_END, _ARRIVE, _WAKE = 0, 1, 2

StartHook = Callable[[QueuedTask, float, tuple[RunningTask, ...]], None]
EndHook = Callable[[QueuedTask, float, float], None]


class Replay:
    """The cluster on a virtual clock: GPUs, a queue sorted by static score, running tasks, an event heap."""

    def __init__(
        self,
        gpus: Iterable[GpuSlot],
        config: PolicyConfig,
        duration_of: Callable[[QueuedTask], float],
        usage_of: Callable[[float], Mapping[str, TeamUsage]] | None = None,
    ) -> None:
        self.config = config
        self.duration_of = duration_of
        self.usage_of = usage_of
        self.slots: dict[tuple[str, int], GpuSlot] = {(g.node, g.index): g for g in gpus}
        self.open_gpus = sum(1 for g in self.slots.values() if _open(g))
        # the same GPUs as a placement `Pool`, kept current by `_change`: each pass takes a copy-on-write
        # copy of it instead of building a new one from every slot
        self.pool = Pool(self.slots.values())
        self.queue: list[tuple[float, int]] = []  # (static score, task id), ascending
        # the same tasks by when they pass their aging bound (`overdue_at_s`), ascending: each pass puts
        # the overdue ones in its window however deep they sit in `queue` (the live queue's overdue set)
        self.overdue: list[tuple[float, int]] = []
        # the same tasks by person, each ascending by static score: their first ones join every pass's
        # window (`policy.window`; the live queue's per-person index)
        self.by_person: dict[tuple[str, str], list[tuple[float, int]]] = {}
        self.tasks: dict[int, QueuedTask] = {}
        self.running: dict[int, tuple[RunningTask, ...]] = {}
        self.succeeded: set[int] = set()
        self.failed: dict[int, str] = {}
        self.started_at: dict[int, float] = {}
        self.ended_at: dict[int, float] = {}
        self._events: list[tuple[float, int, int, int]] = []
        self._seq = 0
        self._wakes: set[float] = set()
        self._zero_gpu_queued = 0
        self.now_s = 0.0
        self.on_start: StartHook | None = None
        self.on_end: EndHook | None = None
        self.passes = 0

    def _push(self, at_s: float, kind: int, task_id: int) -> None:
        self._seq += 1
        heapq.heappush(self._events, (at_s, kind, self._seq, task_id))

    def submit(self, task: QueuedTask, at_s: float | None = None) -> None:
        """Make `task` arrive at `at_s` (default: its `enqueued_at_s`)."""
        self.tasks[task.task_id] = task
        self._push(task.enqueued_at_s if at_s is None else at_s, _ARRIVE, task.task_id)

    def add_running(self, parts: Sequence[RunningTask], end_s: float, task: QueuedTask | None = None) -> None:
        """A task already holding GPUs (its slots must already show it) that ends at `end_s`."""
        task_id = parts[0].task_id
        self.running[task_id] = tuple(parts)
        if task is not None:
            self.tasks[task_id] = task
        self._push(end_s, _END, task_id)

    def run(
        self,
        until_s: float | None = None,
        stop: Callable[[], bool] | None = None,
        max_passes: int | None = None,
    ) -> None:
        """Advance through every instant before `until_s` (all, if None), stopping early when `stop()` is
        true or `max_passes` decide passes ran."""
        while self._events and (until_s is None or self._events[0][0] < until_s):
            if (stop is not None and stop()) or (max_passes is not None and self.passes >= max_passes):
                return
            self.now_s = self._events[0][0]
            while self._events and self._events[0][0] <= self.now_s:
                _, kind, _, task_id = heapq.heappop(self._events)
                self._handle(kind, task_id)
            self._pass()

    def _handle(self, kind: int, task_id: int) -> None:
        if kind == _ARRIVE:
            task = self.tasks[task_id]
            score = static_score(task, self.config)
            bisect.insort(self.queue, (score, task_id))
            bisect.insort(self.overdue, (overdue_at_s(task, self.config), task_id))
            bisect.insort(self.by_person.setdefault(member_of(task), []), (score, task_id))
            self._zero_gpu_queued += task.gpus <= 0
        elif kind == _END:
            self._end(task_id)
        else:
            self._wakes.discard(self.now_s)

    def _end(self, task_id: int) -> None:
        parts = self.running.pop(task_id)
        for part in parts:
            for index in part.gpu_indices:
                self._change((part.node, index), -part.gpu_fraction, part.gpu_memory_mib)
        self.succeeded.add(task_id)
        self.ended_at[task_id] = self.now_s
        if self.on_end is not None and task_id in self.tasks:
            start_s = self.started_at.get(task_id, parts[0].started_at_s)
            self.on_end(self.tasks[task_id], start_s, self.now_s)

    def _change(self, key: tuple[str, int], fraction: float, gpu_memory_mib: int) -> None:
        """Add (or, with a negative fraction, remove) a task's share on one GPU."""
        slot = self.slots[key]
        was_open = _open(slot)
        frac = min(abs(fraction), 1.0)
        need = memory_need_mib(gpu_memory_mib, frac, slot.shareable_mib)
        sign = 1 if fraction > 0 else -1
        slot = GpuSlot(
            slot.node,
            slot.index,
            slot.memory_total_mib,
            min(slot.memory_total_mib, slot.memory_free_mib - sign * need),
            slot.model,
            max(0.0, slot.shares_used + sign * frac),
            slot.power_w,
            slot.available,
            driver_reserved_mib=slot.driver_reserved_mib,
            down_at_s=slot.down_at_s,
            up_at_s=slot.up_at_s,
            reserved=slot.reserved,
        )
        self.slots[key] = slot
        self.open_gpus += _open(slot) - was_open
        self.pool.set_gpu(slot)

    def _pass(self) -> None:
        if not self.queue or (self.open_gpus == 0 and self._zero_gpu_queued == 0):
            return
        self.passes += 1
        window = [self.tasks[i] for i in self.window_ids()]
        running = [part for parts in self.running.values() for part in parts]
        usage = self.usage_of(self.now_s) if self.usage_of is not None else None
        dec = decide(
            window,
            running,
            list(self.slots.values()),
            self.now_s,
            self.config,
            usage,
            self.succeeded,
            self.failed.keys(),
            with_reasons=False,
            pool=self.pool,
        )
        for task_id, why in dec.fail.items():
            self.failed[task_id] = why
            self._dequeue(task_id)
        if dec.fail:  # one more pass at this instant: a task waiting for these to end (`depends_on_any`)
            self._push(self.now_s, _WAKE, -1)  # starts now, as at the live scheduler's next pass
        by_task: dict[int, list[StartDecision]] = {}
        for s in dec.starts:
            by_task.setdefault(s.task_id, []).append(s)
        for task_id, starts in by_task.items():
            self._start(self.tasks[task_id], starts)
        if dec.wake_at_s is not None and dec.wake_at_s not in self._wakes:
            self._wakes.add(dec.wake_at_s)
            self._push(dec.wake_at_s, _WAKE, -1)

    def window_ids(self) -> list[int]:
        """The ids the next pass looks at: the overdue tasks first, then the head of the static order, then
        each person's first tasks (`policy.window`)."""
        size = self.config.window
        due = bisect.bisect_right(self.overdue, (self.now_s, float("inf")), hi=min(size, len(self.overdue)))
        overdue = [i for _, i in self.overdue[:due]]
        window = window_ids(overdue, (i for _, i in self.queue[: size + due]), size)
        if len(self.queue) <= size or not person_heads_apply(self.config):
            return window
        per = self.config.window_per_person
        heads = ((team, user, i) for (team, user), mine in self.by_person.items() for _, i in mine[:per])
        return window + absent_member_heads((self.tasks[i] for i in window), heads)

    def _dequeue(self, task_id: int) -> None:
        task = self.tasks[task_id]
        item = (static_score(task, self.config), task_id)
        pos = bisect.bisect_left(self.queue, item)
        if pos < len(self.queue) and self.queue[pos] == item:
            del self.queue[pos]
            self._zero_gpu_queued -= task.gpus <= 0
            due = (overdue_at_s(task, self.config), task_id)
            del self.overdue[bisect.bisect_left(self.overdue, due)]
            mine = self.by_person[member_of(task)]
            del mine[bisect.bisect_left(mine, item)]

    def _start(self, task: QueuedTask, starts: Sequence[StartDecision]) -> None:
        self._dequeue(task.task_id)
        duration_s = self.duration_of(task)
        est_s = task.estimated_s if task.estimated_s is not None else duration_s
        parts = tuple(
            RunningTask(
                task.task_id,
                task.team,
                task.user,
                s.node,
                s.gpu_indices,
                self.now_s,
                task.gpu_memory_mib,
                task.gpu_fraction,
                task.priority,
                self.now_s + est_s,
            )
            for s in starts
        )
        for part in parts:
            for index in part.gpu_indices:
                self._change((part.node, index), part.gpu_fraction, part.gpu_memory_mib)
        self.running[task.task_id] = parts
        self.started_at[task.task_id] = self.now_s
        self._push(self.now_s + duration_s, _END, task.task_id)
        if self.on_start is not None:
            self.on_start(task, self.now_s, parts)


def _open(slot: GpuSlot) -> bool:
    return slot.available and slot.shares_used < 1.0 - EPS
