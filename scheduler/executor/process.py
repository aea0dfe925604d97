"""A running job attempt: poll it, stop it, and read what became of it.

A job is a process group (its own session) whose leader is `/bin/sh -c COMMAND`, in a cgroup of its own
where the node allows (`cgroups.py`). Stopping it sends a signal (SIGTERM by default) to the group and to
any of its processes that escaped the group (found by run token and in its cgroup), waits a grace period,
then SIGKILLs the group, its cgroup and every process carrying the job's run token. A job that ends on its
own gets the same sweep, so it never leaves GPU-holding stragglers behind.

The leader is reaped only after its group has been swept: while the leader is an unreaped zombie, Linux
cannot hand its pid (the group id) to another process, so signalling the group can never hit a stranger.

`poll()` is meant for the worker's loop and `stop()` may come from another thread; while a stop is in
progress `poll()` answers None (the job is not over until its processes are gone) instead of cutting the
grace period short.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from scheduler.executor.exit_record import take_exit_record
from scheduler.executor.outcome import STOP_REASONS, JobOutcome, StopReason, classify
from scheduler.executor.reaper import (
    KILL_SETTLE_S,
    ProcessSnapshot,
    find_processes_with_token,
    job_processes,
    kill_processes_with_token,
    signal_group,
    signal_pids,
)

if TYPE_CHECKING:
    from scheduler.executor.cgroups import JobCgroup
    from scheduler.executor.launch import LaunchRequest
    from scheduler.executor.sentinel import JobSentinel

_WAIT_POLL_S = 0.05
_MAX_GRACE_POLL_S = 0.25
_CLEANUP_TIMEOUT_S = 10.0

log = logging.getLogger(__name__)


def run_cleanup(argv: Sequence[str]) -> None:
    """Run a job's cleanup command (`docker rm --force NAME`) quietly, best effort, within a time limit."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=_CLEANUP_TIMEOUT_S,
            check=False,
        )


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
        return None


class RunningJob:
    """One started attempt: its leader's pid, when it started, and how to poll, stop and judge it."""

    def __init__(
        self,
        request: LaunchRequest,
        popen: subprocess.Popen[bytes],
        *,
        started_at: float,
        log_offset: int,
        cleanup_argv: Sequence[str] | None = None,
        sentinel: JobSentinel | None = None,
        cgroup: JobCgroup | None = None,
    ) -> None:
        self.request = request
        self._sentinel = sentinel
        self.cgroup = cgroup
        # a spare's cgroup may have held earlier jobs: its CPU time so far is not this job's
        self._cpu_before_s: float | None = None
        if cgroup is not None:
            self._cpu_before_s = cgroup.cpu_s() if cgroup.cpu_used_s is None else cgroup.cpu_used_s
        self.cpu_s: float | None = None  # CPU time of all the job's processes, once over (in a cgroup)
        self.pid = popen.pid
        self.started_at = started_at
        # the request's, until the task's time limit is changed while it runs (`Worker._set_time_limit`)
        self.time_limit_s = request.time_limit_s
        self._popen = popen
        self._log_offset = log_offset
        self._cleanup_argv = list(cleanup_argv) if cleanup_argv else None
        self._lock = threading.Lock()  # guards the state below; never held while waiting out a grace period
        self._stop_lock = threading.Lock()  # one stop at a time
        self._stopping = False
        self._stop_reason: StopReason | None = None
        self._outlived_grace_s: float | None = None  # its processes outlived the stop's grace: SIGKILL
        self._returncode: int | None = None
        self._outcome: JobOutcome | None = None

    def __repr__(self) -> str:
        state = "running" if self._outcome is None else self._outcome.describe()
        return (
            f"<RunningJob task={self.request.task_id} attempt={self.request.attempt} pid={self.pid} {state}>"
        )

    @property
    def run_token(self) -> str:
        """The marker in every job process's environment, used to find them all."""
        return self.request.run_token

    @property
    def outcome(self) -> JobOutcome | None:
        """How the job ended, or None while it is still running (or still being stopped)."""
        return self._outcome

    def time_limit_exceeded(self, now_monotonic: float) -> bool:
        """True once the job has run longer than its time limit (never, without one)."""
        limit = self.time_limit_s
        return limit is not None and now_monotonic >= self.started_at + limit

    def output_limit_exceeded(self) -> bool:
        """True once this attempt has written more to its log than `max_log_bytes` (never, without one): a
        job printing without end would fill the disk every team's jobs write to."""
        limit = self.request.max_log_bytes
        if limit is None:
            return False
        try:
            size = os.stat(self.request.log_path).st_size
        except OSError:
            return False
        return size - self._log_offset > limit

    def poll(self, snapshot: ProcessSnapshot | None = None) -> int | None:
        """The return code once the job is over and swept (negative: killed by that signal), else None.

        `snapshot`, when given, must have been taken after this job's leader was seen to exit, or while it
        was still alive (then it lists the leader and a fresh look follows): it saves a pass over /proc.
        """
        with self._lock:
            if self._returncode is not None or self._stopping or not self._leader_exited():
                return self._returncode
            swept = self._sweep(snapshot)
            returncode = self._popen.wait()
            if not swept:  # a clean sweep just found no process left: no need to look once more
                self.reap_descendants()
            self._finish(returncode)
            return returncode

    def wait(self, timeout_s: float) -> int | None:
        """Block up to timeout_s for the job to be over; return its return code, or None if still running."""
        deadline = time.monotonic() + timeout_s
        while (returncode := self.poll()) is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            time.sleep(min(_WAIT_POLL_S, remaining))
        return returncode

    def stop(self, grace_s: float, reason: StopReason, sig: int = signal.SIGTERM) -> None:
        """Send sig to the job, SIGKILL whatever is left after grace_s, reap it; idempotent, thread-safe."""
        if reason not in STOP_REASONS:
            raise ValueError(f"stop reason {reason!r} is not one of {sorted(STOP_REASONS)}")
        sig = signal.Signals(sig)  # ValueError for a number that is no signal, before any state changes
        with self._stop_lock:
            with self._lock:
                running = self._returncode is None and not self._leader_exited()
                if running:
                    self._stopping = True
                    if self._stop_reason is None:
                        self._stop_reason = reason
            if not running:
                # It ended on its own before the stop: its outcome stands; leave nothing behind.
                self.poll()
                self.reap_descendants()
                return
            try:
                self._terminate(grace_s, reason, sig)
            finally:
                with self._lock:
                    self._stopping = False

    @property
    def in_cgroup(self) -> bool:
        """True when the job's cgroup holds all of it: every process the job starts is in it and cannot
        leave (short of root writing to another cgroup). A docker job's container runs under the docker
        daemon, outside: it is still found by its run token."""
        return self.cgroup is not None and self._cleanup_argv is None

    def survivors(self, snapshot: ProcessSnapshot | None = None) -> list[int]:
        """Live processes of this job: those in its cgroup when it has one (`in_cgroup`: one small file to
        read, no look at /proc); else its group (until the leader is reaped), any carrying its token (as
        `snapshot` saw them, when given) and any in its cgroup."""
        if self.in_cgroup and self.cgroup is not None:
            return self.cgroup.pids()
        group = self.pid if self._popen.returncode is None else None
        if snapshot is not None:
            found = set(snapshot.job_processes(self.run_token, group))
        else:
            found = set(job_processes(self.run_token, group))
        if self.cgroup is not None:
            found.update(self.cgroup.pids())
        return sorted(found)

    def leader_exited(self) -> bool:
        """True once the job's leader process has exited (its leftovers may still run)."""
        with self._lock:
            return self._returncode is not None or self._leader_exited()

    def reap_descendants(self) -> list[int]:
        """SIGKILL processes left behind in this job's cgroup or with its token (escaped the group); return
        the pids killed."""
        killed = self.cgroup.kill() if self.cgroup is not None else []
        if not self.in_cgroup:
            killed = sorted({*killed, *kill_processes_with_token(self.run_token)})
        if killed:
            log.info("task %s attempt %s: killed leftover processes %s", *self._ids(), killed)
        return killed

    def _ids(self) -> tuple[int, int]:
        return self.request.task_id, self.request.attempt

    def _leader_exited(self) -> bool:
        """True once the leader has exited, without reaping it (WNOWAIT keeps its pid reserved)."""
        if self._popen.returncode is not None:
            return True
        try:
            status = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return status is not None

    def _terminate(self, grace_s: float, reason: StopReason, sig: int) -> None:
        name = signal.Signals(sig).name
        self._append_log(f"==> nightshift stops the job ({reason}): {name}, SIGKILL after {grace_s:g} s\n")
        signal_group(self.pid, sig)
        found = [] if self.in_cgroup else find_processes_with_token(self.run_token)
        if self.cgroup is not None:
            found += self.cgroup.pids()
        escaped = {pid for pid in found if _pgid(pid) != self.pid}
        signal_pids(sorted(escaped), sig)
        if not self._wait_until_gone(grace_s):
            self._append_log(f"==> still running after {grace_s:g} s: SIGKILL\n")
            if grace_s > 0 and sig != signal.SIGKILL:  # not a stop meant to kill at once
                self._outlived_grace_s = grace_s
            self._sweep()
            self._remove_container()
        try:
            returncode = self._popen.wait(timeout=KILL_SETTLE_S)
        except subprocess.TimeoutExpired:
            log.warning("task %s attempt %s: leader %s survives SIGKILL", *self._ids(), self.pid)
            return
        self.reap_descendants()
        with self._lock:
            self._finish(returncode)

    def _wait_until_gone(self, timeout_s: float) -> bool:
        # Each check reads every process's environ: back off so a 30 s grace on a busy node stays cheap.
        deadline = time.monotonic() + timeout_s
        interval_s = 0.01
        while self.survivors():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            time.sleep(min(interval_s, remaining))
            interval_s = min(interval_s * 1.5, _MAX_GRACE_POLL_S)
        return True

    def _sweep(self, snapshot: ProcessSnapshot | None = None) -> bool:
        """SIGKILL the group (leader unreaped) and token carriers until none is left; False on timeout."""
        deadline = time.monotonic() + KILL_SETTLE_S
        pids = self.survivors(snapshot)
        while pids:
            if self._popen.returncode is None:
                signal_group(self.pid, signal.SIGKILL)
            if self.cgroup is not None:
                self.cgroup.kill_now()
            signal_pids(pids, signal.SIGKILL)
            if time.monotonic() >= deadline:
                log.warning("task %s attempt %s: %s survive SIGKILL", *self._ids(), pids)
                return False
            time.sleep(0.02)
            pids = self.survivors()
        return True

    def _remove_container(self) -> None:
        # A killed `docker run` client leaves its container to the daemon; remove it so its GPUs come free.
        if self._cleanup_argv is not None:
            run_cleanup(self._cleanup_argv)

    def _finish(self, returncode: int) -> None:
        self._returncode = returncode
        if self.cgroup is not None:
            self.cgroup.wait_empty(KILL_SETTLE_S)  # its processes' exits done: their GPU memory is back
        used_s = self.cgroup.cpu_s() if self.cgroup is not None else None
        if used_s is not None and self._cpu_before_s is not None:
            self.cpu_s = max(0.0, used_s - self._cpu_before_s)
        if self.cgroup is not None and not self.cgroup.release(used_s):
            log.warning("task %s attempt %s: %s is not empty", *self._ids(), self.cgroup)
        if self._sentinel is not None:
            self._sentinel.forget(self.run_token)
        take_exit_record(self.request.log_path, self.run_token)  # its end line takes its place
        self._outcome = classify(
            returncode, self._stop_reason, self.request.log_path, self._log_offset, self._outlived_grace_s
        )
        elapsed_s = time.monotonic() - self.started_at
        now = datetime.now().astimezone().isoformat(timespec="seconds")
        self._append_log(
            ("" if self._log_ends_a_line() else "\n")  # output without a final newline keeps its last line
            + f"==> nightshift task {self.request.task_id} attempt {self.request.attempt} ended: "
            f"{self._outcome.describe()} after {elapsed_s:.1f} s at {now}\n"
        )

    def _log_ends_a_line(self) -> bool:
        """True when the log is empty or its last byte is a newline."""
        try:
            with open(self.request.log_path, "rb") as handle:
                handle.seek(-1, os.SEEK_END)
                return handle.read(1) == b"\n"
        except OSError:  # empty (nothing to seek back over) or gone
            return True

    def _append_log(self, text: str) -> None:
        with contextlib.suppress(OSError), open(self.request.log_path, "a", encoding="utf-8") as handle:
            handle.write(text)
