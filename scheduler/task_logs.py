"""Where a task's log is read from: this machine's log folder when the file is here (one box, or a folder
the nodes share), else the node that ran the task, through `log_relay`.

A task whose attempts ran on several nodes has a part of its log on each (`attempt_logs`): the whole log is
the attempts' parts in attempt order (the `attempts` table says which node ran each), each node's file read
as above, a relayed answer capped as one always is (`log_relay.MAX_ANSWER_BYTES`, its cut said in a line).
A node that does not answer leaves a line saying which attempt's part is missing; only when no part at all
could be read is it an error (`NodeDidNotAnswer`, a 503). `logs -f` follows the current
attempt's file with a `LogCursor` (offsets are per file); when the task starts an attempt on another node,
the cursor reads the rest of the old file, then the new attempt's part from the new node.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from scheduler.attempt_logs import (
    AttemptRun,
    LogParts,
    join_parts,
    last_lines,
    missing_line,
    split_attempts,
    starts_attempt_from,
    with_lead,
)
from scheduler.clock import now_ms
from scheduler.errors import NodeDidNotAnswer
from scheduler.log_relay import ANSWER_TIMEOUT_S, LogPiece, request_log
from scheduler.logs import LAST_OUTPUT_SCAN, last_output_in, log_exists, read_from, read_tail
from scheduler.policy.reasons import human_duration
from scheduler.service import Cluster
from scheduler.store.tables import Task

log = logging.getLogger(__name__)

QUICK_ANSWER_S = 1.0  # for a log's last lines shown beside something else (explain, the summary)


@dataclass(frozen=True, slots=True)
class LogCursor:
    """Where `logs -f` goes on reading: the attempt followed, whose file holds it (None: this machine's
    folder, else the node named), and the offset in that file read up to (None: not read yet)."""

    attempt: int
    node: str | None
    offset: int | None


@dataclass(frozen=True, slots=True)
class _Local:
    """This machine's log file of a task, cut into attempts; `exists` False when there is none."""

    exists: bool
    found: LogParts
    end: int


def attempt_runs(cluster: Cluster, task: Task) -> list[AttemptRun]:
    """Each attempt of `task` and its node, oldest first (the `attempts` rows; for a row without them,
    its current node), so that a log is read from every node that ran a part of it."""
    runs = [AttemptRun(row.number, row.node) for row in cluster.tasks.attempts(task.id)]
    if not runs and task.node is not None:
        runs = [AttemptRun(max(1, task.attempts_count), str(task.node))]
    return runs


def read_log_tail(
    cluster: Cluster, task: Task, lines: int | None, timeout_s: float = ANSWER_TIMEOUT_S
) -> tuple[str, LogCursor]:
    """The last `lines` lines of a task's log (all of it when None) over all its attempts, and where
    `read_log_from` goes on. Raises `NodeDidNotAnswer` when no part of the log could be read because its
    node(s) did not answer within `timeout_s`."""
    runs = attempt_runs(cluster, task)
    if len({run.node for run in runs}) <= 1:
        return _read_one_place(cluster, task, runs, lines, timeout_s)
    text, cursor = _read_across_nodes(cluster, task, runs, timeout_s)
    return last_lines(text, lines), cursor


def read_log_from(cluster: Cluster, task: Task, cursor: LogCursor) -> tuple[bytes, LogCursor]:
    """The bytes of a task's log after `cursor` and the cursor after them (`logs -f`), from wherever the
    attempt followed is; when `task` (read again) has started a new attempt, the rest of the old attempt's
    file, then the new attempt's part. Raises `NodeDidNotAnswer` when the followed node does not answer."""
    if task.node is not None and task.attempts_count > cursor.attempt:
        return _next_attempt(cluster, task, cursor)
    if cursor.offset is None:
        return _attempt_part(cluster, task, cursor, ANSWER_TIMEOUT_S)
    data, end = _read_place(cluster, task.id, cursor.node, cursor.offset)
    return data, replace(cursor, offset=end)


def failure_lines(cluster: Cluster, task: Task, lines: int) -> list[str]:
    """The last lines a task printed in its last attempt (`logs.last_output_in`), from wherever its log is;
    none when its node does not answer within a second (they are shown beside other things)."""
    runs = attempt_runs(cluster, task)
    try:
        if len({run.node for run in runs}) <= 1:
            text, _ = read_log_tail(cluster, task, LAST_OUTPUT_SCAN, timeout_s=QUICK_ANSWER_S)
        else:
            last = runs[-1]
            data, _ = _attempt_part(cluster, task, LogCursor(last.number, last.node, None), QUICK_ANSWER_S)
            text = data.decode("utf-8", errors="replace")
    except NodeDidNotAnswer as error:
        log.info("%s", error)
        return []
    return last_output_in(text, lines)


def _read_one_place(
    cluster: Cluster, task: Task, runs: list[AttemptRun], lines: int | None, timeout_s: float
) -> tuple[str, LogCursor]:
    """The log of a task that ran on one node at most: here when the file is here (or it never ran),
    else from that node."""
    path = cluster.log_path(task.id)
    attempt = runs[-1].number if runs else task.attempts_count
    if not runs or log_exists(path):
        text, end = read_tail(path, lines)
        return text, LogCursor(attempt, None, end)
    node = runs[-1].node
    piece = _ask_node(cluster, task.id, node, tail=lines, timeout_s=timeout_s)
    return _text(piece), LogCursor(attempt, node, piece.offset)


def _read_across_nodes(
    cluster: Cluster, task: Task, runs: list[AttemptRun], timeout_s: float
) -> tuple[str, LogCursor]:
    """The whole log of a task whose attempts ran on several nodes: this machine's file, then each node
    whose attempts are not in it, joined in attempt order; a node that does not answer leaves a line."""
    local = _local(cluster, task.id)
    found = with_lead(local.found, [run.number for run in runs]) if local.found.first is not None else {}
    here = {run.node for run in runs if run.number in found}
    sources: dict[int, str | None] = dict.fromkeys(found)
    ends: dict[str | None, int] = {None: local.end}
    failures: dict[str, NodeDidNotAnswer] = {}
    for node in dict.fromkeys(run.node for run in runs if run.node not in here and run.number not in found):
        try:
            piece = _ask_node(cluster, task.id, node, timeout_s=timeout_s)
        except NodeDidNotAnswer as error:
            failures[node] = error
            continue
        ends[node] = piece.offset
        theirs = with_lead(split_attempts(_text(piece), task.id), [r.number for r in runs if r.node == node])
        for number, part in theirs.items():
            if number not in found:
                found[number], sources[number] = part, node
    if failures and not local.exists and len(ends) == 1:
        raise failures.get(runs[-1].node) or next(iter(failures.values()))
    pieces = [local.found.lead if local.found.first is None else ""]
    for run in runs:
        failed = failures.get(run.node)
        pieces.append(found.get(run.number) or (missing_line(run, str(failed)) if failed else ""))
    return join_parts(pieces), _cursor_after(runs[-1], sources, ends, here)


def _cursor_after(
    last: AttemptRun, sources: dict[int, str | None], ends: dict[str | None, int], here: set[str]
) -> LogCursor:
    """Where `logs -f` goes on after a whole read: the end of the file that holds the last attempt."""
    if last.number in sources:
        node = sources[last.number]
        return LogCursor(last.number, node, ends[node])
    if last.node in here:  # its node's file is this machine's: the attempt has not written to it yet
        return LogCursor(last.number, None, ends[None])
    if last.node in ends:
        return LogCursor(last.number, last.node, ends[last.node])
    return LogCursor(last.number, last.node, None)  # its node did not answer: read it whole later


def _next_attempt(cluster: Cluster, task: Task, cursor: LogCursor) -> tuple[bytes, LogCursor]:
    """The task started attempt `task.attempts_count` on `task.node`: the rest of the followed file, and
    when the new attempt is not written there, its part from its node."""
    new = LogCursor(task.attempts_count, str(task.node), None)
    if cursor.offset is None:  # the old file was never read: nothing of it to finish
        return _attempt_part(cluster, task, new, ANSWER_TIMEOUT_S)
    if cursor.node == new.node:  # the same node's file: read on
        return read_log_from(cluster, task, replace(cursor, attempt=new.attempt))
    try:
        rest, end = _read_place(cluster, task.id, cursor.node, cursor.offset)
    except NodeDidNotAnswer as error:
        rest, end = f"\n==> the end of attempt {cursor.attempt} is missing here: {error}\n".encode(), 0
    else:
        if starts_attempt_from(rest, task.id, new.attempt):  # the same file (a shared folder)
            return rest, LogCursor(new.attempt, cursor.node, end)
    more, after = _attempt_part(cluster, task, new, ANSWER_TIMEOUT_S)
    return rest + more, after


def _attempt_part(
    cluster: Cluster, task: Task, cursor: LogCursor, timeout_s: float
) -> tuple[bytes, LogCursor]:
    """Attempt `cursor.attempt`'s part (and any later attempt's in the same file) and a cursor at the end
    of that file: from this machine's file when the attempt, or an earlier one of its node, is in it (or
    every attempt ran on that node), else from its node."""
    local = _local(cluster, task.id)
    runs = attempt_runs(cluster, task)
    nodes_here = {run.node for run in runs if run.number in local.found.parts}
    one_node = {run.node for run in runs} <= {cursor.node}
    if cursor.attempt in local.found.parts or (local.exists and (cursor.node in nodes_here or one_node)):
        parts, node, end = local.found, None, local.end
    else:
        piece = _ask_node(cluster, task.id, str(cursor.node), timeout_s=timeout_s)
        parts, node, end = split_attempts(_text(piece), task.id), cursor.node, piece.offset
    theirs = with_lead(parts, [run.number for run in runs if run.node == cursor.node])
    text = join_parts([part for number, part in sorted(theirs.items()) if number >= cursor.attempt])
    return text.encode(), LogCursor(cursor.attempt, node, end)


def _local(cluster: Cluster, task_id: int) -> _Local:
    """This machine's log file of the task, read whole (up to `logs.MAX_WHOLE_BYTES`) and cut."""
    path = cluster.log_path(task_id)
    if not log_exists(path):
        return _Local(False, LogParts("", {}, None), 0)
    text, end = read_tail(path, None)
    return _Local(True, split_attempts(text, task_id), end)


def _read_place(cluster: Cluster, task_id: int, node: str | None, offset: int) -> tuple[bytes, int]:
    """The bytes after `offset` of the task's file on `node` (None: this machine's)."""
    if node is None:
        return read_from(cluster.log_path(task_id), offset)
    piece = _ask_node(cluster, task_id, node, offset=offset)
    return piece.data, piece.offset


def _text(piece: LogPiece) -> str:
    """A relayed piece's bytes as text (a cut UTF-8 character replaced, as a local read does)."""
    return piece.data.decode("utf-8", errors="replace")


def _ask_node(
    cluster: Cluster,
    task_id: int,
    node: str,
    *,
    tail: int | None = None,
    offset: int | None = None,
    timeout_s: float = ANSWER_TIMEOUT_S,
) -> LogPiece:
    """`log_relay.request_log` of `node` for task `task_id`, refused at once when that node's worker has
    not been heard from (no heartbeat for its `stale_after_ms`, its lease TTL): nobody would answer."""
    state = next((state for state in cluster.nodes.all() if state.name == node), None)
    now = now_ms()
    if state is None:
        raise NodeDidNotAnswer(task_id, node, "is not running")
    if not state.alive(now):
        silent_s = (now - state.heartbeat_ms) / 1000
        raise NodeDidNotAnswer(task_id, node, f"has been silent for {human_duration(silent_s)}")
    return request_log(
        cluster.queue.client, cluster.queue.keys, node, task_id, tail=tail, offset=offset, timeout_s=timeout_s
    )
