"""Which processes on a GPU are not nightshift's jobs, and whose they are.

The driver lists the processes using each GPU (`GpuInfo.processes`). Those of nightshift's jobs carry their
run token in their environment, are in a job's process group, or sit in a job cgroup; any other one (a
notebook, a training run started by hand) holds memory that no task's end gives back. `nightshift gpus`
shows them with their owner (and, to admins, their command: a command line may hold a secret), and a task
kept out by their memory is told whose it is.

A pid the driver reports from another pid namespace (a worker in a container) may not be visible here:
it is still listed, with its memory, but without owner or command.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from scheduler.executor.cgroups import FOLDER
from scheduler.executor.reaper import run_token_of
from scheduler.gpus.inventory import GpuProcess

COMMAND_CHARS = 80
_PROC = Path("/proc")


@dataclass(frozen=True, slots=True)
class OutsideProcess:
    """A process using a GPU that is none of nightshift's jobs; user and command None where not visible."""

    pid: int
    used_mib: int | None = None
    user: str | None = None
    command: str | None = None

    def describe(self) -> str:
        """`"pid 4242 of alice"`, or `"pid 4242"` when its owner cannot be seen from here: what a waiting
        task's reason says, which anyone whose task waits reads (never the command: it may hold a secret)."""
        return f"pid {self.pid}" + (f" of {self.user}" if self.user else "")


def outside_processes(
    processes: Sequence[GpuProcess] | None, job_groups: Collection[int]
) -> tuple[OutsideProcess, ...]:
    """The processes of `processes` that are no nightshift job's (`job_groups`: the process groups of this
    worker's jobs), largest memory first; () when the driver does not list processes."""
    found = [
        _describe(process)
        for process in processes or ()
        if process.pid != os.getpid() and not _is_a_job(process.pid, job_groups)
    ]
    return tuple(sorted(found, key=lambda p: (-(p.used_mib or 0), p.pid)))


def outside_memory_mib(
    processes: Sequence[GpuProcess] | None, outside: Sequence[OutsideProcess]
) -> int | None:
    """The memory the `outside` processes hold in all; None unless the driver listed the GPU's processes
    (`processes`) and gave each outside one's memory."""
    if processes is None or any(process.used_mib is None for process in outside):
        return None
    return sum(process.used_mib or 0 for process in outside)


def job_processes(
    processes: Sequence[GpuProcess] | None, by_group: Mapping[int, int], by_token: Mapping[str, int]
) -> dict[int, int] | None:
    """Pid -> task id for the processes of `processes` that are a job's: in its process group (`by_group`:
    a job leader's pid, which is its group, -> task) or carrying its run token (`by_token`); someone else's
    are left out. None when one cannot be seen from here (another pid namespace, or gone): whose it is,
    and so each task's memory, is then unknown."""
    owners: dict[int, int] = {}
    for process in processes or ():
        try:
            task_id = by_group.get(os.getpgid(process.pid))
        except OSError:
            return None
        if task_id is None:
            token = run_token_of(process.pid)
            task_id = by_token.get(token) if token is not None else None
        if task_id is not None:
            owners[process.pid] = task_id
    return owners


def _is_a_job(pid: int, job_groups: Collection[int]) -> bool:
    try:
        if os.getpgid(pid) in job_groups:
            return True
    except OSError:  # not visible here (another pid namespace) or gone
        return False
    try:
        if f"/{FOLDER}/" in (_PROC / str(pid) / "cgroup").read_text():
            return True
    except OSError:  # gone
        return False
    return run_token_of(pid) is not None


def _describe(process: GpuProcess) -> OutsideProcess:
    try:
        found = psutil.Process(process.pid)
        with found.oneshot():
            user = found.username()
            words = found.cmdline() or [found.name()]
    except (psutil.Error, OSError):
        return OutsideProcess(process.pid, process.used_mib)
    command = " ".join(
        " ".join([os.path.basename(words[0]), *words[1:]]).split()
    )  # one line: a reason holds it
    if len(command) > COMMAND_CHARS:
        command = command[: COMMAND_CHARS - 1] + "…"
    return OutsideProcess(process.pid, process.used_mib, user, command)
