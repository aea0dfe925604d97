"""A child process that dies with the process that started it: Linux's parent-death signal.

Set by `setpriv --pdeathsig` (util-linux) in front of the command where it exists, which keeps `subprocess`
on its fast vfork path; else by `prctl` in a `preexec_fn`. The signal fires when the *thread* that started
the child exits, so only threads that live as long as their process should start such children.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
from collections.abc import Callable
from typing import Any

PR_SET_PDEATHSIG = 1
_SETPRIV: list[str | None] = []  # `setpriv`, looked up once


def setpriv_path() -> str | None:
    """The `setpriv` binary, or None where util-linux's is missing."""
    if not _SETPRIV:
        _SETPRIV.append(shutil.which("setpriv"))
    return _SETPRIV[0]


def pdeathsig_prefix(sig: signal.Signals) -> list[str]:
    """`setpriv --pdeathsig SIG --` to put in front of a command so that it gets `sig` when the thread
    starting it dies; [] where setpriv is missing (then `die_with_parent` is the way)."""
    setpriv = setpriv_path()
    return [setpriv, "--pdeathsig", sig.name.removeprefix("SIG"), "--"] if setpriv is not None else []


def _load_prctl() -> Callable[..., int] | None:
    try:
        prctl: Any = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl  # type: ignore[no-any-return]


# Looked up once here, in the parent: the child between fork and exec should only call it, not load libraries.
_PRCTL = _load_prctl()


def die_with_parent(parent_pid: int, sig: signal.Signals = signal.SIGKILL) -> Callable[[], None]:
    """A `preexec_fn` that has the child get `sig` when its parent dies, and `sig` at once if the parent
    died before that took effect. Runs after Popen switched accounts (a change of credentials clears the
    parent-death signal, so it must be set afterwards)."""

    def preexec() -> None:
        # Fail-safe: without the parent-death signal the child still runs (jobs: the token sweep finds it).
        with contextlib.suppress(Exception):
            if _PRCTL is not None:
                _PRCTL(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
            if os.getppid() != parent_pid:
                os.kill(os.getpid(), sig)

    return preexec
