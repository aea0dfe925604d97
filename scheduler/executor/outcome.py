"""What became of a job: its exit code or signal, and why it ended, in words the task's status can carry.

The reasons:

- `exit`: exit code 0, the job succeeded.
- `nonzero_exit`: it exited with another code.
- `timeout`, `cancelled`, `lost_lease`, `worker_shutdown` (the worker itself stops, a restart: the task goes
  back to the queue): the worker stopped it; the reason given to `RunningJob.stop()` wins over whatever exit
  code or signal the job then ended with (a job that saves and exits 0 on SIGTERM after a cancel is still
  `cancelled`).
- `signal`: a signal nightshift did not send killed it.
- `oom`: it failed on its own (nonzero exit, or a signal such as the kernel OOM killer's SIGKILL, seen by a
  shell as exit 137) and the last lines of its log mention running out of memory (`CUDA out of memory`,
  `OutOfMemoryError`, `MemoryError`, `oom-kill`, `Killed process`). A heuristic: the kernel's OOM killer
  writes to the kernel log, not ours, so a silent SIGKILL stays `signal`.
"""

from __future__ import annotations

import re
import signal as signals
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

StopReason = Literal["timeout", "output_limit", "cancelled", "requeued", "lost_lease", "worker_shutdown"]
OutcomeReason = Literal[
    "exit",
    "nonzero_exit",
    "timeout",
    "output_limit",
    "cancelled",
    "requeued",
    "lost_lease",
    "worker_shutdown",
    "signal",
    "oom",
]
STOP_REASONS: frozenset[str] = frozenset(
    {"timeout", "output_limit", "cancelled", "requeued", "lost_lease", "worker_shutdown"}
)

OOM_TAIL_BYTES = 64 * 1024
OOM_TAIL_LINES = 50
_OOM = re.compile(
    r"out of memory|OutOfMemoryError|\bMemoryError\b|oom[-_ ]kill|Killed process", re.IGNORECASE
)


@dataclass(frozen=True)
class JobOutcome:
    """How a job ended: `exit_code` when it exited, `signal` when a signal killed it, and the reason why."""

    exit_code: int | None
    signal: int | None
    reason: OutcomeReason
    # set when some of its processes outlived the stop signal's grace (seconds) and were killed by SIGKILL
    outlived_grace_s: float | None = None

    @property
    def succeeded(self) -> bool:
        """True only for a job that exited 0 on its own."""
        return self.reason == "exit"

    def describe(self) -> str:
        """One human line: `exit code 1`, `exit code 127 (command not found)` (the shell's meaning of 127 and
        126), `stopped at its time limit (killed by SIGTERM)`, `out of memory (exit code 1)`, `killed by
        SIGSEGV (not sent by nightshift)`, `cancelled (killed by SIGKILL after its 10-s grace)`."""
        if self.outlived_grace_s is not None:
            how = f"killed by SIGKILL after its {self.outlived_grace_s:g}-s grace"
        elif self.signal is not None:
            try:
                how = f"killed by {signals.Signals(self.signal).name}"
            except ValueError:
                how = f"killed by signal {self.signal}"
        else:
            how = f"exit code {self.exit_code}"
        if self.reason == "nonzero_exit" and self.exit_code in _SHELL_EXIT_WORDS:
            return f"{how} ({_SHELL_EXIT_WORDS[self.exit_code]})"
        if self.reason == "signal":
            return f"{how} (not sent by nightshift)"
        words = _REASON_WORDS.get(self.reason)
        return how if words is None else f"{words} ({how})"


# what `/bin/sh -c` means by these codes: the command's first word was not found, or is not executable
_SHELL_EXIT_WORDS = {127: "command not found", 126: "not executable"}

_REASON_WORDS = {
    "timeout": "stopped at its time limit",
    "output_limit": "stopped: its output passed the log size limit",
    "cancelled": "cancelled",
    "requeued": "stopped and put back in the queue",
    "lost_lease": "stopped: its worker lost the task's lease",
    "worker_shutdown": "stopped: its worker is shutting down; the task goes back to the queue",
    "oom": "out of memory",
}


def log_mentions_oom(log_path: Path, start_offset: int = 0) -> bool:
    """True when the last lines of the log (after `start_offset`, this attempt's header) mention OOM."""
    try:
        with open(log_path, "rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(start_offset, size - OOM_TAIL_BYTES))
            tail = handle.read().decode(errors="replace")
    except OSError:
        return False
    return any(_OOM.search(line) for line in tail.splitlines()[-OOM_TAIL_LINES:])


def classify(
    returncode: int,
    stop_reason: StopReason | None,
    log_path: Path,
    log_offset: int,
    outlived_grace_s: float | None = None,
) -> JobOutcome:
    """Turn a leader's return code (negative = killed by that signal) and the stop reason into an outcome;
    a job stopped with processes that outlived the grace (`outlived_grace_s`) ended by SIGKILL, whatever
    its leader did."""
    if stop_reason is not None and outlived_grace_s is not None:
        return JobOutcome(None, signals.SIGKILL, stop_reason, outlived_grace_s)
    exit_code = returncode if returncode >= 0 else None
    signal = -returncode if returncode < 0 else None
    reason: OutcomeReason
    if stop_reason is not None:
        reason = stop_reason
    elif returncode == 0:
        reason = "exit"
    elif log_mentions_oom(log_path, log_offset):
        reason = "oom"
    elif signal is not None:
        reason = "signal"
    else:
        reason = "nonzero_exit"
    return JobOutcome(exit_code=exit_code, signal=signal, reason=reason)
