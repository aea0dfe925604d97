"""Turn a validated spec into a task row: resolve times and defaults, check it against this cluster."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, tzinfo
from typing import Any

from scheduler.errors import SpecError
from scheduler.nodes import NodeState
from scheduler.spec import TaskSpec
from scheduler.store.tasks import NewTask

MIB_PER_GB = 1024


def default_name(command: str) -> str:
    """A readable name from the command: its first word that is not an interpreter or a flag."""
    words = [w for w in command.split() if not w.startswith("-")]
    skip = {
        "python",
        "python3",
        "bash",
        "sh",
        "torchrun",
        "accelerate",
        "deepspeed",
        "srun",
        "env",
        "uv",
        "run",
    }
    for word in words:
        if word.split("/")[-1] not in skip and "=" not in word:
            return word.split("/")[-1][:120]
    return (words[0] if words else "task")[:120]


def _localize(moment: datetime | None, zone: tzinfo) -> datetime | None:
    if moment is None:
        return None
    return moment.replace(tzinfo=zone) if moment.tzinfo is None else moment


def check_against_cluster(spec: TaskSpec, nodes: Sequence[NodeState], max_task_gpus: int) -> None:
    """Refuse what no node of this cluster could ever run, with a message naming the limit."""
    live = [node for node in nodes if node.gpus or not nodes]
    most_gpus = max((len(node.gpus) for node in live), default=max_task_gpus)
    limit = min(most_gpus, max_task_gpus) if live else max_task_gpus
    if spec.gpus > limit:
        raise SpecError(
            f"gpus must be between 0 and {limit} on this cluster (the largest node has {most_gpus} GPUs); "
            f"you asked for {spec.gpus}",
            [{"field": "gpus", "message": f"gpus must be between 0 and {limit} on this cluster"}],
        )
    if spec.gpu_memory_gb is not None and live:
        largest_mib = max((gpu.memory_total_mib for node in live for gpu in node.gpus), default=0)
        if largest_mib and spec.gpu_memory_gb * MIB_PER_GB > largest_mib:
            largest_gb = largest_mib / MIB_PER_GB
            raise SpecError(
                f"no GPU on this cluster has {spec.gpu_memory_gb:g} GB (the largest has {largest_gb:.0f} GB)",
                [
                    {
                        "field": "gpu_memory_gb",
                        "message": f"at most {largest_gb:.0f} GB per GPU on this cluster",
                    }
                ],
            )


def resolve(spec: TaskSpec, zone: tzinfo, default_workdir: str) -> NewTask:
    """The row to insert: naive times read in the cluster's zone, name and workdir filled in."""
    data: dict[str, Any] = spec.model_dump(mode="json")
    not_before = _localize(spec.not_before, zone)
    deadline = _localize(spec.deadline, zone)
    data["not_before"] = not_before.isoformat() if not_before else None
    data["deadline"] = deadline.isoformat() if deadline else None
    data["name"] = spec.name or default_name(spec.command)
    data["workdir"] = spec.workdir or default_workdir
    return NewTask(
        name=data["name"],
        command=spec.command,
        spec=data,
        priority=spec.priority,
        gpus=spec.gpus,
        gpu_memory_gb=spec.gpu_memory_gb,
        retries=spec.retries,
    )
