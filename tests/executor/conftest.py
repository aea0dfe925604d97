"""Fixtures for the executor tests: request builders, a job starter that cleans up, and polling helpers."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from scheduler.executor import LaunchRequest, RunningJob, kill_processes_with_token, start_job
from scheduler.executor.launch import job_base_env, warm_up
from scheduler.executor.spares import SpareShells

WAIT_S = 10.0


def wait_until(predicate: Callable[[], Any], timeout_s: float = WAIT_S, what: str = "condition") -> Any:
    """Poll predicate until it returns something truthy; fail the test after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while not (value := predicate()):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.02)
    return value


@contextmanager
def stand_in_worker(script: str, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path, str]]:
    """A worker process running `script` (`python -c`, with argv workdir, log path, run token; stdin kept
    open so it waits to be killed): yields it, the job's workdir and token; kills it and the job after."""
    token = f"test-{uuid.uuid4().hex}"
    workdir = tmp_path / "work"
    workdir.mkdir()
    worker = subprocess.Popen(
        [sys.executable, "-c", script, str(workdir), str(tmp_path / "job.log"), token],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        yield worker, workdir, token
    finally:
        worker.kill()
        worker.wait(WAIT_S)
        for stream in (worker.stdin, worker.stdout):
            if stream is not None:
                stream.close()
        kill_processes_with_token(token)


@pytest.fixture
def make_request(tmp_path: Path) -> Callable[..., LaunchRequest]:
    """Factory: `make_request("echo hi", gpu_indices=())` -> a LaunchRequest with a fresh run token."""
    workdir = tmp_path / "work"
    workdir.mkdir()

    def make(command: str = "true", **overrides: Any) -> LaunchRequest:
        fields: dict[str, Any] = {
            "task_id": 12,
            "attempt": 1,
            "command": command,
            "workdir": workdir,
            "log_path": tmp_path / "logs" / "12" / "attempt-1.log",
            "gpu_indices": (0, 1),
            "env": {},
            "conda_env": None,
            "docker_image": None,
            "checkpoint_dir": None,
            "time_limit_s": None,
            "run_token": f"test-{uuid.uuid4().hex}",
        }
        fields.update(overrides)
        return LaunchRequest(**fields)

    return make


LAUNCHES = ("direct", "in-cgroup", "from-spare")


@pytest.fixture(params=LAUNCHES)
def run_job(
    request: pytest.FixtureRequest, make_request: Callable[..., LaunchRequest]
) -> Iterator[Callable[..., RunningJob]]:
    """Factory: `run_job("sleep 1", base_env=...)` starts a job; every job is stopped and swept afterwards.

    Every test using it runs three times, once per way a worker starts jobs: directly (process group and
    run token only), directly in a cgroup of its own, and in a spare shell already in its cgroup
    (`spares.py`; the fixture checks the spare was the one used).
    """
    jobs: list[RunningJob] = []
    cgroups = request.getfixturevalue("job_cgroups") if request.param != "direct" else None
    spares = SpareShells(cgroups) if cgroups is not None and request.param == "from-spare" else None

    def run(command: str, *, base_env: dict[str, str] | None = None, **overrides: Any) -> RunningJob:
        launch = make_request(command, **overrides)
        if spares is None:
            job = start_job(launch, base_env=base_env, cgroups=cgroups)
        else:
            spare_env = job_base_env(os.environ if base_env is None else base_env)
            warm_up(spares, spare_env)
            spare = spares.spare_pid(spare_env)
            job = start_job(launch, base_env=base_env, cgroups=cgroups, spares=spares)
            assert job.pid == spare, "the job did not start in the spare shell"
        jobs.append(job)
        return job

    yield run
    for job in jobs:
        job.stop(0.1, "cancelled")
    if spares is not None:
        spares.close()


# a command that uses half a second of CPU
BURN_HALF_A_SECOND = (
    "python3 -c 'import time\nstart = time.process_time()\nwhile time.process_time() - start < 0.5: pass'"
)
