"""A worker: claims the tasks the scheduler assigned to its node, runs them, reports how they ended.

Threads: the main loop (claim, watch jobs, stop on cancel/timeout), one heartbeat thread (renews every
lease and publishes the node's GPUs; a CPU-bound job cannot starve it), and one waiter per job that rings
the node's doorbell the moment the job's process exits, so the next task starts at once.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from scheduler.clock import now_ms
from scheduler.errors import ExecutorError, NightshiftError
from scheduler.executor.launch import LaunchRequest, start_job
from scheduler.executor.process import RunningJob
from scheduler.executor.reaper import kill_processes_with_token
from scheduler.gpus.inventory import GpuMonitor
from scheduler.nodes import NodeGpu
from scheduler.service import Cluster
from scheduler.store.queue import Claim, RenewResult
from scheduler.store.tables import Task

log = logging.getLogger(__name__)
MIB = 1024 * 1024


@dataclass
class ActiveJob:
    """A job this worker runs, with what it needs to report the outcome under its own claim."""

    task: Task
    claim: Claim
    attempt: int
    job: RunningJob
    stop_reason: str | None = None
    stop_started: bool = False
    waiter: threading.Thread | None = field(default=None, repr=False)


def run_token_of(claim: Claim) -> str:
    """The marker every process of this attempt carries in its environment."""
    return f"task{claim.task_id}-{claim.token}"


class Worker:
    """Runs the tasks of one node."""

    def __init__(
        self,
        cluster: Cluster,
        node: str,
        monitor: GpuMonitor,
        *,
        base_env: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        self.cluster = cluster
        self.settings = cluster.settings
        self.node = node
        self.monitor = monitor
        self.base_env = dict(os.environ if base_env is None else base_env)
        self.labels = dict(labels or {})
        self.jobs: dict[int, ActiveJob] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ttl_ms = int(self.settings.lease_ttl_s * 1000)

    # --- life cycle ---------------------------------------------------------------------------

    def run(self, stop: threading.Event | None = None) -> None:
        """Serve until `stop` is set; then stop running jobs gracefully and hand them back to the queue."""
        stop = stop or self._stop
        self.reconcile()
        self.publish_node()
        heartbeat = threading.Thread(target=self._heartbeat_loop, args=(stop,), name="heartbeat", daemon=True)
        heartbeat.start()
        try:
            while not stop.is_set():
                self.step()
                timeout_s = 0.5 if self.jobs else 2.0
                self.cluster.queue.wait_node_doorbell(self.node, timeout_s)
        finally:
            self.shutdown()
            heartbeat.join(timeout=5)

    def step(self) -> None:
        """One pass: react to finished, cancelled and overdue jobs, then claim new assignments."""
        self._check_cancels()
        self._check_jobs()
        while not self._stop.is_set():
            claim = self.cluster.queue.claim(self.node, now_ms(), self._ttl_ms)
            if claim is None:
                break
            self._start(claim)

    def shutdown(self) -> None:
        """Stop every job (TERM, grace, KILL) and requeue it: a worker restart is not the job's fault."""
        with self._lock:
            active = list(self.jobs.values())
        for item in active:
            item.job.stop(self.settings.kill_grace_s, "lost_lease")
            self.cluster.settle_attempt(
                item.claim.task_id,
                item.claim.token,
                "worker_stopped",
                message=f"worker {self.node} was stopped",
            )
        with self._lock:
            self.jobs.clear()

    def reconcile(self) -> None:
        """On start: tasks SQL says run here, but that this process does not run, are killed and requeued."""
        for task in self.cluster.tasks.with_status("running"):
            if task.node != self.node or task.id in self.jobs or not task.lease_token:
                continue
            token = task.lease_token
            kill_processes_with_token(f"task{task.id}-{token}")
            status = self.cluster.settle_attempt(
                task.id, token, "lost_worker", message=f"worker {self.node} restarted"
            )
            log.warning("task %s was running here before this worker restarted: now %s", task.id, status)

    # --- starting ---------------------------------------------------------------------------------

    def _start(self, claim: Claim) -> None:
        attempt = self.cluster.tasks.mark_running(claim.task_id, claim.token, self.node, claim.gpu_indices)
        if attempt is None:  # cancelled or already handled by someone else: let the lease go
            self.cluster.queue.release(claim.task_id, claim.token)
            return
        task = self.cluster.tasks.get_any(claim.task_id)
        request = self._launch_request(task, claim, attempt)
        try:
            job = start_job(request, base_env=self.base_env)
        except ExecutorError as exc:
            self.cluster.settle_attempt(claim.task_id, claim.token, "executor", message=exc.message)
            return
        self.cluster.tasks.record_pid(claim.task_id, claim.token, job.pid)
        active = ActiveJob(task=task, claim=claim, attempt=attempt, job=job)
        active.waiter = threading.Thread(
            target=self._wait_for_exit, args=(job,), daemon=True, name=f"wait-{claim.task_id}"
        )
        with self._lock:
            self.jobs[claim.task_id] = active
        active.waiter.start()

    def _launch_request(self, task: Task, claim: Claim, attempt: int) -> LaunchRequest:
        spec = task.spec
        limit = spec.get("time_limit_minutes")
        checkpoint_dir = self.settings.checkpoints_dir / str(task.id)
        checkpoint_dir.mkdir(parents=True, exist_ok=True)
        return LaunchRequest(
            task_id=task.id,
            attempt=attempt,
            command=task.command,
            workdir=Path(spec.get("workdir") or self.cluster.default_workdir()),
            log_path=self.cluster.log_path(task.id),
            gpu_indices=claim.gpu_indices,
            env=dict(spec.get("env") or {}),
            conda_env=spec.get("conda_env"),
            docker_image=spec.get("docker_image"),
            checkpoint_dir=checkpoint_dir,
            time_limit_s=float(limit) * 60 if limit else None,
            run_token=run_token_of(claim),
        )

    def _wait_for_exit(self, job: RunningJob) -> None:
        while job.wait(3600) is None:
            pass
        self.cluster.queue.client.rpush(self.cluster.queue.keys.node_doorbell(self.node), "1")

    # --- watching -------------------------------------------------------------------------------

    def _check_cancels(self) -> None:
        with self._lock:
            ids = [task_id for task_id, item in self.jobs.items() if item.stop_reason is None]
        if not ids:
            return
        client = self.cluster.queue.client
        pipe = client.pipeline(transaction=False)
        for task_id in ids:
            pipe.exists(self.cluster.queue.keys.cancel(task_id))
        for task_id, flagged in zip(ids, pipe.execute(), strict=True):
            if flagged:
                self._request_stop(task_id, "cancelled")

    def _request_stop(self, task_id: int, reason: str) -> None:
        with self._lock:
            item = self.jobs.get(task_id)
            if item is None or item.stop_started:
                return
            item.stop_reason = reason
            item.stop_started = True
        # stopping waits out the grace period: do it beside the loop so other jobs are not held up
        threading.Thread(
            target=item.job.stop,
            args=(self.settings.kill_grace_s, reason),
            daemon=True,
            name=f"stop-{task_id}",
        ).start()

    def _check_jobs(self) -> None:
        now = time.monotonic()
        with self._lock:
            items = list(self.jobs.values())
        for item in items:
            if item.job.poll() is not None:
                self._finish(item)
            elif item.job.time_limit_exceeded(now):
                self._request_stop(item.claim.task_id, "timeout")

    def _finish(self, item: ActiveJob) -> None:
        outcome = item.job.outcome
        if outcome is None:  # still being stopped: the next pass sees it end
            return
        claim = item.claim
        self.cluster.settle_attempt(
            claim.task_id, claim.token, outcome.reason, outcome.exit_code, outcome.describe()
        )
        with self._lock:
            self.jobs.pop(claim.task_id, None)

    # --- heartbeat ------------------------------------------------------------------------------------

    def _heartbeat_loop(self, stop: threading.Event) -> None:
        while not stop.wait(self.settings.heartbeat_interval_s):
            try:
                self.heartbeat()
            except NightshiftError as exc:
                log.warning("heartbeat failed: %s", exc.message)
            except Exception:
                log.exception("heartbeat failed")

    def heartbeat(self) -> None:
        """Renew every lease; a job whose lease was lost is stopped before anyone else can take it."""
        with self._lock:
            items = list(self.jobs.values())
        for item in items:
            claim = item.claim
            answer = self.cluster.queue.renew(claim.task_id, claim.token, now_ms(), self._ttl_ms)
            if answer == RenewResult.CANCEL_REQUESTED:
                self._request_stop(claim.task_id, "cancelled")
            elif answer == RenewResult.STOLEN:
                self._request_stop(claim.task_id, "lost_lease")
            elif answer == RenewResult.MISSING:
                self._recover_missing_lease(item)
        self.publish_node()

    def _recover_missing_lease(self, item: ActiveJob) -> None:
        """Redis lost the lease (restart, flush): SQL decides whether the claim still stands."""
        claim = item.claim
        row = self.cluster.tasks.get_any(claim.task_id)
        if row.status == "running" and row.lease_token == claim.token:
            expires = now_ms() + self._ttl_ms
            self.cluster.queue.restore_lease(
                claim.task_id, claim.token, self.node, claim.gpu_indices, expires
            )
        else:
            self._request_stop(claim.task_id, "lost_lease")

    def publish_node(self) -> None:
        """Tell the scheduler what this node has: its GPUs as the monitor reads them."""
        gpus = [
            NodeGpu(
                index=gpu.index,
                name=gpu.name,
                memory_total_mib=gpu.memory_total_mib,
                memory_free_mib=gpu.memory_free_mib,
                utilization_pct=gpu.utilization_pct,
                temperature_c=gpu.temperature_c,
                power_w=gpu.power_w,
            )
            for gpu in self.monitor.read()
        ]
        self.cluster.nodes.publish(self.node, gpus, now_ms(), self.monitor.source, self.labels)
