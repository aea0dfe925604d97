"""A hangup (the terminal of `make up &` closed) stops a nightshift process as SIGTERM does: its jobs get
their stop signal and go back to the queue. Under `nohup` (SIGHUP ignored) it changes nothing."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.reliability.stack import NIGHTSHIFT, Stack, poll

# Saves on SIGTERM (its stop signal) and exits; marks itself ready once the trap is set.
JOB = "trap 'echo saved > {folder}/saved; exit 0' TERM; touch {folder}/ready; while :; do sleep 0.1; done"


def start_worker(stack: Stack, folder: Path, sighup: signal.Handlers) -> subprocess.Popen[bytes]:
    """`nightshift worker` for node w1 with SIGHUP at `sighup` when it starts (SIG_IGN: as under `nohup`;
    SIG_DFL: as from a terminal), whatever this test process was started with."""

    def set_sighup() -> None:
        signal.signal(signal.SIGHUP, sighup)

    with open(folder / "w1.log", "ab") as log:
        return subprocess.Popen(
            [NIGHTSHIFT, "worker"],
            env={**stack.env, "NIGHTSHIFT_NODE_NAME": "w1", "NIGHTSHIFT_SIMULATE_GPUS": "2x24"},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=set_sighup,
        )


@pytest.mark.slow
def test_a_hangup_stops_a_worker_gracefully_and_its_task_goes_back_to_the_queue(tmp_path, redis_url):
    stack = Stack(tmp_path, redis_url)
    folder = tmp_path / "job"
    folder.mkdir()
    try:
        stack.start_api()
        stack.start("scheduler", "scheduler")
        stack.processes["w1"] = worker = start_worker(stack, tmp_path, signal.SIG_DFL)
        task_id = stack.submit({"command": JOB.format(folder=folder), "workdir": str(folder)})
        poll(lambda: (folder / "ready").exists(), what="the job to start")

        worker.send_signal(signal.SIGHUP)

        # graceful, not fast: a loaded machine (cgroup moves, a full CI) once took over 30 s here; the
        # worker's log says how long each part of its stop took
        log = tmp_path / "w1.log"
        try:
            code = worker.wait(timeout=120)
        except subprocess.TimeoutExpired:
            pytest.fail("the worker did not exit within 120 s of its hangup:\n" + log.read_text()[-3000:])
        assert code == 0, log.read_text()[-3000:]
        assert "job(s) stopped and settled in" in log.read_text()
        assert (folder / "saved").read_text().strip() == "saved"
        assert stack.statuses([task_id])[task_id] == "queued"
        (attempt,) = stack.tasks.attempts(task_id)
        assert attempt.reason == "worker_shutdown"
    finally:
        stack.close()


@pytest.mark.slow
def test_under_nohup_a_hangup_leaves_the_worker_and_its_job_running(tmp_path, redis_url):
    stack = Stack(tmp_path, redis_url)
    folder = tmp_path / "job"
    folder.mkdir()
    worker: subprocess.Popen[bytes] | None = None
    try:
        stack.start_api()
        stack.start("scheduler", "scheduler")
        worker = start_worker(stack, tmp_path, signal.SIG_IGN)
        task_id = stack.submit({"command": JOB.format(folder=folder), "workdir": str(folder)})
        poll(lambda: (folder / "ready").exists(), what="the job to start")

        worker.send_signal(signal.SIGHUP)
        time.sleep(2)

        assert worker.poll() is None
        assert stack.statuses([task_id])[task_id] == "running"
        assert not (folder / "saved").exists()
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(timeout=30)
        stack.close()
