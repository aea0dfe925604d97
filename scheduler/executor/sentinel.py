"""A watcher process that outlives its worker: when the worker dies, even by SIGKILL, it kills what is left
of the worker's jobs.

Without job cgroups a job's leader (`/bin/sh -c`) gets SIGKILL when the worker dies (the parent-death
signal), but only the leader (a job started in a spare shell has no such signal at all): a compound
command's children (`python prep.py && python train.py`, `cmd &`) would run on, holding GPUs, until a
restarted worker found them. The sentinel closes that gap.
The worker tells it, down a pipe, each job it starts (`watch`: the run token, the process group, the job's
cgroup where it has one, and the command that removes its docker container) and each job that is over
(`forget`), and where its cgroups are (`own_cgroups`). When the pipe reads end-of-file the worker is gone,
however it went: the sentinel SIGKILLs each watched job's cgroup and process group and every process that
carries a watched token, runs the cleanup commands, removes the worker's cgroups (its jobs', and the empty
ones its spare shells leave), and exits. A clean worker stop forgets every job first, so the sentinel then
has only the empty cgroups to remove.

One sentinel per worker, started with the first job; it runs in its own session, so a Ctrl-C meant for the
worker does not reach it, and the pipe's write end stays in the worker (close-on-exec), never in a job.
"""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from scheduler.executor.cgroups import JobCgroup, JobCgroups
from scheduler.executor.process import run_cleanup
from scheduler.executor.reaper import KILL_SETTLE_S, signal_group, signal_pids, take_process_snapshot

log = logging.getLogger(__name__)
_CLEANUP_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class WatchedJob:
    """What the sentinel needs to end one job: its process group, its cgroup (a folder, where it has one)
    and the command removing its container."""

    group: int | None = None
    cgroup: str | None = None
    cleanup: list[str] | None = None


@dataclass
class Watched:
    """What the sentinel was told: the jobs by run token, the worker's job cgroups (`JobCgroups`) and how
    the names of its spare shells' cgroups start."""

    jobs: dict[str, WatchedJob]
    cgroups: JobCgroups | None = None
    spare_prefix: str = ""


class JobSentinel:
    """The worker's side: starts the sentinel process on first use and keeps it told what runs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self._watched: dict[str, WatchedJob] = {}  # by run token
        self._cgroups: JobCgroups | None = None

    def watch(
        self,
        run_token: str,
        group: int | None = None,
        cleanup_argv: Sequence[str] | None = None,
        cgroup: Path | None = None,
    ) -> None:
        """Have the sentinel kill this job's processes (its process `group`, its `cgroup` and every process
        carrying its token) and run `cleanup_argv` if the worker dies."""
        job = WatchedJob(
            group, str(cgroup) if cgroup is not None else None, list(cleanup_argv) if cleanup_argv else None
        )
        with self._lock:
            self._watched[run_token] = job
            self._send(_watch_message(run_token, job))

    def own_cgroups(self, cgroups: JobCgroups) -> None:
        """Have the sentinel remove the cgroups of this worker process's spare shells once the worker is
        gone (only this process's: a new worker of the node may be starting its own). Told with the first
        job (the sentinel starts then), not before."""
        with self._lock:
            self._cgroups = cgroups
            if self._process is not None:
                self._send(_cgroups_message(cgroups))

    def forget(self, run_token: str) -> None:
        """The job is over (and swept): nothing of it is left to kill."""
        with self._lock:
            if run_token in self._watched:
                del self._watched[run_token]
                if self._process is not None:
                    self._send({"forget": run_token})

    @property
    def pid(self) -> int | None:
        """The sentinel process's pid, None before the first job."""
        return self._process.pid if self._process is not None else None

    def close(self) -> None:
        """End the sentinel (the worker stops): it kills whatever is still watched, then exits. A later
        `watch` starts a new one."""
        with self._lock:
            process, self._process = self._process, None
            self._watched.clear()
        if process is not None and process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
            try:
                process.wait(timeout=_CLEANUP_TIMEOUT_S + 5)
            except subprocess.TimeoutExpired:
                log.warning("the job sentinel (pid %s) did not exit", process.pid)

    def _send(self, message: dict[str, object]) -> None:
        """Write one line; a sentinel that is gone (killed by hand) is started again and told everything."""
        if self._process is None:
            self._start()  # it is told every watched job, this one included
            return
        try:
            assert self._process.stdin is not None
            self._process.stdin.write(json.dumps(message) + "\n")
            self._process.stdin.flush()
        except (OSError, ValueError):
            log.warning("the job sentinel (pid %s) is gone: starting a new one", self._process.pid)
            self._start()

    def _start(self) -> None:
        self._process = None
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", "from scheduler.executor.sentinel import main; main()"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=None,  # its warnings go where the worker's do
                start_new_session=True,
                close_fds=True,
                text=True,
            )
            assert process.stdin is not None
            if self._cgroups is not None:
                process.stdin.write(json.dumps(_cgroups_message(self._cgroups)) + "\n")
            for token, job in self._watched.items():
                process.stdin.write(json.dumps(_watch_message(token, job)) + "\n")
            process.stdin.flush()
        except (OSError, ValueError, subprocess.SubprocessError) as error:
            log.error("no job sentinel (%s): a killed worker's jobs may leave children running", error)
            return
        self._process = process


def _watch_message(run_token: str, job: WatchedJob) -> dict[str, object]:
    return {"watch": run_token, "group": job.group, "cleanup": job.cleanup, "cgroup": job.cgroup}


def _cgroups_message(cgroups: JobCgroups) -> dict[str, object]:
    return {"cgroups": str(cgroups.base), "owner": cgroups.owner, "spares": cgroups.spare_prefix()}


def _is_cgroups_message(message: dict[str, object]) -> bool:
    folder, owner, spares = message.get("cgroups"), message.get("owner"), message.get("spares")
    valid_folder = isinstance(folder, str) and folder.startswith("/")
    return valid_folder and isinstance(owner, str) and isinstance(spares, str) and bool(spares)


def serve(lines: IO[str]) -> Watched:
    """The sentinel's side: follow the worker's messages until end-of-file; return what is still watched."""
    watched = Watched({})
    for line in lines:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        if isinstance(message.get("watch"), str):
            group, cleanup, cgroup = message.get("group"), message.get("cleanup"), message.get("cgroup")
            valid = isinstance(cleanup, list) and all(isinstance(word, str) for word in cleanup)
            watched.jobs[message["watch"]] = WatchedJob(
                group if isinstance(group, int) and group > 1 else None,
                cgroup if isinstance(cgroup, str) and cgroup.startswith("/") else None,
                cleanup if valid else None,
            )
        elif isinstance(message.get("forget"), str):
            watched.jobs.pop(message["forget"], None)
        elif _is_cgroups_message(message):
            watched.cgroups = JobCgroups(Path(message["cgroups"]), message["owner"])
            watched.spare_prefix = message["spares"]
    return watched


def kill_leftovers(told: Watched, settle_s: float = KILL_SETTLE_S) -> None:
    """SIGKILL the watched jobs' cgroups, process groups and every process carrying one of their tokens,
    until two looks at /proc in a row find none (a process in the middle of an exec can show no environment
    for an instant), then run their cleanup commands and remove their cgroups and the worker's others."""
    watched = told.jobs
    deadline = time.monotonic() + settle_s
    cgroups = [JobCgroup(Path(job.cgroup)) for job in watched.values() if job.cgroup is not None]
    quiet = 0
    while quiet < 2:
        pids: set[int] = set()
        for cgroup in cgroups:
            pids.update(cgroup.kill_now())
        snapshot = take_process_snapshot()
        for token, job in watched.items():
            carriers = set(snapshot.tokens.get(token, ()))
            members = set(snapshot.groups.get(job.group, ())) if job.group is not None else set()
            if job.group is not None and members & carriers:
                # still this job's group: all of it goes, a child started with `env -i` or mid-fork too
                signal_group(job.group, signal.SIGKILL)
                pids |= members
            pids |= carriers
        if not pids:
            quiet += 1
        else:
            quiet = 0
            log.warning("worker gone: killing processes %s of its jobs", sorted(pids))
            signal_pids(pids, signal.SIGKILL)
            if time.monotonic() >= deadline:
                log.warning("processes %s survive SIGKILL", sorted(pids))
                break
        time.sleep(0.02)
    for job in watched.values():
        if job.cleanup:
            run_cleanup(job.cleanup)
    for cgroup in cgroups:
        cgroup.remove()
    if told.cgroups is not None:  # what the worker's spare shells left (they die with the worker)
        for cgroup in told.cgroups.owned(told.spare_prefix).values():
            cgroup.kill()
            cgroup.remove()


def main() -> None:
    """Entry point of the sentinel process (started by `JobSentinel`; it reads the worker's pipe)."""
    logging.basicConfig(level=logging.WARNING, format="nightshift sentinel: %(message)s")
    kill_leftovers(serve(sys.stdin))
