"""Watchdogs over a node's GPU samples: idle tasks, hot GPUs, and memory left behind by finished tasks.

Pure state machines: each is fed readings with the time they were taken and answers what to do, so a test
drives them with an injected clock and the worker's telemetry agent with the wall clock.

- `IdleWatchdog`: a running task whose every GPU stays below `idle_pct` utilization for `after_s` is
  reported once (an `IdleAlert`); a busy sample resets it, so a later idle stretch is reported again.
- `GpuHealth`: which GPUs must take no new tasks, with the reason shown to people: unreadable (the driver
  lost it: `unreadable_reason`, which the worker also applies to every GPU it publishes), too hot (above
  `max_temperature_c`, until back below `cool_temperature_c`), or still holding more than `leftover_mib` of
  memory beyond what it held when the task started, after that task ended (until the memory is freed or
  nightshift gives it a new task). Memory held outside nightshift since before the task (a notebook on a
  shared GPU) is not a leftover of the task: free-memory matching already places around it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from scheduler.gpus.inventory import GpuInfo


@dataclass(frozen=True, slots=True)
class IdleAlert:
    """Task `task_id` has had its GPUs idle since `idle_since_s` (for `idle_s` seconds)."""

    task_id: int
    gpu_indices: tuple[int, ...]
    idle_since_s: float
    idle_s: float
    mean_utilization_pct: float


class IdleWatchdog:
    """Reports tasks whose GPUs stay near 0% utilization for a configurable time."""

    def __init__(self, idle_pct: float, after_s: float) -> None:
        self.idle_pct = idle_pct
        self.after_s = after_s
        self._idle_since: dict[int, float] = {}
        self._reported: set[int] = set()

    def observe(
        self, now_s: float, holders: Mapping[int, Sequence[int]], readings: Sequence[GpuInfo]
    ) -> list[IdleAlert]:
        """Feed one sample: `holders` maps task id -> GPU indices it holds. Returns the alerts due now."""
        by_index = {gpu.index: gpu for gpu in readings}
        alerts: list[IdleAlert] = []
        for task_id, indices in holders.items():
            utils = [by_index[i].utilization_pct for i in indices if i in by_index]
            known = [u for u in utils if u is not None]
            if not indices or not known or len(known) < len(indices) or max(known) >= self.idle_pct:
                self._idle_since.pop(task_id, None)  # busy, CPU-only, or unreadable: not idle
                self._reported.discard(task_id)
                continue
            since = self._idle_since.setdefault(task_id, now_s)
            if now_s - since >= self.after_s and task_id not in self._reported:
                self._reported.add(task_id)
                alerts.append(
                    IdleAlert(task_id, tuple(indices), since, now_s - since, sum(known) / len(known))
                )
        for gone in set(self._idle_since) - set(holders):
            self._idle_since.pop(gone, None)
            self._reported.discard(gone)
        return alerts


def unreadable_reason(gpu: GpuInfo) -> str | None:
    """Why a GPU the driver could not read (`GpuInfo.fault`) takes no new tasks; None when it reads."""
    if gpu.fault is None:
        return None
    return (
        f"unreadable: {gpu.fault.rstrip('.')}; back in service once the driver reads it again "
        "(a lost GPU needs a reset or a reboot)"
    )


class GpuHealth:
    """Decides which GPUs of a node are out of service, and why."""

    def __init__(self, max_temperature_c: float, cool_temperature_c: float, leftover_mib: int) -> None:
        self.max_temperature_c = max_temperature_c
        self.cool_temperature_c = min(cool_temperature_c, max_temperature_c)
        self.leftover_mib = leftover_mib
        self._hot: set[int] = set()
        self._used_before: dict[str, dict[int, int]] = {}  # claim token -> GPU index -> MiB used at its start
        # GPU index -> (task, claim token, MiB used when it started) of the attempt that last ended on it
        self._ended: dict[int, tuple[int, str, int]] = {}

    def task_started(self, claim: str, used_mib: Mapping[int, int]) -> None:
        """An attempt (its `claim` token) starts on the GPUs of `used_mib` (index -> MiB in use, read as it
        starts): that memory is someone else's, and may stay in use after the attempt without being its
        leftover."""
        self._used_before[claim] = dict(used_mib)

    def task_ended(self, task_id: int, gpu_indices: Sequence[int], claim: str = "") -> None:
        """A task's attempt (its `claim` token) released these GPUs: memory they still hold from now on,
        beyond what they held when it started, is a leftover."""
        before = self._used_before.pop(claim, {})
        for index in gpu_indices:
            self._ended[index] = (task_id, claim, before.get(index, 0))

    def assess(self, readings: Sequence[GpuInfo], held: Mapping[int, Collection[str]]) -> dict[int, str]:
        """GPU index -> reason it takes no new tasks, for the GPUs that must not; `held`: the claim tokens of
        the attempts on each GPU in use (the attempt that ended may still be among them: a reading taken as
        it ended does not free its GPU)."""
        reasons: dict[int, str] = {}
        for gpu in readings:
            unreadable = unreadable_reason(gpu)
            if unreadable is not None:
                reasons[gpu.index] = unreadable
                continue
            temp = gpu.temperature_c
            if temp is not None and temp > self.max_temperature_c:
                self._hot.add(gpu.index)
            elif temp is None or temp < self.cool_temperature_c:
                self._hot.discard(gpu.index)
            if gpu.index in self._hot:
                reasons[gpu.index] = (
                    f"too hot: {temp:g} °C (above {self.max_temperature_c:g} °C; back in service below "
                    f"{self.cool_temperature_c:g} °C)"
                )
                continue
            ended = self._ended.get(gpu.index)
            if ended is None:
                continue
            task_id, claim, used_before = ended
            taken = any(token != claim for token in held.get(gpu.index, ()))
            if taken or gpu.memory_used_mib <= used_before + self.leftover_mib:
                self._ended.pop(gpu.index, None)  # freed, or given to a new task on purpose
                continue
            before = f", {used_before} MiB before it started" if used_before else ""
            reasons[gpu.index] = (
                f"memory still held: {gpu.memory_used_mib} MiB in use after task {task_id} ended{before} "
                "(a leftover process?); back in service once it is freed"
            )
        return reasons
