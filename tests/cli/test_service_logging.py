"""What `nightshift up` and the other services print: their own INFO lines, not one line per run of each
periodic job (APScheduler's executor logs every run; GPU telemetry alone runs every 10 s)."""

from __future__ import annotations

import os
import subprocess
import sys

# set up the services' logging, then let an APScheduler interval job run three times
RUN_A_PERIODIC_JOB = """
import logging, threading
from apscheduler.schedulers.background import BackgroundScheduler
from api.cli.app import _setup_logging
_setup_logging()
logging.getLogger("nightshift").info("service started")
ran = threading.Semaphore(0)
scheduler = BackgroundScheduler()
scheduler.add_job(ran.release, "interval", seconds=0.05, id="telemetry")
scheduler.start()
for _ in range(3):
    assert ran.acquire(timeout=30)
scheduler.shutdown()
"""


def _output_at(level: str) -> str:
    env = {**os.environ, "NIGHTSHIFT_LOG_LEVEL": level}
    done = subprocess.run(
        [sys.executable, "-c", RUN_A_PERIODIC_JOB], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_periodic_jobs_do_not_log_each_run_at_the_default_level() -> None:
    output = _output_at("INFO")
    assert "service started" in output
    assert "Running job" not in output and "executed successfully" not in output


def test_debug_level_shows_each_run_of_the_periodic_jobs() -> None:
    output = _output_at("DEBUG")
    assert output.count("executed successfully") >= 3
