"""Jobs start with every signal at its default, whatever the worker ignores or blocks.

A process keeps signals its parent ignored or blocked across exec, and a POSIX shell cannot trap a signal
that was ignored when it started. A worker started in the background by a script (`cmd &` ignores SIGINT and
SIGQUIT) would hand that on to every job: a spec's `stop_signal: INT` would do nothing, and a Python job
would never see KeyboardInterrupt. Slurm's job steps, too, start with default signals.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import signal
import subprocess

log = logging.getLogger(__name__)

_ENV_DEFAULT_SIGNALS: list[list[str]] = []  # the `env --default-signal` prefix, or [] where `env` lacks it


# Signals `subprocess` itself puts back to their defaults in the child (`restore_signals`).
_RESTORED_BY_POPEN = frozenset(
    int(s)
    for s in (getattr(signal, name, None) for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ"))
    if s is not None
)


# Signals 1-31; the real-time ones above are left as they are (glibc reserves 32 and 33 for itself).
_STANDARD = (1 << 31) - 1


def default_signals_prefix() -> list[str]:
    """`env --default-signal` to put in front of a job's command line when this thread ignores or blocks a
    signal the job would inherit, else [] (usually: then the job costs no extra exec)."""
    ignored, blocked = _inherited_signal_masks()
    if not (ignored & ~_mask(_RESTORED_BY_POPEN) & _STANDARD) and not (blocked & _STANDARD):
        return []
    if not _ENV_DEFAULT_SIGNALS:  # GNU coreutils >= 8.31; checked once
        env = shutil.which("env")
        works = False
        if env is not None:
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                probe = [env, "--default-signal", "true"]
                works = subprocess.run(probe, capture_output=True, timeout=10, check=False).returncode == 0
        if not works:
            log.warning(
                "this node's `env` has no --default-signal: jobs inherit the worker's ignored signals"
            )
        _ENV_DEFAULT_SIGNALS.append([env, "--default-signal"] if env is not None and works else [])
    return _ENV_DEFAULT_SIGNALS[0]


def _inherited_signal_masks() -> tuple[int, int]:
    """(ignored, blocked) signals of the calling thread, as the kernel's bit masks (bit n-1 = signal n)."""
    ignored = blocked = 0
    with contextlib.suppress(OSError, ValueError), open("/proc/thread-self/status") as status:
        for line in status:
            if line.startswith("SigIgn:"):
                ignored = int(line.split()[1], 16)
            elif line.startswith("SigBlk:"):
                blocked = int(line.split()[1], 16)
    return ignored, blocked


def _mask(signals: frozenset[int]) -> int:
    return sum(1 << (s - 1) for s in signals)
