"""Per-attempt accounting: GPU-hours, energy (integrated measured power, else estimated), cost, peak memory.

`UsageMeter` is fed each sample of the node's GPUs and integrates, per running attempt, the power of the
GPUs it holds over the time since the previous sample. Each piece of energy is priced by the tariff over
exactly its own interval (`estimate_cost` splits at hour boundaries), so an attempt that spans a tariff
boundary is charged each side at its own price. A GPU shared by k attempts gives each 1/k of its power.
No clock is read here: every call is given its time.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from scheduler.gpus.inventory import GpuInfo
from scheduler.policy.tariff import Tariff, estimate_cost, gpu_power_w
from scheduler.policy.windows import DailyWindow, zone

J_PER_KWH = 3.6e6
MAX_PIECE_S = 600.0  # a gap in sampling longer than this is filled with the estimate, not the last reading


def offpeak_seconds(start_s: float, end_s: float, windows: Sequence[DailyWindow], tz_name: str) -> float:
    """How many seconds of [start_s, end_s) fall inside the daily off-peak windows (local time)."""
    if end_s <= start_s or not windows:
        return 0.0
    tz = zone(tz_name)
    first = datetime.fromtimestamp(start_s, tz).date() - timedelta(days=1)
    last = datetime.fromtimestamp(end_s, tz).date()
    spans: list[tuple[float, float]] = []
    day: date = first
    while day <= last:
        for w in windows:
            begin = datetime.combine(day, datetime.min.time(), tz) + timedelta(minutes=w.start_min)
            end_day = day + timedelta(days=1) if w.crosses_midnight else day
            finish = datetime.combine(end_day, datetime.min.time(), tz) + timedelta(minutes=w.end_min)
            spans.append((begin.timestamp(), finish.timestamp()))
        day += timedelta(days=1)
    spans.sort()
    total, covered_to = 0.0, start_s
    for s, e in spans:
        s, e = max(s, covered_to), min(e, end_s)
        if e > s:
            total += e - s
            covered_to = e
    return total


@dataclass(frozen=True, slots=True)
class AttemptUsage:
    """What one attempt used, ready to be stored (`task_usage`) and shown."""

    task_id: int
    attempt: int
    node: str
    gpus: int
    started_s: float
    finished_s: float
    gpu_hours: float
    energy_kwh: float
    energy_source: str  # "measured", "estimated" or "mixed"
    offpeak_energy_kwh: float
    cost: float
    currency: str
    peak_memory_mib: int | None
    requested_memory_mib: int | None
    mean_utilization_pct: float | None
    samples: int
    cpu_s: float | None = None  # CPU time of all its processes, where its node gives jobs cgroups


@dataclass
class _Meter:
    task_id: int
    attempt: int
    gpu_indices: tuple[int, ...]
    started_s: float
    requested_mib: int | None
    models: dict[int, str]
    last_s: float
    used_before_mib: dict[int, int] = field(default_factory=dict)  # GPU memory in use as it started
    gpu_fraction: float = 1.0  # a task sharing its GPU: its part of the GPU-hours and of a model's power
    last_power_w: dict[int, float | None] = field(default_factory=dict)
    measured_kwh: float = 0.0
    estimated_kwh: float = 0.0
    offpeak_kwh: float = 0.0
    cost: float = 0.0
    peak_mib: int | None = None
    util_sum: float = 0.0
    util_n: int = 0
    samples: int = 0


class UsageMeter:
    """Integrates the energy, cost, peak memory and utilization of every attempt running on one node."""

    def __init__(
        self,
        node: str,
        tariff: Tariff,
        offpeak: Sequence[DailyWindow] = (),
        timezone: str = "UTC",
        power_table: Mapping[str, float] | None = None,
    ) -> None:
        self.node = node
        self.tariff = tariff
        self.offpeak = tuple(offpeak)
        self.timezone = timezone
        self.power_table = power_table
        self._meters: dict[int, _Meter] = {}
        self._lock = threading.Lock()

    def begin(
        self,
        task_id: int,
        attempt: int,
        gpu_indices: Sequence[int],
        started_s: float,
        requested_memory_mib: int | None = None,
        models: Mapping[int, str] | None = None,
        used_before_mib: Mapping[int, int] | None = None,
        gpu_fraction: float = 1.0,
    ) -> None:
        """Start metering an attempt holding `gpu_indices` from `started_s`; `used_before_mib`: the memory
        of each GPU in use as it started (another process's), left out of its peak; `gpu_fraction`: the part
        of its GPU a sharing task holds (its GPU-hours, and its model power when none is measured)."""
        with self._lock:
            self._meters[task_id] = _Meter(
                task_id, attempt, tuple(gpu_indices), started_s, requested_memory_mib,
                dict(models or {}), last_s=started_s, used_before_mib=dict(used_before_mib or {}),
                gpu_fraction=min(gpu_fraction, 1.0),
            )  # fmt: skip

    def running(self) -> list[int]:
        """Task ids being metered."""
        with self._lock:
            return list(self._meters)

    def observe(
        self, now_s: float, readings: Sequence[GpuInfo], owners: Mapping[int, int] | None = None
    ) -> None:
        """One sample of the node's GPUs at `now_s`: add each attempt's energy since its previous sample.
        `owners` (pid -> task id of the jobs' processes the driver lists) makes each task's memory its own
        processes' (exact where tasks share a GPU); without it, what the GPU holds beyond its use at start."""
        by_index = {gpu.index: gpu for gpu in readings}
        with self._lock:
            shares: dict[int, int] = {}
            for meter in self._meters.values():
                for index in meter.gpu_indices:
                    shares[index] = shares.get(index, 0) + 1
            for meter in self._meters.values():
                if now_s <= meter.last_s:
                    continue
                powers: dict[int, float | None] = {}
                utils: list[float] = []
                for index in meter.gpu_indices:
                    gpu = by_index.get(index)
                    if gpu is None:
                        powers[index] = None
                        continue
                    meter.models.setdefault(index, gpu.name)
                    powers[index] = None if gpu.power_w is None else gpu.power_w / shares[index]
                    if gpu.utilization_pct is not None:
                        utils.append(gpu.utilization_pct)
                    own_mib = _own_memory_mib(gpu, meter, owners)
                    meter.peak_mib = max(meter.peak_mib or 0, own_mib)
                self._add(meter, meter.last_s, now_s, powers)
                meter.last_power_w = powers
                if utils:
                    meter.util_sum += sum(utils) / len(utils)
                    meter.util_n += 1
                meter.samples += 1
                meter.last_s = now_s

    def end(self, task_id: int, finished_s: float) -> AttemptUsage | None:
        """Stop metering `task_id` at `finished_s` and return its usage (None if it was not metered)."""
        with self._lock:
            meter = self._meters.pop(task_id, None)
            if meter is None:
                return None
            if finished_s > meter.last_s:
                self._add(meter, meter.last_s, finished_s, meter.last_power_w)
        finished_s = max(finished_s, meter.started_s)
        total = meter.measured_kwh + meter.estimated_kwh
        if meter.estimated_kwh <= 0 < meter.measured_kwh:
            source = "measured"
        elif meter.measured_kwh <= 0:
            source = "estimated"
        else:
            source = "mixed"
        return AttemptUsage(
            task_id=meter.task_id,
            attempt=meter.attempt,
            node=self.node,
            gpus=len(meter.gpu_indices),
            started_s=meter.started_s,
            finished_s=finished_s,
            gpu_hours=len(meter.gpu_indices) * meter.gpu_fraction * (finished_s - meter.started_s) / 3600.0,
            energy_kwh=total,
            energy_source=source,
            offpeak_energy_kwh=meter.offpeak_kwh,
            cost=meter.cost,
            currency=self.tariff.currency,
            peak_memory_mib=meter.peak_mib,
            requested_memory_mib=meter.requested_mib,
            mean_utilization_pct=meter.util_sum / meter.util_n if meter.util_n else None,
            samples=meter.samples,
        )

    def _add(self, meter: _Meter, start_s: float, end_s: float, powers: Mapping[int, float | None]) -> None:
        """Charge [start_s, end_s) at `powers` (per GPU; None or a long gap: the model's estimate)."""
        duration_s = end_s - start_s
        if duration_s <= 0:
            return
        long_gap = duration_s > MAX_PIECE_S
        measured_w = estimated_w = 0.0
        for index in meter.gpu_indices:
            power = None if long_gap else powers.get(index)
            if power is None:
                estimated_w += (
                    gpu_power_w(meter.models.get(index, ""), None, self.power_table) * meter.gpu_fraction
                )
            else:
                measured_w += power
        measured = measured_w * duration_s / J_PER_KWH
        estimated = estimated_w * duration_s / J_PER_KWH
        meter.measured_kwh += measured
        meter.estimated_kwh += estimated
        kwh = measured + estimated
        meter.cost += estimate_cost(start_s, end_s, kwh, self.tariff)
        share = offpeak_seconds(start_s, end_s, self.offpeak, self.timezone) / duration_s
        meter.offpeak_kwh += kwh * share


def _own_memory_mib(gpu: GpuInfo, meter: _Meter, owners: Mapping[int, int] | None) -> int:
    """The memory an attempt holds on `gpu`: its processes' where the driver lists them with their memory
    (`owners` maps their pids to tasks), else what the GPU holds beyond its use when the attempt started."""
    listed = gpu.processes
    if owners is not None and listed is not None and all(p.used_mib is not None for p in listed):
        return sum(p.used_mib or 0 for p in listed if owners.get(p.pid) == meter.task_id)
    return gpu.memory_used_mib - meter.used_before_mib.get(gpu.index, 0)
