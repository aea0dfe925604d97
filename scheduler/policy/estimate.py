"""Run-time estimates: from the spec, or learned from finished tasks of the same user, name and size."""

from __future__ import annotations

import re
import statistics
from collections import deque
from dataclasses import dataclass, replace

from scheduler.policy.config import PolicyConfig
from scheduler.policy.types import QueuedTask, RunningTask

HistoryKey = tuple[str, str, int]
_SWEEP_PARAMETERS = re.compile(r"(?:\s+[A-Za-z_][A-Za-z0-9_]*:\S+)+$")
RECENT_RUNS = 50  # the cluster's typical run time is the median of this many last runs of GPU tasks
MIN_RECENT_RUNS = 5  # and is not known before this many


def family_name(name: str) -> str:
    """A sweep task's name without its parameters (`train lr:0.1 bs:32` -> `train`), so that the runs of one
    setting teach the others' estimates; other names as they are."""
    return _SWEEP_PARAMETERS.sub("", name) or name


class DurationHistory:
    """Recent run times per (user, name, gpus), fed with finished tasks in the order they ended; the median
    of the last `runs`. A name nothing finished under yet is estimated from its family (`family_name`): the
    runs of the same sweep with other parameters, or of the name without them. Also the cluster's typical run
    time over every GPU task (`typical_s`)."""

    def __init__(self, runs: int = 9) -> None:
        self.runs = runs
        self._by_key: dict[HistoryKey, deque[float]] = {}
        self._by_family: dict[HistoryKey, deque[float]] = {}
        self._recent: deque[float] = deque(maxlen=RECENT_RUNS)
        self._typical: float | None = None  # median of `_recent`, computed on demand after each change

    @staticmethod
    def key(user: str, name: str, gpus: int) -> HistoryKey:
        """The key tasks are grouped by."""
        return (user, name, gpus)

    def add(self, user: str, name: str, gpus: int, duration_s: float) -> None:
        """Record a task that finished (succeeded) after `duration_s`."""
        runs = self._by_key.setdefault(self.key(user, name, gpus), deque(maxlen=self.runs))
        runs.append(duration_s)
        family = self._by_family.setdefault(self.key(user, family_name(name), gpus), deque(maxlen=self.runs))
        family.append(duration_s)
        if gpus > 0:  # the pace that matters is that of the tasks holding GPUs
            self._recent.append(duration_s)
            self._typical = None

    def learned(self, user: str, name: str, gpus: int) -> tuple[float, int, str | None] | None:
        """(median run time, number of runs, None) for this key; else (..., family name) for its family, when
        the name itself never ran; None when neither did."""
        runs = self._by_key.get(self.key(user, name, gpus))
        if runs:
            return statistics.median(runs), len(runs), None
        family = family_name(name)
        runs = self._by_family.get(self.key(user, family, gpus))
        if not runs:
            return None
        return statistics.median(runs), len(runs), family

    def typical_s(self) -> float | None:
        """Median run time of the last `RECENT_RUNS` GPU tasks of any user, name and size; None before
        `MIN_RECENT_RUNS`."""
        if len(self._recent) < MIN_RECENT_RUNS:
            return None
        if self._typical is None:
            self._typical = statistics.median(self._recent)
        return self._typical


def with_typical_run(config: PolicyConfig, typical_s: float | None) -> PolicyConfig:
    """`config` with this observed `typical_run_s` (`DurationHistory.typical_s`); the same object when it
    already has it, so a caller can do this before every pass."""
    return config if typical_s == config.typical_run_s else replace(config, typical_run_s=typical_s)


@dataclass(frozen=True, slots=True)
class DurationEstimate:
    """An estimated run time and where it came from ("spec estimate", "learned from 5 runs", ...)."""

    seconds: float
    source: str


def estimate_duration_s(
    task: QueuedTask, history: DurationHistory | None, config: PolicyConfig
) -> DurationEstimate:
    """The spec's `estimated_s`; else the median of recent runs (capped at the time limit); else the time
    limit; else `config.default_estimate_s`. Learned runs come before the time limit because limits are
    usually generous upper bounds."""
    if task.estimated_s is not None and task.estimated_s > 0:
        return DurationEstimate(task.estimated_s, "spec estimate")
    learned = history.learned(task.user, task.name, task.gpus) if history is not None else None
    if learned is not None:
        seconds, runs, family = learned
        if task.time_limit_s:
            seconds = min(seconds, task.time_limit_s)
        source = f"median of {runs} recent run{'s' if runs != 1 else ''}"
        if family is not None:
            source += f" of {family} sweeps" if family == task.name else f" of {family} with other parameters"
        return DurationEstimate(seconds, source)
    if task.time_limit_s is not None and task.time_limit_s > 0:
        return DurationEstimate(task.time_limit_s, "time limit")
    return DurationEstimate(config.default_estimate_s, "default")


OVERRUN_FACTOR = 0.25


def expected_end_s(
    task: RunningTask, now_s: float, config: PolicyConfig, overrun_factor: float = OVERRUN_FACTOR
) -> float:
    """When a running task is expected to end. Past its estimate, it is assumed to need `overrun_factor`
    times its elapsed time more (at least a minute): it is late, so the end is not 'now'.

    `decide` uses the default (a quarter: reservations stay close); start-time forecasts use
    `config.forecast_overrun_factor`, a task that overran its estimate being likely to run much longer.
    """
    end_s = task.estimated_end_s
    if end_s is None:
        end_s = task.started_at_s + config.default_estimate_s
    if end_s > now_s:
        return end_s
    return now_s + max(60.0, overrun_factor * (now_s - task.started_at_s))
