"""A job's own record of how it ended, in its log: what settles it when its worker died before it could.

A job's end reaches SQL through its worker: the worker sees the leader exit, then writes the outcome. A
worker killed in between (SIGKILL, OOM, a crash) leaves the task `running` with a job that has finished,
and the task would be requeued as a lost worker's and run a second time. So the job's shell records its own
end: the command runs behind an EXIT trap (`with_exit_record`) that prints one line to the job's log,

    ==> the job's shell exited with code 0 (run 3f9a61c2d0b7e4a5)

naming the attempt by a digest of its run token. A worker that sees the job end replaces that line by its
own end line (`take_exit_record`, then `... attempt 1 ended: exit code 0 after 12.0 s at ...`), so a log
reads as it always did. Whoever settles an attempt whose worker is gone (the restarted worker, the
scheduler's reaper) first looks for either line (`recorded_exit`): found, the attempt ends as the job did;
not found, it is a lost worker's, retried as before.

The trap runs when the shell exits on its own, `exit N` and `set -e` included. It does not run when a signal
kills the shell (a stop, the worker's death, the sentinel's SIGKILL), nor after a command that `exec`s
or a job that sets its own EXIT trap or redirects its shell's output: then no line is written and nothing
changes. The line starts with nightshift's log mark (`==> `), so it is never taken for the job's output.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shlex
from pathlib import Path
from typing import NamedTuple

from scheduler.logs import EXIT_RECORD_SAYS, NIGHTSHIFT_MARK, open_log

EXIT_RECORD_SCAN_BYTES = 256 * 1024  # how far back from a log's end the line is looked for
_TAG_CHARS = 16
_SAYS = EXIT_RECORD_SAYS
_LINE_BYTES = 256  # more than one exit line


def run_tag(run_token: str) -> str:
    """The short name of one attempt in its exit line (a digest of its run token, which holds its lease)."""
    return hashlib.sha256(run_token.encode()).hexdigest()[:_TAG_CHARS]


def with_exit_record(command: str, run_token: str) -> str:
    """`command` (a `/bin/sh -c` script) behind an EXIT trap that prints its exit code and run tag to the
    job's output; the shell's exit code stays the command's. On the same line, so the command's own line
    numbers in error messages do not move."""
    action = 'echo "' + f"{NIGHTSHIFT_MARK}{_SAYS}$? (run {run_tag(run_token)})" + '"'
    return f"trap {shlex.quote(action)} EXIT; {command}"


def _exit_line(run_token: str) -> re.Pattern[str]:
    return re.compile(
        rf"{re.escape(NIGHTSHIFT_MARK + _SAYS)}(\d{{1,3}}) \(run {run_tag(run_token)}\)$", re.MULTILINE
    )


def _ended_line(task_id: int, attempt: int) -> re.Pattern[str]:
    """The worker's end line of an attempt that ended on its own with an exit code (`executor.process`:
    `... attempt 2 ended: exit code 0 after ...`, `... ended: out of memory (exit code 1) ...`); the end
    line of a stop (`ended: cancelled (...)`) does not match: that attempt is retried as a lost one."""
    return re.compile(
        rf"^==> nightshift task {int(task_id)} attempt {int(attempt)} ended: "
        r"(?:out of memory \()?exit code (\d{1,3})",
        re.MULTILINE,
    )


class RecordedExit(NamedTuple):
    """The exit code a job ended with, by its log, and whether the worker's end line already says so."""

    code: int
    end_line_written: bool


def recorded_exit(log_path: Path, run_token: str, task_id: int, attempt: int | None) -> RecordedExit | None:
    """How attempt `attempt` of `task_id` (run token `run_token`) ended, by its log: the shell's exit
    line, or the end line the worker wrote in its place. None when it recorded none (it is still running,
    was stopped or killed, or its log is not on this machine)."""
    try:
        with open_log(log_path) as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - EXIT_RECORD_SCAN_BYTES))
            tail = handle.read().decode("utf-8", errors="replace")
    except OSError:  # missing, or refused (`RefusedLogFile`)
        return None
    found = _exit_line(run_token).findall(tail)
    if found:
        return RecordedExit(int(found[-1]), False)
    ended = _ended_line(task_id, attempt).findall(tail) if attempt is not None else []
    return RecordedExit(int(ended[-1]), True) if ended else None


def take_exit_record(log_path: Path, run_token: str) -> None:
    """Remove the shell's exit line from the end of the log, where the worker then writes its own end line
    (which `recorded_exit` reads as well): a finished job's log reads as before, its output then the end
    line. Called when the job is over (nothing of it writes any more); a log that ends otherwise (output a
    child wrote after the shell's exit) is left as it is."""
    opening = (NIGHTSHIFT_MARK + _SAYS).encode()
    with contextlib.suppress(OSError):
        fd = os.open(log_path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
        try:
            size = os.fstat(fd).st_size
            start = max(0, size - _LINE_BYTES)
            tail = os.pread(fd, size - start, start)
            at = tail.rfind(opening)
            line = tail[at:].decode("utf-8", errors="replace") if at >= 0 else ""
            if line.endswith("\n") and _exit_line(run_token).fullmatch(line[:-1]):
                os.ftruncate(fd, start + at)
        finally:
            os.close(fd)
