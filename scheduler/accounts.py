"""Which OS account a job runs as: never silently root.

A worker that is not root runs every job as its own account (it cannot do otherwise). A root worker runs a
job as the OS account the setting `run_as` maps the task's user to; with no mapping the job is refused
(`no_os_account`) unless `allow_root_jobs` says root may run it. Mapping a user to `root` itself also
needs `allow_root_jobs`.
"""

from __future__ import annotations

import json
import os
import pwd
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from scheduler.errors import ExecutorError

NO_OS_ACCOUNT = "no_os_account"


@dataclass(frozen=True, slots=True)
class OsAccount:
    """An OS account a job runs as: the executor switches to it between fork and exec."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    home: str


def lookup_account(name: str) -> OsAccount:
    """The OS account `name` with its supplementary groups; ExecutorError when it does not exist."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise ExecutorError(
            f"OS account {name!r} (from the run_as setting) does not exist on this node", reason=NO_OS_ACCOUNT
        ) from None
    groups = tuple(sorted(set(os.getgrouplist(entry.pw_name, entry.pw_gid))))
    return OsAccount(entry.pw_name, entry.pw_uid, entry.pw_gid, groups, entry.pw_dir)


def _mapping_hint(user: str) -> str:
    """How to map `user` in `run_as`: to the OS account of the same name when there is one and it is not
    root (a mapping to root would be refused too), else to an account the admin picks."""
    try:
        same_name_ok = pwd.getpwnam(user).pw_uid != 0
    except KeyError:
        same_name_ok = False
    example = json.dumps({user: user if same_name_ok else "ACCOUNT"})
    return f"map it to an OS account in the run_as setting (e.g. NIGHTSHIFT_RUN_AS='{example}')"


def root_worker_warning(run_as: Mapping[str, str], allow_root_jobs: bool, euid: int) -> str | None:
    """The warning a worker logs at start when it runs as root: which jobs it will refuse (None if none)."""
    if euid != 0 or allow_root_jobs:
        return None
    mapped = ", ".join(sorted(run_as)) or "none"
    return (
        "this worker runs as root: it runs each job as the OS account run_as maps its user to (mapped: "
        f"{mapped}) and refuses the jobs of other users (no_os_account); set allow_root_jobs "
        "(NIGHTSHIFT_ALLOW_ROOT_JOBS=true) to run them as root on a one-person box"
    )


def account_for(
    user: str,
    run_as: Mapping[str, str],
    allow_root_jobs: bool,
    *,
    euid: Callable[[], int] = os.geteuid,
) -> OsAccount | None:
    """The account a job of `user` runs as; None = as the worker itself. ExecutorError when refused."""
    if euid() != 0:
        return None
    mapped = run_as.get(user)
    if mapped is None:
        if allow_root_jobs:
            return None
        raise ExecutorError(
            f"the worker runs as root and user {user!r} has no OS account to run jobs as: "
            f"{_mapping_hint(user)}, or set allow_root_jobs (NIGHTSHIFT_ALLOW_ROOT_JOBS=true) to run it "
            "as root",
            reason=NO_OS_ACCOUNT,
        )
    account = lookup_account(mapped)
    if account.uid == 0 and not allow_root_jobs:
        raise ExecutorError(
            f"user {user!r} is mapped to the root account {mapped!r}, and allow_root_jobs is off",
            reason=NO_OS_ACCOUNT,
        )
    return None if account.uid == 0 else account
