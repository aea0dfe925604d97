"""EASY reservation and backfill: the top blocked task gets GPUs at its earliest time; later tasks start now
only if, by their estimates, they do not touch those GPUs before that time."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scheduler.policy.placement import GpuState, Pool
from scheduler.policy.types import QueuedTask


@dataclass(frozen=True, slots=True)
class Holding:
    """GPUs held by a running (or just started) task until its expected end."""

    end_s: float
    node: str
    gpu_indices: tuple[int, ...]
    gpu_memory_mib: int
    gpu_fraction: float


@dataclass(frozen=True, slots=True)
class Reservation:
    """The top blocked task's promised GPUs from `start_s` on (a maintenance's: until `end_s`; a team's
    reservation of a node: until `end_s`, and its own tasks are not kept off)."""

    task_id: int
    start_s: float
    gpus: frozenset[tuple[str, int]]
    nodes: tuple[str, ...]
    end_s: float = math.inf
    team: str | None = None

    def keeps_off(self, team: str, end_s: float) -> bool:
        """Whether a task of `team` expected to end at `end_s` may not use these GPUs now."""
        return end_s > self.start_s and team != self.team


def find_reservation(
    task: QueuedTask,
    pool: Pool,
    holdings: Sequence[Holding],
    reserved: frozenset[tuple[str, int]] = frozenset(),
) -> Reservation | None:
    """The earliest time, releasing holdings in order of expected end, when `task` fits on GPUs that no
    earlier reservation holds (`reserved`); None if never."""
    look = pool.copy()
    ordered = sorted(holdings, key=lambda h: h.end_s)
    i = 0
    while i < len(ordered):
        end_s = ordered[i].end_s
        while i < len(ordered) and ordered[i].end_s <= end_s:
            h = ordered[i]
            look.release(h.node, h.gpu_indices, h.gpu_memory_mib, h.gpu_fraction)
            i += 1
        chosen = look.find(task, reserved)
        if chosen is not None:
            return _reservation(task, end_s, chosen)
    return None


def _reservation(task: QueuedTask, start_s: float, chosen: Sequence[GpuState]) -> Reservation:
    nodes = tuple(dict.fromkeys(g.node for g in chosen))
    return Reservation(task.task_id, start_s, frozenset((g.node, g.index) for g in chosen), nodes)


def delays(chosen: Sequence[GpuState], end_s: float, reservation: Reservation) -> bool:
    """True when a task on `chosen`, expected to end at `end_s`, would hold reserved GPUs past the start."""
    if end_s <= reservation.start_s:
        return False
    return any((g.node, g.index) in reservation.gpus for g in chosen)
