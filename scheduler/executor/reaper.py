"""Find and kill a job's processes by the run token in their environment, or by their process group.

Every job process inherits `NIGHTSHIFT_RUN_TOKEN=<token>` (unique per attempt). A process that left the
job's process group (`setsid`, a double fork, a daemonizing library, a docker container's processes seen
from the host) still carries it in `/proc/<pid>/environ`, which is the environment it was *started* with.
That makes the token the way to find stragglers, and the way a restarted worker finds jobs it no longer
owns (reconciliation). It is best effort: a process started with a scrubbed environment (`env -i`) escapes
it (the job's cgroup holds such a process, where the node gives jobs one: `cgroups.py`), and processes of
other users are skipped when the kernel denies reading their environment.

A zombie (exited, not yet reaped by its parent) reads as an empty environment and counts as gone: it holds
no memory and no GPU.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from scheduler.errors import ExecutorError

TOKEN_VAR = "NIGHTSHIFT_RUN_TOKEN"
KILL_SETTLE_S = 5.0
_SETTLE_POLL_S = 0.02
_TOKEN = re.compile(r"[A-Za-z0-9._:-]{8,200}")
_PROC = "/proc"

log = logging.getLogger(__name__)


_NODE_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_NODE_TOKEN = re.compile(
    r"(?P<node>[A-Za-z0-9._-]{1,120}):task(?P<task>[0-9]{1,18}):(?P<lease>[A-Za-z0-9._-]{1,64})"
)


def node_token_part(node: str) -> str:
    """A node name as it appears in run tokens (characters outside `A-Za-z0-9._-` become `_`)."""
    return _NODE_UNSAFE.sub("_", node)[:100] or "_"


def make_run_token(node: str, task_id: int, lease_token: str) -> str:
    """The run token of one attempt: `<node>:task<id>:<lease token>`, so a restarted worker knows its own."""
    return check_run_token(f"{node_token_part(node)}:task{int(task_id)}:{lease_token}")


def parse_run_token(run_token: str) -> tuple[str, int, str] | None:
    """(node part, task id, lease token) of a token made by `make_run_token`; None for any other token."""
    match = _NODE_TOKEN.fullmatch(run_token)
    if match is None:
        return None
    return match["node"], int(match["task"]), match["lease"]


def check_run_token(run_token: str) -> str:
    """Return the token when it is safe to match on (8–200 of `A-Za-z0-9._:-`), else raise ExecutorError."""
    if not _TOKEN.fullmatch(run_token):
        raise ExecutorError(
            f"run token {run_token!r} must be 8 to 200 letters, digits or ._:- (a unique id per attempt)"
        )
    return run_token


def _pids() -> list[int]:
    return [int(name) for name in os.listdir(_PROC) if name.isdigit()]


def _environ(pid: int) -> list[bytes]:
    try:
        with open(f"{_PROC}/{pid}/environ", "rb") as handle:
            return handle.read().split(b"\0")
    except OSError:  # vanished, or another user's process
        return []


def _stat(pid: int) -> tuple[str, int] | None:
    """Return (state, process group id) of a process, or None when it is gone."""
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    # The command name in parentheses may itself contain spaces or parentheses: split after the last ')'.
    fields = raw[raw.rfind(b")") + 2 :].split()
    return fields[0].decode(), int(fields[2])


def find_processes_with_token(run_token: str) -> list[int]:
    """List live processes (not zombies, not this one) started with this job's run token in their env."""
    entry = f"{TOKEN_VAR}={check_run_token(run_token)}".encode()
    own = os.getpid()
    return [pid for pid in _pids() if pid != own and entry in _environ(pid)]


def found_twice_over(look: Callable[[], list[int]]) -> list[int]:
    """What `look` (a scan of /proc) finds, looked at once more after a moment when it finds nothing: a
    process in the middle of an exec shows no environment for an instant, and one look would miss it."""
    found = look()
    if not found:
        time.sleep(_SETTLE_POLL_S)
        found = look()
    return found


def run_token_of(pid: int) -> str | None:
    """The run token in a process's environment: the nightshift job it belongs to (None: no job's, gone, or
    another user's process this one may not read)."""
    prefix = f"{TOKEN_VAR}=".encode()
    for entry in _environ(pid):
        if entry.startswith(prefix):
            return entry[len(prefix) :].decode(errors="replace")
    return None


def find_run_tokens() -> dict[str, list[int]]:
    """Map each run token on this machine to its live processes, for a restarted worker's reconciliation."""
    own = os.getpid()
    found: dict[str, list[int]] = {}
    for pid in _pids():
        token = run_token_of(pid) if pid != own else None
        if token is not None:
            found.setdefault(token, []).append(pid)
    return found


def job_processes(run_token: str, pgid: int | None) -> list[int]:
    """Live processes carrying this run token, plus (when `pgid` is given) the live members of that group.

    One pass over /proc instead of `find_processes_with_token` and `group_members` one after the other.
    """
    entry = f"{TOKEN_VAR}={check_run_token(run_token)}".encode()
    own = os.getpid()
    found = []
    for pid in _pids():
        if pid == own:
            continue
        if pgid is not None:
            stat = _stat(pid)
            if stat is not None and stat[1] == pgid and stat[0] not in ("Z", "X"):
                found.append(pid)
                continue
        if entry in _environ(pid):
            found.append(pid)
    return found


@dataclass(frozen=True, slots=True)
class ProcessSnapshot:
    """Every live process of this machine (but the caller) at one moment: its group and its run token.

    Taken once for all jobs that ended together, so that checking each for leftovers does not read every
    process's environment again: with 64 jobs ending at once that is one pass over /proc instead of 64.
    """

    groups: dict[int, tuple[int, ...]]  # process group -> live (non-zombie) members
    tokens: dict[str, tuple[int, ...]]  # run token -> live processes carrying it

    def job_processes(self, run_token: str, pgid: int | None) -> list[int]:
        """What `job_processes` would have found when the snapshot was taken."""
        found = set(self.tokens.get(run_token, ()))
        if pgid is not None:
            found.update(self.groups.get(pgid, ()))
        return sorted(found)


def take_process_snapshot() -> ProcessSnapshot:
    """One pass over /proc: each live process's group and run token (zombies count as gone)."""
    prefix = f"{TOKEN_VAR}=".encode()
    own = os.getpid()
    groups: dict[int, list[int]] = {}
    tokens: dict[str, list[int]] = {}
    for pid in _pids():
        if pid == own:
            continue
        stat = _stat(pid)
        if stat is None or stat[0] in ("Z", "X"):
            continue
        groups.setdefault(stat[1], []).append(pid)
        for entry in _environ(pid):
            if entry.startswith(prefix):
                tokens.setdefault(entry[len(prefix) :].decode(errors="replace"), []).append(pid)
                break
    return ProcessSnapshot(
        {group: tuple(pids) for group, pids in groups.items()},
        {token: tuple(pids) for token, pids in tokens.items()},
    )


def group_members(pgid: int) -> list[int]:
    """List live (non-zombie) processes whose process group is `pgid`."""
    members = []
    for pid in _pids():
        stat = _stat(pid)
        if stat is not None and stat[1] == pgid and stat[0] not in ("Z", "X"):
            members.append(pid)
    return members


def signal_pids(pids: Iterable[int], sig: int) -> None:
    """Send `sig` to each pid, skipping those that are gone or not ours to signal."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def signal_group(pgid: int, sig: int) -> None:
    """Send `sig` to a process group, ignoring a group that is already gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def kill_processes_with_token(run_token: str, *, settle_s: float = KILL_SETTLE_S) -> list[int]:
    """SIGKILL every process carrying the token until none is left (or settle_s passes); list them."""
    check_run_token(run_token)
    killed: set[int] = set()
    deadline = time.monotonic() + settle_s
    while pids := found_twice_over(lambda: find_processes_with_token(run_token)):
        signal_pids(pids, signal.SIGKILL)
        killed.update(pids)
        if time.monotonic() >= deadline:
            log.warning("processes %s of run %s survive SIGKILL after %.1f s", pids, run_token, settle_s)
            break
        time.sleep(_SETTLE_POLL_S)
    return sorted(killed)
