"""VRAM-aware placement: which GPUs a task gets, all on one node, best fit, sharing only what fits.

Rules:
- an exclusive task (`gpu_fraction >= 1`) needs GPUs nobody shares (`shares_used == 0`);
- a fractional task needs `shares_used + fraction <= 1` and its memory free on the GPU; without an explicit
  `gpu_memory_mib` it is charged `fraction × memory_total` so shares never oversubscribe memory;
- all GPUs of a task are on one node; a task larger than every node (simulator only) takes whole nodes (gang);
- best fit: the smallest GPUs that fit (large ones stay free for large jobs), then the node left fullest;
- a task naming a `node` goes only there; one naming a `gpu_model` only on GPUs whose model name contains
  it, ignoring case (`"a100"` matches `"NVIDIA A100-SXM4-80GB"`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from scheduler.policy.types import GpuSlot, QueuedTask

EPS = 1e-9


def memory_need_mib(gpu_memory_mib: int, gpu_fraction: float, shareable_mib: int) -> int:
    """Memory a task holds on one GPU: its request, else, when it shares, its fraction of the memory the GPU
    offers tasks (`GpuSlot.shareable_mib`), so that two halves of a GPU fit beside the driver's own."""
    if gpu_memory_mib > 0:
        return gpu_memory_mib
    if gpu_fraction < 1.0:  # rounded down, so that the shares of a GPU add up to no more than it has
        return math.floor(gpu_fraction * shareable_mib + 1e-9)
    return 0


@dataclass(slots=True)
class GpuState:
    """A mutable copy of a GpuSlot for one scheduling pass."""

    node: str
    index: int
    total_mib: int
    free_mib: int
    shares: float
    available: bool
    model: str
    power_w: float | None
    shareable_mib: int  # the total less the driver's own memory (`GpuSlot.shareable_mib`)

    def fits(self, need_mib: int, fraction: float) -> bool:
        """True when a task needing `need_mib` and `fraction` of this GPU can go here now."""
        if not self.available or self.free_mib < need_mib:
            return False
        if fraction >= 1.0:
            return self.shares <= EPS
        return self.shares + fraction <= 1.0 + EPS

    def slot(self) -> GpuSlot:
        """Back to the immutable form."""
        return GpuSlot(
            self.node,
            self.index,
            self.total_mib,
            self.free_mib,
            self.model,
            self.shares,
            self.power_w,
            self.available,
            driver_reserved_mib=self.total_mib - self.shareable_mib,
        )


@dataclass(slots=True)
class NodeState:
    """The GPUs of one node, with a count of whole free GPUs kept current (for a quick skip)."""

    name: str
    gpus: list[GpuState] = field(default_factory=list)
    whole_free: int = 0

    def recount(self) -> None:
        """Recompute `whole_free` after a change."""
        self.whole_free = sum(1 for g in self.gpus if g.available and g.shares <= EPS)


def model_matches(wanted: str | None, model: str) -> bool:
    """True when a task asking for GPU model `wanted` (None: any) may use a GPU named `model`."""
    return wanted is None or wanted.strip().casefold() in model.casefold()


def _eligible(task: QueuedTask, g: GpuState | GpuSlot) -> bool:
    """The task's own constraints on where it may run (pinned node, GPU model), whatever is free."""
    pinned = task.node is None or g.node.casefold() == task.node.casefold()
    return pinned and model_matches(task.gpu_model, g.model)


def _copy(g: GpuState) -> GpuState:
    return GpuState(
        g.node, g.index, g.total_mib, g.free_mib, g.shares, g.available, g.model, g.power_w, g.shareable_mib
    )


class Pool:
    """Free GPU state during one pass; `take`/`release` keep it current as tasks start or (virtually) end."""

    def __init__(self, gpus: Iterable[GpuSlot]) -> None:
        self.nodes: dict[str, NodeState] = {}
        nodes = self.nodes
        open_count = 0
        for s in gpus:
            node = nodes.get(s.node)
            if node is None:
                node = nodes[s.node] = NodeState(s.node)
            shares = s.shares_used
            node.gpus.append(
                GpuState(
                    s.node,
                    s.index,
                    s.memory_total_mib,
                    s.memory_free_mib,
                    shares,
                    s.available,
                    s.model,
                    s.power_w,
                    s.shareable_mib,
                )
            )
            if s.available:
                if shares <= EPS:
                    node.whole_free += 1
                if shares < 1.0 - EPS:
                    open_count += 1
        for node in nodes.values():
            gs = node.gpus
            if any(gs[i].index > gs[i + 1].index for i in range(len(gs) - 1)):
                gs.sort(key=lambda g: g.index)
        self.open = open_count
        self.max_node_gpus = max((len(n.gpus) for n in nodes.values()), default=0)
        self.version = 0
        self._owned: set[str] = set(nodes)

    def copy(self) -> Pool:
        """An independent copy (for looking ahead at reservations, or for one pass over a kept pool).

        Copy-on-write per node: the copy shares every node with this pool until either side changes it, so
        a copy costs O(nodes), not O(GPUs); `take`/`release` clone a shared node before changing it.
        """
        other = Pool(())
        other.nodes = dict(self.nodes)
        other.max_node_gpus = self.max_node_gpus
        other.open = self.open
        self._owned = set()  # both sides now share every node
        return other

    def _own(self, name: str) -> NodeState:
        """Node `name`, cloned first if it is shared with another pool (copy-on-write)."""
        node = self.nodes[name]
        if name not in self._owned:
            node = self.nodes[name] = NodeState(name, [_copy(g) for g in node.gpus], node.whole_free)
            self._owned.add(name)
        return node

    def gpu(self, node: str, index: int) -> GpuState | None:
        """The state of one GPU, or None when unknown (read only: change it through `take`/`release`)."""
        n = self.nodes.get(node)
        if n is None:
            return None
        for g in n.gpus:
            if g.index == index:
                return g
        return None

    def _owned_gpu(self, node: str, index: int) -> GpuState | None:
        """Like `gpu`, on this pool's own (cloned if shared) copy of the node, ready to be changed."""
        if node not in self.nodes:
            return None
        for g in self._own(node).gpus:
            if g.index == index:
                return g
        return None

    def set_gpu(self, slot: GpuSlot) -> None:
        """Make one known GPU show `slot`'s free memory and shares (an incremental update of a kept pool)."""
        g = self._owned_gpu(slot.node, slot.index)
        if g is None:
            raise KeyError(f"unknown GPU {slot.node}:{slot.index}")
        was_open = g.available and g.shares < 1.0 - EPS
        g.free_mib = slot.memory_free_mib
        g.shares = slot.shares_used
        g.available = slot.available
        self.open += (g.available and g.shares < 1.0 - EPS) - was_open
        self.nodes[slot.node].recount()
        self.version += 1

    def any_room(self) -> bool:
        """False when no GPU can take even a sliver more: nothing can start this pass."""
        return self.open > 0

    def find(
        self, task: QueuedTask, exclude: frozenset[tuple[str, int]] = frozenset()
    ) -> list[GpuState] | None:
        """The GPUs `task` would get now (best fit), avoiding `exclude`; None when it does not fit."""
        if task.gpus <= 0:
            return []
        if task.gpus > self.max_node_gpus:
            return self._find_gang(task, exclude)
        fraction = min(task.gpu_fraction, 1.0)
        best: list[GpuState] | None = None
        best_score: tuple[int, int, str] | None = None
        for node in self.nodes.values():
            if task.node is not None and node.name.casefold() != task.node.casefold():
                continue
            if fraction >= 1.0 and node.whole_free < task.gpus:
                continue
            cands = [
                g
                for g in node.gpus
                if (g.node, g.index) not in exclude
                and _eligible(task, g)
                and g.fits(memory_need_mib(task.gpu_memory_mib, fraction, g.shareable_mib), fraction)
            ]
            if len(cands) < task.gpus:
                continue
            cands.sort(key=lambda g: (g.total_mib, -g.shares, g.free_mib, g.index))
            chosen = sorted(cands[: task.gpus], key=lambda g: g.index)  # in index order, as nvidia-smi counts
            score = (sum(g.total_mib for g in chosen), len(cands) - task.gpus, node.name)
            if best_score is None or score < best_score:
                best, best_score = chosen, score
        return best

    def _find_gang(self, task: QueuedTask, exclude: frozenset[tuple[str, int]]) -> list[GpuState] | None:
        """Whole free nodes for a task larger than any node; smallest nodes first."""
        nodes = sorted(self.nodes.values(), key=lambda n: (len(n.gpus), n.name))
        chosen: list[GpuState] = []
        for node in nodes:
            if all(
                _eligible(task, g)
                and g.available
                and g.shares <= EPS
                and (g.node, g.index) not in exclude
                and g.free_mib >= task.gpu_memory_mib
                for g in node.gpus
            ):
                chosen.extend(node.gpus)
                if len(chosen) >= task.gpus:
                    return chosen
        return None

    def take(self, chosen: Sequence[GpuState], gpu_memory_mib: int, gpu_fraction: float) -> None:
        """Mark `chosen` as used by a task with this memory and fraction."""
        fraction = min(gpu_fraction, 1.0)
        for c in chosen:
            g = self._owned_gpu(c.node, c.index)
            if g is None:
                continue
            was_open = g.available and g.shares < 1.0 - EPS
            g.shares += fraction
            g.free_mib -= memory_need_mib(gpu_memory_mib, fraction, g.shareable_mib)
            self.open += (g.available and g.shares < 1.0 - EPS) - was_open
        for name in {g.node for g in chosen}:
            self.nodes[name].recount()
        self.version += 1

    def release(self, node: str, indices: Sequence[int], gpu_memory_mib: int, gpu_fraction: float) -> None:
        """Give back what a task held (used when looking ahead at running tasks' ends)."""
        fraction = min(gpu_fraction, 1.0)
        for i in indices:
            g = self._owned_gpu(node, i)
            if g is not None:
                was_open = g.available and g.shares < 1.0 - EPS
                g.shares = max(0.0, g.shares - fraction)
                need_mib = memory_need_mib(gpu_memory_mib, fraction, g.shareable_mib)
                g.free_mib = min(g.total_mib, g.free_mib + need_mib)
                self.open += (g.available and g.shares < 1.0 - EPS) - was_open
        if node in self.nodes:
            self.nodes[node].recount()
        self.version += 1


def place_on_gpus(
    task: QueuedTask, gpus: Sequence[GpuSlot], exclude: frozenset[tuple[str, int]] = frozenset()
) -> tuple[GpuSlot, ...] | None:
    """The GPUs `task` would get now (as they are before it starts), or None when it does not fit."""
    chosen = Pool(gpus).find(task, exclude)
    return None if chosen is None else tuple(g.slot() for g in chosen)


def never_fits(task: QueuedTask, gpus: Sequence[GpuSlot]) -> str | None:
    """Why `task` could not start even on an empty cluster, or None when it could."""
    if task.gpus <= 0:
        return None
    empty = [replace(g, memory_free_mib=g.memory_total_mib, shares_used=0.0, available=True) for g in gpus]
    if not empty:
        return "there are no GPUs"
    if Pool(empty).find(task) is not None:
        return None
    pinned = task.node.casefold() if task.node is not None else None
    if pinned is not None and all(g.node.casefold() != pinned for g in empty):
        return f"there is no node named {task.node!r}"
    if task.gpu_model is not None:
        models = sorted({g.model for g in empty if pinned is None or g.node.casefold() == pinned})
        matching = [g for g in empty if _eligible(task, g)]
        if not matching:
            where = f"node {task.node} has" if task.node else "the GPUs here are"
            return f"no GPU model matches {task.gpu_model!r} ({where}: {', '.join(models)})"
        empty = matching
    elif pinned is not None:
        empty = [g for g in empty if g.node.casefold() == pinned]
    biggest_gb = max(g.memory_total_mib for g in empty) / 1024
    if task.gpu_memory_mib > max(g.memory_total_mib for g in empty):
        return f"no GPU here has {task.gpu_memory_mib / 1024:.0f} GB (the largest has {biggest_gb:.0f} GB)"
    # too many GPUs for one node (of this model, with this much memory): say how many one node has
    big_enough: dict[str, int] = {}
    for g in empty:
        if g.memory_total_mib >= task.gpu_memory_mib:
            big_enough[g.node] = big_enough.get(g.node, 0) + 1
    most = max(big_enough.values(), default=0)
    each = f" with {task.gpu_memory_mib / 1024:.0f} GB each" if task.gpu_memory_mib > 0 else ""
    if task.node is not None:
        return f"node {task.node} has {most} GPU{'s' if most != 1 else ''}{each.replace(' each', '')}"
    return f"no node has {task.gpus} GPUs{each} (at most {most} on one node)"


def cpu_node(task: QueuedTask, nodes: Sequence[str], turn: int) -> str | None:
    """The node a CPU-only task (no GPUs, so no GPU picked its node) goes to: its pinned node if in
    service, else the nodes in service taken in turn; None when no node is in service."""
    if task.node is not None:
        return next((name for name in nodes if name.casefold() == task.node.casefold()), None)
    return nodes[turn % len(nodes)] if nodes else None
