"""The live scheduler: gathers the state from SQL and Redis, asks the policy, assigns tasks to nodes.

Woken by the scheduler doorbell (submit, finish, cancel, new node) with a periodic pass as a safety net.
Each pass looks only at the head of the queue (`PolicyConfig.window` tasks), so it costs O(log n).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from scheduler.clock import now_ms, now_s, to_epoch_s
from scheduler.nodes import NodeState
from scheduler.policy import engine
from scheduler.policy.config import PolicyConfig
from scheduler.policy.types import Decisions, GpuSlot, PriorityClass, QueuedTask, RunningTask
from scheduler.service import Cluster
from scheduler.store.tables import Task

log = logging.getLogger(__name__)
MIB_PER_GB = 1024
LEADER_LOCK_TTL_MS = 15_000
FULL_RECONCILE_EVERY_S = 60.0


def _epoch_or_none(text: str | None) -> float | None:
    return datetime.fromisoformat(text).timestamp() if text else None


def _later(not_before_s: float | None, hold_until: datetime | None) -> float | None:
    """The later of the spec's `not_before` and a retry backoff."""
    if hold_until is None:
        return not_before_s
    return max(not_before_s or 0.0, to_epoch_s(hold_until))


def queued_task_of(task: Task) -> QueuedTask:
    """The policy's view of a queued task row."""
    spec = task.spec
    estimate = spec.get("estimated_minutes")
    limit = spec.get("time_limit_minutes")
    return QueuedTask(
        task_id=task.id,
        team=task.team.name,
        user=task.user.name,
        gpus=task.gpus,
        enqueued_at_s=to_epoch_s(task.enqueued_at),
        priority=PriorityClass.parse(task.priority),
        gpu_memory_mib=int((task.gpu_memory_gb or 0) * MIB_PER_GB),
        estimated_s=float(estimate) * 60 if estimate else None,
        time_limit_s=float(limit) * 60 if limit else None,
        not_before_s=_later(_epoch_or_none(spec.get("not_before")), task.hold_until),
        deadline_s=_epoch_or_none(spec.get("deadline")),
        offpeak=bool(spec.get("offpeak")),
        name=task.name,
        depends_on=tuple(spec.get("depends_on") or ()),
    )


def running_task_of(task: Task, node: str, gpu_indices: Sequence[int], started_at_s: float) -> RunningTask:
    """The policy's view of a task holding GPUs (running, or assigned and about to start)."""
    queued = queued_task_of(task)
    estimate = queued.estimated_s or queued.time_limit_s
    return RunningTask(
        task_id=task.id,
        team=queued.team,
        user=queued.user,
        node=node,
        gpu_indices=tuple(gpu_indices),
        started_at_s=started_at_s,
        gpu_memory_mib=queued.gpu_memory_mib,
        priority=queued.priority,
        estimated_end_s=started_at_s + estimate if estimate else None,
    )


def gpu_slots(nodes: Iterable[NodeState], holders: Sequence[RunningTask], now_ms_: int) -> list[GpuSlot]:
    """Each GPU of each live node, with what nightshift's own tasks already hold subtracted."""
    reserved_mib: dict[tuple[str, int], int] = {}
    shares: dict[tuple[str, int], float] = {}
    for task in holders:
        for index in task.gpu_indices:
            key = (task.node, index)
            shares[key] = shares.get(key, 0.0) + task.gpu_fraction
            reserved_mib[key] = reserved_mib.get(key, 0) + task.gpu_memory_mib
    slots: list[GpuSlot] = []
    for node in nodes:
        usable = node.alive(now_ms_) and not node.drained
        for gpu in node.gpus:
            key = (node.name, gpu.index)
            free = min(gpu.memory_free_mib, gpu.memory_total_mib - reserved_mib.get(key, 0))
            slots.append(
                GpuSlot(
                    node=node.name,
                    index=gpu.index,
                    memory_total_mib=gpu.memory_total_mib,
                    memory_free_mib=max(0, free),
                    model=gpu.name,
                    shares_used=shares.get(key, 0.0),
                    power_w=gpu.power_w,
                    available=usable,
                )
            )
    return slots


@dataclass
class ClusterState:
    """Everything one pass decides on."""

    queued: list[QueuedTask]
    running: list[RunningTask]
    gpus: list[GpuSlot]
    nodes: list[NodeState]
    parent_status: dict[int, str]


class Dispatcher:
    """Runs scheduling passes for one cluster."""

    def __init__(self, cluster: Cluster, config: PolicyConfig | None = None, name: str = "scheduler") -> None:
        self.cluster = cluster
        self.config = config or PolicyConfig(offpeak=cluster.settings.offpeak, timezone=_zone_name(cluster))
        self.name = name
        self.last_decisions = Decisions()

    def gather(self) -> ClusterState:
        """Read the head of the queue, the tasks holding GPUs, and the nodes."""
        queue, tasks = self.cluster.queue, self.cluster.tasks
        head = queue.head(self.config.window)
        rows = tasks.by_ids(task_id for task_id, _ in head)
        stale = [task_id for task_id, _ in head if task_id not in rows or rows[task_id].status != "queued"]
        for task_id in stale:
            queue.remove(task_id)
        queued = [queued_task_of(rows[task_id]) for task_id, _ in head if task_id not in stale]
        holders = self._holders()
        nodes = self.cluster.nodes.all()
        parents = {parent for task in queued for parent in task.depends_on}
        return ClusterState(
            queued=queued,
            running=holders,
            gpus=gpu_slots(nodes, holders, now_ms()),
            nodes=nodes,
            parent_status=tasks.statuses(parents),
        )

    def _holders(self) -> list[RunningTask]:
        tasks = self.cluster.tasks
        holders: list[RunningTask] = []
        for task in tasks.with_status("running"):
            if task.node is not None and task.started_at is not None:
                holders.append(
                    running_task_of(task, task.node, task.gpu_indices or [], to_epoch_s(task.started_at))
                )
        assigned = self.cluster.queue.assignments()
        rows = tasks.by_ids(assigned)
        now = now_s()
        for task_id, (node, gpu_indices) in assigned.items():
            if task_id in rows and rows[task_id].status == "queued":
                holders.append(running_task_of(rows[task_id], node, gpu_indices, now))
        return holders

    def run_pass(self) -> Decisions:
        """One scheduling pass: decide and assign. Returns the decisions (also kept for `explain`)."""
        state = self.gather()
        parents = state.parent_status
        decisions = engine.decide(
            state.queued,
            state.running,
            state.gpus,
            now_s(),
            self.config,
            succeeded={task_id for task_id, status in parents.items() if status == "succeeded"},
            failed={task_id for task_id, status in parents.items() if status in ("failed", "cancelled")},
        )
        for task_id, reason in decisions.fail.items():
            if self.cluster.tasks.fail_queued(task_id, "dependency_failed", reason):
                self.cluster.queue.remove(task_id)
        stamp = now_ms()
        for start in decisions.starts:
            self.cluster.queue.assign(start.task_id, start.node, start.gpu_indices, stamp)
        self.last_decisions = decisions
        return decisions

    def reap_expired_leases(self) -> int:
        """Requeue tasks whose worker stopped heartbeating (lost worker); returns how many."""
        requeued = 0
        for task_id, token in self.cluster.queue.expired(now_ms()):
            status = self.cluster.settle_attempt(
                task_id, token, "lost_worker", message="its worker stopped heartbeating"
            )
            if status is not None:
                requeued += status == "queued"
                log.warning("task %s: its worker stopped heartbeating; now %s", task_id, status)
        return requeued

    def _is_leader(self) -> bool:
        client = self.cluster.queue.client
        key = self.cluster.queue.keys.scheduler_lock
        if client.set(key, self.name, nx=True, px=LEADER_LOCK_TTL_MS):
            return True
        if client.get(key) == self.name:
            client.pexpire(key, LEADER_LOCK_TTL_MS)
            return True
        return False

    def _reconcile_redis(self, last_reconcile: float) -> float:
        """Rebuild Redis from SQL at once when it lost its data, and once a minute in any case."""
        lost = self.cluster.queue.epoch() is None
        if not lost and time.monotonic() - last_reconcile < FULL_RECONCILE_EVERY_S:
            return last_reconcile
        report = self.cluster.rebuild_redis()
        if lost or report.queued_restored or report.leases_restored:
            log.warning("Redis was missing entries (lost data: %s); rebuilt from SQL: %s", lost, report)
        return time.monotonic()

    def run(self, stop: threading.Event) -> None:
        """Serve until `stop` is set: a pass on every doorbell ring, and a safety pass every few seconds."""
        safety_s = self.cluster.settings.scheduler_safety_pass_s
        last_safety = last_reconcile = -1e9
        while not stop.is_set():
            try:
                if self._is_leader():
                    if time.monotonic() - last_safety >= safety_s:
                        last_reconcile = self._reconcile_redis(last_reconcile)
                        self.reap_expired_leases()
                        last_safety = time.monotonic()
                    self.run_pass()
            except Exception:
                log.exception("scheduling pass failed; retrying")
                stop.wait(1.0)
            self.cluster.queue.wait_scheduler_doorbell(min(safety_s, 1.0) if not stop.is_set() else 0.01)


def _zone_name(cluster: Cluster) -> str:
    return cluster.settings.timezone or getattr(cluster.zone, "key", "UTC")
