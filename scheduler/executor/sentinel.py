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

A worker that is alive but stopped (Ctrl-Z, SIGSTOP, a frozen VM, a hung interpreter) writes nothing and
renews no lease: after a lease TTL its tasks are started elsewhere while its jobs still run. So the worker
says how long its silence may last (`silence_s`: a little less than the lease TTL) when it starts the
sentinel, and that it is alive every heartbeat interval (`alive`); a sentinel that hears nothing for that
long kills the watched jobs (not the spare shells, which a resumed
worker may use), before their leases run out, and goes on listening. Before it kills them it writes their
run tokens to its stdout (`{"killed": [...]}`), a pipe the worker reads when it resumes: a job that died by
SIGKILL is the sentinel's doing exactly when its token is there (`JobSentinel.take_killed`), so the worker
leaves its task to the reaper (a lost worker's, retried) instead of failing it. The worker's own clock cannot
tell: its ticks come late on a loaded machine, and the last one before a stop may never have been sent.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
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

    def __init__(self, silence_s: float | None = None) -> None:
        self.silence_s = silence_s  # None: the sentinel acts only when the worker is gone
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self._watched: dict[str, WatchedJob] = {}  # by run token
        self._cgroups: JobCgroups | None = None
        self._killed: set[str] = set()  # run tokens the sentinel said it killed, not yet taken
        self._unread = b""  # the start of a line the sentinel has not finished writing

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

    def alive(self) -> None:
        """Tell a running sentinel that the worker is alive: it kills the watched jobs once it hears nothing
        for `silence_s` (the worker stopped: their leases are about to run out). Starts nothing."""
        with self._lock:
            if self._process is not None and self.silence_s is not None:
                self._send({"alive": self.silence_s})

    def take_killed(self, run_token: str) -> bool:
        """Whether the sentinel killed this job for a silence of the worker (it says so before it kills);
        asked once per job end, so the answer is forgotten once given."""
        with self._lock:
            self._read_reports()
            if run_token in self._killed:
                self._killed.discard(run_token)
                return True
            return False

    def read_reports(self) -> None:
        """Take in what the sentinel said so far (the keepalive calls it, so its pipe never fills)."""
        with self._lock:
            self._read_reports()

    def _read_reports(self) -> None:
        process = self._process
        if process is None or process.stdout is None:
            return
        chunks = [self._unread]
        with contextlib.suppress(BlockingIOError, OSError, ValueError):
            while chunk := os.read(process.stdout.fileno(), 65536):
                chunks.append(chunk)
        *lines, self._unread = b"".join(chunks).split(b"\n")
        for line in lines:
            self._killed.update(_killed_tokens(line))

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
        _close_reports(process)

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
        self._read_reports()  # a sentinel killed by hand may have killed jobs first
        _close_reports(self._process)
        self._process, self._unread = None, b""
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", "from scheduler.executor.sentinel import main; main()"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,  # what it killed (`take_killed`)
                stderr=None,  # its warnings go where the worker's do
                start_new_session=True,
                close_fds=True,
                text=True,
            )
            assert process.stdin is not None and process.stdout is not None
            os.set_blocking(process.stdout.fileno(), False)
            if self.silence_s is not None:  # from its first moment: the worker may stop right after a start
                process.stdin.write(json.dumps({"alive": self.silence_s}) + "\n")
            if self._cgroups is not None:
                process.stdin.write(json.dumps(_cgroups_message(self._cgroups)) + "\n")
            for token, job in self._watched.items():
                process.stdin.write(json.dumps(_watch_message(token, job)) + "\n")
            process.stdin.flush()
        except (OSError, ValueError, subprocess.SubprocessError) as error:
            log.error("no job sentinel (%s): a killed worker's jobs may leave children running", error)
            return
        self._process = process


def _close_reports(process: subprocess.Popen[str] | None) -> None:
    """Close the worker's end of a sentinel's report pipe (a sentinel gone or replaced)."""
    if process is not None and process.stdout is not None:
        with contextlib.suppress(OSError):
            process.stdout.close()


def _killed_tokens(line: bytes) -> list[str]:
    """The run tokens of one `killed` report of the sentinel (none for a line that is not one)."""
    try:
        message = json.loads(line)
    except ValueError:
        return []
    tokens = message.get("killed") if isinstance(message, dict) else None
    return [token for token in tokens if isinstance(token, str)] if isinstance(tokens, list) else []


def _watch_message(run_token: str, job: WatchedJob) -> dict[str, object]:
    return {"watch": run_token, "group": job.group, "cleanup": job.cleanup, "cgroup": job.cgroup}


def _cgroups_message(cgroups: JobCgroups) -> dict[str, object]:
    return {"cgroups": str(cgroups.base), "owner": cgroups.owner, "spares": cgroups.spare_prefix()}


def _is_cgroups_message(message: dict[str, object]) -> bool:
    folder, owner, spares = message.get("cgroups"), message.get("owner"), message.get("spares")
    valid_folder = isinstance(folder, str) and folder.startswith("/")
    return valid_folder and isinstance(owner, str) and isinstance(spares, str) and bool(spares)


def _follow(lines: IO[str], inbox: queue.Queue[str | None]) -> None:
    """Put each line of the worker's pipe into `inbox`, then None at end-of-file."""
    try:
        for line in lines:
            inbox.put(line)
    finally:
        inbox.put(None)


def serve(
    lines: IO[str],
    on_silence: Callable[[Watched, float], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Watched:
    """The sentinel's side: follow the worker's messages until end-of-file; return what is still watched.

    After an `alive` message, a silence of its length while jobs are watched calls `on_silence` (with what
    is watched and how long it was silent), which ends those jobs; they are then no longer watched."""
    watched = Watched({})
    inbox: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_follow, args=(lines, inbox), name="pipe", daemon=True).start()
    silence_s: float | None = None
    heard = clock()
    while True:
        wait_s = None if silence_s is None or not watched.jobs else max(0.0, heard + silence_s - clock())
        try:
            line = inbox.get(timeout=wait_s)
        except queue.Empty:  # the worker said it would speak by now: it is stopped or hung
            if on_silence is not None:
                on_silence(watched, clock() - heard)
            watched.jobs.clear()
            continue
        if line is None:
            return watched
        heard = clock()
        silence = _handle(line, watched)
        if silence is not None:
            silence_s = silence


def _handle(line: str, watched: Watched) -> float | None:
    """Apply one message of the worker to `watched`; the silence it allows when it is an `alive`."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict):
        return None
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
    elif isinstance(message.get("alive"), int | float) and message["alive"] > 0:
        return float(message["alive"])
    return None


def kill_silent_workers_jobs(told: Watched, silent_s: float, report: IO[str] | None = None) -> None:
    """The worker has said nothing for `silent_s`: kill its jobs before their leases run out and their
    tasks start elsewhere (its spare shells stay, for the worker if it resumes). Their run tokens are
    written to `report` (stdout) first, so that the worker, resumed, knows whose SIGKILL it was."""
    log.warning(
        "worker silent for %.0f s (stopped or hung): killing its jobs %s before their leases run out",
        silent_s,
        sorted(told.jobs),
    )
    report = sys.stdout if report is None else report
    with contextlib.suppress(OSError, ValueError):  # a worker that is gone reads nothing
        report.write(json.dumps({"killed": sorted(told.jobs)}) + "\n")
        report.flush()
    kill_jobs(told.jobs)


def kill_leftovers(told: Watched, settle_s: float = KILL_SETTLE_S) -> None:
    """The worker is gone: kill its watched jobs (`kill_jobs`), then remove the cgroups its spare shells
    left (they die with the worker)."""
    kill_jobs(told.jobs, settle_s)
    if told.cgroups is not None:
        for cgroup in told.cgroups.owned(told.spare_prefix).values():
            cgroup.kill()
            cgroup.remove()


def kill_jobs(watched: dict[str, WatchedJob], settle_s: float = KILL_SETTLE_S) -> None:
    """SIGKILL the jobs' cgroups, process groups and every process carrying one of their tokens, until two
    looks at /proc in a row find none (a process in the middle of an exec can show no environment for an
    instant), then run their cleanup commands and remove their cgroups."""
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
            log.warning("killing processes %s of the worker's jobs", sorted(pids))
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


def main() -> None:
    """Entry point of the sentinel process (started by `JobSentinel`; it reads the worker's pipe)."""
    logging.basicConfig(level=logging.WARNING, format="nightshift sentinel: %(message)s")
    kill_leftovers(serve(sys.stdin, on_silence=kill_silent_workers_jobs))
