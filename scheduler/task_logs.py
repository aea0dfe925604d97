"""Where a task's log is read from: this machine's log folder when the file is here (one box, or a folder
the nodes share), else the node that ran the task, through `log_relay`."""

from __future__ import annotations

import logging
from pathlib import Path

from scheduler.clock import now_ms
from scheduler.errors import NodeDidNotAnswer
from scheduler.log_relay import ANSWER_TIMEOUT_S, LogPiece, request_log
from scheduler.logs import LAST_OUTPUT_SCAN, last_output_in, log_exists, read_from, read_tail
from scheduler.policy.reasons import human_duration
from scheduler.service import Cluster
from scheduler.store.tables import Task

log = logging.getLogger(__name__)

QUICK_ANSWER_S = 1.0  # for a log's last lines shown beside something else (explain, the summary)


def read_log_tail(
    cluster: Cluster, task: Task, lines: int | None, timeout_s: float = ANSWER_TIMEOUT_S
) -> tuple[str, int]:
    """The last `lines` lines of a task's log (all of it when None) and the offset read up to. Raises
    `NodeDidNotAnswer` when the log is on a node whose worker does not answer within `timeout_s`."""
    path = cluster.log_path(task.id)
    if _here(task, path):
        return read_tail(path, lines)
    piece = _ask_node(cluster, task, tail=lines, timeout_s=timeout_s)
    return piece.data.decode("utf-8", errors="replace"), piece.offset


def read_log_from(cluster: Cluster, task: Task, offset: int) -> tuple[bytes, int]:
    """The bytes of a task's log after `offset` and the new offset (`logs -f`), from wherever it is."""
    path = cluster.log_path(task.id)
    if _here(task, path):
        return read_from(path, offset)
    piece = _ask_node(cluster, task, offset=offset)
    return piece.data, piece.offset


def failure_lines(cluster: Cluster, task: Task, lines: int) -> list[str]:
    """The last lines a task printed in its last attempt (`logs.last_output_in`), from wherever its log is;
    none when its node does not answer within a second (they are shown beside other things)."""
    try:
        text, _ = read_log_tail(cluster, task, LAST_OUTPUT_SCAN, timeout_s=QUICK_ANSWER_S)
    except NodeDidNotAnswer as error:
        log.info("%s", error)
        return []
    return last_output_in(text, lines)


def _here(task: Task, path: Path) -> bool:
    """Whether the log is read from this machine: it is here, or the task never ran on a node."""
    return task.node is None or log_exists(path)


def _ask_node(
    cluster: Cluster,
    task: Task,
    *,
    tail: int | None = None,
    offset: int | None = None,
    timeout_s: float = ANSWER_TIMEOUT_S,
) -> LogPiece:
    """`log_relay.request_log` of the node that ran `task`, refused at once when that node's worker has
    not been heard from (no heartbeat for `NODE_STALE_AFTER_MS`): nobody would answer."""
    node = str(task.node)
    state = next((state for state in cluster.nodes.all() if state.name == node), None)
    now = now_ms()
    if state is None:
        raise NodeDidNotAnswer(task.id, node, "is not running")
    if not state.alive(now):
        silent_s = (now - state.heartbeat_ms) / 1000
        raise NodeDidNotAnswer(task.id, node, f"has been silent for {human_duration(silent_s)}")
    return request_log(
        cluster.queue.client, cluster.queue.keys, node, task.id, tail=tail, offset=offset, timeout_s=timeout_s
    )
