"""A task's log cut into its attempts, and joined again in attempt order: pure text work, no I/O.

A task whose attempts ran on different nodes has one log file per node (each worker appends to its own
`<home>/logs/<id>.log`), each holding the attempts that ran there. Every attempt begins with the header
line the executor writes (`==> nightshift task 8 attempt 2 on box-b GPUs 0 at ...`, `executor.launch`), so a
file splits at those lines into its attempts, and the whole log is the attempts' parts in order. The header
already separates attempts, so nothing is added between parts from different nodes; a part that could not
be read is replaced by one line saying which attempt and node it is (`missing_line`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from scheduler.logs import NIGHTSHIFT_MARK


@dataclass(frozen=True, slots=True)
class AttemptRun:
    """One attempt of a task and the node it ran on (a row of the `attempts` table)."""

    number: int
    node: str


@dataclass(frozen=True, slots=True)
class LogParts:
    """A log file cut at its attempt headers: the text before the first header, each attempt's part
    (from its header to the next one), and the number of the first header (None when there is none)."""

    lead: str
    parts: dict[int, str]
    first: int | None


def _header(task_id: int) -> re.Pattern[str]:
    """The header line of an attempt of `task_id` (not its end line, `... attempt 2 ended: ...`)."""
    return re.compile(rf"^==> nightshift task {int(task_id)} attempt (\d+) on ", re.MULTILINE)


def split_attempts(text: str, task_id: int) -> LogParts:
    """`text` (a log file of task `task_id`) cut into its attempts, so that parts read from several
    files can be put in attempt order."""
    matches = list(_header(task_id).finditer(text))
    if not matches:
        return LogParts(text, {}, None)
    parts: dict[int, str] = {}
    for match, after in zip(matches, [*matches[1:], None], strict=True):
        number = int(match.group(1))
        end = after.start() if after is not None else len(text)
        parts[number] = parts.get(number, "") + text[match.start() : end]
    return LogParts(text[: matches[0].start()], parts, int(matches[0].group(1)))


def lead_owner(first: int | None, candidates: Iterable[int]) -> int | None:
    """Which attempt the text before a file's first header belongs to: the file's attempt just before
    that header (its header was cut off, as a relayed answer past its size is), else the first header's;
    with no header at all, the file's last attempt. None when the file has no attempt to give it to."""
    numbers = sorted(candidates)
    if first is None:
        return numbers[-1] if numbers else None
    earlier = [number for number in numbers if number < first]
    return earlier[-1] if earlier else first


def with_lead(found: LogParts, candidates: Iterable[int]) -> dict[int, str]:
    """`found`'s parts with its leading text put in front of the part it belongs to (`lead_owner`)."""
    parts = dict(found.parts)
    owner = lead_owner(found.first, candidates)
    if found.lead and owner is not None:
        parts[owner] = found.lead + parts.get(owner, "")
    return parts


def missing_line(run: AttemptRun, why: str) -> str:
    """The line that stands for an attempt's part that could not be read (one of nightshift's own lines,
    so `logs.last_output_in` never takes it for the job's output)."""
    return (
        f"{NIGHTSHIFT_MARK}the output of attempt {run.number}, on node {run.node}, is missing here: {why}\n"
    )


def join_parts(pieces: Sequence[str]) -> str:
    """The pieces one after another, each starting on a line of its own."""
    joined = ""
    for piece in pieces:
        if not piece:
            continue
        if joined and not joined.endswith("\n"):
            joined += "\n"
        joined += piece
    return joined


def last_lines(text: str, lines: int | None) -> str:
    """The last `lines` lines of `text` (all of it when None; nothing for 0, as `tail -n 0`)."""
    if lines is None:
        return text
    if lines <= 0:
        return ""
    return "".join(text.splitlines(keepends=True)[-lines:])


def starts_attempt_from(data: bytes, task_id: int, number: int) -> bool:
    """Whether `data` (bytes read from a log file) holds the header of attempt `number` or a later one: the
    file followed so far is where that attempt writes too."""
    text = data.decode("utf-8", errors="replace")
    return any(int(match.group(1)) >= number for match in _header(task_id).finditer(text))
