"""Builders for plain policy data: `make_task(**overrides)`, `make_gpus(...)`, `make_running(...)`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from scheduler.policy.placement import memory_need_mib
from scheduler.policy.types import GpuSlot, PriorityClass, QueuedTask, RunningTask

GB = 1024


def make_task(task_id: int = 1, **overrides: Any) -> QueuedTask:
    """A 1-GPU normal task of team `t` submitted at 0 with a 1 h estimate, with overrides."""
    base = QueuedTask(
        task_id=task_id, team="t", user="u", gpus=1, enqueued_at_s=0.0, priority=PriorityClass.NORMAL,
        estimated_s=3600.0,
    )  # fmt: skip
    return replace(base, **overrides)


def make_gpus(nodes: int = 1, per_node: int = 4, gb: int = 24, model: str = "") -> list[GpuSlot]:
    """Empty GPUs: `nodes` nodes named n0.. with `per_node` GPUs of `gb` GB."""
    return [GpuSlot(f"n{n}", i, gb * GB, gb * GB, model) for n in range(nodes) for i in range(per_node)]


def occupy(gpus: list[GpuSlot], running: RunningTask) -> list[GpuSlot]:
    """The GPUs as they look while `running` holds its share of them."""
    out = []
    for g in gpus:
        if g.node == running.node and g.index in running.gpu_indices:
            need = memory_need_mib(running.gpu_memory_mib, running.gpu_fraction, g.memory_total_mib)
            g = replace(
                g, shares_used=g.shares_used + running.gpu_fraction, memory_free_mib=g.memory_free_mib - need
            )
        out.append(g)
    return out


def make_running(
    task_id: int, node: str = "n0", gpus: tuple[int, ...] = (0,), **overrides: Any
) -> RunningTask:
    """A task running since 0 that is expected to end at 3600."""
    base = RunningTask(task_id, "t", "u", node, gpus, 0.0, estimated_end_s=3600.0)
    return replace(base, **overrides)
