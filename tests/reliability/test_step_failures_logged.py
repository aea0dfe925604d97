"""A worker whose steps keep failing the same way (Redis away for a minute) logs the traceback once, then one
line every half minute, not a traceback a second; a new kind of failure gets its traceback again."""

from __future__ import annotations

import logging
import os

import redis

from scheduler.gpus import SimulatedGpus
from scheduler.worker import FAILING_SAID_EVERY_S, Worker


def test_the_same_failure_is_told_in_full_once_then_briefly_every_half_minute(cluster, caplog):
    worker = Worker(cluster, "box-1", SimulatedGpus("1x24", node="box-1"), base_env=dict(os.environ))
    clock = [1000.0]
    gone = redis.ConnectionError("Error 111 connecting to 127.0.0.1:6390. Connection refused.")

    with caplog.at_level(logging.WARNING, logger="scheduler.worker"):
        for _ in range(10):  # ten seconds of failed steps
            worker._log_step_failure(gone, clock[0])
            clock[0] += 1.0
        clock[0] += FAILING_SAID_EVERY_S
        worker._log_step_failure(gone, clock[0])
        worker._log_step_failure(ValueError("something else"), clock[0])

    records = [(r.levelname, r.exc_info is not None, r.getMessage()) for r in caplog.records]
    assert [(level, traced) for level, traced, _ in records] == [
        ("ERROR", True),
        ("WARNING", False),
        ("ERROR", True),
    ]
    assert records[1][2] == (
        "worker step on node box-1 still failing after 40 s: ConnectionError: Error 111 connecting to "
        "127.0.0.1:6390. Connection refused."
    )
