"""One consistent picture of the live cluster for the policy: queue head, GPU holders, nodes, usage."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace

from scheduler.clock import now_ms, now_s, to_epoch_s
from scheduler.nodes import NodeState
from scheduler.policy.config import PolicyConfig, TeamUsage
from scheduler.policy.estimate import DurationHistory, estimate_duration_s
from scheduler.policy.types import GpuSlot, QueuedTask, RunningTask
from scheduler.policy_input import gpu_slots, queued_task_of, running_task_of
from scheduler.service import Cluster
from scheduler.usage import gpu_spans, learned_durations, team_usage

USAGE_CACHE_S = 10.0


@dataclass
class ClusterState:
    """Everything one scheduling pass (or one forecast) decides on."""

    now_s: float
    queued: list[QueuedTask]
    running: list[RunningTask]
    gpus: list[GpuSlot]
    nodes: list[NodeState]
    usage: dict[str, TeamUsage]
    succeeded: set[int]
    failed: set[int]


class UsageCache:
    """Team usage and learned run times, recomputed from SQL at most every `USAGE_CACHE_S` seconds."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._lock = threading.Lock()
        self._at = -1e9
        self._usage: dict[str, TeamUsage] = {}
        self._history = DurationHistory()

    def get(self, now: float) -> tuple[dict[str, TeamUsage], DurationHistory]:
        """The cached usage and history, refreshed when stale."""
        with self._lock:
            if time.monotonic() - self._at >= USAGE_CACHE_S:
                config = self.cluster.policy_config
                spans = gpu_spans(self.cluster.factory, now, 4 * config.fairshare_half_life_s)
                self._usage = team_usage(spans, now, config.fairshare_half_life_s)
                self._history = learned_durations(self.cluster.factory, now, config.history_runs)
                self._at = time.monotonic()
            return self._usage, self._history

    def invalidate(self) -> None:
        """Recompute on the next call (a task just finished)."""
        with self._lock:
            self._at = -1e9


def with_learned_estimate(task: QueuedTask, history: DurationHistory, config: PolicyConfig) -> QueuedTask:
    """The task with `estimated_s` filled from past runs of the same user, name and size, when it has none."""
    if task.estimated_s is not None:
        return task
    estimate = estimate_duration_s(task, history, config)
    if estimate.source.startswith("median"):
        return replace(task, estimated_s=estimate.seconds)
    return task


def gather_state(cluster: Cluster, usage_cache: UsageCache, window: int) -> ClusterState:
    """Read the first `window` queued tasks, the tasks holding GPUs, the nodes and the teams' usage."""
    queue, tasks = cluster.queue, cluster.tasks
    now = now_s()
    head = queue.head(window)
    rows = tasks.by_ids(task_id for task_id, _ in head)
    stale = [task_id for task_id, _ in head if task_id not in rows or rows[task_id].status != "queued"]
    for task_id in stale:
        queue.remove(task_id)
    usage, history = usage_cache.get(now)
    config = cluster.policy_config
    queued = [
        with_learned_estimate(queued_task_of(rows[task_id]), history, config)
        for task_id, _ in head
        if task_id not in stale
    ]
    holders = _holders(cluster, now)
    nodes = cluster.nodes.all()
    parents = tasks.statuses({parent for task in queued for parent in task.depends_on})
    return ClusterState(
        now_s=now,
        queued=queued,
        running=holders,
        gpus=gpu_slots(nodes, holders, now_ms()),
        nodes=nodes,
        usage=usage,
        succeeded={task_id for task_id, status in parents.items() if status == "succeeded"},
        failed={task_id for task_id, status in parents.items() if status in ("failed", "cancelled")},
    )


def _holders(cluster: Cluster, now: float) -> list[RunningTask]:
    """Running tasks (SQL) and tasks assigned to a node but not yet claimed (Redis): both hold GPUs."""
    holders: list[RunningTask] = []
    for task in cluster.tasks.with_status("running"):
        if task.node is not None and task.started_at is not None:
            holders.append(
                running_task_of(task, task.node, task.gpu_indices or [], to_epoch_s(task.started_at))
            )
    assigned = cluster.queue.assignments()
    rows = cluster.tasks.by_ids(assigned)
    for task_id, (node, gpu_indices) in assigned.items():
        if task_id in rows and rows[task_id].status == "queued":
            holders.append(running_task_of(rows[task_id], node, gpu_indices, now))
    return holders
