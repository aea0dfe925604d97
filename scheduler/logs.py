"""Reading task log files: the whole file, its last N lines, or what came after an offset."""

from __future__ import annotations

from pathlib import Path

TAIL_BLOCK_BYTES = 64 * 1024
MAX_WHOLE_BYTES = 32 * 1024 * 1024


def read_tail(path: Path, lines: int | None) -> tuple[str, int]:
    """The last `lines` lines of a log (all of it, up to 32 MiB, when None), and the file size read up to."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, 2)
            if lines is None:
                start = max(0, size - MAX_WHOLE_BYTES)
                handle.seek(start)
                return handle.read().decode("utf-8", errors="replace"), size
            data = b""
            position = size
            while position > 0 and data.count(b"\n") <= lines:
                step = min(TAIL_BLOCK_BYTES, position)
                position -= step
                handle.seek(position)
                data = handle.read(step) + data
    except FileNotFoundError:
        return "", 0
    kept = data.splitlines(keepends=True)[-lines:]
    return b"".join(kept).decode("utf-8", errors="replace"), size


def read_from(path: Path, offset: int) -> tuple[bytes, int]:
    """The bytes appended after `offset`, and the new offset (for `logs -f`)."""
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except FileNotFoundError:
        return b"", offset
    return data, offset + len(data)
