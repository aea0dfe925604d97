"""The live scheduler: gathers the state from SQL and Redis, asks the policy, assigns tasks to nodes.

Woken by the scheduler doorbell (submit, finish, cancel, new node) with a periodic pass as a safety net.
Each pass looks only at the head of the queue (`PolicyConfig.window` tasks), so it costs O(log n).
"""

from __future__ import annotations

import logging
import secrets
import threading
import time

from scheduler.clock import now_ms
from scheduler.cluster_state import UsageCache, gather_state
from scheduler.policy import engine
from scheduler.policy.config import PolicyConfig
from scheduler.policy.types import Decisions
from scheduler.service import Cluster

log = logging.getLogger(__name__)
LEADER_LOCK_TTL_MS = 15_000
FULL_RECONCILE_EVERY_S = 60.0


class Dispatcher:
    """Runs scheduling passes for one cluster."""

    def __init__(self, cluster: Cluster, config: PolicyConfig | None = None, name: str | None = None) -> None:
        self.cluster = cluster
        self.config = config or cluster.policy_config
        self.name = name or f"scheduler-{secrets.token_hex(4)}"
        self.usage = UsageCache(cluster)
        self.last_decisions = Decisions()

    def run_pass(self) -> Decisions:
        """One scheduling pass: decide, fail tasks whose parents failed, assign the starts to nodes."""
        state = gather_state(self.cluster, self.usage, self.config.window)
        decisions = engine.decide(
            state.queued,
            state.running,
            state.gpus,
            state.now_s,
            self.config,
            state.usage,
            succeeded=state.succeeded,
            failed=state.failed,
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
