"""Files and folders of the data folder that only nightshift's own OS account may read.

Jobs run as their users' OS accounts (`run_as`) on the same machine as the service, so whatever the
service keeps world-readable, every member's job can read: the SQLite database (every team's specs, their
`env` values among them), the task logs, the Redis URL and password, another job's output folder. These
helpers create such paths owner-only and take the group and other bits off ones made before.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

PRIVATE_FILE_MODE = 0o600
PRIVATE_FOLDER_MODE = 0o700
_SHARED_BITS = stat.S_IRWXG | stat.S_IRWXO


def private_folder(path: Path) -> Path:
    """Create `path` (and missing parents) owner-only, or make an existing folder owner-only."""
    path.mkdir(mode=PRIVATE_FOLDER_MODE, parents=True, exist_ok=True)
    restrict(path)
    return path


def private_file(path: Path) -> Path:
    """Create `path` empty and owner-only when it is missing, else make it owner-only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE_FILE_MODE))
    restrict(path)
    return path


def write_private_text(path: Path, text: str) -> None:
    """Write `text` to `path`, which nobody but this account can read at any moment."""
    private_file(path)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def restrict(path: Path) -> None:
    """Take the group and other permission bits off `path` (not following a symlink); a path that is
    gone, or not ours to change, is left as it is."""
    with contextlib.suppress(FileNotFoundError, PermissionError):
        mode = os.lstat(path).st_mode
        if stat.S_ISLNK(mode) or not mode & _SHARED_BITS:
            return
        os.chmod(path, stat.S_IMODE(mode) & ~_SHARED_BITS)
