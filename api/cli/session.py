"""`nightshift shell`: a shell (or one command) on GPUs from the queue, as Slurm's `srun --pty bash`.

A session is a task like any other: it waits in the queue by the same rules (priority, quotas, placement)
and shows in `ls`, `queue` and the reports. Its job on the worker is a placeholder (`HOLDER`) that prints
the environment nightshift gave it and then waits. Once that runs, the shell starts *here*, in that
environment: `CUDA_VISIBLE_DEVICES` names the session's GPUs, and the run token makes every process started
from the shell the task's own, so `nightshift gpus` counts its memory to the task and the worker stops it
with the task. The session ends when the shell exits (the placeholder sees a file appear in the task's
output folder and ends, so the task succeeds) or when the task does: at its time limit or a cancel, the
shell and everything it started are stopped (SIGHUP, then SIGKILL).

A session runs where its GPUs are: on a GPU box that is a node of the cluster it is pinned to that box
unless `--node` names another; elsewhere it is held on the node it gets, with the lines to type there.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from api.cli.render import duration_words, err_console, short_time
from api.client import ClientError, NightshiftClient
from scheduler.executor.reaper import TOKEN_VAR, find_processes_with_token, found_twice_over, signal_pids

ENDED_FILE = ".session-ended"
HOLDER_VAR = "NIGHTSHIFT_SESSION_HOLDER"  # the placeholder's pid: its processes are not the shell's to stop
BEGIN = "==> nightshift session environment"
READY = "==> nightshift session ready"
# What the placeholder prints: the variables nightshift sets for a job (its GPUs, their order, a share's
# limits, the run token, the task's folders), then waits for the file that says the shell has exited.
HOLDER = (
    f"echo '{BEGIN}'; "
    "env | grep -E '^(NIGHTSHIFT_[A-Z_]+|CUDA_VISIBLE_DEVICES|CUDA_DEVICE_ORDER|CUDA_MPS_[A-Z_]+)=' | sort; "
    'echo "NIGHTSHIFT_SESSION_HOLDER=$$"; '
    f"echo '{READY}'; "
    f'while [ ! -e "$NIGHTSHIFT_OUTPUT_DIR/{ENDED_FILE}" ]; do sleep 1; done'
)
_VARIABLE = re.compile(r"(NIGHTSHIFT_[A-Z_]+|CUDA_VISIBLE_DEVICES|CUDA_DEVICE_ORDER|CUDA_MPS_[A-Z_]+)=(.*)")
ENDED = frozenset({"succeeded", "failed", "cancelled"})
DEFAULT_MINUTES = 60.0
READY_WAIT_S = 60.0
EXPLAIN_EVERY_S = 15.0  # how often a waiting session asks why it waits (the task itself: every POLL_S)
POLL_S = 1.0
STOP_GRACE_S = 5.0
WARN_BEFORE_END_S = 300.0  # a session says it is about to end this long before its time limit
TIMED_OUT_EXIT = 124  # as timeout(1): the session reached its time limit
GAVE_UP_EXIT = 130  # Ctrl-C: as a shell reports SIGINT


class SessionError(Exception):
    """The session cannot go on (it ended before its shell started, or cannot run here); `code` to exit."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass(frozen=True)
class Session:
    """A session's task once it runs: where, and the environment its placeholder was given."""

    task: dict[str, Any]
    env: dict[str, str]

    @property
    def task_id(self) -> int:
        """The session's task id."""
        return int(self.task["id"])

    @property
    def run_token(self) -> str:
        """The token every process of the session carries (how the worker and this CLI find them)."""
        return self.env[TOKEN_VAR]

    @property
    def shell_env(self) -> dict[str, str]:
        """What the shell gets on top of this process's environment: the job's variables."""
        return {name: value for name, value in self.env.items() if name != HOLDER_VAR}

    def holder_group(self) -> int | None:
        """The placeholder's process group, when it runs on this machine (its processes carry the run token
        too, and must go on waiting for the file that ends the session)."""
        try:
            return os.getpgid(int(self.env[HOLDER_VAR]))
        except (KeyError, ValueError, ProcessLookupError, PermissionError):
            return None

    def where(self) -> str:
        """`GPU 0,1 on box-1`, `CPU only on box-1`: what the session holds."""
        gpus = self.env.get("CUDA_VISIBLE_DEVICES") or ""
        held = f"GPU {gpus}" if gpus else "CPU only"
        share = self.env.get("NIGHTSHIFT_GPU_FRACTION")
        return f"{held}{f' ({share} of it)' if share else ''} on {self.task['node']}"

    def until(self) -> str:
        """` for up to 60 min (until 06-01 15:05:00)`, by the task's time limit; "" without one."""
        minutes = (self.task.get("spec") or {}).get("time_limit_minutes")
        if not minutes or not self.task.get("started_at"):
            return ""
        end = datetime.fromisoformat(self.task["started_at"]) + timedelta(minutes=float(minutes))
        return f" for up to {duration_words(float(minutes) * 60)} (until {short_time(end.isoformat())})"


def session_spec(
    *,
    gpus: int,
    minutes: float,
    name: str | None,
    node: str | None,
    extra: Mapping[str, Any],
    tags: list[str],
) -> dict[str, Any]:
    """The task a session queues: the placeholder on `gpus` GPUs for at most `minutes`, tagged `session`,
    never retried (a shell cannot be run again by itself)."""
    spec: dict[str, Any] = {
        "command": HOLDER,
        "name": name or "shell",
        "gpus": gpus,
        "time_limit_minutes": minutes,
        "retries": 0,
        "workdir": os.getcwd(),
        "tags": list(dict.fromkeys(["session", *tags])),
    }
    if node:
        spec["node"] = node
    spec.update({key: value for key, value in extra.items() if value is not None})
    return spec


def session_env(log: str) -> dict[str, str] | None:
    """The environment in the last complete block the placeholder printed (the current attempt's); None
    before it has printed one."""
    lines = log.splitlines()
    try:
        ready = len(lines) - 1 - lines[::-1].index(READY)
        begin = len(lines[:ready]) - 1 - lines[:ready][::-1].index(BEGIN)
    except ValueError:
        return None
    env = {}
    for line in lines[begin + 1 : ready]:
        match = _VARIABLE.fullmatch(line)
        if match:
            env[match[1]] = match[2]
    return env if TOKEN_VAR in env and HOLDER_VAR in env else None


def node_here(client: NightshiftClient, here: str) -> str | None:
    """`here` when this machine is a live node of the cluster that takes work, else None."""
    try:
        nodes = client.get("/nodes")
    except ClientError:
        return None
    live = {node["name"] for node in nodes if node.get("alive") and not node.get("drained")}
    return here if here in live else None


def wait_until_running(
    client: NightshiftClient, task_id: int, say: Callable[[str], None], sleep: Callable[[float], None]
) -> dict[str, Any]:
    """Poll the task until it runs, saying why it waits and when it should start each time that changes.
    SessionError when it ends first (cancelled, refused)."""
    said, explained_at = "", -EXPLAIN_EVERY_S
    while True:
        task = client.get_task(task_id)
        if task["status"] == "running":
            return task
        if task["status"] in ENDED:
            raise SessionError(f"task {task_id} {task['status']} before it started: {_why(task)}")
        if time.monotonic() - explained_at >= EXPLAIN_EVERY_S:  # each `explain` replays the queue
            explained_at = time.monotonic()
            line = _waiting_line(client, task_id)
            if line and line != said:
                say(line)
                said = line
        sleep(POLL_S)


def _waiting_line(client: NightshiftClient, task_id: int) -> str:
    """`waiting: behind 2 higher-priority tasks; expected start 06-01 14:05:00`, from `explain`."""
    try:
        data = client.get(f"/tasks/{task_id}/explain")
    except ClientError:
        return ""
    if data.get("status") != "queued":
        return ""
    line = f"waiting: {data.get('reason') or 'in the queue'}"
    if data.get("estimated_start"):
        line += f"; expected start {short_time(data['estimated_start'])}"
    return line


def _why(task: Mapping[str, Any]) -> str:
    return str(task.get("message") or task.get("reason") or task["status"])


def wait_for_environment(
    client: NightshiftClient, task: dict[str, Any], sleep: Callable[[float], None]
) -> Session:
    """The running session's environment, once its placeholder has printed it (within a few seconds of its
    start). SessionError when the task ends first, or the placeholder says nothing for a minute."""
    deadline = time.monotonic() + READY_WAIT_S
    while time.monotonic() < deadline:
        env = session_env(client.logs(int(task["id"])))
        if env is not None:
            return Session(task=client.get_task(int(task["id"])), env=env)
        task = client.get_task(int(task["id"]))
        if task["status"] != "running":
            raise SessionError(f"task {task['id']} {task['status']} as it started: {_why(task)}")
        sleep(POLL_S / 2)
    raise SessionError(
        f"task {task['id']} runs but its placeholder printed no environment in {READY_WAIT_S:.0f} s "
        f"(`nightshift logs {task['id']}` shows what it did); it was cancelled"
    )


class HungUp(Exception):
    """The terminal closed (SIGHUP) or this process was asked to stop (SIGTERM): the session is cancelled,
    its shell stopped and its GPUs given back, rather than held until the time limit."""


class Hangups:
    """SIGHUP and SIGTERM, noted while a session is open instead of ending this process there and then:
    each wait of the session checks them and ends it cleanly (the task cancelled, the shell stopped, its
    GPUs given back). Noted, never raised from the handler, so no step of starting or stopping is cut
    short."""

    def __init__(self) -> None:
        self.noted: list[str] = []

    def note(self, signum: int, frame: object) -> None:
        """The signal handler."""
        self.noted.append(signal.Signals(signum).name)

    def check(self) -> None:
        """HungUp once a hangup has been noted."""
        if self.noted:
            raise HungUp(self.noted[0])

    def sleep(self, seconds: float) -> None:
        """`time.sleep`, checking before and after."""
        self.check()
        time.sleep(seconds)
        self.check()


@contextmanager
def _hangups_noted() -> Iterator[Hangups]:
    """SIGHUP and SIGTERM noted in the `Hangups` given, for the time of the block."""
    hangups = Hangups()
    previous = {sig: signal.signal(sig, hangups.note) for sig in (signal.SIGHUP, signal.SIGTERM)}
    try:
        yield hangups
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def _interrupts_to_the_shell() -> Iterator[None]:
    """While the shell runs, Ctrl-C and Ctrl-\\ are the shell's, not this process's (as `ssh` has it)."""
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGQUIT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def stop_session_processes(session: Session, grace_s: float = STOP_GRACE_S) -> int:
    """Stop what the session still runs here (every process carrying its run token but its placeholder's):
    SIGHUP, as a closed terminal does (an interactive shell ignores SIGTERM), and SIGTERM, then SIGKILL
    after `grace_s`. How many there were."""
    holder = session.holder_group()

    def left() -> list[int]:
        return [pid for pid in find_processes_with_token(session.run_token) if _group_of(pid) != holder]

    found = found_twice_over(left)
    if not found:
        return 0
    signal_pids(found, signal.SIGHUP)
    signal_pids(found, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and left():
        time.sleep(0.05)
    signal_pids(left(), signal.SIGKILL)
    return len(found)


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
        return None


def run_here(client: NightshiftClient, session: Session, argv: list[str], hangups: Hangups) -> int:
    """Run `argv` (a shell) here in the session's environment until it exits or the task ends; then end
    the session. The shell's exit code, or TIMED_OUT_EXIT / 1 when the task ended first."""
    env = {**os.environ, **session.shell_env}
    with _interrupts_to_the_shell():
        child = subprocess.Popen(argv, env=env)
        try:
            ended = _watch(client, session, child, hangups)
        except HungUp as hung:
            _say(f"{hung}: ending the session")
            stop_session_processes(session)
            child.wait()
            _cancel(client, session.task_id)
            return 128 + signal.SIGHUP
        if ended is None:
            left = stop_session_processes(session)
            if left:
                _say(f"stopped {left} process(es) the session had left running")
            return _end(client, session, _exit_code(child.returncode))
        stop_session_processes(session)
        child.wait()
    _say(_ended_words(client, ended))
    return TIMED_OUT_EXIT if ended.get("reason") == "timeout" else 1


def _ended_words(client: NightshiftClient, task: dict[str, Any]) -> str:
    """Why a session's task stopped running under it. One put back in the queue (its node was lost) is
    cancelled: it would start again with nobody at its shell."""
    if task["status"] == "queued":
        _cancel(client, int(task["id"]))
        return f"task {task['id']}: its node was lost ({_why(task)}); the session is cancelled"
    return f"task {task['id']} {task['status']}: {_why(task)}; the session ended"


def _watch(
    client: NightshiftClient, session: Session, child: subprocess.Popen[bytes], hangups: Hangups
) -> dict[str, Any] | None:
    """Wait for the child to exit (None) or the task to stop running (the task, as it then is); HungUp once
    a hangup is noted. An API that does not answer leaves the shell running: the worker still ends the task
    at its limit."""
    next_look = time.monotonic() + 2 * POLL_S
    warned_at: float | None = None
    while True:
        hangups.check()
        try:
            child.wait(timeout=POLL_S / 4)
            return None
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() < next_look:
            continue
        next_look = time.monotonic() + 2 * POLL_S
        try:
            task = client.get_task(session.task_id)
        except ClientError:
            continue
        if task["status"] != "running":
            return task
        warned_at = warn_before_the_end(task, warned_at, time.time(), _say)


def warn_before_the_end(
    task: Mapping[str, Any], warned_at: float | None, now_s: float, say: Callable[[str], None]
) -> float | None:
    """Say once, WARN_BEFORE_END_S before the session's time limit, how long it has left and how to get
    more (a limit changed since is read anew, so a longer one warns again before its own end). The end it
    warned of, or `warned_at` as it was."""
    minutes = (task.get("spec") or {}).get("time_limit_minutes")
    if not minutes or not task.get("started_at"):
        return warned_at
    end_s = datetime.fromisoformat(task["started_at"]).timestamp() + float(minutes) * 60
    if warned_at == end_s or not 0 < end_s - now_s <= WARN_BEFORE_END_S:
        return warned_at
    left = duration_words(end_s - now_s)
    say(
        f"nightshift: this session ends in {left}, at its time limit; `nightshift change {task['id']} "
        f"--time-limit {float(minutes) + 60:g}` gives it an hour more"
    )
    return end_s


def _exit_code(returncode: int) -> int:
    """A child's return code as a shell reports it (128 + the signal that killed it)."""
    return 128 - returncode if returncode < 0 else returncode


def _end(client: NightshiftClient, session: Session, code: int) -> int:
    """End a session whose shell has exited: tell its placeholder (the task succeeds), or, where its output
    folder is not reachable from here, cancel it. A task that ended otherwise meanwhile (its node lost, say)
    is said to. `code` back."""
    output_dir = session.env.get("NIGHTSHIFT_OUTPUT_DIR")
    try:
        if output_dir is None:
            raise OSError("no output folder")
        (Path(output_dir) / ENDED_FILE).touch()
    except OSError:
        _cancel(client, session.task_id)
        return code
    deadline = time.monotonic() + 10 * POLL_S
    while time.monotonic() < deadline:
        task = client.get_task(session.task_id)
        if task["status"] == "succeeded":
            return code
        if task["status"] != "running":
            _say(_ended_words(client, task))
            return code
        time.sleep(POLL_S / 4)
    _cancel(client, session.task_id)
    _say(f"task {session.task_id} did not end when its shell did (is its node down?): cancelled")
    return code


def _cancel(client: NightshiftClient, task_id: int) -> None:
    try:
        client.cancel(task_id)
    except ClientError as exc:
        if exc.status_code != 409:  # 409: it has already ended
            raise


def hold_from_afar(client: NightshiftClient, session: Session, hangups: Hangups) -> int:
    """The session runs on another node: say what to type there, and hold its GPUs until Enter here (or the
    end of input, or Ctrl-C), a file made there, or the end of the task."""
    exports = " ".join(f"{name}={value}" for name, value in sorted(session.shell_env.items()))
    output_dir = session.env.get("NIGHTSHIFT_OUTPUT_DIR", "$NIGHTSHIFT_OUTPUT_DIR")
    _say(
        f"task {session.task_id} holds {session.where()}{session.until()}. On {session.task['node']}:\n"
        f"  export {exports}\n"
        f"and when done there: touch {output_dir}/{ENDED_FILE}\nor press Enter here to give it back."
    )
    try:
        _hold_until_told(client, session, hangups)
    except (KeyboardInterrupt, HungUp):
        _cancel(client, session.task_id)
        return GAVE_UP_EXIT
    except _TaskEnded as ended:
        _say(_ended_words(client, ended.task))
        return 0 if ended.task["status"] == "succeeded" else 1
    _cancel(client, session.task_id)
    _say(f"task {session.task_id}: given back")
    return 0


class _TaskEnded(Exception):
    """A held session's task stopped running (`task`, as it then is)."""

    def __init__(self, task: dict[str, Any]) -> None:
        super().__init__(task["status"])
        self.task = task


def _hold_until_told(client: NightshiftClient, session: Session, hangups: Hangups) -> None:
    """Return on a line (or the end) of input here; _TaskEnded when the task stops running first."""
    while True:
        hangups.check()
        task = client.get_task(session.task_id)
        if task["status"] != "running":
            raise _TaskEnded(task)
        readable, _, _ = select.select([sys.stdin], [], [], 2 * POLL_S)
        if readable:
            sys.stdin.readline()
            return


def open_session(client: NightshiftClient, spec: dict[str, Any], argv: list[str], here: str) -> int:
    """Queue the session, wait for it (Ctrl-C gives up and cancels it), then run `argv` here, or hold it
    from afar when it landed on another node. The exit code for the CLI."""
    with _hangups_noted() as hangups:
        task = client.submit(spec)
        task_id = int(task["id"])
        _say(f"task {task_id} ({task['name']}): a session of {_size(spec)}; Ctrl-C gives up")
        try:
            running = wait_until_running(client, task_id, _say, hangups.sleep)
            session = wait_for_environment(client, running, hangups.sleep)
        except (KeyboardInterrupt, HungUp):
            _cancel(client, task_id)
            _say(f"gave up: task {task_id} cancelled")
            return GAVE_UP_EXIT
        except SessionError:
            _cancel(client, task_id)
            raise
        if session.task["node"] != here:
            return hold_from_afar(client, session, hangups)
        _say(f"task {task_id}: {session.where()}{session.until()}; exit the shell to give it back")
        return run_here(client, session, argv, hangups)


def _say(line: str) -> None:
    """A line for the person, on stderr (stdout is the shell's or the command's), printed as it is."""
    err_console.print(line, markup=False, highlight=False)


def _size(spec: Mapping[str, Any]) -> str:
    """`2 GPUs on box-1, 30 GB free each`: what a session asks for."""
    gpus = int(spec.get("gpus", 1))
    text = "CPU only" if gpus == 0 else f"{gpus} GPU" + ("s" if gpus > 1 else "")
    if spec.get("node"):
        text += f" on {spec['node']}"
    if spec.get("gpu_memory_gb"):
        text += f", {spec['gpu_memory_gb']:g} GB free each"
    return text
