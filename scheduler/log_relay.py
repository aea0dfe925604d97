"""Logs of tasks that ran on another node: the API asks that node's worker through Redis, and the worker
answers from its own log folder, so `nightshift logs`, `logs -f` and the chat's logs work without a shared
file system (where the folder is shared, the API reads the file itself and never asks).

A request is a JSON object pushed to the node's `log_requests` list; the worker reads the log as the API
would (`scheduler.logs`: never a symlink or another file) and pushes its answer, base64 bytes so a chunk cut
inside a UTF-8 character stays whole, to the request's own reply list. Both expire within seconds: a
request to a node that is down is never answered, and the API says so.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from scheduler.errors import NodeDidNotAnswer
from scheduler.keys import RedisKeys
from scheduler.logs import log_exists, read_from, read_tail

log = logging.getLogger(__name__)

ANSWER_TIMEOUT_S = 3.0
REQUEST_TTL_S = 10.0  # a request older than this is not answered: the API gave up on it
MAX_ANSWER_BYTES = 4 * 1024 * 1024  # one answer's bytes; `logs -f` asks again from where it ended
WAIT_S = 5.0  # the loop's block before it looks at its stop flag (a stopping worker wakes it at once)


@dataclass(frozen=True, slots=True)
class LogPiece:
    """Part of a log: its bytes, the offset read up to, and whether the node has the file at all."""

    data: bytes
    offset: int
    found: bool


def request_log(
    client: redis.Redis,
    keys: RedisKeys,
    node: str,
    task_id: int,
    *,
    tail: int | None = None,
    offset: int | None = None,
    timeout_s: float = ANSWER_TIMEOUT_S,
) -> LogPiece:
    """Ask `node`'s worker for task `task_id`'s log: the last `tail` lines (all of it when None), or the
    bytes after `offset` when given. Raises `NodeDidNotAnswer` after `timeout_s`."""
    request_id = uuid.uuid4().hex
    request = {"id": request_id, "task": task_id, "tail": tail, "offset": offset, "sent_s": time.time()}
    pipe = client.pipeline(transaction=False)
    pipe.rpush(keys.log_requests(node), json.dumps(request))
    pipe.expire(keys.log_requests(node), int(REQUEST_TTL_S))
    pipe.execute()
    answer = client.blpop([keys.log_reply(request_id)], timeout=timeout_s)
    if answer is None:
        client.delete(keys.log_reply(request_id))  # an answer that comes later expires on its own anyway
        raise NodeDidNotAnswer(task_id, node, f"did not answer in {timeout_s:g} s")
    body = json.loads(answer[1])
    return LogPiece(base64.b64decode(body["data"]), int(body["offset"]), bool(body["found"]))


def answer_request(request: dict[str, Any], log_path: Callable[[int], Path]) -> dict[str, Any]:
    """The answer to one request, read from this node's log file of the task (`log_path`) as the API reads
    its own logs."""
    path = log_path(int(request["task"]))
    found = log_exists(path)
    offset = request.get("offset")
    if offset is not None:
        data, end = read_from(path, int(offset), limit=MAX_ANSWER_BYTES)
    else:
        text, end = read_tail(path, request.get("tail"))
        data = text.encode()
        if len(data) > MAX_ANSWER_BYTES:  # said in the style of nightshift's own lines, never silently
            left_out = (
                f"==> the first {len(data) - MAX_ANSWER_BYTES} bytes are left out: see the log on its node\n"
            )
            data = left_out.encode() + data[-MAX_ANSWER_BYTES:]
    return {"data": base64.b64encode(data).decode("ascii"), "offset": end, "found": found}


def wake_answerer(client: redis.Redis, keys: RedisKeys, node: str) -> None:
    """Wake `node`'s answering loop at once (an empty request, which it skips), so a stopping worker does
    not wait out its block."""
    client.rpush(keys.log_requests(node), "{}")


def answer_log_requests(
    client: redis.Redis,
    keys: RedisKeys,
    node: str,
    log_path: Callable[[int], Path],
    stop: threading.Event,
    wait_s: float = WAIT_S,
    clock: Callable[[], float] = time.time,
) -> None:
    """A worker's loop: answer the log requests for `node` until `stop` is set (a Redis error is logged
    and the loop goes on after a pause: the API's request then times out and says so)."""
    while not stop.is_set():
        try:
            popped = client.blpop([keys.log_requests(node)], timeout=wait_s)
            if popped is None:
                continue
            request = json.loads(popped[1])
            if clock() - float(request.get("sent_s", 0)) > REQUEST_TTL_S:
                continue
            reply = keys.log_reply(str(request["id"]))
            pipe = client.pipeline(transaction=False)
            pipe.rpush(reply, json.dumps(answer_request(request, log_path)))
            pipe.expire(reply, int(REQUEST_TTL_S))
            pipe.execute()
        except redis.RedisError as error:
            log.warning("log requests of node %s: %s; trying again", node, error)
            stop.wait(wait_s)
        except (ValueError, KeyError, TypeError) as error:
            log.warning("ignored a malformed log request for node %s: %s", node, error)
