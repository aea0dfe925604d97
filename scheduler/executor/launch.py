"""Start one job attempt: its command line, its environment, its log file, its own session and process group.

The worker builds a `LaunchRequest`, calls `start_job()` and gets a `RunningJob` to poll and stop.

Call `start_job()` from a long-lived thread (the worker's main loop): the job's leader is asked to die with
SIGKILL when its parent goes (`PR_SET_PDEATHSIG`), and Linux ties that to the *thread* that forked it, so a
job started from a short-lived pool thread would be killed when that thread ends.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from scheduler.accounts import OsAccount
from scheduler.errors import ExecutorError
from scheduler.executor.cgroups import JobCgroup, JobCgroups
from scheduler.executor.default_signals import default_signals_prefix
from scheduler.executor.exit_record import with_exit_record
from scheduler.executor.parent_death import die_with_parent, pdeathsig_prefix
from scheduler.executor.process import RunningJob
from scheduler.executor.reaper import TOKEN_VAR, check_run_token
from scheduler.executor.sentinel import JobSentinel
from scheduler.executor.spares import SpareShell, SpareShells, setup_script
from scheduler.private_files import private_folder

Which = Callable[[str], str | None]
log = logging.getLogger(__name__)

SHELL = "/bin/sh"
# Image references as `TaskSpec` accepts them; nothing that starts with '-' or holds a space can pass, so an
# image name can never become a docker flag.
_DOCKER_IMAGE = re.compile(r"[a-z0-9][a-z0-9._\-/:@]{0,254}")
_CONDA_ENV = re.compile(r"[\w.+/][\w.\-+/]{0,199}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Dropped from the worker's environment before a job sees it (matched case-insensitively).
SECRET_ENV_PATTERNS: tuple[str, ...] = (
    "NIGHTSHIFT_*",
    "OPENAI_API_KEY",
    "*_API_KEY",
    "*_TOKEN",
    "*_SECRET*",
    "*_PASSWORD*",
    "AWS_*",
    "DATABASE_URL",
    "REDIS_URL",
)


@dataclass(frozen=True)
class LaunchRequest:
    """Everything needed to start one attempt of a task on this node."""

    task_id: int
    attempt: int
    command: str
    workdir: Path
    log_path: Path
    gpu_indices: tuple[int, ...]
    env: Mapping[str, str]
    conda_env: str | None
    docker_image: str | None
    checkpoint_dir: Path | None
    time_limit_s: float | None
    run_token: str
    run_as: OsAccount | None = None  # switch to this account (the worker is root); None: as the worker
    resume_from: Path | None = None  # the checkpoint this attempt resumes from (NIGHTSHIFT_RESUME_FROM)
    docker_images_allowed: tuple[str, ...] = ()  # glob patterns; empty: any image
    output_dir: Path | None = None  # where the job writes results (NIGHTSHIFT_OUTPUT_DIR, metrics.json)
    node: str | None = None  # named in the log's attempt header: a retried task's attempts may run apart
    max_log_bytes: int | None = None  # this attempt's output beyond it stops the job (None: no limit)
    # the workdir is nightshift's own default folder (not one the spec named): entered before the switch
    default_workdir: bool = False
    gpu_fraction: float = 1.0  # < 1: the task shares its GPU (`GpuShare`)
    gpu_memory_share_mib: int = 0  # a sharer's memory on its GPU (its request, else its fraction); 0: none

    @property
    def workdir_entered_as_account(self) -> bool:
        """Whether the job's account, not the worker, enters the workdir (a folder the spec named)."""
        return self.run_as is not None and not self.default_workdir


def container_name(request: LaunchRequest) -> str:
    """The docker container name of a docker job, so it can be found and removed."""
    return f"nightshift-{request.task_id}-{request.attempt}"


def _gpu_list(request: LaunchRequest) -> str:
    return ",".join(str(index) for index in request.gpu_indices)


def _job_var_names(request: LaunchRequest) -> list[str]:
    names = ["NIGHTSHIFT_TASK_ID", "NIGHTSHIFT_ATTEMPT", "NIGHTSHIFT_GPUS", TOKEN_VAR, *_share_env(request)]
    if request.checkpoint_dir is not None:
        names.append("NIGHTSHIFT_CHECKPOINT_DIR")
    if request.resume_from is not None:
        names.append("NIGHTSHIFT_RESUME_FROM")
    if request.output_dir is not None:
        names.append("NIGHTSHIFT_OUTPUT_DIR")
    return names


def check_docker_image_allowed(image: str, patterns: tuple[str, ...] | list[str]) -> str:
    """Return the image if it matches an allow-list glob (or the list is empty); else raise ExecutorError."""
    if patterns and not any(fnmatch.fnmatchcase(image, pattern) for pattern in patterns):
        raise ExecutorError(
            f"docker_image {image!r} is not allowed on this cluster; allowed: {', '.join(patterns)}",
            reason="docker_image_not_allowed",
        )
    return image


def _require(which: Which, program: str, what: str) -> str:
    path = which(program)
    if path is None:
        raise ExecutorError(f"{what} was requested but {program} is not installed on this node")
    return path


def _docker_argv(request: LaunchRequest, image: str, docker: str) -> list[str]:
    if not _DOCKER_IMAGE.fullmatch(image):
        raise ExecutorError(f"docker_image {image!r} is not a valid image name (like pytorch/pytorch:2.4.0)")
    check_docker_image_allowed(image, request.docker_images_allowed)
    argv = [docker, "run", "--rm", "--init", "--name", container_name(request)]
    if request.run_as is not None:
        argv += ["--user", f"{request.run_as.uid}:{request.run_as.gid}"]
    if request.gpu_indices:
        # The inner quotes are part of the value: docker parses --gpus as CSV, so `device=0,1` unquoted
        # would read as two fields.
        argv += ["--gpus", f'"device={_gpu_list(request)}"']
    mounts = [request.workdir]
    for extra in (request.checkpoint_dir, request.output_dir):
        if extra is not None and not extra.is_relative_to(request.workdir):
            mounts.append(extra)
    for mount in mounts:
        if ":" in str(mount) or "," in str(mount):
            raise ExecutorError(
                f"folder {str(mount)!r} cannot be mounted into docker: it contains ':' or ','"
            )
        argv += ["-v", f"{mount}:{mount}"]
    argv += ["-w", str(request.workdir)]
    # `-e NAME` without a value makes docker copy the value from its own environment (the job's), so values
    # never show up in `ps`. CUDA_VISIBLE_DEVICES stays out: inside the container GPUs are renumbered from 0.
    for name in [*sorted(request.env), *_job_var_names(request)]:
        argv += ["-e", name]
    return [*argv, image, SHELL, "-c", _script(request)]


def _script(request: LaunchRequest) -> str:
    """What the job's `/bin/sh -c` runs: its command, recording its own end in its log (`exit_record`)."""
    return with_exit_record(request.command, request.run_token)


def build_argv(request: LaunchRequest, *, which: Which = shutil.which) -> list[str]:
    """The command line that runs the job: plain `/bin/sh -c`, or inside `conda run` or `docker run`."""
    shell = [SHELL, "-c", _script(request)]
    if request.conda_env is not None and request.docker_image is not None:
        raise ExecutorError("a job runs in a conda env or a docker image, not both")
    if request.conda_env is not None:
        name = request.conda_env
        if not _CONDA_ENV.fullmatch(name):
            raise ExecutorError(f"conda_env {name!r} is not a valid environment name")
        conda = _require(which, "conda", f"conda_env {name!r}")
        # A conda env given as an absolute path is selected with -p, a name with -n.
        return [conda, "run", "--no-capture-output", "-p" if name.startswith("/") else "-n", name, *shell]
    if request.docker_image is not None:
        check_docker_image_allowed(request.docker_image, request.docker_images_allowed)
        docker = _require(which, "docker", f"docker_image {request.docker_image!r}")
        return _docker_argv(request, request.docker_image, docker)
    return shell


@functools.lru_cache(maxsize=4096)  # the same few dozen names at every launch
def is_secret_env_name(name: str) -> bool:
    """True for worker variables a job must not inherit: nightshift settings, tokens, passwords, keys."""
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern) for pattern in SECRET_ENV_PATTERNS)


def job_base_env(base_env: Mapping[str, str]) -> dict[str, str]:
    """The part of every job's environment that comes from the worker's: all of it but the secrets."""
    return {name: value for name, value in base_env.items() if not is_secret_env_name(name)}


def build_env(request: LaunchRequest, base_env: Mapping[str, str]) -> dict[str, str]:
    """The job's environment: the worker's minus secrets, then the spec's env, then nightshift's own vars."""
    return _job_env(request, job_base_env(base_env))


def _job_env(request: LaunchRequest, clean_env: Mapping[str, str]) -> dict[str, str]:
    """`build_env` from the worker's environment already without its secrets (`job_base_env`)."""
    env = dict(clean_env)
    for name, value in request.env.items():
        if not _ENV_NAME.fullmatch(name):
            raise ExecutorError(
                f"env name {name!r} must be letters, digits and _ (not starting with a digit)"
            )
        if "\x00" in value:  # a spec stored before TaskSpec refused it: exec cannot pass it on
            raise ExecutorError(f"env.{name} holds a NUL byte, which no process can be given")
        env[name] = value
    gpus = _gpu_list(request)
    # NVML numbers GPUs in PCI bus order; CUDA's default order (fastest first) may differ on mixed machines.
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    env["CUDA_VISIBLE_DEVICES"] = gpus  # empty for a CPU-only job: it sees no GPU
    env["NIGHTSHIFT_TASK_ID"] = str(request.task_id)
    env["NIGHTSHIFT_ATTEMPT"] = str(request.attempt)
    env["NIGHTSHIFT_GPUS"] = gpus
    env[TOKEN_VAR] = request.run_token
    if request.checkpoint_dir is not None:
        env["NIGHTSHIFT_CHECKPOINT_DIR"] = str(request.checkpoint_dir)
    if request.resume_from is not None:
        env["NIGHTSHIFT_RESUME_FROM"] = str(request.resume_from)
    if request.output_dir is not None:
        env["NIGHTSHIFT_OUTPUT_DIR"] = str(request.output_dir)
    if request.run_as is not None:
        env["HOME"] = request.run_as.home
        env["USER"] = env["LOGNAME"] = request.run_as.name
    for name, value in _share_env(request).items():
        if name.startswith("NIGHTSHIFT_") or name not in request.env:  # a spec's own MPS setting wins
            env[name] = value
    return env


def _share_env(request: LaunchRequest) -> dict[str, str]:
    """What a task sharing its GPU is told of its share: NIGHTSHIFT_GPU_FRACTION and NIGHTSHIFT_GPU_MEMORY_MIB
    (for a job to limit itself, e.g. `torch.cuda.set_per_process_memory_fraction`), and the same as CUDA
    MPS client limits, which the driver enforces where the node runs the MPS daemon
    (`nvidia-cuda-mps-control -d`) and ignores elsewhere. Nothing for a task that has its GPUs alone."""
    if request.gpu_fraction >= 1.0 or not request.gpu_indices:
        return {}
    share = {
        "NIGHTSHIFT_GPU_FRACTION": f"{request.gpu_fraction:g}",
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": str(max(1, round(request.gpu_fraction * 100))),
    }
    if request.gpu_memory_share_mib > 0:
        share["NIGHTSHIFT_GPU_MEMORY_MIB"] = str(request.gpu_memory_share_mib)
        # device 0: the one GPU the job sees (CUDA_VISIBLE_DEVICES)
        share["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = f"0={request.gpu_memory_share_mib}M"
    return share


# A directly started job's first line: it waits for the worker's go (one line on stdin, once the job is in
# its cgroup and its sentinel knows it: a worker killed in between leaves nothing of it running), then reads
# no more.
HOLD_UNTIL_RELEASED = "read -r _; exec </dev/null"
# Tells the job sentinel of a job (its leader's pid, its cgroup) before the job runs anything.
WatchJob = Callable[[int, JobCgroup | None], None]
ENTER_WORKDIR_EXIT_CODE = 126  # as a shell's "found but cannot run"


def enter_workdir_line(request: LaunchRequest) -> str:
    """The shell line that enters the workdir once the job runs as its account: the kernel then checks
    that the account may reach it, every folder above it included. (`Popen(cwd=...)` changes folder
    before the account switch, as root: a job could then read a folder that sits inside another user's
    private one.) A folder that is missing and one the account may not enter read the same."""
    folder = shlex.quote(str(request.workdir))
    who = request.run_as.name if request.run_as is not None else "this account"
    message = shlex.quote(
        f"==> nightshift: {who} cannot enter the workdir {request.workdir} "
        "(it does not exist on this node, or that account may not enter it)"
    )
    return f"cd -- {folder} 2>/dev/null || {{ echo {message} >&2; exit {ENTER_WORKDIR_EXIT_CODE}; }}"


def _prefixed(argv: list[str], lines: list[str]) -> list[str]:
    """`argv` run after these shell lines: in the same shell for a plain shell command (one exec fewer per
    job), else by a shell that runs them and then `exec`s the command."""
    if not lines:
        return argv
    if len(argv) == 3 and argv[:2] == [SHELL, "-c"]:
        return [SHELL, "-c", "\n".join([*lines, argv[2]])]
    return [SHELL, "-c", "\n".join([*lines, 'exec "$@"']), "nightshift-job", *argv]


def _guarded(argv: list[str], parent_pid: int, lines: list[str]) -> list[str] | None:
    """`argv` behind `setpriv --pdeathsig KILL`, `lines`, and a check that the worker is still its parent.

    The same guarantee as `die_with_parent`, without a Python `preexec_fn`: that forbids vfork, so every
    launch would fork the whole worker process (about 10 ms for a 150 MB worker, on every task's path).
    None when `setpriv` is missing (then `die_with_parent` is used).
    """
    prefix = pdeathsig_prefix(signal.SIGKILL)
    if not prefix:
        return None
    check = f'[ "$PPID" = {int(parent_pid)} ] || kill -KILL $$'
    return [*prefix, *_prefixed(argv, [*lines, check])]


def _header(request: LaunchRequest) -> str:
    where = f"GPUs {_gpu_list(request)}" if request.gpu_indices else "CPU only (no GPU)"
    where = f"on {request.node} {where}" if request.node else f"on {where}"
    if request.conda_env is not None:
        where += f" in conda env {request.conda_env}"
    if request.docker_image is not None:
        where += f" in docker image {request.docker_image}"
    if request.run_as is not None:
        where += f" as {request.run_as.name}"
    if request.resume_from is not None:
        where += f", resuming from {request.resume_from}"
    now = datetime.now().astimezone().isoformat(timespec="seconds")
    return (
        f"==> nightshift task {request.task_id} attempt {request.attempt} {where} at {now}\n"
        f"==> $ {request.command}\n"
    )


def start_job(
    request: LaunchRequest,
    *,
    base_env: Mapping[str, str] | None = None,
    which: Which = shutil.which,
    sentinel: JobSentinel | None = None,
    cgroups: JobCgroups | None = None,
    spares: SpareShells | None = None,
) -> RunningJob:
    """Start the job in its own session and process group, output appended to its log; raise ExecutorError.

    With a `sentinel`, the job's processes (children included) are killed if the worker dies. With
    `cgroups`, the job runs in a cgroup of its own, which no process of it can leave; with `spares` too,
    in a shell started and moved into its cgroup ahead of time (`spares.py`), and the next one is started.
    """
    check_run_token(request.run_token)
    if not request.workdir_entered_as_account and not request.workdir.is_dir():  # else the account checks
        raise ExecutorError(
            f"workdir {str(request.workdir)!r} does not exist or is not a folder on this node"
        )
    argv = build_argv(request, which=which)
    clean_env = job_base_env(os.environ if base_env is None else base_env)
    env = _job_env(request, clean_env)
    log_offset = _write_header(request)
    spare_env = clean_env if spares is not None and request.run_as is None else None
    cleanup = (
        [argv[0], "rm", "--force", container_name(request)] if request.docker_image is not None else None
    )

    def watch(group: int, cgroup: JobCgroup | None) -> None:
        if sentinel is not None:
            sentinel.watch(request.run_token, group, cleanup, cgroup.path if cgroup is not None else None)

    spare = None
    if spares is not None and spare_env is not None:
        spare = _start_in_spare(request, argv, env, spare_env, spares, watch)
    popen: subprocess.Popen[bytes]
    cgroup: JobCgroup | None
    if spare is not None:
        popen, cgroup = spare.popen, spare.cgroup
    else:
        popen, cgroup = _spawn(request, argv, env, cgroups, watch)
    if spares is not None and spare_env is not None:
        warm_up(spares, spare_env)
    return RunningJob(
        request,
        popen,
        started_at=time.monotonic(),
        log_offset=log_offset,
        cleanup_argv=cleanup,
        sentinel=sentinel,
        cgroup=cgroup,
    )


def warm_up(spares: SpareShells, spare_env: Mapping[str, str]) -> None:
    """Have spare shells ready for the next jobs with this base environment (`job_base_env`)."""
    spares.prepare(spare_env, os.getpid(), default_signals_prefix())


def _write_header(request: LaunchRequest) -> int:
    """Append the attempt's header to its log; return the offset the job's output starts at."""
    try:
        private_folder(request.log_path.parent)  # other teams' jobs run here too: logs are the service's
        with open(request.log_path, "ab") as log:
            log.write(_header(request).encode())
            return log.tell()
    except OSError as error:
        raise ExecutorError(f"cannot open log file {str(request.log_path)!r}: {error}") from error


def _start_in_spare(
    request: LaunchRequest,
    argv: list[str],
    env: Mapping[str, str],
    spare_env: Mapping[str, str],
    spares: SpareShells,
    watch: WatchJob,
) -> SpareShell | None:
    """The job in a spare shell (already in its cgroup), watched before it runs; None when there is none
    to use."""
    spare = spares.take(spare_env)
    if spare is None:
        return None
    changed = [name for name in {*env, *spare_env} if env.get(name) != spare_env.get(name)]
    if not all(_ENV_NAME.fullmatch(name) for name in changed):  # a name the shell cannot set: directly
        spares.discard(spare)
        return None
    script = setup_script(str(request.workdir), str(request.log_path), env, spare_env, argv)
    watch(spare.popen.pid, spare.cgroup)  # a spare that turns out dead is watched again as its replacement
    return spare if spares.hand_over(spare, script) else None


def _spawn(
    request: LaunchRequest,
    argv: list[str],
    env: Mapping[str, str],
    cgroups: JobCgroups | None,
    watch: WatchJob,
) -> tuple[subprocess.Popen[bytes], JobCgroup | None]:
    """Start the job's process now; it runs nothing before it joined its cgroup (with `cgroups`) and was
    watched."""
    try:
        log = open(request.log_path, "ab")  # noqa: SIM115 - closed below once the child holds its own copy
    except OSError as error:
        raise ExecutorError(f"cannot open log file {str(request.log_path)!r}: {error}") from error
    cgroup = cgroups.create(request.run_token) if cgroups is not None else None
    lines = [HOLD_UNTIL_RELEASED]  # first: an early exit must not race the join
    if request.workdir_entered_as_account:
        lines.append(enter_workdir_line(request))
    with log:
        account: dict[str, Any] = {}
        if request.run_as is not None:
            account = {
                "user": request.run_as.uid,
                "group": request.run_as.gid,
                "extra_groups": list(request.run_as.groups),
            }
        # without a change of account, the parent-death signal is set by `setpriv` in the child (vfork, fast);
        # with one, by `die_with_parent` after the switch (a change of credentials clears it)
        guarded = _guarded(argv, os.getpid(), lines) if request.run_as is None else None
        hold_r, hold_w = os.pipe()
        try:
            popen = subprocess.Popen(
                [*default_signals_prefix(), *(guarded or _prefixed(argv, lines))],
                stdin=hold_r,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd="/" if request.workdir_entered_as_account else request.workdir,
                env=env,
                start_new_session=True,
                preexec_fn=None if guarded else die_with_parent(os.getpid()),
                close_fds=True,
                **account,
            )
        except (OSError, ValueError, subprocess.SubprocessError) as error:  # ValueError: a NUL in argv
            log.write(f"==> nightshift could not start the job: {error}\n".encode())
            _release(hold_r, hold_w)
            if cgroup is not None:
                cgroup.remove()
            raise ExecutorError(f"could not start task {request.task_id}: {error}") from error
    if cgroup is not None and cgroups is not None and not cgroup.join(popen.pid):
        cgroups.usable = False  # the same refusal would come for every job: run them without
        cgroup.remove()
        cgroup = None
    try:
        watch(popen.pid, cgroup)
    finally:
        _release(hold_r, hold_w)
    return popen, cgroup


def _release(hold_r: int, hold_w: int) -> None:
    """Let a job held at its start go on (its shell reads one line), and close the pipe here."""
    for step in (lambda: os.close(hold_r), lambda: os.write(hold_w, b"\n"), lambda: os.close(hold_w)):
        with contextlib.suppress(OSError):
            step()
