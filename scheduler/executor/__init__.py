"""How a worker runs one job attempt: as its own process group, logged to a file, stopped without stragglers.

    request = LaunchRequest(...)
    job = start_job(request)            # ExecutorError when it cannot start
    job.poll()                          # from the worker loop: None while running
    job.stop(grace_s=30, reason="cancelled")
    job.outcome                         # JobOutcome(exit_code, signal, reason) once finished

`find_processes_with_token`, `find_run_tokens` and `kill_processes_with_token` let a restarted worker find
and kill job processes it no longer owns.
"""

from scheduler.executor.launch import (
    LaunchRequest,
    build_argv,
    build_env,
    check_docker_image_allowed,
    container_name,
    is_secret_env_name,
    start_job,
)
from scheduler.executor.outcome import JobOutcome, OutcomeReason, StopReason
from scheduler.executor.process import RunningJob
from scheduler.executor.reaper import (
    TOKEN_VAR,
    find_processes_with_token,
    find_run_tokens,
    kill_processes_with_token,
    make_run_token,
    node_token_part,
    parse_run_token,
)

__all__ = [
    "TOKEN_VAR",
    "JobOutcome",
    "LaunchRequest",
    "OutcomeReason",
    "RunningJob",
    "StopReason",
    "build_argv",
    "build_env",
    "check_docker_image_allowed",
    "container_name",
    "find_processes_with_token",
    "find_run_tokens",
    "is_secret_env_name",
    "kill_processes_with_token",
    "make_run_token",
    "node_token_part",
    "parse_run_token",
    "start_job",
]
