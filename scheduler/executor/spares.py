"""Job shells started ahead of time, already inside a cgroup, so that a job's start does not wait for one.

Moving a process into a cgroup makes the kernel wait for an RCU grace period (~10 ms here; the cgroup
mutex is held meanwhile), and the job must be inside before it runs anything. So the worker keeps a few
spares: shells started the way a job is (a child of the worker, its own session, default signals), moved
into fresh cgroups by a background thread while nothing waits for them. When a job comes, the worker writes
the job's set-up to a spare's stdin and the shell sources it: `cd` to the workdir, output to the log, the
job's variables, then `exec` of the job's command line. The job then is what a direct start gives (leader
`/bin/sh -c COMMAND`, the group leader of its session) in the time of one exec, and a new spare is started.

A spare has no parent-death signal (`setpriv` would cost one more exec per job): while it waits it reads
its stdin, whose only writer is the worker, so it exits at end-of-file when the worker goes; a job started
in one is killed with its cgroup by the sentinel when the worker dies, and the sentinel removes the spares'
cgroups. Spares are per environment (the worker's, minus secrets), which they are started with. Jobs that
switch accounts (a root worker's `run_as`) start directly.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import shlex
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from scheduler.executor.cgroups import JobCgroup, JobCgroups

log = logging.getLogger(__name__)

_JOIN_TIMEOUT_S = 5.0
_EXIT_TIMEOUT_S = 5.0


@dataclass
class SpareShell:
    """One shell waiting for a job, in its cgroup once `joined` is set and `ok`."""

    popen: subprocess.Popen[bytes]
    cgroup: JobCgroup
    stdin_w: int  # closed (and -1) once the spare has its job or is discarded
    joined: threading.Event = field(default_factory=threading.Event)
    ok: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)  # guards stdin_w and joining
    joining: bool = False  # someone (the background thread, or a job's start) is moving it in

    def claim_join(self) -> bool:
        """True for the one caller that is to move the spare into its cgroup (`join`), False for others."""
        with self.lock:
            if self.joining:
                return False
            self.joining = True
            return True

    def join(self, cgroups: JobCgroups) -> None:
        """Move the shell into its cgroup and let it go on; a refusal by the kernel means no job can be
        moved in (jobs run without cgroups from now on)."""
        joined = self.cgroup.join(self.popen.pid)
        if not joined and self.popen.poll() is None:
            cgroups.usable = False
        self.ok = joined and self.write(b"\n")
        self.joined.set()

    def write(self, data: bytes) -> bool:
        """Write all of `data` to the shell's stdin; False when the pipe is closed or broken."""
        with self.lock:
            if self.stdin_w < 0:
                return False
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(self.stdin_w, view) :]
            except OSError:
                return False
            return True

    def close_stdin(self) -> None:
        """Close the shell's stdin (it reads end-of-file)."""
        with self.lock:
            if self.stdin_w >= 0:
                with contextlib.suppress(OSError):
                    os.close(self.stdin_w)
                self.stdin_w = -1


SHELL = "/bin/sh"
MARK = "# nightshift-spare"  # the first line of a spare's script, so it shows in `ps`


def spare_script(parent_pid: int) -> str:
    """The spare shell: wait until it is in its cgroup, check its parent, then source the job's set-up from
    stdin (nothing, and exit, when the worker closes the pipe instead)."""
    return "\n".join(
        [
            MARK,
            "read -r _ || exit 0",
            f'[ "$PPID" = {int(parent_pid)} ] || kill -KILL $$',
            ". /dev/stdin",
            "exit 0",
        ]
    )


def setup_script(
    workdir: str, log_path: str, env: Mapping[str, str], spare_env: Mapping[str, str], argv: Sequence[str]
) -> bytes:
    """What a spare shell sources to become the job: its folder, its log, the variables that differ from
    the spare's, stdin from /dev/null, then `exec` of the job's command line (so the job's leader is what
    a direct start gives, its run token in its environment)."""
    lines = [f"cd -- {shlex.quote(workdir)} || exit 126", f"exec >>{shlex.quote(log_path)} 2>&1 </dev/null"]
    lines += [f"unset {name}" for name in sorted(spare_env) if name not in env]
    lines += [
        f"export {name}={shlex.quote(value)}" for name, value in env.items() if spare_env.get(name) != value
    ]
    lines.append("exec " + " ".join(shlex.quote(word) for word in argv))
    return ("\n".join(lines) + "\n").encode()


def _next_spare(spares: Sequence[SpareShell]) -> SpareShell:
    """The spare a job takes: the first one already in its cgroup, else the oldest (non-empty `spares`)."""
    return next((spare for spare in spares if spare.joined.is_set()), spares[0])


def env_key(env: Mapping[str, str]) -> int:
    """Which spares suit a job: those started with this environment."""
    return hash(frozenset(env.items()))


class SpareShells:
    """The spares of one worker, `depth` of them, moved into their cgroups by a background thread (a few,
    so that launching threads side by side and a move that waits longer than usual do not hold up a
    burst)."""

    def __init__(self, cgroups: JobCgroups, depth: int = 3) -> None:
        self.cgroups = cgroups
        self.depth = depth
        self._spares: dict[int, list[SpareShell]] = {}  # env key -> its spares, oldest first
        self._lock = threading.Lock()
        self._joins: queue.SimpleQueue[SpareShell | None] = queue.SimpleQueue()
        self._joiner: threading.Thread | None = None
        self._closed = False

    def spare_pid(self, env: Mapping[str, str]) -> int | None:
        """The pid of the spare the next job with this base environment would take (the first one in its
        cgroup, else the oldest), None when there is none."""
        with self._lock:
            spares = list(self._spares.get(env_key(env), ()))
        return _next_spare(spares).popen.pid if spares else None

    def take(self, env: Mapping[str, str]) -> SpareShell | None:
        """A spare for a job with this base environment, in its cgroup (the first one there, else the
        oldest once it is); None when there is none (the job then starts directly)."""
        key = env_key(env)
        while True:
            with self._lock:
                spares = self._spares.get(key)
                if not spares:
                    return None
                spare = _next_spare(spares)
                spares.remove(spare)
            if spare.claim_join():  # not moved in yet: this thread does it now rather than wait its turn
                spare.join(self.cgroups)
            if spare.joined.wait(_JOIN_TIMEOUT_S) and spare.ok and spare.popen.poll() is None:
                return spare
            self._discard(spare)  # it died, or could not be moved: try the next one

    def prepare(self, env: Mapping[str, str], parent_pid: int, prefix: Sequence[str]) -> None:
        """Start spares for the next jobs with this base environment until there are `depth`, behind
        `prefix` (default signals). Call after a start: it is cheap, the move into their cgroups happens in
        the background."""
        key = env_key(env)
        while True:
            with self._lock:
                if self._closed or len(self._spares.get(key, ())) >= self.depth or not self.cgroups.usable:
                    return
            if not self._start_one(key, env, parent_pid, prefix):
                return

    def _start_one(self, key: int, env: Mapping[str, str], parent_pid: int, prefix: Sequence[str]) -> bool:
        cgroup = self.cgroups.create_spare()
        if cgroup is None:
            return False
        hold_r, hold_w = os.pipe()
        try:
            popen = subprocess.Popen(
                [*prefix, SHELL, "-c", spare_script(parent_pid), SHELL],
                stdin=hold_r,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=dict(env),
                cwd="/",
                start_new_session=True,
                close_fds=True,
            )
        except (OSError, subprocess.SubprocessError) as error:
            log.warning("no spare job shell: %s", error)
            os.close(hold_w)
            cgroup.remove()
            return False
        finally:
            os.close(hold_r)
        spare = SpareShell(popen, cgroup, hold_w)
        with self._lock:
            closed = self._closed
            if not closed:
                self._spares.setdefault(key, []).append(spare)
                if self._joiner is None:
                    self._joiner = threading.Thread(target=self._join_loop, name="spare-joiner", daemon=True)
                    self._joiner.start()
        if closed:
            self._discard(spare)
            return False
        self._joins.put(spare)
        return True

    def hand_over(self, spare: SpareShell, script: bytes) -> bool:
        """Give the spare its job (`setup_script`): it `exec`s the job's command line. False when the pipe
        is broken (the spare died): then the job starts directly."""
        written = spare.write(script)
        spare.close_stdin()
        if not written:
            self._discard(spare)
        return written

    def discard(self, spare: SpareShell) -> None:
        """End a spare that was taken but will not be used."""
        self._discard(spare)

    def close(self) -> None:
        """End every spare (its shell reads end-of-file and exits) and remove their cgroups."""
        with self._lock:
            self._closed = True
            spares = [spare for per_env in self._spares.values() for spare in per_env]
            self._spares.clear()
        self._joins.put(None)
        for spare in spares:
            self._discard(spare)
        self.cgroups.remove_free()

    def _join_loop(self) -> None:
        while (spare := self._joins.get()) is not None:
            if spare.claim_join():
                spare.join(self.cgroups)

    def _discard(self, spare: SpareShell) -> None:
        spare.close_stdin()
        try:
            spare.popen.wait(_EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            spare.popen.send_signal(signal.SIGKILL)
            spare.popen.wait()
        spare.cgroup.kill()
        spare.cgroup.release()
