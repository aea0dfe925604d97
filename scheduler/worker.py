"""A worker: claims the tasks the scheduler assigned to its node, runs them, reports how they ended.

Threads: the main loop (claim, watch jobs, stop on cancel/timeout), one heartbeat thread (renews every
lease and publishes the node's GPUs; a CPU-bound job cannot starve it), and one exit watcher (pidfds, see
`scheduler.executor.exit_watch`; a waiting thread per job where pidfds are missing) that rings the node's
doorbell the moment a job's process exits, so the next task starts at once.

Bursts cost one round trip each: the loop claims up to `CLAIM_BATCH` assignments at once and marks them
running in one SQL transaction; the jobs that ended since the last pass are checked for leftover processes
with one look at /proc and settled in one SQL transaction and one Redis pipeline.

Fencing on the worker's side: a job whose lease was not renewed for a whole lease TTL (the worker was
paused, or cut off from Redis) is killed at once, without a grace period, because by then the reaper may
have handed the task to another node; a heartbeat answered STOLEN or MISSING (and not restored from SQL)
stops it too. Its late completion is refused by SQL's compare-and-set on the lease token either way.

One worker per node: a worker holds its node (`scheduler.node_owner`) from start to shutdown, so a second
one started for the same node refuses to start instead of reconciling away the first one's running jobs.

Safe execution: a root worker runs each job as the OS account `run_as` maps its user to, or refuses it
(`no_os_account`, see `scheduler.accounts`); docker images must match `docker_images_allowed`.

Checkpoints: each task has `NIGHTSHIFT_CHECKPOINT_DIR` (`<home>/checkpoints/<task id>` on the node, the
same folder for every attempt on that node; share the data folder between nodes to resume elsewhere). From
attempt 2 on, when the spec has a `resume_arg` and a file matches `checkpoint_glob` (relative to that folder,
default `*`), the newest match is passed as `{latest}` and as `NIGHTSHIFT_RESUME_FROM`.

Results: each task has `NIGHTSHIFT_OUTPUT_DIR` (`<home>/outputs/<task id>`); when its job ends, the
worker stores the `metrics.json` found there (or the spec's `metrics_file`) with the task
(`scheduler.results`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Protocol

import redis

from scheduler.accounts import OsAccount, account_for, root_worker_warning
from scheduler.clock import now_ms
from scheduler.errors import ExecutorError, GpuInventoryError, NightshiftError
from scheduler.executor.cgroups import JobCgroups
from scheduler.executor.exit_watch import ExitWatcher
from scheduler.executor.launch import LaunchRequest, job_base_env, start_job, warm_up
from scheduler.executor.outcome import STOP_REASONS, StopReason
from scheduler.executor.process import RunningJob
from scheduler.executor.reaper import (
    find_run_tokens,
    kill_processes_with_token,
    make_run_token,
    parse_run_token,
    take_process_snapshot,
)
from scheduler.executor.sentinel import JobSentinel
from scheduler.executor.spares import SpareShells
from scheduler.gpus.driver_reserve import DriverReserve
from scheduler.gpus.inventory import GpuInfo, GpuMonitor
from scheduler.gpus.outside import job_processes, outside_memory_mib, outside_processes
from scheduler.log_relay import answer_log_requests, wake_answerer
from scheduler.logs import ATTEMPT_END, ATTEMPT_HEADER, append_note
from scheduler.lost_attempts import settle_lost_attempt, token_node_of
from scheduler.node_owner import NodeOwnership
from scheduler.nodes import NodeGpu
from scheduler.policy.placement import memory_need_mib
from scheduler.policy.retry import REQUEUE_REASON
from scheduler.policy.types import MIB_PER_GB
from scheduler.private_files import restrict
from scheduler.results import collect_metrics, prepare_output_dir
from scheduler.service import Cluster, Settlement
from scheduler.spec import spec_gpu_fraction
from scheduler.store.queue import Claim, RenewResult, announced_time_limit, requeue_asked
from scheduler.store.secret_sealing import SecretsKeyError
from scheduler.store.secrets import MissingSecrets
from scheduler.store.tables import Task
from scheduler.wakeup import ring_when_set
from scheduler.watchdogs import unreadable_reason

log = logging.getLogger(__name__)
MIB = 1024 * 1024
CLAIM_BATCH = 64  # assignments taken (and marked running in SQL) per round trip
LAUNCH_THREADS = 2  # jobs of one burst launched side by side
FULL_CHECK_S = 0.5  # between exit events, every job is polled this often all the same
ORPHAN_SWEEP_S = 60.0  # how often a worker looks for job processes of its node that no job owns
FAILING_SAID_EVERY_S = 30.0  # a step failing the same way again is logged once per this, not per try


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
    renewed_at: float = field(default_factory=time.monotonic)  # last time the lease was known to be ours
    settle_as: str | None = None  # settle with this reason instead of the outcome's (watchdog stops)
    settle_message: str | None = None
    settle_held_by: str | None = None  # requeued and held by this person (`nightshift requeue --hold`)


class JobListener(Protocol):
    """Told when this worker's jobs start and end (telemetry, accounting, notifications); must not raise.

    Jobs that start or end together come in one call, so that a listener writes once per burst.
    """

    def jobs_started(self, items: Sequence[ActiveJob]) -> None:
        """These jobs were launched."""

    def jobs_ending(self, items: Sequence[ActiveJob]) -> None:
        """These jobs' processes are gone; their tasks are about to be settled (GPUs handed out)."""

    def jobs_ended(self, ended: Sequence[tuple[ActiveJob, str | None]]) -> None:
        """The tasks were settled: each one's new status, or None where the claim was no longer ours."""


def run_token_of(claim: Claim, token_node: str) -> str:
    """The marker every process of this attempt carries in its environment (names the node and the task)."""
    return make_run_token(token_node, claim.task_id, claim.token)


def newest_checkpoint(checkpoint_dir: Path, pattern: str | None) -> Path | None:
    """The most recently modified regular file matching `pattern` inside `checkpoint_dir`, if any."""
    root = checkpoint_dir.resolve()
    best: tuple[float, Path] | None = None
    for path in checkpoint_dir.glob(pattern or "*"):
        try:
            if path.is_symlink() or not path.is_file() or not path.resolve().is_relative_to(root):
                continue
            mtime = path.stat().st_mtime
        except OSError:
            continue
        if best is None or (mtime, str(path)) > (best[0], str(best[1])):
            best = (mtime, path)
    return None if best is None else best[1]


def stop_signal_of(spec: Mapping[str, object]) -> signal.Signals:
    """The signal that starts a graceful stop of this task's job (spec `stop_signal`, TERM by default)."""
    name = str(spec.get("stop_signal") or "TERM")
    try:
        return signal.Signals[f"SIG{name}"]
    except KeyError:
        return signal.SIGTERM


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
        orphan_sweep_s: float = ORPHAN_SWEEP_S,
    ) -> None:
        self.cluster = cluster
        self.settings = cluster.settings
        self.node = node
        self.token_node = token_node_of(node, cluster)
        self.monitor = monitor
        self.base_env = dict(os.environ if base_env is None else base_env)
        self.labels = dict(labels or {})
        # by claim token: a task's new attempt may be claimed here before an older one whose lease this
        # worker lost is settled, and a stop or an ending of one must never touch the other
        self.jobs: dict[str, ActiveJob] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ttl_ms = int(self.settings.lease_ttl_s * 1000)
        self._ttl_s = self.settings.lease_ttl_s
        self.listeners: list[JobListener] = []
        self.out_of_service: dict[int, str] = {}  # GPU index -> why it takes no new tasks (watchdogs)
        self.driver_reserve = DriverReserve()
        self._shareable_mib: dict[int, int] = {}  # GPU index -> its memory less the driver's, as last read
        self._last_readings: list[GpuInfo] = []  # the GPUs as last read whole, named while NVML cannot read
        self._publish_lock = threading.Lock()
        self._published_stop = False  # the node was marked stopped: no heartbeat may undo it
        self._failing: tuple[str, float, float] | None = None  # (failure, since, last said) of failed steps
        self._exit_watcher: ExitWatcher | None = None
        self._exited: set[int] = set()  # pids of job leaders seen to exit, not yet settled
        self._full_check_at = 0.0  # monotonic time of the last poll of every job
        self.orphan_sweep_s = orphan_sweep_s
        self._orphans_swept_at = time.monotonic()  # `reconcile` sweeps at start
        self._launcher: ThreadPoolExecutor | None = None
        self._watch_exits = ExitWatcher.supported()
        self.ownership = NodeOwnership(cluster.queue.client, cluster.queue.keys, node, self._ttl_s)
        self._owns_node = False
        # kills what is left of the jobs if this worker dies (a job's leader alone dies with it)
        self.sentinel = JobSentinel()
        # one cgroup per job where this node lets the worker make them: no job process escapes a stop
        self.cgroups = JobCgroups.detect(self.token_node) if self.settings.job_cgroups == "auto" else None
        # job shells started and moved into their cgroups ahead of time: a start does not wait for that
        self.spares = SpareShells(self.cgroups) if self.cgroups is not None else None
        if self.cgroups is not None:
            self.sentinel.own_cgroups(self.cgroups)  # a dead worker's cgroups are removed too

    # --- life cycle ---------------------------------------------------------------------------

    def run(self, stop: threading.Event | None = None) -> None:
        """Serve until `stop` is set; then stop running jobs gracefully and hand them back to the queue."""
        stop = stop or self._stop
        self.claim_node()
        warning = root_worker_warning(self.settings.run_as, self.settings.allow_root_jobs, os.geteuid())
        if warning is not None:
            log.warning(warning)
        self.reconcile()
        if self.cgroups is not None and self.spares is not None:
            log.info("each job runs in a cgroup of its own under %s", self.cgroups.base)
            warm_up(self.spares, job_base_env(self.base_env))  # spares for the first jobs
        self.publish_node()
        heartbeat = threading.Thread(target=self._heartbeat_loop, args=(stop,), name="heartbeat", daemon=True)
        heartbeat.start()
        # the sentinel may now act on a silence: this loop tells it the worker runs (a worker driven step by
        # step, as tests do, has no such loop and leaves it unarmed)
        self.sentinel.silence_s = self.sentinel_silence_s()
        stopped = threading.Event()  # after the shutdown: a graceful stop of the jobs may outlast a TTL
        keepalive = threading.Thread(
            target=self._sentinel_keepalive_loop, args=(stopped,), name="sentinel-keepalive", daemon=True
        )
        keepalive.start()
        queue = self.cluster.queue
        log_requests = threading.Thread(  # the API asks here for the logs it cannot read itself
            target=answer_log_requests,
            args=(queue.client, queue.keys, self.node, self.cluster.log_path, stop),
            name="log-requests",
            daemon=True,
        )
        log_requests.start()
        ring_when_set(stop, lambda: queue.ring_node(self.node), "worker")
        ring_when_set(stop, lambda: wake_answerer(queue.client, queue.keys, self.node), "log-requests")
        self._published_stop = False
        try:
            while not stop.is_set():
                self._step_and_wait(stop)
        finally:
            self.shutdown(node_stops=True)
            stopped.set()
            heartbeat.join(timeout=5)
            keepalive.join(timeout=5)
            log_requests.join(timeout=5)

    def _step_and_wait(self, stop: threading.Event) -> None:
        """One step, then wait for the doorbell. An error (Redis restarting, the database away for a
        moment) is logged and the step tried again a second later: the jobs keep running, as they would if
        the worker had not looked, and their leases cover the gap. Ending the loop would stop them all as
        at a shutdown while the heartbeat thread kept the node looking alive."""
        try:
            self.step()
            self.cluster.queue.wait_node_doorbell(self.node, 0.5 if self.jobs else 2.0)
            self._failing = None
        except Exception as exc:
            self._log_step_failure(exc)
            stop.wait(1.0)

    def _log_step_failure(self, exc: Exception, now: float | None = None) -> None:
        """Log a failed step: with its traceback the first time, then one line every half minute while the
        same failure goes on (Redis away for a minute must not write a thousand tracebacks). `now`: a
        monotonic time, for tests."""
        what, now = f"{type(exc).__name__}: {exc}", time.monotonic() if now is None else now
        if self._failing is None or self._failing[0] != what:
            log.exception("worker step failed on node %s; trying again every second", self.node)
            self._failing = (what, now, now)
            return
        since, said = self._failing[1], self._failing[2]
        if now - said >= FAILING_SAID_EVERY_S:
            log.warning("worker step on node %s still failing after %.0f s: %s", self.node, now - since, what)
            self._failing = (what, since, now)

    def step(self) -> None:
        """One pass: react to finished, cancelled and overdue jobs, then claim new assignments."""
        self._check_cancels()
        self._fence_overdue_leases()
        self._check_jobs()
        self._sweep_orphans_when_due()
        while not self._stop.is_set():
            claimed_at = time.monotonic()
            claims = self.cluster.queue.claim_many(self.node, now_ms(), self._ttl_ms, CLAIM_BATCH)
            if not claims:
                break
            self._start_many(claims, claimed_at)

    def claim_node(self, wait_s: float | None = None) -> None:
        """Hold this worker's node before touching it; raise `NodeTaken` when another live worker serves
        it (`NodeOwnership.claim`). Done by `run`; callers that start `run` in a thread call it first, so
        the refusal reaches them."""
        if not self._owns_node:
            self.ownership.claim(wait_s)
            self._owns_node = True

    def shutdown(self, node_stops: bool = False) -> None:
        """Stop every job (its stop signal, grace, KILL) and requeue it: a worker restart is not its fault.
        With `node_stops` (the worker's loop ends), the node is then marked stopped, down at once."""
        began = time.monotonic()
        with self._lock:
            active = list(self.jobs.values())
        if active:
            log.info("worker %s shutting down: stopping %d job(s)", self.node, len(active))
        stoppers = [
            threading.Thread(
                target=self._stop_job, args=(item, "worker_shutdown"), name=f"stop-{item.claim.task_id}"
            )
            for item in active
        ]
        for thread in stoppers:
            thread.start()
        for thread in stoppers:
            thread.join()
        for item in active:
            self._emit("jobs_ending", [item])
            outcome = item.job.outcome
            if outcome is not None and outcome.reason != "worker_shutdown":  # it ended on its own meanwhile
                self.cluster.settle_attempt(
                    item.claim.task_id,
                    item.claim.token,
                    outcome.reason,
                    outcome.exit_code,
                    outcome.describe(),
                )
                continue
            self.cluster.settle_attempt(
                item.claim.task_id,
                item.claim.token,
                "worker_shutdown",
                message=f"worker {self.node} was shut down (a restart); the task goes back to the queue",
            )
        if active:
            log.info(
                "worker %s: %d job(s) stopped and settled in %.1f s",
                self.node,
                len(active),
                time.monotonic() - began,
            )
        with self._lock:
            self.jobs.clear()
            self._exited.clear()
        if self._exit_watcher is not None:
            self._exit_watcher.close()
            self._exit_watcher = None
        if self._launcher is not None:
            self._launcher.shutdown(wait=True)
            self._launcher = None
        if self.spares is not None:
            self.spares.close()
        self.sentinel.close()
        if node_stops:
            self._mark_node_stopped()
        if self._owns_node:
            self.ownership.release()
            self._owns_node = False

    def _mark_node_stopped(self) -> None:
        """Tell the scheduler this node's worker stopped, after its last publish (a heartbeat running now
        must not make it look up again), before another worker may take the node."""
        with self._publish_lock:
            self._published_stop = True
            try:
                self.cluster.nodes.mark_stopped(self.node, now_ms())
            except redis.RedisError as exc:  # Redis away: the node reads down a lease TTL later instead
                log.warning("could not mark node %s stopped: %s", self.node, exc)

    def reconcile(self) -> None:
        """On start: kill job processes of this node it does not run (by cgroup and run token, before any
        task is requeued), and requeue what SQL says ran here."""
        self.kill_orphans()
        for task in self.cluster.tasks.with_status("running"):
            if task.node != self.node or task.lease_token in self.jobs or not task.lease_token:
                continue
            token = task.lease_token
            why = f"its worker on {self.node} was restarted"
            status, recorded = settle_lost_attempt(self.cluster, task.id, token, self.node, why)
            if status is not None and not recorded:
                self._note_lost_attempt(task, status)
            log.warning("task %s was running here before this worker restarted: now %s", task.id, status)

    def _note_lost_attempt(self, task: Task, status: str) -> None:
        """End the log of an attempt that died with the previous worker (it wrote no end line), so the
        log says why the next attempt starts over instead of showing two starts in a row."""
        now = datetime.now().astimezone().isoformat(timespec="seconds")
        append_note(
            self.cluster.log_path(task.id),
            f"{ATTEMPT_HEADER}{task.id} attempt {task.attempts_count}{ATTEMPT_END}its worker on {self.node} "
            f"stopped with it (killed or crashed) and was restarted; the task is now {status} at {now}",
        )

    def _sweep_orphans_when_due(self) -> None:
        """Every `orphan_sweep_s`, `kill_orphans`: a job's leftover that no sweep at its end saw (without a
        cgroup, one that left its group and was in the middle of an exec when its job's end looked for it)
        is found by its run token then, not only when the worker restarts. Runs on the thread that starts
        jobs, between starts, so every job it started is in `jobs` by then."""
        now = time.monotonic()
        if now - self._orphans_swept_at >= self.orphan_sweep_s:
            self._orphans_swept_at = now
            self.kill_orphans()

    def kill_orphans(self) -> list[str]:
        """Kill processes with a run token of this node, or in a job cgroup of this node, that no job of
        this worker owns; list the tokens."""
        own = self.token_node
        with self._lock:
            running = {item.job.run_token for item in self.jobs.values()}
            in_use = {item.job.cgroup.path.name for item in self.jobs.values() if item.job.cgroup is not None}
        killed = self._kill_orphan_cgroups(in_use)
        for run_token in find_run_tokens():
            parsed = parse_run_token(run_token)
            if parsed is None or parsed[0] != own or run_token in running:
                continue
            pids = kill_processes_with_token(run_token)
            if pids:
                killed.append(run_token)
                log.warning(
                    "killed orphaned job processes %s of task %s (run %s)", pids, parsed[1], run_token
                )
        return killed

    def _kill_orphan_cgroups(self, in_use: set[str]) -> list[str]:
        """Kill what is left in this node's cgroups that are not in use here (not the cgroup of one of the
        jobs, nor one of this worker process's spare shells: a previous life of the worker ran those jobs,
        or started those spares) and remove them; list the ones that still had processes."""
        if self.cgroups is None:
            return []
        killed = []
        own_spares = self.cgroups.spare_prefix()
        for name, cgroup in self.cgroups.owned().items():
            if name in in_use or name.startswith(own_spares):
                continue
            pids = cgroup.kill()
            cgroup.remove()
            if pids:
                killed.append(name)
                log.warning("killed orphaned job processes %s (%s)", pids, cgroup)
        return killed

    # --- starting ---------------------------------------------------------------------------------

    def _start_many(self, claims: Sequence[Claim], claimed_at: float | None = None) -> None:
        """Mark the claimed tasks running (one SQL transaction), launch their jobs, record their pids."""
        marked = [(claim.task_id, claim.token, claim.gpu_indices) for claim in claims]
        revisions = {claim.task_id: claim.revision for claim in claims if claim.revision is not None}
        attempts = self.cluster.tasks.mark_running_many(self.node, marked, revisions)
        refused = [claim for claim in claims if claim.task_id not in attempts]
        if refused:
            # cancelled, held or changed meanwhile, or handled by someone else: let those leases go, and
            # queue again the ones still waiting (a change that raced the decision to start them)
            self.cluster.queue.release_many([(claim.task_id, claim.token) for claim in refused])
            self.cluster.requeue_waiting([claim.task_id for claim in refused])
        rows = self.cluster.tasks.by_ids(attempts)
        todo = [
            (rows[claim.task_id], claim, attempts[claim.task_id])
            for claim in claims
            if claim.task_id in attempts
        ]
        if len(todo) > 1:
            # a launch mostly waits (folders, log file, fork/exec release the GIL): a few side by side
            if self._launcher is None:
                self._launcher = ThreadPoolExecutor(LAUNCH_THREADS, thread_name_prefix=f"launch-{self.node}")
            started = list(self._launcher.map(lambda job: self._launch(*job), todo))
        else:
            started = [self._launch(*job) for job in todo]
        launched = [item for item in started if item is not None]
        if not launched:
            return
        if claimed_at is not None:
            for item in launched:
                item.renewed_at = claimed_at
        self.cluster.tasks.record_pids(
            [(item.claim.task_id, item.claim.token, item.job.pid) for item in launched]
        )
        # Listeners hear of the start before anything can see the job end (the exit watch) or hold its GPUs.
        self._emit("jobs_started", launched)
        with self._lock:
            for item in launched:
                self.jobs[item.claim.token] = item
        for item in launched:
            self._watch_exit(item)

    def _launch(self, task: Task, claim: Claim, attempt: int) -> ActiveJob | None:
        """Start the job of a task marked running; settle the task at once when it cannot start."""
        try:
            account = account_for(task.user.name, self.settings.run_as, self.settings.allow_root_jobs)
            request = self._launch_request(task, claim, attempt, account)
            job = start_job(
                request,
                base_env=self.base_env,
                sentinel=self.sentinel,
                cgroups=self.cgroups,
                spares=self.spares,
            )
        except ExecutorError as exc:
            reason = str(exc.details.get("reason") or "executor")
            log.warning("task %s could not start (%s): %s", claim.task_id, reason, exc.message)
            message = exc.message.replace("on this node", f"on node {self.node}")  # read from the cluster
            self.cluster.settle_attempt(claim.task_id, claim.token, reason, message=message)
            return None
        except Exception as exc:  # one task's spec must never take the node's worker down with it
            log.exception("task %s could not start", claim.task_id)
            message = f"nightshift could not start it: {type(exc).__name__}: {exc}"
            self.cluster.settle_attempt(claim.task_id, claim.token, "executor", message=message[:500])
            return None
        return ActiveJob(task=task, claim=claim, attempt=attempt, job=job)

    def _watch_exit(self, item: ActiveJob) -> None:
        """Ring this node's doorbell the moment the job's leader exits, so the next task starts at once."""
        if self._watch_exits:
            if self._exit_watcher is None:
                self._exit_watcher = ExitWatcher(self._leaders_exited, name=f"exit-watch-{self.node}")
            self._exit_watcher.watch(item.job.pid)
            return
        item.waiter = threading.Thread(
            target=self._wait_for_exit, args=(item.job,), daemon=True, name=f"wait-{item.claim.task_id}"
        )
        item.waiter.start()

    def _leaders_exited(self, pids: list[int]) -> None:
        """Remember which jobs' leaders exited (the next pass polls those first), and ring this node."""
        with self._lock:
            self._exited.update(pids)
        self._ring_own_doorbell()

    def _ring_own_doorbell(self) -> None:
        self.cluster.queue.client.rpush(self.cluster.queue.keys.node_doorbell(self.node), "1")

    def _launch_request(
        self, task: Task, claim: Claim, attempt: int, account: OsAccount | None = None
    ) -> LaunchRequest:
        spec = task.spec
        limit = spec.get("time_limit_minutes")
        checkpoint_dir = self.settings.checkpoints_dir / str(task.id)
        checkpoint_dir.mkdir(parents=True, exist_ok=True)
        if account is not None:
            os.chown(checkpoint_dir, account.uid, account.gid)
        restrict(checkpoint_dir)  # the job's account only, as its output folder
        output_dir = prepare_output_dir(self.settings.home, task, account)
        command = task.command
        resume_from = None
        resume_arg = spec.get("resume_arg")
        if attempt >= 2 and resume_arg:
            resume_from = newest_checkpoint(checkpoint_dir, spec.get("checkpoint_glob"))
            if resume_from is not None:
                command = f"{command} {str(resume_arg).replace('{latest}', shlex.quote(str(resume_from)))}"
        workdir = str(spec.get("workdir") or self.cluster.default_workdir())
        return LaunchRequest(
            task_id=task.id,
            attempt=attempt,
            command=command,
            workdir=Path(workdir),
            default_workdir=workdir == self.cluster.default_workdir(),
            log_path=self.cluster.log_path(task.id),
            gpu_indices=claim.gpu_indices,
            env={**(spec.get("env") or {}), **self._secrets_of(task)},
            conda_env=spec.get("conda_env"),
            docker_image=spec.get("docker_image"),
            checkpoint_dir=checkpoint_dir,
            time_limit_s=float(limit) * 60 if limit else None,
            run_token=run_token_of(claim, self.token_node),
            run_as=account,
            resume_from=resume_from,
            docker_images_allowed=tuple(self.settings.docker_images_allowed),
            output_dir=output_dir,
            node=self.node,
            max_log_bytes=int(self.settings.max_log_mb * 1024 * 1024) if self.settings.max_log_mb else None,
            gpu_fraction=spec_gpu_fraction(spec),
            gpu_memory_share_mib=self._memory_share_mib(task, claim.gpu_indices),
        )

    def _secrets_of(self, task: Task) -> dict[str, str]:
        """The values of the secrets the task's spec names, read from SQL as it starts (its owner may have
        changed one since it was queued); ExecutorError when its owner has removed one meanwhile."""
        names = list(task.spec.get("secrets") or [])
        try:
            return self.cluster.secrets.values_for(task.user_id, task.user.name, names)
        except SecretsKeyError as no_key:
            raise ExecutorError(
                f"the secrets of this task cannot be opened on node {self.node}: {no_key}"
            ) from None
        except MissingSecrets as missing:
            said = ", ".join(missing.names)
            raise ExecutorError(
                f"secret {said} of {missing.user} is gone (removed after the task was queued): "
                f"`nightshift secret set {missing.names[0]}`, then run it again"
            ) from None

    def _memory_share_mib(self, task: Task, gpu_indices: Sequence[int]) -> int:
        """A sharer's memory on its GPU, as the scheduler charged it: its request, else its fraction of what
        the GPU's driver leaves (0 for a task that has its GPUs alone)."""
        fraction = spec_gpu_fraction(task.spec)
        if fraction >= 1.0 or not gpu_indices:
            return 0
        requested = int((task.gpu_memory_gb or 0) * MIB_PER_GB)
        return memory_need_mib(requested, fraction, self._shareable_mib.get(gpu_indices[0], 0))

    def grace_of(self, task: Task) -> float:
        """How long a graceful stop waits after the stop signal: the spec's grace_seconds, bounded."""
        wanted = task.spec.get("grace_seconds")
        grace_s = self.settings.kill_grace_s if wanted is None else float(wanted)
        return max(0.0, min(grace_s, self.settings.max_grace_s))

    def _stop_job(self, item: ActiveJob, reason: StopReason, grace_s: float | None = None) -> None:
        grace = self.grace_of(item.task) if grace_s is None else grace_s
        item.job.stop(grace, reason, stop_signal_of(item.task.spec))
        self._leaders_exited([item.job.pid])  # settle it at once

    def _wait_for_exit(self, job: RunningJob) -> None:
        # Block in the kernel until the leader exits (WNOWAIT: not reaped, so `poll()` still owns the
        # reaping and its pid stays reserved) instead of polling: the next task starts without a poll delay.
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitid(os.P_PID, job.pid, os.WEXITED | os.WNOWAIT)
        while job.wait(3600) is None:
            pass
        self._leaders_exited([job.pid])

    # --- watching -------------------------------------------------------------------------------

    def job_of(self, task_id: int) -> ActiveJob | None:
        """The newest attempt of a task that this worker runs (an older one, whose lease it lost, may still
        be ending beside it), or None."""
        with self._lock:
            return self._job_of(task_id)

    def _job_of(self, task_id: int) -> ActiveJob | None:
        attempts = [item for item in self.jobs.values() if item.claim.task_id == task_id]
        return max(attempts, key=lambda item: item.attempt, default=None)

    def _check_cancels(self) -> None:
        """Stop the jobs whose task was cancelled, and give those whose time limit changed the new one (one
        Redis round trip for all)."""
        with self._lock:
            items = [item for item in self.jobs.values() if item.stop_reason is None]
        if not items:
            return
        queue = self.cluster.queue
        pipe = queue.client.pipeline(transaction=False)
        for item in items:
            pipe.exists(queue.keys.cancel(item.claim.task_id))
            pipe.get(queue.keys.time_limit(item.claim.task_id))
            pipe.get(queue.keys.requeue(item.claim.task_id))
        answers = pipe.execute()
        for item, flagged, limit, requeue in zip(
            items, answers[::3], answers[1::3], answers[2::3], strict=True
        ):
            if flagged:
                self._request_stop(item, "cancelled")
                continue
            asked = requeue_asked(requeue, item.claim.token)
            if asked is not None:
                held = f", held until `nightshift release {item.claim.task_id}`" if asked.hold else ""
                said = f"requeued by {asked.user}: stopped and put back in the queue{held}"
                held_by = asked.user if asked.hold else None
                self.stop_task(item.claim.task_id, REQUEUE_REASON, said, held_by, stop_reason="requeued")
                continue
            announced = announced_time_limit(limit)
            if announced is not None and announced[0] == item.claim.token:
                self._set_time_limit(item, announced[1])

    def _set_time_limit(self, item: ActiveJob, limit_s: float | None) -> None:
        """Apply a running task's changed time limit to its job (the timeout check reads it)."""
        if item.job.time_limit_s == limit_s:
            return
        item.job.time_limit_s = limit_s
        log.info(
            "task %s: time limit now %s",
            item.claim.task_id,
            "none" if limit_s is None else f"{limit_s / 60:g} min",
        )

    def _request_stop(self, item: ActiveJob, reason: StopReason, grace_s: float | None = None) -> None:
        """Stop this attempt's job beside the loop (its grace period, then KILL), once; an attempt already
        settled and gone from `jobs` is left alone."""
        with self._lock:
            if self.jobs.get(item.claim.token) is not item or item.stop_started:
                return
            item.stop_reason = reason
            item.stop_started = True
        # stopping waits out the grace period: do it beside the loop so other jobs are not held up
        threading.Thread(
            target=self._stop_job,
            args=(item, reason, grace_s),
            daemon=True,
            name=f"stop-{item.claim.task_id}",
        ).start()

    def _fence_overdue_leases(self) -> None:
        """Kill at once every job whose lease this worker could not renew for a whole TTL."""
        now = time.monotonic()
        with self._lock:
            overdue = [item for item in self.jobs.values() if now - item.renewed_at >= self._ttl_s]
        for item in overdue:
            if not item.stop_started:
                log.warning(
                    "task %s: lease not renewed for %.1f s (TTL %.1f s): killing its job, the task may "
                    "already run elsewhere",
                    item.claim.task_id,
                    now - item.renewed_at,
                    self._ttl_s,
                )
            self._request_stop(item, "lost_lease", grace_s=0.0)

    def _check_jobs(self) -> None:
        """Poll the jobs whose leader was seen to exit (all of them every `FULL_CHECK_S`, a safety net),
        settle those that ended, and stop those past their time limit or their log's size limit."""
        now = time.monotonic()
        full = now - self._full_check_at >= FULL_CHECK_S
        with self._lock:
            items = list(self.jobs.values())
            exited = set(self._exited)
        if full:
            self._full_check_at = now
            candidates = items
        else:
            candidates = [item for item in items if item.job.pid in exited]
        # one look at every process for all jobs whose leader exited, taken after seeing them exit
        seen = [item for item in candidates if item.job.leader_exited()]
        # (jobs held whole by their cgroup need none)
        snapshot = take_process_snapshot() if any(not item.job.in_cgroup for item in seen) else None
        ended = [item for item in seen if item.job.poll(snapshot) is not None]
        with self._lock:
            self._exited.difference_update(item.job.pid for item in ended)
        for item in items:
            if item.job.outcome is None and item.job.time_limit_exceeded(now):
                self._request_stop(item, "timeout")
            elif full and item.job.outcome is None and item.job.output_limit_exceeded():  # a stat each
                self._request_stop(item, "output_limit")
        if ended:
            self._finish_many(ended)

    def _finish_many(self, items: Sequence[ActiveJob]) -> None:
        """Settle the tasks of jobs that ended (one SQL transaction and one Redis round trip for all)."""
        ready = [item for item in items if item.job.outcome is not None]  # else still being stopped
        if not ready:
            return
        for item in ready:
            collect_metrics(self.cluster.factory, self.settings.home, item.task, item.claim.token)
        self._emit("jobs_ending", ready)
        settlements = []
        for item in ready:
            outcome = item.job.outcome
            assert outcome is not None
            reason: str = outcome.reason
            message, held_by = outcome.describe(), None
            if item.settle_as is not None and outcome.reason in STOP_REASONS:  # not one that ended on its own
                reason, message, held_by = item.settle_as, item.settle_message or message, item.settle_held_by
            killed_by_sentinel = self.sentinel.take_killed(item.job.run_token)  # asked of every end
            if item.settle_as is None and killed_by_sentinel and outcome.signal == signal.SIGKILL:
                reason = "lost_lease"  # not the task's fault: its lease goes to the reaper, which retries it
                message = "its worker was stopped (paused) for most of a lease TTL: its sentinel killed it"
            settlements.append(
                Settlement(item.claim.task_id, item.claim.token, reason, outcome.exit_code, message, held_by)
            )
        statuses = self.cluster.settle_attempts(settlements)
        with self._lock:
            for item in ready:
                self.jobs.pop(item.claim.token, None)
        self._emit("jobs_ended", list(zip(ready, statuses, strict=True)))

    def _emit(self, hook: str, batch: object) -> None:
        for listener in self.listeners:
            try:
                getattr(listener, hook)(batch)
            except Exception:
                log.exception("job listener %s.%s failed", type(listener).__name__, hook)

    def gpu_holders(self) -> dict[int, tuple[int, ...]]:
        """Task id -> GPU indices, for every job this worker runs now (all of a task's attempts here)."""
        holders: dict[int, set[int]] = {}
        with self._lock:
            for item in self.jobs.values():
                holders.setdefault(item.claim.task_id, set()).update(item.claim.gpu_indices)
        return {task_id: tuple(sorted(gpus)) for task_id, gpus in holders.items()}

    def gpu_claims(self) -> dict[int, set[str]]:
        """GPU index -> the claim tokens of this worker's jobs on it."""
        claims: dict[int, set[str]] = {}
        with self._lock:
            for token, item in self.jobs.items():
                for index in item.claim.gpu_indices:
                    claims.setdefault(index, set()).add(token)
        return claims

    def stop_task(
        self,
        task_id: int,
        settle_as: str,
        message: str,
        held_by: str | None = None,
        stop_reason: StopReason = "cancelled",
    ) -> bool:
        """Stop a running job (its stop signal, grace, KILL) and settle it with `settle_as` (watchdogs, a
        requeue; `held_by`: queued again held by this person; `stop_reason`: what its log's end line says)."""
        with self._lock:
            item = self._job_of(task_id)
            if item is None or item.stop_started:
                return False
            item.settle_as, item.settle_message, item.settle_held_by = settle_as, message, held_by
        self._request_stop(item, stop_reason)
        return True

    # --- heartbeat ------------------------------------------------------------------------------------

    def sentinel_silence_s(self) -> float:
        """How long the job sentinel may hear nothing before it kills this worker's jobs: a little less
        than a lease TTL, so a stopped worker's jobs are dead before their tasks may start elsewhere."""
        return self._ttl_s - min(self.settings.heartbeat_interval_s, self._ttl_s / 4)

    def _sentinel_keepalive_loop(self, stopped: threading.Event) -> None:
        """Tell the sentinel every heartbeat interval that this process still runs, until the worker has
        stopped (its jobs' graceful stop included). A thread of its own, apart from the heartbeat's Redis
        calls: the sentinel is to notice a stopped process (Ctrl-Z, a frozen VM), not a slow Redis, which
        the worker's own lease fencing handles."""
        while not stopped.wait(self.settings.heartbeat_interval_s):
            self.sentinel.alive()
            self.sentinel.read_reports()

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
        self._fence_overdue_leases()
        if self._owns_node and not self.ownership.renew():
            log.error("another worker now holds node %s: two workers serve it; stop one of them", self.node)
        with self._lock:
            items = list(self.jobs.values())
        asked_at = time.monotonic()
        answers = self.cluster.queue.renew_many(
            [(item.claim.task_id, item.claim.token) for item in items], now_ms(), self._ttl_ms
        )
        for item, answer in zip(items, answers, strict=True):
            if answer in (RenewResult.RENEWED, RenewResult.CANCEL_REQUESTED):
                item.renewed_at = max(item.renewed_at, asked_at)
            if answer == RenewResult.CANCEL_REQUESTED:
                self._request_stop(item, "cancelled")
            elif answer == RenewResult.STOLEN:
                self._lost(item, "the lease belongs to another claim (STOLEN)")
            elif answer == RenewResult.MISSING:
                self._recover_missing_lease(item, asked_at)
        self.publish_node()
        self.return_assignments_of_dead_nodes()

    def return_assignments_of_dead_nodes(self) -> list[int]:
        """Give back to the queue tasks assigned to a node that has not heartbeated for a lease TTL.

        A node that died (or froze) between the scheduler's assignment and its claim would otherwise keep
        them in its inbox until it comes back. Any live worker does this; the Lua script makes it safe
        against a claim at the same moment.
        """
        now = now_ms()
        alive = [node.name for node in self.cluster.nodes.all() if node.alive(now)]
        returned = self.cluster.queue.return_stale_assignments(now, self._ttl_ms, [*alive, self.node])
        if returned:
            log.warning("gave tasks %s back to the queue: their node stopped heartbeating", returned)
        return returned

    def _lost(self, item: ActiveJob, why: str) -> None:
        if not item.stop_started:
            log.warning("task %s: heartbeat refused, %s: stopping its job", item.claim.task_id, why)
        self._request_stop(item, "lost_lease", grace_s=0.0)

    def _recover_missing_lease(self, item: ActiveJob, asked_at: float) -> None:
        """Redis lost the lease (restart, flush): SQL decides whether the claim still stands."""
        claim = item.claim
        row = self.cluster.tasks.get_any(claim.task_id)
        if row.status == "running" and row.lease_token == claim.token and not item.stop_started:
            expires = now_ms() + self._ttl_ms
            self.cluster.queue.restore_lease(
                claim.task_id, claim.token, self.node, claim.gpu_indices, expires
            )
            item.renewed_at = max(item.renewed_at, asked_at)
        else:
            self._lost(item, "the lease is gone and SQL no longer gives the task to this claim (MISSING)")

    def gpu_process_owners(self, readings: Sequence[GpuInfo]) -> dict[int, int] | None:
        """Pid -> task id of this worker's jobs' processes the driver lists on its GPUs (what each task holds
        on a GPU it shares); None when the driver lists none, or lists one not visible from here."""
        if not any(gpu.processes for gpu in readings):
            return None
        with self._lock:
            by_group = {item.job.pid: item.claim.task_id for item in self.jobs.values()}
            by_token = {item.job.run_token: item.claim.task_id for item in self.jobs.values()}
        owners: dict[int, int] = {}
        for gpu in readings:
            found = job_processes(gpu.processes, by_group, by_token)
            if found is None:
                return None
            owners.update(found)
        return owners

    def publish_node(self) -> None:
        """Tell the scheduler what this node has: its GPUs as the monitor reads them.

        One publish at a time (heartbeat, telemetry, drain): a record read before a GPU went out of
        service must not land after one read since, or the scheduler would see the hot GPU free again.
        """
        with self._publish_lock:
            if not self._published_stop:
                self._publish_node()

    def _read_gpus(self) -> list[GpuInfo]:
        """The GPUs as the monitor reads them; where it cannot read them at all (NVML cannot count them),
        the GPUs of the last reading, each unreadable with the reason, so the node says why it takes no
        tasks instead of going silent. Raises GpuInventoryError when nothing was ever read."""
        try:
            readings = self.monitor.read()
        except GpuInventoryError as exc:
            if not self._last_readings:
                raise
            if not any(gpu.fault == exc.message for gpu in self._last_readings):
                log.error("cannot read the GPUs of %s: %s; they take no tasks until they read again",
                          self.node, exc.message)  # fmt: skip
            readings = [
                replace(GpuInfo.unreadable(gpu.index, exc.message), name=gpu.name, uuid=gpu.uuid)
                for gpu in self._last_readings
            ]
        self._last_readings = readings
        return readings

    def _publish_node(self) -> None:
        readings = self._read_gpus()
        with self._lock:
            job_groups = {item.job.pid for item in self.jobs.values()}
            held = {index for item in self.jobs.values() for index in item.claim.gpu_indices}
        gpus = []
        for gpu in readings:
            outside = outside_processes(gpu.processes, job_groups)
            reserved = 0 if gpu.fault else self.driver_reserve.observe(gpu, held)
            gpus.append(
                NodeGpu(
                    index=gpu.index,
                    name=gpu.name,
                    memory_total_mib=gpu.memory_total_mib,
                    memory_free_mib=gpu.memory_free_mib,
                    utilization_pct=gpu.utilization_pct,
                    temperature_c=gpu.temperature_c,
                    power_w=gpu.power_w,
                    out_of_service=unreadable_reason(gpu) or self.out_of_service.get(gpu.index),
                    outside=outside,
                    outside_mib=outside_memory_mib(gpu.processes, outside),
                    driver_reserved_mib=reserved,
                )
            )
            self._shareable_mib[gpu.index] = gpus[-1].shareable_mib
        in_cgroups = self.cgroups is not None and self.cgroups.usable
        self.cluster.nodes.publish(
            self.node,
            gpus,
            now_ms(),
            self.monitor.source,
            self.labels,
            job_isolation="cgroup" if in_cgroups else "process group",
            stale_after_ms=self._ttl_ms,
        )
