"""The live scheduler: gathers the state from SQL and Redis, asks the policy, assigns tasks to nodes.

Woken by the scheduler doorbell (submit, finish, cancel, new node) with a periodic pass as a safety net.
Each pass looks only at the head of the queue (`PolicyConfig.window` tasks), so it costs O(log n).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import replace

import redis

from scheduler.clock import now_ms
from scheduler.cluster_state import ClusterState, RowCache, UsageCache, gather_state
from scheduler.errors import NotFoundError
from scheduler.held_key import HeldKey
from scheduler.lost_attempts import settle_lost_attempt
from scheduler.metrics import record_lease_expiries, record_pass
from scheduler.policy import engine
from scheduler.policy.config import PolicyConfig
from scheduler.policy.placement import cpu_node
from scheduler.policy.types import Decisions, GpuSlot, QueuedTask
from scheduler.policy.window import pass_window
from scheduler.service import Cluster
from scheduler.wakeup import ring_when_set

log = logging.getLogger(__name__)
LEADER_LOCK_TTL_MS = 15_000
FULL_RECONCILE_EVERY_S = 60.0


class Dispatcher:
    """Runs scheduling passes for one cluster."""

    def __init__(self, cluster: Cluster, config: PolicyConfig | None = None) -> None:
        self.cluster = cluster
        self.config = config or cluster.policy_config
        self._pass_policy = self.config  # `config` with the typical run time last applied
        # the leader lock: one scheduler passes at a time; one that crashed on this machine is taken over
        # at once (its lock would otherwise outlive it by the TTL, or come back with Redis's AOF)
        self.leader = HeldKey(cluster.queue.client, cluster.queue.keys.scheduler_lock, LEADER_LOCK_TTL_MS)
        self.usage = UsageCache(cluster, background=True)
        self.rows = RowCache()
        self.last_decisions = Decisions()
        self._cpu_turn = 0  # spreads CPU-only tasks over the nodes in service
        self.next_lease_expiry_ms: int | None = None  # as the last pass saw it: the loop wakes for it

    def run_pass(self) -> Decisions:
        """One scheduling pass: decide, fail tasks whose parents failed, assign the starts to nodes."""
        state = gather_state(self.cluster, self.usage, self.config.window, self.rows)
        self.next_lease_expiry_ms = state.next_lease_expiry_ms
        decisions = self._decide(state)
        failed = [
            task_id
            for task_id, reason in decisions.fail.items()
            if self.cluster.tasks.fail_queued(task_id, "dependency_failed", reason)
        ]
        for task_id in failed:
            self.cluster.queue.remove(task_id)
        self.cluster.admit_after_endings(failed)  # their slots in a sweep with `max_running`
        stamp = now_ms()
        in_service = state.nodes_for_cpu_tasks(stamp)
        queued = {task.task_id: task for task in state.queued}
        assignments: list[tuple[int, str, tuple[int, ...]]] = []
        for turn, start in enumerate(decisions.starts):
            node: str | None = start.node
            if not node and start.task_id in queued:  # CPU-only: no GPU chose its node
                node = cpu_node(queued[start.task_id], in_service, self._cpu_turn + turn)
            if node:
                assignments.append((start.task_id, node, start.gpu_indices))
        revisions = {task_id: queued[task_id].revision for task_id, _, _ in assignments if task_id in queued}
        self.cluster.queue.assign_many(assignments, stamp, revisions)
        self._cpu_turn += len(decisions.starts)
        self.last_decisions = decisions
        self._requeue_for_maintenance(state, stamp)
        return decisions

    def _requeue_for_maintenance(self, state: ClusterState, stamp_ms: int) -> None:
        """At a maintenance asked with `--requeue`, the tasks still running on the node go back to the queue
        (their stop signal and grace, their age kept), as the admin who asked it, once (a repeating
        maintenance: once each time)."""
        for node in state.nodes:
            window = node.maintenance(stamp_ms)  # a requeue not done by the end is not done after
            if window is None or window[0] > stamp_ms or node.drain_requeue_by is None:
                continue
            if node.drain_requeued_ms is not None and node.drain_requeued_ms >= window[0]:
                continue  # done this time
            asked = self.cluster.requeue_at_maintenance(node.name, window[0])
            if asked:
                log.warning("maintenance of %s: requeued its running tasks %s", node.name, asked)

    def _decide(self, state: ClusterState) -> Decisions:
        """The policy's starts and failures for this pass.

        The pass does not need the policy's wording of why each task waits (`explain` words it on demand),
        and wording every blocked task of the window costs far more than deciding. Without wording the
        policy stops at the first task after the GPUs run out; the tasks it then skipped that need no GPU
        (CPU-only) or may have a failed parent get a second, GPU-less look so that nothing changes for them.
        """
        decisions = self._policy(state, state.queued, state.gpus, with_reasons=False)
        seen = {start.task_id for start in decisions.starts}
        seen |= decisions.pending_reasons.keys() | decisions.fail.keys()
        skipped = [
            task
            for task in pass_window(state.queued, self._pass_config(state))
            if task.task_id not in seen and (task.gpus <= 0 or task.depends_on)
        ]
        if not skipped:
            return decisions
        extra = self._policy(state, skipped, [], with_reasons=True)
        return replace(
            decisions,
            starts=decisions.starts + extra.starts,
            pending_reasons={**decisions.pending_reasons, **extra.pending_reasons},
            fail={**decisions.fail, **extra.fail},
        )

    def _policy(
        self, state: ClusterState, queued: list[QueuedTask], gpus: list[GpuSlot], *, with_reasons: bool
    ) -> Decisions:
        return engine.decide(
            queued,
            state.running,
            gpus,
            state.now_s,
            self._pass_config(state),
            state.usage,
            succeeded=state.succeeded,
            failed=state.failed,
            with_reasons=with_reasons,
        )

    def _pass_config(self, state: ClusterState) -> PolicyConfig:
        """`self.config` with the observed typical run time, rebuilt only when that changes."""
        self._pass_policy = state.policy_config(self._pass_policy)
        return self._pass_policy

    def reap_expired_leases(self) -> int:
        """Requeue tasks whose worker stopped heartbeating (lost worker); returns how many."""
        requeued = 0
        expired = self.cluster.queue.expired(now_ms())
        record_lease_expiries(self.cluster, len(expired))
        for task_id, token in expired:
            node = self._node_of(task_id)
            where = f" on node {node}" if node else ""
            why = f"its worker{where} stopped heartbeating"
            status, _ = settle_lost_attempt(self.cluster, task_id, token, node, why)
            if status is not None:
                requeued += status == "queued"
                log.warning("task %s: its worker stopped heartbeating; now %s", task_id, status)
        return requeued

    def _node_of(self, task_id: int) -> str | None:
        """The node a task's attempt runs on, as SQL has it (one lookup: lost leases are rare)."""
        try:
            return self.cluster.tasks.get_any(task_id).node
        except NotFoundError:
            return None

    def _is_leader(self) -> bool:
        return self.leader.hold() is None

    def _reconcile_redis(self, last_reconcile: float) -> float:
        """Rebuild Redis from SQL at once when it lost its data; once a minute, check it and repair it (and
        give a sweep's free slots to its waiting tasks, as the rebuild does).

        The minute's check compares ids only (SQL's queued and running tasks against the queue, the
        assignments and the leases); the full rebuild, which loads and rescores every queued row, runs only
        when that check finds something missing or stale.
        """
        lost = self.cluster.queue.epoch() is None
        if not lost and time.monotonic() - last_reconcile < FULL_RECONCILE_EVERY_S:
            return last_reconcile
        if not lost and not self._redis_suspects(None) and self.cluster.queue.indexes_agree():
            # a sweep slot freed by an ending whose admission never ran (its process died after settling)
            admitted = self.cluster.admit_all_waiting()
            if admitted:
                log.warning("admitted %d sweep task(s) into slots an ending left free", admitted)
            return time.monotonic()
        report = self.cluster.rebuild_redis()
        if lost or report.queued_restored or report.leases_restored:
            log.warning("Redis was missing entries (lost data: %s); rebuilt from SQL: %s", lost, report)
        return time.monotonic()

    def _redis_suspects(self, only: set[int] | None) -> set[int]:
        """Ids on which Redis and SQL disagree (missing from Redis, or queued in Redis but not in SQL).

        Redis is read before SQL, and any disagreement is checked once more on just those ids, so a task
        caught between the two (being submitted, claimed or finished) is not mistaken for a lost one.
        """
        queue, keys = self.cluster.queue, self.cluster.queue.keys
        pipe = queue.client.pipeline(transaction=False)
        pipe.zrange(keys.queue, 0, -1)
        pipe.smembers(keys.assigned)
        pipe.zrange(keys.leases, 0, -1)
        in_queue, assigned, leased = ({int(m) for m in members} for members in pipe.execute())
        sql = self.cluster.tasks.schedulable_states(only)  # a held task belongs nowhere in Redis
        if only is not None:
            in_queue &= only
        held = in_queue | assigned | leased
        suspects = {i for i, status in sql.items() if i not in (held if status == "queued" else leased)}
        suspects |= {i for i in in_queue if sql.get(i) != "queued"}
        if suspects and only is None:
            return self._redis_suspects(suspects)
        return suspects

    def run(self, stop: threading.Event) -> None:
        """Serve until `stop` is set: a pass on every doorbell ring and when a lease runs out (its task is
        requeued at once), and a safety pass every few seconds; then give the leader lock up."""
        safety_s = self.cluster.settings.scheduler_safety_pass_s
        last_safety = last_reconcile = -1e9
        ring_when_set(stop, self.cluster.queue.ring_scheduler, "scheduler")
        while not stop.is_set():
            try:
                if self._is_leader():
                    if time.monotonic() - last_safety >= safety_s:
                        last_reconcile = self._reconcile_redis(last_reconcile)
                        self.reap_expired_leases()
                        last_safety = time.monotonic()
                    elif self._lease_due():
                        self.reap_expired_leases()
                    started = time.perf_counter()
                    self.run_pass()
                    record_pass(self.cluster, time.perf_counter() - started)
                else:
                    self.next_lease_expiry_ms = None  # the leader watches the leases
                # inside the try: a Redis restart breaks this wait too, and must not end the loop
                self.cluster.queue.wait_scheduler_doorbell(
                    self._idle_wait_s(safety_s) if not stop.is_set() else 0.01
                )
            except Exception:
                log.exception("scheduling pass failed; retrying")
                stop.wait(1.0)
        with contextlib.suppress(redis.RedisError):  # so the next scheduler need not wait out the TTL
            self.leader.release()

    def _lease_due(self) -> bool:
        """True when the first lease the last pass saw has run out."""
        return self.next_lease_expiry_ms is not None and now_ms() >= self.next_lease_expiry_ms

    def _idle_wait_s(self, safety_s: float) -> float:
        """How long to wait for the doorbell: until the first lease runs out, at most a second (and at
        least 50 ms, so a lease the reaper could not take yet is not polled in a tight loop)."""
        wait_s = min(safety_s, 1.0)
        if self.next_lease_expiry_ms is not None:
            wait_s = min(wait_s, max(0.05, (self.next_lease_expiry_ms - now_ms()) / 1000.0))
        return wait_s
