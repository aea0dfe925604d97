"""Settling an attempt whose worker is gone (a restarted worker finds it running in SQL, or the reaper finds
its lease run out): as the job ended, when its shell recorded that in its log (`executor.exit_record`), else
as a lost worker's, which the retry policy runs again.

Without the first case a job that finished just before its worker died, its end not yet written, would run
a second time.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import datetime
from typing import NamedTuple

from scheduler.executor.exit_record import recorded_exit
from scheduler.executor.outcome import classify
from scheduler.executor.reaper import make_run_token, node_token_part
from scheduler.logs import ATTEMPT_END, ATTEMPT_HEADER, append_note
from scheduler.service import Cluster
from scheduler.telemetry.lost import account_lost_attempt

log = logging.getLogger(__name__)


def token_node_of(node: str, cluster: Cluster) -> str:
    """How run tokens name a worker: its node and its cluster's database, so that a worker reconciling
    its node never touches the jobs of another nightshift on the same machine with the same node name."""
    database = cluster.engine.url.render_as_string(hide_password=True)
    digest = hashlib.sha256(database.encode()).hexdigest()[:10]
    return f"{node_token_part(node)}.{digest}"


class LostAttemptSettled(NamedTuple):
    """The task's new status (None when the claim was no longer the task's), and whether the job's own
    recorded end settled it (else it was settled as a lost worker's)."""

    status: str | None
    recorded: bool


def settle_lost_attempt(
    cluster: Cluster, task_id: int, token: str, node: str | None, why: str
) -> LostAttemptSettled:
    """Settle the attempt of `task_id` holding `token`, whose worker on `node` is gone (`why` says how):
    as its job ended when its log here records that (the log then says so), else as `lost_worker`. Its
    usage is accounted either way."""
    log_path = cluster.log_path(task_id)
    attempt = _attempt_number(cluster, task_id, token)
    run_token = make_run_token(token_node_of(node, cluster), task_id, token) if node else None
    recorded = recorded_exit(log_path, run_token, task_id, attempt) if run_token is not None else None
    if recorded is None:
        status = cluster.settle_attempt(task_id, token, "lost_worker", message=why)
    else:
        code = recorded.code
        outcome = classify(code, None, log_path, 0)
        message = f"{outcome.describe()}, as its log records; {why} before it could report the end"
        status = cluster.settle_attempt(task_id, token, outcome.reason, code, message)
        if status is not None:
            log.warning("task %s: its job ended (exit code %s) before its worker was lost", task_id, code)
            if not recorded.end_line_written:
                _note_recorded_end(cluster, task_id, attempt, f"{message}; the task is now {status}")
    if status is not None:
        account_lost_attempt(cluster, task_id, token)  # its worker metered nothing
    return LostAttemptSettled(status, recorded is not None)


def _attempt_number(cluster: Cluster, task_id: int, token: str) -> int | None:
    """Which attempt of the task held `token` (None when SQL has no such attempt)."""
    attempts = cluster.tasks.attempts(task_id)
    return next((attempt.number for attempt in attempts if attempt.token == token), None)


def _note_recorded_end(cluster: Cluster, task_id: int, attempt: int | None, text: str) -> None:
    """End the attempt's part of the log as its worker would have (`... attempt 2 ended: ...`)."""
    now = datetime.now().astimezone().isoformat(timespec="seconds")
    which = f"attempt {attempt}" if attempt is not None else "attempt"
    append_note(cluster.log_path(task_id), f"{ATTEMPT_HEADER}{task_id} {which}{ATTEMPT_END}{text} at {now}")
