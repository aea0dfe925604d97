"""Results of tasks: reading a job's `metrics.json` safely, and comparing the tasks of a sweep or a tag.

Every task gets `NIGHTSHIFT_OUTPUT_DIR` (`<home>/outputs/<task id>` on its node). When its job ends, the
worker reads `metrics.json` there (or the spec's `metrics_file`): at most `MAX_METRICS_BYTES`, a JSON object
whose values are numbers, true/false or short strings. A missing file is no error; anything else wrong (too
big, not JSON, not an object, a symlink, nested values, NaN) becomes a plain note on the task, never a crash.
The file is opened without following symlinks, so a job cannot make a root worker read another file.

`compare()` is pure: rows of parameters and metrics in, a sorted table with the best row out.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import math
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from scheduler.private_files import restrict

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

    from scheduler.accounts import OsAccount
    from scheduler.store.tables import Task

log = logging.getLogger(__name__)

DEFAULT_METRICS_FILE = "metrics.json"
MAX_METRICS_BYTES = 64 * 1024
MAX_METRICS = 100
MAX_METRIC_NAME_CHARS = 64
MAX_METRIC_TEXT_CHARS = 200
# metric names that are better when smaller (matched as whole words of the name: `val_loss`, `error_rate`)
MINIMIZE_WORDS = frozenset(
    {
        "loss",
        "error",
        "err",
        "perplexity",
        "ppl",
        "mse",
        "mae",
        "rmse",
        "wer",
        "cer",
        "latency",
        "time",
        "regret",
    }
)
Goal = Literal["min", "max"]
Scalar = bool | int | float | str
Parsed = tuple[dict[str, Scalar] | None, str | None]


def output_dir_of(home: Path, task_id: int) -> Path:
    """A task's output folder on its node (the same for every attempt there)."""
    return home / "outputs" / str(int(task_id))


def prepare_output_dir(home: Path, task: Task, account: OsAccount | None = None) -> Path:
    """Create the task's output folder (owned by the job's account) and remove a metrics file left there
    by an earlier attempt, so only this attempt's results are collected."""
    folder = output_dir_of(home, task.id)
    folder.mkdir(parents=True, exist_ok=True)
    if account is not None:
        os.chown(folder, account.uid, account.gid)
    restrict(folder)  # the job's account only: another team's job on this node must not read its results
    with contextlib.suppress(ValueError, OSError):
        parts = metrics_path_parts(task.spec.get("metrics_file"))
        if len(parts) == 1:  # a file right in the folder (never follow a job's folder links as root)
            (folder / parts[0]).unlink(missing_ok=True)
    return folder


def collect_metrics(factory: sessionmaker[Session], home: Path, task: Task, token: str) -> None:
    """After an attempt: read its metrics file and store it (or a note) under its claim; never raises."""
    from scheduler.store.sweeps import SweepStore

    try:
        named = task.spec.get("metrics_file")
        metrics, note = read_metrics_file(output_dir_of(home, task.id), named)
        if metrics is None and note is None:
            if not named:
                return
            note = f"{named} was not written in NIGHTSHIFT_OUTPUT_DIR"
        SweepStore(factory).record_metrics(task.id, token, metrics, note)
    except Exception:  # results are a bonus: a failure here must not keep the task from being settled
        log.exception("task %s: could not collect its metrics", task.id)


def metrics_path_parts(name: str | None) -> list[str]:
    """The components of a metrics file name inside the output folder (no absolute path, no `..`)."""
    parts = [part for part in (name or DEFAULT_METRICS_FILE).split("/") if part not in ("", ".")]
    if not parts or any(part == ".." for part in parts) or (name or "").startswith("/"):
        raise ValueError(f"metrics_file {name!r} must be a relative path inside the output folder")
    return parts


def _open_inside(root: Path, parts: Sequence[str]) -> int:
    """Open root/parts... for reading, refusing a symlink at every step (raises OSError)."""
    flags_dir = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    fd = os.open(root, flags_dir)
    try:
        for part in parts[:-1]:
            next_fd = os.open(part, flags_dir, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        return os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    finally:
        os.close(fd)


def read_metrics_file(output_dir: Path, name: str | None = None) -> Parsed:
    """(metrics, note): the job's metrics and what was wrong with the file; (None, None) without a file."""
    label = name or DEFAULT_METRICS_FILE
    try:
        parts = metrics_path_parts(name)
    except ValueError as exc:
        return None, str(exc)
    try:
        fd = _open_inside(output_dir, parts)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            return None, f"{label} was not read: it (or a folder on its way) is a symbolic link"
        return None, f"{label} could not be opened: {exc.strerror}"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, f"{label} is not a regular file"
        if info.st_size > MAX_METRICS_BYTES:
            return None, f"{label} is {info.st_size} bytes; at most {MAX_METRICS_BYTES} are read"
        data = os.read(fd, MAX_METRICS_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_METRICS_BYTES:
        return None, f"{label} is over {MAX_METRICS_BYTES} bytes"
    return parse_metrics(data, label)


def parse_metrics(data: bytes, label: str = DEFAULT_METRICS_FILE) -> Parsed:
    """Validate the bytes of a metrics file: a JSON object of scalars (bad entries are dropped, noted)."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"{label} is not valid JSON: {exc}"
    if not isinstance(value, dict):
        return None, f'{label} must hold a JSON object like {{"loss": 0.12}}, got {type(value).__name__}'
    metrics: dict[str, Scalar] = {}
    dropped: list[str] = []
    for key, item in value.items():
        if len(metrics) >= MAX_METRICS:
            dropped.append(f"{len(value) - MAX_METRICS} entries past the first {MAX_METRICS}")
            break
        if not key or len(key) > MAX_METRIC_NAME_CHARS:
            dropped.append(f"{key[:20]!r} (name of 1-{MAX_METRIC_NAME_CHARS} characters)")
        elif isinstance(item, float) and not math.isfinite(item):
            dropped.append(f"{key!r} (not a finite number)")
        elif isinstance(item, str) and len(item) > MAX_METRIC_TEXT_CHARS:
            dropped.append(f"{key!r} (text over {MAX_METRIC_TEXT_CHARS} characters)")
        elif isinstance(item, bool | int | float | str):
            metrics[key] = item
        else:
            dropped.append(f"{key!r} (a {type(item).__name__}, not a number or text)")
    note = f"{label}: ignored {', '.join(dropped)}" if dropped else None
    return metrics, note


def goal_of(metric: str) -> Goal:
    """`min` for names like loss, val_error, wer; `max` otherwise (accuracy, f1, reward, ...)."""
    words = {word for word in metric.lower().replace("-", "_").replace(".", "_").replace("/", "_").split("_")}
    return "min" if words & MINIMIZE_WORDS else "max"


def code_of(git: Mapping[str, Any] | None) -> str | None:
    """A task's `git` as a results row shows it: the short commit, `+` when files differed from it."""
    if not git or not git.get("commit"):
        return None
    return str(git["commit"])[:7] + ("+" if git.get("dirty") else "")


@dataclass(frozen=True, slots=True)
class ResultRow:
    """One task in a comparison."""

    task_id: int
    name: str
    status: str
    params: Mapping[str, Any]
    metrics: Mapping[str, Any]
    note: str | None = None
    best: bool = False
    code: str | None = None  # the git commit it was submitted from: `1a2b3c4`, `1a2b3c4+` with changes


@dataclass(frozen=True, slots=True)
class Comparison:
    """A table of parameters vs metrics, sorted by `sort` toward `goal`; `best` is its best task."""

    params: list[str]
    metrics: list[str]
    rows: list[ResultRow]
    sort: str | None
    goal: Goal | None
    best: int | None = None
    missing: list[int] = field(default_factory=list)  # tasks without a value for `sort`


def _names(mappings: Iterable[Mapping[str, Any]]) -> list[str]:
    return list(dict.fromkeys(name for mapping in mappings for name in mapping))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def compare(rows: Sequence[ResultRow], sort: str | None = None, goal: Goal | None = None) -> Comparison:
    """Sort rows by metric `sort` (default: the first one reported), best first; mark the best row.

    The goal is `min` or `max` as given, else guessed from the name (`goal_of`). Rows without a number for
    the metric come last, in task order. The best row is the best of the runs that succeeded: a run that
    failed after writing its metrics is sorted with them but never starred. A parameter named as `sort`
    ("the best lr of sweep 3") is no metric to sort by: the default metric says which run is best.
    """
    params = _names(row.params for row in rows)
    metrics = _names(row.metrics for row in rows)
    if sort is not None and sort in params and sort not in metrics:
        sort = None
    if sort is None:
        sort = next(
            (name for name in metrics if any(_number(r.metrics.get(name)) is not None for r in rows)), None
        )
    if sort is None:
        return Comparison(params, metrics, list(rows), None, None)
    goal = goal or goal_of(sort)
    scored = [(value, row) for row in rows if (value := _number(row.metrics.get(sort))) is not None]
    missing = [row for row in rows if _number(row.metrics.get(sort)) is None]
    scored.sort(key=lambda pair: (pair[0] if goal == "min" else -pair[0], pair[1].task_id))
    ordered = [row for _, row in scored] + missing
    best = next((row.task_id for _, row in scored if row.status == "succeeded"), None)
    marked = [
        ResultRow(r.task_id, r.name, r.status, r.params, r.metrics, r.note, r.task_id == best, r.code)
        for r in ordered
    ]
    return Comparison(params, metrics, marked, sort, goal, best, [row.task_id for row in missing])
