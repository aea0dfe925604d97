"""The trace CSV of `nightshift simulate`: required `submit_time_s, duration_s, num_gpus`, optional
`job_id, team, user, gpu_mem_gb, gpu_fraction, priority, estimated_duration_s, deadline_s, offpeak`."""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from scheduler.errors import NightshiftError
from scheduler.policy.types import MIB_PER_GB, PriorityClass

REQUIRED = ("submit_time_s", "duration_s", "num_gpus")
LONGEST_JOB_S = 3 * 365 * 86_400  # a trace job longer than three years is a mistake, not a job
OPTIONAL = (
    "job_id", "team", "user", "gpu_mem_gb", "gpu_fraction", "priority", "estimated_duration_s", "deadline_s",
    "offpeak",
)  # fmt: skip
_TRUE = {"1", "true", "yes", "y", "t"}
_FALSE = {"0", "false", "no", "n", "f", ""}
T = TypeVar("T")


class TraceError(NightshiftError):
    """Raised when a trace CSV cannot be read; the message names the file, line and column."""


@dataclass(frozen=True, slots=True)
class TraceJob:
    """One job of a trace; `index` is its row order (0-based), used as the task id."""

    index: int
    job_id: str
    submit_s: float
    duration_s: float
    gpus: int
    team: str = "default"
    user: str = ""
    gpu_memory_mib: int = 0
    gpu_fraction: float = 1.0
    priority: PriorityClass = PriorityClass.NORMAL
    estimated_s: float | None = None
    deadline_s: float | None = None
    offpeak: bool = False


def _number(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def _count(text: str) -> int:
    value = _number(text)
    if value != int(value):
        raise ValueError(text)
    return int(value)


def _priority(text: str) -> PriorityClass:
    text = text.strip()
    if text.lstrip("-").isdigit():
        return PriorityClass(min(max(int(text), 0), int(PriorityClass.URGENT)))
    return PriorityClass.parse(text)


def _flag(text: str) -> bool:
    low = text.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ValueError(text)


class _Row:
    """One CSV row with typed getters that raise TraceError naming the line and column."""

    def __init__(self, path: Path, line: int, row: dict[str, str | None]) -> None:
        self.path, self.line, self.row = path, line, row

    def get(self, column: str, parse: Callable[[str], T], what: str, default: T | None) -> T:
        raw = (self.row.get(column) or "").strip()
        if raw == "" and default is not None:
            return default
        try:
            return parse(raw)
        except (ValueError, KeyError):
            raise TraceError(
                f"{self.path}, line {self.line}: column {column!r} must be {what}, got {raw!r}",
                line=self.line, column=column,
            ) from None  # fmt: skip

    def text(self, column: str, default: str) -> str:
        return (self.row.get(column) or "").strip() or default


def _job(index: int, r: _Row) -> TraceJob:
    submit_s = r.get("submit_time_s", _number, "a number of seconds", None)
    duration_s = r.get("duration_s", _number, "a number of seconds", None)
    gpus = r.get("num_gpus", _count, "a whole number", None)
    if duration_s < 0 or gpus < 0:
        bad = "duration_s" if duration_s < 0 else "num_gpus"
        raise TraceError(f"{r.path}, line {r.line}: column {bad!r} must be >= 0", line=r.line, column=bad)
    if duration_s > LONGEST_JOB_S:  # a unit mistake (ms for s), which would replay for hours
        raise TraceError(
            f"{r.path}, line {r.line}: column 'duration_s' is {duration_s:g} s, over "
            f"{LONGEST_JOB_S / 86_400:g} days: give seconds",
            line=r.line,
            column="duration_s",
        )
    fraction = r.get("gpu_fraction", _number, "a number in (0, 1]", 1.0)
    if not 0 < fraction <= 1:
        raise TraceError(f"{r.path}, line {r.line}: column 'gpu_fraction' must be in (0, 1], got {fraction}")
    team = r.text("team", "default")
    estimated = r.get("estimated_duration_s", _number, "a number of seconds", -1.0)
    deadline = r.get("deadline_s", _number, "a number of seconds", -1.0)
    return TraceJob(
        index=index,
        job_id=r.text("job_id", str(index)),
        submit_s=submit_s,
        duration_s=duration_s,
        gpus=gpus,
        team=team,
        user=r.text("user", team),
        gpu_memory_mib=round(r.get("gpu_mem_gb", _number, "a number of GB", 0.0) * MIB_PER_GB),
        gpu_fraction=fraction,
        priority=r.get("priority", _priority, "low|normal|high|urgent or 0-3", PriorityClass.NORMAL),
        estimated_s=estimated if estimated > 0 else None,
        deadline_s=deadline if deadline >= 0 else None,
        offpeak=r.get("offpeak", _flag, "true or false", False),
    )


def parse_trace(lines: Iterable[str], path: Path = Path("<trace>")) -> list[TraceJob]:
    """Jobs from CSV text, sorted by submit time (stable)."""
    reader = csv.DictReader(lines)
    header = [h.strip() for h in reader.fieldnames or []]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise TraceError(
            f"{path}: missing required column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            f"(found: {', '.join(header) or 'no header'})"
        )
    reader.fieldnames = header
    jobs = [_job(i, _Row(path, reader.line_num, row)) for i, row in enumerate(reader)]
    jobs.sort(key=lambda j: j.submit_s)
    return jobs


def read_trace(path: str | Path) -> list[TraceJob]:
    """Read a trace CSV; raises TraceError for a missing file, a missing column or a bad value."""
    p = Path(path)
    try:
        with p.open(newline="", encoding="utf-8-sig") as f:  # -sig: a spreadsheet's byte-order mark
            return parse_trace(f, p)
    except FileNotFoundError:
        raise TraceError(f"trace file {p} does not exist") from None
    except UnicodeDecodeError as exc:
        raise TraceError(f"trace file {p} is not UTF-8 text: {exc}") from None
