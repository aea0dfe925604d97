"""Reading task log files: the whole file, its last N lines, or what came after an offset.

Only a task's own log is ever served: the file is opened without following a symlink (`O_NOFOLLOW`), must be
a regular file with a single link (no hard link to a file elsewhere), and its folder must be where it
claims to be once resolved. Anything else reads as a missing log (empty), never as someone else's file.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

log = logging.getLogger(__name__)

TAIL_BLOCK_BYTES = 64 * 1024
MAX_WHOLE_BYTES = 32 * 1024 * 1024
LAST_OUTPUT_LINES = 5
LAST_OUTPUT_SCAN = 200  # lines read back to find where the last attempt began
LAST_OUTPUT_CHARS = 300
# Every line nightshift itself writes into a job's log starts with this (`executor.launch`: each attempt's
# header `==> nightshift task 8 attempt 1 on ...`, its command `==> $ ...`, `==> nightshift could not start
# the job: ...`; `executor.process`: `==> nightshift stops the job (...)`, `==> still running after ...`,
# and at the end `==> nightshift task 8 attempt 1 ended: ...`). The task's reason and message already say
# what they say; they are never the job's own output.
NIGHTSHIFT_MARK = "==> "
ATTEMPT_HEADER = "==> nightshift task "
ATTEMPT_END = " ended: "
# The job shell's own end line (`executor.exit_record`). Its worker takes it back as soon as it sees the job
# end (truncating the file) and writes its end line in its place, so a reader stops before it while that
# may still happen: a cursor past it would land inside the end line written there (`logs -f` then showed
# the end line's last words only). A line older than this stays: its worker is gone, and it is the end.
EXIT_RECORD_SAYS = "the job's shell exited with code "
EXIT_RECORD_TAKEN_WITHIN_S = 10.0
_EXIT_RECORD_AT_END = re.compile(
    rb"(?<![^\n])"
    + re.escape((NIGHTSHIFT_MARK + EXIT_RECORD_SAYS).encode())
    + rb"\d{1,3} \(run [0-9a-f]+\)\n\Z"
)
_EXIT_RECORD_MAX_BYTES = 256


class RefusedLogFile(FileNotFoundError):
    """Raised (and read as a missing log) when a log path is a symlink, a hard link or not a regular file."""


def append_note(path: Path, line: str) -> None:
    """Append `line` (one of nightshift's own, starting with `NIGHTSHIFT_MARK`) to an existing log, on a line
    of its own even when the output before it had no final newline. No symlink is followed and no file is
    created; a log that cannot be written is left as it is."""
    flags = os.O_RDWR | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
    with contextlib.suppress(OSError):
        fd = os.open(path, flags)
        try:
            size = os.fstat(fd).st_size
            fresh = size == 0 or os.pread(fd, 1, size - 1) == b"\n"
            os.write(fd, (("" if fresh else "\n") + line.rstrip("\n") + "\n").encode())
        finally:
            os.close(fd)


def open_log(path: Path) -> BinaryIO:
    """Open a task's log for reading, refusing symlinks, hard links and files outside its folder."""
    folder = path.parent
    try:
        real_folder = Path(os.path.realpath(folder))
    except OSError as error:
        raise FileNotFoundError(str(path)) from error
    # The folder must not be (or pass through) a symlink either: it is where the file claims to be.
    if real_folder != Path(os.path.abspath(folder)) or path.name in ("", ".", ".."):
        raise RefusedLogFile(str(path))
    descriptor = os.open(real_folder / path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            raise RefusedLogFile(str(path))
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


@contextlib.contextmanager
def _opened(path: Path) -> Iterator[BinaryIO | None]:
    """The open log, or None when it is missing or refused (a refusal is logged)."""
    try:
        handle = open_log(path)
    except RefusedLogFile:
        log.warning("refused to serve log file %s: a symlink, a hard link or not a regular file", path)
        yield None
        return
    except OSError:  # missing; ELOOP when the last component is a symlink
        if path.is_symlink():
            log.warning("refused to serve log file %s: it is a symlink", path)
        yield None
        return
    with handle:
        yield handle


def read_tail(path: Path, lines: int | None) -> tuple[str, int]:
    """The last `lines` lines of a log (all of it, up to 32 MiB, when None; nothing for 0, as `tail -n 0`),
    and the file size read up to."""
    with _opened(path) as handle:
        if handle is None:
            return "", 0
        size = _settled_size(handle)
        if lines is not None and lines <= 0:
            return "", size  # (a slice [-0:] would be the whole log)
        if lines is None:
            start = max(0, size - MAX_WHOLE_BYTES)
            handle.seek(start)
            return handle.read(size - start).decode("utf-8", errors="replace"), size
        data = b""
        position = size
        while position > 0 and data.count(b"\n") <= lines:
            step = min(TAIL_BLOCK_BYTES, position)
            position -= step
            handle.seek(position)
            data = handle.read(step) + data
    kept = data.splitlines(keepends=True)[-lines:]
    return b"".join(kept).decode("utf-8", errors="replace"), size


def read_from(path: Path, offset: int, limit: int | None = None) -> tuple[bytes, int]:
    """The bytes appended after `offset` (at most `limit` of them), and the new offset (for `logs -f`); a
    job shell's exit line its worker is about to replace is left for the next read."""
    with _opened(path) as handle:
        if handle is None:
            return b"", offset
        size = _settled_size(handle)
        if offset >= size:
            return b"", offset
        handle.seek(offset)
        data = handle.read(size - offset if limit is None else min(limit, size - offset))
    return data, offset + len(data)


def _settled_size(handle: BinaryIO) -> int:
    """The size of the open log up to what may still be taken back: a job shell's exit line that ends the
    file and was written less than `EXIT_RECORD_TAKEN_WITHIN_S` ago (see `EXIT_RECORD_SAYS`)."""
    size = handle.seek(0, 2)
    start = max(0, size - _EXIT_RECORD_MAX_BYTES)
    handle.seek(start)
    found = _EXIT_RECORD_AT_END.search(handle.read(size - start))
    if found is None or time.time() - os.fstat(handle.fileno()).st_mtime >= EXIT_RECORD_TAKEN_WITHIN_S:
        return size
    return start + found.start()


def log_exists(path: Path) -> bool:
    """Whether a task's log can be served from here (present, and not refused as `open_log` refuses)."""
    with _opened(path) as handle:
        return handle is not None


def last_output(path: Path, lines: int = LAST_OUTPUT_LINES) -> list[str]:
    """The last `lines` non-blank lines the job itself printed in its last attempt (every line nightshift
    wrote, `NIGHTSHIFT_MARK`, left out; each cut to `LAST_OUTPUT_CHARS`): what a failure most often says,
    as a traceback's last line does."""
    text, _ = read_tail(path, LAST_OUTPUT_SCAN)
    return last_output_in(text, lines)


def last_output_in(text: str, lines: int = LAST_OUTPUT_LINES) -> list[str]:
    """`last_output` of a log's text already read (its last `LAST_OUTPUT_SCAN` lines suffice)."""
    kept: list[str] = []
    for line in text.splitlines():
        if line.startswith(NIGHTSHIFT_MARK):
            if line.startswith(ATTEMPT_HEADER) and ATTEMPT_END not in line:
                kept = []  # an attempt starts: the lines before it are an earlier attempt's
        elif line.strip():
            kept.append(line if len(line) <= LAST_OUTPUT_CHARS else line[: LAST_OUTPUT_CHARS - 1] + "…")
    return kept[-lines:]
