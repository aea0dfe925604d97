"""Plain data the policy reads and the decisions it returns; shared by the live scheduler and simulator."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import NamedTuple

MIB_PER_GB = 1024


class PriorityClass(IntEnum):
    """The four priority classes of a spec; larger runs first."""

    LOW = 0
    NORMAL = 1
    HIGH = 2
    URGENT = 3

    @classmethod
    def parse(cls, name: str) -> PriorityClass:
        """`"high"` -> `PriorityClass.HIGH`."""
        return cls[name.upper()]


class TeamWindow(NamedTuple):
    """A node reserved for one team from `start_s` to `end_s`: only its tasks start there then."""

    team: str
    start_s: float
    end_s: float


@dataclass(frozen=True, slots=True)
class GpuSlot:
    """One GPU as the policy sees it: capacity, and what is free after nightshift's own reservations."""

    node: str
    index: int
    memory_total_mib: int
    memory_free_mib: int
    model: str = ""
    shares_used: float = 0.0  # sum of gpu_fraction of the tasks placed on it (1.0 = fully taken)
    power_w: float | None = None
    available: bool = True  # False when drained, too hot, or holding memory of a finished task
    why_unavailable: str | None = None  # for people: "node n0 is drained", "GPU 2 of n0: too hot: 91 °C ..."
    # measured memory in use beyond what nightshift's tasks on it asked for (another process's, say a
    # notebook's): no nightshift task's end frees it; 0 when not known
    outside_mib: int = 0
    outside_by: str | None = None  # the process holding the most of it, "pid 4242 of alice (jupyter-lab)"
    # memory the driver holds for itself (in use while no process is: ~0.6 GB of an H200), which no task can
    # have: a sharer's part of the GPU is its fraction of the rest (`shareable_mib`)
    driver_reserved_mib: int = 0
    # when its node goes down for maintenance (a drain set for later): only a task that ends by then (by its
    # estimate) starts on it, and no reservation is promised on it
    down_at_s: float | None = None
    up_at_s: float | None = None  # when that maintenance ends (None: it lasts until the node is undrained)
    reserved: tuple[TeamWindow, ...] = ()  # its node's reservations for teams not over

    @property
    def shareable_mib(self) -> int:
        """The memory tasks can have: the total less what the driver holds for itself."""
        return max(0, self.memory_total_mib - self.driver_reserved_mib)


@dataclass(frozen=True, slots=True)
class QueuedTask:
    """A task waiting to start. `estimated_s` is what the policy may know about its run time."""

    task_id: int
    team: str
    user: str
    gpus: int
    enqueued_at_s: float
    priority: PriorityClass = PriorityClass.NORMAL
    gpu_memory_mib: int = 0  # minimum free memory per GPU; 0 = any
    gpu_fraction: float = 1.0  # < 1.0: may share a GPU with other fractional tasks
    estimated_s: float | None = None
    time_limit_s: float | None = None
    not_before_s: float | None = None
    retry_at_s: float | None = None  # a retried task's backoff: it waits until then
    deadline_s: float | None = None
    offpeak: bool = False
    name: str = ""
    depends_on: tuple[int, ...] = ()  # parents that must succeed (Slurm's afterok)
    depends_on_any: tuple[int, ...] = ()  # parents that must end, however they end (Slurm's afterany)
    node: str | None = None  # pinned node label, when the spec names one
    gpu_model: str | None = None  # only GPUs whose model contains this (case-insensitive), e.g. "A100"
    revision: int = 0  # the edit of the live task row this view was read from (a start names it)


@dataclass(frozen=True, slots=True)
class RunningTask:
    """A task holding GPUs right now."""

    task_id: int
    team: str
    user: str
    node: str
    gpu_indices: tuple[int, ...]
    started_at_s: float
    gpu_memory_mib: int = 0
    gpu_fraction: float = 1.0
    priority: PriorityClass = PriorityClass.NORMAL
    estimated_end_s: float | None = None


@dataclass(frozen=True, slots=True)
class StartDecision:
    """Start `task_id` now on `node`, on these GPU indices."""

    task_id: int
    node: str
    gpu_indices: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Decisions:
    """The result of one scheduling pass: what to start now, and why the others wait."""

    starts: tuple[StartDecision, ...] = ()
    pending_reasons: dict[int, str] = field(default_factory=dict)
    fail: dict[int, str] = field(default_factory=dict)  # task_id -> why it must fail (a parent failed)
    wake_at_s: float | None = None  # earliest time a time condition changes (off-peak, not_before)
    reserved_on: dict[int, tuple[str, ...]] = field(default_factory=dict)  # task_id -> nodes it reserved
    # task_id -> why a task holding a reservation cannot start now (worded passes only; none when only the
    # queue ahead keeps it)
    blocked_by: dict[int, str] = field(default_factory=dict)
