"""A worker's telemetry: samples its GPUs and host on an interval (APScheduler), attributes each GPU sample
to the tasks holding that GPU, stores the history, meters each attempt, and runs the watchdogs.

It is a `JobListener` of the worker: on start it begins metering the attempt (and notifies the owner); when
the job's processes are gone it closes the meter, stores the attempt's usage and takes GPUs still holding
memory out of service *before* the task is settled and the scheduler hands the GPUs out again; once
settled it notifies success or failure (with the last log lines).

Jobs (one BackgroundScheduler, each `max_instances=1, coalesce=True` so a slow database never piles them
up): `sample` every `telemetry_interval_s`, `downsample` every 15 minutes. Tests call `sample_once(now_s)`
directly with an injected clock instead of starting the scheduler.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC

from apscheduler.schedulers.background import BackgroundScheduler  # type: ignore[import-untyped]

from scheduler.clock import now_s
from scheduler.errors import GpuInventoryError
from scheduler.gpus.inventory import GpuInfo
from scheduler.logs import last_output
from scheduler.notify.events import Event
from scheduler.notify.notifier import Notifier
from scheduler.policy.retry import REQUEUE_REASON
from scheduler.policy.windows import parse_windows
from scheduler.settings import Settings
from scheduler.spec import spec_gpu_fraction
from scheduler.telemetry.accounting import AttemptUsage, UsageMeter
from scheduler.telemetry.downsample import DownsampleReport, downsample
from scheduler.telemetry.host import HostReading, read_host
from scheduler.telemetry.store import GpuPoint, TelemetryStore
from scheduler.watchdogs import GpuHealth, IdleAlert, IdleWatchdog
from scheduler.worker import ActiveJob, Worker

log = logging.getLogger(__name__)
LOG_TAIL_LINES = 15
DOWNSAMPLE_EVERY_S = 900


@dataclass
class Snapshot:
    """What one sampling pass saw and decided."""

    at_s: float
    gpus: list[GpuInfo]
    points: list[GpuPoint]
    host: HostReading | None
    idle_alerts: list[IdleAlert] = field(default_factory=list)
    out_of_service: dict[int, str] = field(default_factory=dict)


class WorkerTelemetry:
    """Sampling, history, accounting and watchdogs for one worker."""

    def __init__(
        self,
        worker: Worker,
        *,
        notifier: Notifier | None = None,
        clock: Callable[[], float] = now_s,
        host_reader: Callable[[], HostReading] | None = read_host,
        settings: Settings | None = None,
    ) -> None:
        """Telemetry of `worker`; `settings` (default: the worker's) set the interval and the watchdogs."""
        self.worker = worker
        self.settings = settings or worker.settings
        self.store = TelemetryStore(worker.cluster.factory)
        self.notifier = notifier
        self.clock = clock
        self.host_reader = host_reader
        config = worker.cluster.policy_config
        self.meter = UsageMeter(
            worker.node, config.tariff, parse_windows(config.offpeak), config.timezone, config.gpu_power_w
        )
        self.idle = IdleWatchdog(self.settings.idle_utilization_pct, self.settings.idle_after_min * 60.0)
        self.health = GpuHealth(
            self.settings.gpu_max_temperature_c,
            self.settings.gpu_cool_temperature_c,
            self.settings.leftover_memory_mib,
        )
        self.usage: dict[int, AttemptUsage] = {}  # the last attempt's usage of recently ended tasks
        self._last_gpus: list[GpuInfo] = []
        self._lock = threading.Lock()
        self._scheduler: BackgroundScheduler | None = None

    # --- life cycle ---------------------------------------------------------------------------------

    def attach(self) -> WorkerTelemetry:
        """Listen to the worker's jobs (once); returns self."""
        if self not in self.worker.listeners:
            self.worker.listeners.append(self)
        return self

    def start(self) -> WorkerTelemetry:
        """Attach, then sample and downsample in the background (APScheduler jobs); returns self."""
        self.attach()
        scheduler = BackgroundScheduler(timezone=UTC)
        common = {"max_instances": 1, "coalesce": True, "misfire_grace_time": 60}
        scheduler.add_job(
            self._sample_job, "interval", seconds=self.settings.telemetry_interval_s, id="sample", **common
        )
        scheduler.add_job(self.downsample, "interval", seconds=DOWNSAMPLE_EVERY_S, id="downsample", **common)
        scheduler.start()
        self._scheduler = scheduler
        return self

    def stop(self) -> None:
        """Stop the background jobs (waiting for a running one)."""
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=True)
            self._scheduler = None

    def _sample_job(self) -> None:
        try:
            self.sample_once()
        except Exception:
            log.exception("telemetry sample failed")

    # --- sampling -----------------------------------------------------------------------------------

    def sample_once(self, at_s: float | None = None) -> Snapshot:
        """Read the GPUs and the host, store the samples, meter the attempts, run the watchdogs."""
        now = self.clock() if at_s is None else at_s
        try:
            readings = self.worker.monitor.read()
        except GpuInventoryError as exc:
            log.warning("telemetry: cannot read the GPUs: %s", exc.message)
            readings = []
        gpus = [gpu for gpu in readings if gpu.fault is None]  # an unreadable GPU has nothing to sample
        holders = self.worker.gpu_holders()
        by_gpu: dict[int, list[int | None]] = {}
        for task_id, indices in holders.items():
            for index in indices:
                by_gpu.setdefault(index, []).append(task_id)
        ts = int(now)
        points = [
            GpuPoint(
                self.worker.node, gpu.index, ts, task_id, gpu.utilization_pct, gpu.memory_used_mib,
                gpu.power_w, gpu.temperature_c,
            )
            for gpu in gpus
            for task_id in by_gpu.get(gpu.index) or [None]
        ]  # fmt: skip
        self.store.add_gpu_samples(points)
        host = self.host_reader() if self.host_reader is not None else None
        if host is not None:
            self.store.add_host_sample(self.worker.node, ts, host)
        with self._lock:
            self._last_gpus = gpus
        self.meter.observe(now, gpus, self.worker.gpu_process_owners(gpus))
        snapshot = Snapshot(now, gpus, points, host)
        snapshot.idle_alerts = self.idle.observe(now, holders, gpus)
        for alert in snapshot.idle_alerts:
            self._on_idle(alert)
        snapshot.out_of_service = self._assess(readings, self.worker.gpu_claims())
        return snapshot

    def downsample(self) -> DownsampleReport:
        """Merge old samples into coarser buckets and delete those past the retention."""
        retention_s = self.settings.telemetry_retention_days * 86400.0
        return downsample(self.worker.cluster.factory, self.clock(), retention_s)

    def _assess(self, gpus: list[GpuInfo], held: Mapping[int, Collection[str]]) -> dict[int, str]:
        reasons = self.health.assess(gpus, held)
        before = dict(self.worker.out_of_service)
        self.worker.out_of_service = reasons
        for index, reason in reasons.items():
            if before.get(index) != reason and index not in before:
                log.warning("GPU %s:%s out of service: %s", self.worker.node, index, reason)
                self._notify(
                    Event("gpu_warning", f"GPU {self.worker.node}:{index} out of service", reason, at_s=0.0)
                )
        for index in set(before) - set(reasons):
            log.info("GPU %s:%s back in service", self.worker.node, index)
        return reasons

    def _on_idle(self, alert: IdleAlert) -> None:
        item = self.worker.job_of(alert.task_id)
        if item is None:
            return
        minutes = alert.idle_s / 60.0
        action = self.settings.idle_action
        what = {
            "notify": "it keeps running",
            "stop": "it was stopped",
            "requeue": "it was stopped and put back in the queue",
        }[action]
        text = (
            f"Task {alert.task_id} ({item.task.name}) has used its GPUs {list(alert.gpu_indices)} below "
            f"{self.settings.idle_utilization_pct:g}% for {minutes:.0f} min (mean "
            f"{alert.mean_utilization_pct:.1f}%); {what}."
        )
        log.warning("idle watchdog: %s", text)
        self._notify(
            Event(
                "idle_warning", f"Task {alert.task_id} is idle on its GPUs", text,
                user=item.task.user.name, team=item.task.team.name, task_id=alert.task_id,
            )
        )  # fmt: skip
        if action == "stop":
            self.worker.stop_task(alert.task_id, "idle", text)
        elif action == "requeue":
            self.worker.stop_task(alert.task_id, "worker_stopped", text)

    # --- job listener -------------------------------------------------------------------------------

    def jobs_started(self, items: Sequence[ActiveJob]) -> None:
        """Begin metering the attempts; note the GPU memory in use as they start (someone else's, not a
        leftover of theirs when they end); tell the owners they started."""
        try:
            gpus = self.worker.monitor.read()  # fresh: the jobs just forked, none has reached CUDA yet
        except GpuInventoryError:
            with self._lock:
                gpus = list(self._last_gpus)
        models = {gpu.index: gpu.name for gpu in gpus}
        now = self.clock()
        for item in items:
            task, claim = item.task, item.claim
            requested = int(task.gpu_memory_gb * 1024) if task.gpu_memory_gb else None
            used_before = {gpu.index: gpu.memory_used_mib for gpu in gpus if gpu.index in claim.gpu_indices}
            fraction = spec_gpu_fraction(task.spec)
            self.meter.begin(
                task.id, item.attempt, claim.gpu_indices, now, requested, models, used_before, fraction
            )
            self.health.task_started(claim.token, used_before)
            where = ", ".join(str(i) for i in claim.gpu_indices) or "none (CPU)"
            self._notify(
                Event(
                    "start", f"Task {task.id} ({task.name}) started", f"on {self.worker.node}, GPUs {where}",
                    user=task.user.name, team=task.team.name, task_id=task.id,
                    fields={"attempt": item.attempt, "command": task.command},
                )
            )  # fmt: skip

    def jobs_ending(self, items: Sequence[ActiveJob]) -> None:
        """Close the meters and store the usage (one write); take GPUs whose memory is still held out of
        service."""
        now = self.clock()
        usages = []
        for item in items:
            task_id = item.claim.task_id
            usage = self.meter.end(task_id, now)
            if usage is not None and item.job.cpu_s is not None:
                usage = replace(usage, cpu_s=item.job.cpu_s)
            if usage is not None:
                self.usage[task_id] = usage
                usages.append(usage)
            self.health.task_ended(task_id, item.claim.gpu_indices, item.claim.token)
        while len(self.usage) > 1000:
            self.usage.pop(next(iter(self.usage)))
        self.store.save_usages(usages)
        try:
            gpus = self.worker.monitor.read()
        except GpuInventoryError:
            return
        self._assess(gpus, self.worker.gpu_claims())  # the ending attempts' own claims do not count
        self.worker.publish_node()

    def jobs_ended(self, ended: Sequence[tuple[ActiveJob, str | None]]) -> None:
        """Tell the owners how they ended: success, or failure with the reason and the last log lines."""
        for item, status in ended:
            if status in ("succeeded", "failed"):
                self._job_ended(item, status)
            elif status == "queued" and item.settle_as == REQUEUE_REASON:
                self._job_requeued(item)

    def _job_requeued(self, item: ActiveJob) -> None:
        """Tell the owner their task was stopped and queued again by someone (`nightshift requeue`, a node
        drained with --requeue): it did not fail, and starts again when GPUs free."""
        task = item.task
        self._notify(
            Event(
                "requeue", f"Task {task.id} ({task.name}) is back in the queue",
                f"{item.settle_message or 'requeued'}; "
                + ("it starts once released" if item.settle_held_by else "it starts again when GPUs free")
                + (", from its checkpoint" if task.spec.get("resume_arg") else ""),
                user=task.user.name, team=task.team.name, task_id=task.id,
                fields={"node": self.worker.node, "attempt": item.attempt},
            )
        )  # fmt: skip

    def _job_ended(self, item: ActiveJob, status: str) -> None:
        if self.notifier is None:
            return
        # a failure's reason and message are in SQL (the retry policy may have rewritten them)
        task = item.task if status == "succeeded" else self.worker.cluster.tasks.get_any(item.claim.task_id)
        usage = self.usage.get(task.id)
        fields: dict[str, object] = {"node": self.worker.node, "attempt": item.attempt}
        if usage is not None:
            fields.update(
                gpu_hours=round(usage.gpu_hours, 3),
                energy_kwh=round(usage.energy_kwh, 3),
                cost=f"{usage.cost:.2f} {usage.currency}",
                peak_memory_mib=usage.peak_memory_mib,
                mean_utilization_pct=None
                if usage.mean_utilization_pct is None
                else round(usage.mean_utilization_pct, 1),
            )
        if status == "succeeded":
            event = Event(
                "success", f"Task {task.id} ({task.name}) succeeded", "",
                user=task.user.name, team=task.team.name, task_id=task.id, fields=fields,
            )  # fmt: skip
        else:
            tail = last_output(self.worker.cluster.log_path(task.id), LOG_TAIL_LINES)
            why = task.reason or "failed"
            event = Event(
                "failure", f"Task {task.id} ({task.name}) failed: {why}", task.message or "",
                user=task.user.name, team=task.team.name, task_id=task.id,
                fields={"exit_code": task.exit_code, **fields}, log_tail=tail,
            )  # fmt: skip
        self._notify(event)

    def _notify(self, event: Event) -> None:
        if self.notifier is not None:
            self.notifier.notify(event)
