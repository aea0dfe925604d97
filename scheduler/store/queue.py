"""The Redis side of the queue: priority sorted set, node inboxes, leases with fencing tokens.

Each multi-key change is one Lua script (in `lua/`), so two schedulers or workers never interleave.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, cast

import redis
from redis.commands.core import Script

from scheduler.errors import ServiceUnavailable
from scheduler.keys import RedisKeys
from scheduler.policy.types import QueuedTask
from scheduler.policy.window import window_ids

LUA_DIR = Path(__file__).parent / "lua"
# A reply slower than this is an error. Longer than every blocking wait on these connections (the log-request
# loop blocks 5 s, doorbells at most 2 s), which redis-py 8's own default of 5 s cut as "Timeout reading from
# socket"; shorter than a lease, so a hung Redis still shows in time.
SOCKET_TIMEOUT_S = 15.0


def load_script(client: redis.Redis, name: str) -> Script:
    """The script `lua/<name>.lua`, registered with `client` (sent by its hash, loaded when missing)."""
    return client.register_script((LUA_DIR / f"{name}.lua").read_text(encoding="utf-8"))


def _gpus_text(gpu_indices: Iterable[int]) -> str:
    return ",".join(str(i) for i in gpu_indices)


def _gpus_tuple(text: str | bytes) -> tuple[int, ...]:
    raw = text.decode() if isinstance(text, bytes) else text
    return tuple(int(part) for part in raw.split(",") if part != "")


def _revision(text: str | bytes) -> int | None:
    raw = text.decode() if isinstance(text, bytes) else text
    return int(raw) if raw else None


def member_name(task: QueuedTask) -> str:
    """The member index a queued task belongs to: "team/person" (`RedisKeys.member_queue`)."""
    return f"{task.team}/{task.user}"


class QueueEntry(NamedTuple):
    """A task as the queue indexes it: its static score, when it is overdue, and whose it is ("team/person":
    the member index whose first tasks join a pass's window; None: not indexed there)."""

    task_id: int
    score: float
    due_s: float | None = None
    member: str | None = None


@dataclass(frozen=True, slots=True)
class PassSnapshot:
    """The Redis side of one scheduling pass (`RedisQueue.pass_snapshot`)."""

    head: list[int]  # ids of the window: the overdue tasks, then the first queued tasks (`window_ids`)
    assignments: dict[int, tuple[str, tuple[int, ...]]]  # assigned, not yet claimed: id -> (node, gpus)
    leased: set[int]  # ids holding a lease (claimed: running, or about to be marked running in SQL)
    nodes: dict[str, dict[str, str]]  # node name -> raw record
    next_lease_expiry_ms: int | None = None  # when the first lease runs out (None: no leases)
    # (team, person, task id) of each member's first queued tasks (`policy.window.absent_member_heads`)
    member_heads: tuple[tuple[str, str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Claim:
    """A task a worker has leased: only the holder of `token` may change the task's state."""

    task_id: int
    token: str
    gpu_indices: tuple[int, ...]
    revision: int | None = None  # the task row's revision the start was decided on (None: not known)


@dataclass(frozen=True, slots=True)
class Lease:
    """A live lease as stored in Redis."""

    task_id: int
    node: str
    token: str
    gpu_indices: tuple[int, ...]
    expires_ms: int


class RenewResult:
    """What a heartbeat learns about one lease."""

    RENEWED = 1
    CANCEL_REQUESTED = 2
    STOLEN = 0
    MISSING = -1


class RedisQueue:
    """The queue and lease operations over one Redis connection."""

    url: str | None = None  # where `from_url` connected (other clients of the same server use it)

    def __init__(self, client: redis.Redis, keys: RedisKeys | None = None) -> None:
        self.client = client
        self.keys = keys or RedisKeys()
        self._assign = load_script(client, "assign")
        self._claim = load_script(client, "claim")
        self._renew = load_script(client, "renew")
        self._release = load_script(client, "release")
        self._expire = load_script(client, "expire")
        self._restore = load_script(client, "restore")
        self._unassign = load_script(client, "unassign")
        self._snapshot = load_script(client, "snapshot")

    @classmethod
    def from_url(cls, url: str, keys: RedisKeys | None = None) -> RedisQueue:
        """Connect to `url` (checked with a PING, so a wrong URL fails here with a clear message)."""
        client = redis.Redis.from_url(
            url, decode_responses=True, health_check_interval=30, socket_timeout=SOCKET_TIMEOUT_S
        )
        try:
            client.ping()
        except redis.RedisError as exc:
            raise ServiceUnavailable(f"cannot reach Redis at {url}: {exc}") from None
        queue = cls(client, keys)
        queue.url = url
        return queue

    def scheduler_running(self) -> bool:
        """True while a scheduler holds the leader lock (it renews it on every pass; a crashed one's lapses
        within its TTL): without one queued tasks never start, however free the GPUs."""
        return bool(self.client.exists(self.keys.scheduler_lock))

    # --- epoch: detects that Redis lost its data ---------------------------------------------

    def epoch(self) -> str | None:
        """The id of the current Redis state, or None when Redis has lost (or never had) our data."""
        return cast(str | None, self.client.get(self.keys.epoch))

    def start_epoch(self) -> str:
        """Mark the Redis state as rebuilt; returns the new epoch id."""
        epoch = secrets.token_hex(4)
        self.client.set(self.keys.epoch, epoch)
        return epoch

    # --- queue ---------------------------------------------------------------------------------

    def enqueue(
        self, task_id: int, score: float, due_s: float | None = None, member: str | None = None
    ) -> None:
        """Add a task to the queue (no-op if it is already there) and wake the scheduler.

        `due_s` (`policy.aging.overdue_at_s`) indexes it in the overdue set too, and `member` in that
        member's index (`RedisKeys.member_queue`), in the same transaction.
        """
        self.enqueue_many([QueueEntry(task_id, score, due_s, member)])

    def enqueue_many(self, entries: Iterable[QueueEntry | tuple[int, float, float | None]]) -> None:
        """`enqueue` of many tasks (`QueueEntry`, or (task id, score, due_s)), in one transaction and one
        round trip. The scheduler is rung once for all of them.
        """
        queue: dict[str, float] = {}
        overdue: dict[str, float] = {}
        members: dict[str, dict[str, float]] = {}
        for entry in entries:
            task_id, score, due_s, member = QueueEntry(*entry)
            queue[str(task_id)] = score
            if due_s is not None:
                overdue[str(task_id)] = due_s
            if member is not None:
                members.setdefault(member, {})[str(task_id)] = score
        if not queue:
            return
        pipe = self.client.pipeline(transaction=True)
        pipe.zadd(self.keys.queue, queue, nx=True)
        if overdue:
            pipe.zadd(self.keys.overdue, overdue, nx=True)
        for member, scores in members.items():
            pipe.zadd(self.keys.member_queue(member), scores, nx=True)
            pipe.sadd(self.keys.members, member)
            pipe.hset(self.keys.queued_by, mapping=dict.fromkeys(scores, member))
        self._ring_scheduler(pipe)
        pipe.execute()

    def rescore(self, task_id: int, score: float, due_s: float | None, member: str | None = None) -> None:
        """New scores for a task already in the queue and the overdue set (after its spec changed), and in
        `member`'s index; a task not there is left out, so one assigned or claimed meanwhile is not queued
        twice."""
        pipe = self.client.pipeline(transaction=True)
        pipe.zadd(self.keys.queue, {str(task_id): score}, xx=True)
        if due_s is not None:
            pipe.zadd(self.keys.overdue, {str(task_id): due_s}, xx=True)
        if member is not None:
            pipe.zadd(self.keys.member_queue(member), {str(task_id): score}, xx=True)
        pipe.execute()

    def remove(self, task_id: int) -> bool:
        """Take a queued task out of the queue and the overdue set (cancel); True if it was queued. Its
        member index entry is dropped by the next pass that reads past it (`snapshot.lua`)."""
        pipe = self.client.pipeline(transaction=True)
        pipe.zrem(self.keys.queue, str(task_id))
        pipe.zrem(self.keys.overdue, str(task_id))
        pipe.hdel(self.keys.queued_by, str(task_id))
        removed, _, _ = pipe.execute()
        return bool(removed)

    def head(self, count: int) -> list[tuple[int, float]]:
        """The first `count` queued tasks with their scores, best first: O(log n + count)."""
        rows = cast(
            list[tuple[str, float]], self.client.zrange(self.keys.queue, 0, count - 1, withscores=True)
        )
        return [(int(member), score) for member, score in rows]

    def head_ids(self, count: int) -> list[int]:
        """The ids of the first `count` queued tasks, best first (no scores: about 3x cheaper to read)."""
        return [int(member) for member in cast(list[str], self.client.zrange(self.keys.queue, 0, count - 1))]

    def overdue_ids(self, now_s: float, count: int) -> list[int]:
        """The ids of up to `count` tasks past their aging bound at `now_s`, earliest first:
        ZRANGEBYSCORE with a limit, O(log n + count)."""
        rows = self.client.zrangebyscore(self.keys.overdue, "-inf", now_s, start=0, num=count)
        return [int(member) for member in cast(list[str], rows)]

    def position(self, task_id: int) -> int | None:
        """0-based rank of a queued task, or None when it is not in the queue."""
        rank = self.client.zrank(self.keys.queue, str(task_id))
        return None if rank is None else int(cast(int, rank))

    def length(self) -> int:
        """How many tasks wait in the queue (not counting assigned ones)."""
        return int(self.client.zcard(self.keys.queue))

    def indexes_agree(self) -> bool:
        """True when the overdue set holds as many tasks as the queue (the scripts keep them equal; a queue
        from before the overdue index existed does not, and the rebuild indexes it)."""
        pipe = self.client.pipeline(transaction=True)
        pipe.zcard(self.keys.queue)
        pipe.zcard(self.keys.overdue)
        queued, overdue = pipe.execute()
        return int(queued) == int(overdue)

    def queued_ids(self) -> set[int]:
        """Every task id in the queue (used by the rebuild check, not on the hot path)."""
        return {int(m) for m in cast(list[str], self.client.zrange(self.keys.queue, 0, -1))}

    # --- assignment and claim ------------------------------------------------------------------

    def assign(
        self, task_id: int, node: str, gpu_indices: Iterable[int], now_ms: int, revision: int | None = None
    ) -> bool:
        """Move a queued task to `node`'s inbox with its GPUs; False if it had left the queue.

        `revision`: the task row's revision the start was decided on; the node starts the task only if its
        row is still that one (a change that raced the decision wins, see `TaskStore.mark_running_many`).
        """
        revisions = {task_id: revision} if revision is not None else None
        return self.assign_many([(task_id, node, gpu_indices)], now_ms, revisions)[0]

    def assign_many(
        self,
        starts: Sequence[tuple[int, str, Iterable[int]]],
        now_ms: int,
        revisions: Mapping[int, int] | None = None,
    ) -> list[bool]:
        """`assign` for each (task id, node, GPU indices) in one round trip (each one still atomic);
        `revisions`: task id -> the row revision its start was decided on."""
        if not starts:
            return []
        k = self.keys
        known = revisions or {}
        pipe = self.client.pipeline(transaction=False)
        for task_id, node, gpu_indices in starts:
            inbox, doorbell = k.inbox(node), k.node_doorbell(node)
            keys = [k.queue, inbox, k.assignment(task_id), k.assigned, doorbell, k.overdue, k.queued_by]
            revision = known.get(task_id)
            args: list[str | int] = [task_id, node, _gpus_text(gpu_indices), now_ms]
            args.append("" if revision is None else revision)
            self._assign(keys=keys, args=args, client=pipe)
        return [bool(done) for done in pipe.execute()]

    def assignments(self) -> dict[int, tuple[str, tuple[int, ...]]]:
        """Tasks assigned but not yet claimed: task id -> (node, gpus). They hold GPUs already."""
        ids = cast(set[str], self.client.smembers(self.keys.assigned))
        if not ids:
            return {}
        pipe = self.client.pipeline(transaction=False)
        ordered = sorted(ids, key=int)
        for task in ordered:
            pipe.hmget(self.keys.assignment(int(task)), "node", "gpus")
        result: dict[int, tuple[str, tuple[int, ...]]] = {}
        for task, (node, gpus) in zip(ordered, pipe.execute(), strict=True):
            if node is not None:
                result[int(task)] = (node, _gpus_tuple(gpus or ""))
        return result

    def pass_snapshot(self, count: int, now_s: float, per_member: int = 0) -> PassSnapshot:
        """What one scheduling pass reads from Redis, in one round trip and one consistent view
        (`lua/snapshot.lua`).

        The ids of the window (`policy.window.window_ids`: the tasks overdue at `now_s`, then the head of
        the queue), the unclaimed assignments (as `assignments`), the ids holding a lease, and every
        registered node's raw record (name -> hash; see `nodes.nodes_from_raw`), when the first lease
        expires (so the scheduler can wake for it), and each member's first `per_member` queued tasks.
        Being one script, no claim can fall between reading the assignments and the leases.
        """
        k = self.keys
        keys = [k.overdue, k.queue, k.assigned, k.nodes, k.leases, k.members]
        reply = self._snapshot(keys=keys, args=[now_s, count, k.prefix, per_member])
        overdue, queue_head, flat_assignments, leased, flat_nodes, first_expiry, heads = cast(
            list[Any], reply
        )
        head = window_ids((int(m) for m in overdue), (int(m) for m in queue_head), count)
        member_heads = []
        for i in range(0, len(heads), 2):
            team, user = str(heads[i]).split("/", 1)
            member_heads.append((team, user, int(heads[i + 1])))
        leased_ids = {int(m) for m in leased}
        assignments: dict[int, tuple[str, tuple[int, ...]]] = {}
        for i in range(0, len(flat_assignments), 3):
            task_id, node = int(flat_assignments[i]), flat_assignments[i + 1]
            if node:
                assignments[task_id] = (node, _gpus_tuple(flat_assignments[i + 2]))
            else:
                # in the assigned set without its assignment: the scripts never leave that, but were it
                # left, the task may be leased, so the pass looks its lease up rather than free its GPUs
                leased_ids.add(task_id)
        nodes = {
            flat_nodes[i]: dict(zip(flat_nodes[i + 1][::2], flat_nodes[i + 1][1::2], strict=True))
            for i in range(0, len(flat_nodes), 2)
        }
        next_expiry = int(float(first_expiry)) if first_expiry else None
        return PassSnapshot(head, assignments, leased_ids, nodes, next_expiry, tuple(member_heads))

    def leased_gpus(self, task_ids: Iterable[int]) -> dict[int, tuple[str, tuple[int, ...]]]:
        """Node and GPUs of each of these tasks' leases (tasks without a lease are absent)."""
        ordered = sorted(task_ids)
        if not ordered:
            return {}
        pipe = self.client.pipeline(transaction=False)
        for task_id in ordered:
            pipe.hmget(self.keys.lease(task_id), "node", "gpus")
        out: dict[int, tuple[str, tuple[int, ...]]] = {}
        for task_id, (node, gpus) in zip(ordered, pipe.execute(), strict=True):
            if node is not None:
                out[task_id] = (node, _gpus_tuple(gpus or ""))
        return out

    def unassign(self, task_id: int) -> tuple[str, tuple[int, ...]] | None:
        """Drop a task's assignment (cancel before claim); returns what it was."""
        pipe = self.client.pipeline(transaction=True)
        pipe.hmget(self.keys.assignment(task_id), "node", "gpus")
        pipe.delete(self.keys.assignment(task_id))
        pipe.srem(self.keys.assigned, str(task_id))
        (node, gpus), *_ = pipe.execute()
        return None if node is None else (node, _gpus_tuple(gpus or ""))

    def return_assignment(
        self, task_id: int, node: str, fallback_score: float = 0.0, fallback_due_s: float | None = None
    ) -> bool:
        """Put an unclaimed assignment back in the queue (and the overdue set) at its old scores; False if
        claimed meanwhile."""
        k = self.keys
        keys = [k.queue, k.inbox(node), k.assignment(task_id), k.assigned, k.overdue, k.queued_by, k.members]
        due = "" if fallback_due_s is None else fallback_due_s
        return bool(self._unassign(keys=keys, args=[task_id, node, fallback_score, due, k.prefix]))

    def return_stale_assignments(
        self, now_ms: int, older_than_ms: int, alive_nodes: Iterable[str]
    ) -> list[int]:
        """Return to the queue every assignment older than `older_than_ms` whose node is not alive.

        A node that died between the scheduler's assignment and its claim would otherwise hold the task
        (and its GPUs) until a worker of that name comes back. Returns the task ids put back.
        """
        alive = set(alive_nodes)
        ids = sorted(cast(set[str], self.client.smembers(self.keys.assigned)), key=int)
        if not ids:
            return []
        pipe = self.client.pipeline(transaction=False)
        for task in ids:
            pipe.hmget(self.keys.assignment(int(task)), "node", "assigned_ms")
        returned = []
        for task, (node, assigned_ms) in zip(ids, pipe.execute(), strict=True):
            if node is None or node in alive or now_ms - int(float(assigned_ms or 0)) < older_than_ms:
                continue
            if self.return_assignment(int(task), node):
                returned.append(int(task))
        if returned:
            self.ring_scheduler()
        return returned

    def claim(self, node: str, now_ms: int, ttl_ms: int) -> Claim | None:
        """Lease the next task assigned to `node`, atomically; None when there is none."""
        claims = self.claim_many(node, now_ms, ttl_ms, 1)
        return claims[0] if claims else None

    def claim_many(self, node: str, now_ms: int, ttl_ms: int, limit: int) -> list[Claim]:
        """Lease up to `limit` tasks assigned to `node` in one atomic step (a burst costs one round trip)."""
        k = self.keys
        result = cast(
            list[Any],
            self._claim(
                keys=[k.inbox(node), k.leases, k.fence, k.assigned, k.epoch],
                args=[node, now_ms, ttl_ms, k.prefix, max(1, limit)],
            ),
        )
        return [
            Claim(int(result[i]), str(result[i + 1]), _gpus_tuple(result[i + 2]), _revision(result[i + 3]))
            for i in range(0, len(result or []), 4)
        ]

    # --- leases -----------------------------------------------------------------------------------

    def renew(self, task_id: int, token: str, now_ms: int, ttl_ms: int) -> int:
        """Heartbeat one lease; see `RenewResult` for the answers."""
        return self.renew_many([(task_id, token)], now_ms, ttl_ms)[0]

    def renew_many(self, leases: Sequence[tuple[int, str]], now_ms: int, ttl_ms: int) -> list[int]:
        """Heartbeat several leases (task id, token) in one round trip; a `RenewResult` answer for each."""
        if not leases:
            return []
        k = self.keys
        pipe = self.client.pipeline(transaction=False)
        for task_id, token in leases:
            keys = [k.lease(task_id), k.leases, k.cancel(task_id)]
            self._renew(keys=keys, args=[task_id, token, now_ms, ttl_ms], client=pipe)
        return [int(answer) for answer in pipe.execute()]

    def release(self, task_id: int, token: str) -> bool:
        """Drop the lease of a finished task if it is still ours, and wake the scheduler."""
        return self.release_many([(task_id, token)])[0]

    def release_many(self, leases: Sequence[tuple[int, str]]) -> list[bool]:
        """Drop the leases (task id, token) still held by these claims in one round trip; wake the
        scheduler once."""
        if not leases:
            return []
        k = self.keys
        pipe = self.client.pipeline(transaction=False)
        for task_id, token in leases:
            keys = [k.lease(task_id), k.leases, k.cancel(task_id)]
            self._release(keys=keys, args=[task_id, token], client=pipe)
        self._ring_scheduler(pipe)
        answers = pipe.execute()
        return [bool(answer) for answer in answers[: len(leases)]]

    def expired(self, now_ms: int, limit: int = 100) -> list[tuple[int, str]]:
        """Take every lease whose time is up: (task id, token) pairs for the reaper to requeue."""
        due = cast(list[str], self.client.zrangebyscore(self.keys.leases, "-inf", now_ms, start=0, num=limit))
        taken: list[tuple[int, str]] = []
        for task in due:
            token = self._expire(keys=[self.keys.lease(int(task)), self.keys.leases], args=[task, now_ms])
            if token:
                taken.append((int(task), str(token)))
        return taken

    def lease(self, task_id: int) -> Lease | None:
        """The lease of a task, if any."""
        raw = cast(dict[str, str], self.client.hgetall(self.keys.lease(task_id)))
        if not raw:
            return None
        return Lease(
            task_id, raw["node"], raw["token"], _gpus_tuple(raw["gpus"]), int(float(raw["expires_ms"]))
        )

    def request_cancel(self, task_id: int, node: str) -> None:
        """Flag a running task for its worker to stop, and ring that worker."""
        pipe = self.client.pipeline(transaction=False)
        pipe.set(self.keys.cancel(task_id), "1", ex=24 * 3600)
        self._ring_node(pipe, node)
        pipe.execute()

    def request_requeue(self, task_id: int, node: str, token: str, user: str, hold: bool = False) -> None:
        """Ask the worker running attempt `token` of a task to stop it and put it back in the queue (`user`
        asked; `hold`: held there until released), and ring it. Later attempts carry other tokens, so the
        request ends with this one."""
        request = json.dumps({"token": token, "user": user, "hold": hold})
        pipe = self.client.pipeline(transaction=False)
        pipe.set(self.keys.requeue(task_id), request, ex=24 * 3600)
        self._ring_node(pipe, node)
        pipe.execute()

    def announce_time_limit(self, task_id: int, node: str, token: str, limit_s: float | None) -> None:
        """Tell the worker running attempt `token` of a task its new time limit (None: none), and ring it."""
        pipe = self.client.pipeline(transaction=False)
        value = f"{token}:{'' if limit_s is None else repr(float(limit_s))}"
        pipe.set(self.keys.time_limit(task_id), value, ex=7 * 24 * 3600)  # applied long before; held by SQL
        self._ring_node(pipe, node)
        pipe.execute()

    def ring_node(self, node: str) -> None:
        """Wake the worker of `node` now (it is told to stop, say)."""
        pipe = self.client.pipeline(transaction=False)
        self._ring_node(pipe, node)
        pipe.execute()

    def _ring_node(self, pipe: Any, node: str) -> None:
        pipe.rpush(self.keys.node_doorbell(node), "1")
        pipe.ltrim(self.keys.node_doorbell(node), -1, -1)

    # --- rebuild ------------------------------------------------------------------------------------

    def restore_queued(
        self, task_id: int, score: float, due_s: float | None = None, member: str | None = None
    ) -> bool:
        """Put a task SQL says is queued back in the queue (and, with `due_s`, the overdue set; with
        `member`, that member's index) unless Redis holds it elsewhere."""
        return bool(self._restore_queued(QueueEntry(task_id, score, due_s, member), self.client))

    def restore_queued_many(
        self, entries: Iterable[QueueEntry | tuple[int, float, float | None]]
    ) -> list[bool]:
        """`restore_queued` of many tasks (`QueueEntry`, or (task id, score, due_s)), in one round trip (each
        one still atomic): True for those queued, False for those Redis holds elsewhere (a claim still in
        flight)."""
        pipe = self.client.pipeline(transaction=False)
        for entry in entries:
            self._restore_queued(QueueEntry(*entry), pipe)
        return [bool(added) for added in pipe.execute()]

    def _restore_queued(self, entry: QueueEntry, client: Any) -> Any:
        """`restore.lua` for one queued task, on `client` (the connection, or a pipeline)."""
        due = "" if entry.due_s is None else entry.due_s
        member = entry.member or ""
        args: list[Any] = [entry.task_id, "queued", entry.score, "", "", 0, due, member, self.keys.prefix]
        return self._restore(keys=self._restore_keys(entry.task_id), args=args, client=client)

    def restore_lease(
        self, task_id: int, token: str, node: str, gpu_indices: Iterable[int], expires_ms: int
    ) -> bool:
        """Recreate the lease of a task SQL says is running, so its worker can keep heartbeating."""
        args: list[Any] = [task_id, "running", token, node, _gpus_text(gpu_indices), expires_ms, "", "", ""]
        return bool(self._restore(keys=self._restore_keys(task_id), args=args))

    def _restore_keys(self, task_id: int) -> list[str]:
        k = self.keys
        return [k.queue, k.lease(task_id), k.assignment(task_id), k.leases, k.overdue, k.queued_by, k.members]

    # --- wake-ups -----------------------------------------------------------------------------------

    def ring_scheduler(self) -> None:
        """Wake the scheduler now (submit, finish, cancel, node change)."""
        pipe = self.client.pipeline(transaction=False)
        self._ring_scheduler(pipe)
        pipe.execute()

    def _ring_scheduler(self, pipe: Any) -> None:
        pipe.rpush(self.keys.scheduler_doorbell, "1")
        pipe.ltrim(self.keys.scheduler_doorbell, -1, -1)

    def wait_scheduler_doorbell(self, timeout_s: float) -> bool:
        """Block until something rings the scheduler or `timeout_s` passes; True when rung."""
        return self.client.blpop([self.keys.scheduler_doorbell], timeout=timeout_s) is not None

    def wait_node_doorbell(self, node: str, timeout_s: float) -> bool:
        """Block until the node is rung (new assignment, cancel) or `timeout_s` passes."""
        return self.client.blpop([self.keys.node_doorbell(node)], timeout=timeout_s) is not None


__all__ = ["Claim", "Lease", "RedisQueue", "RenewResult"]


def announced_time_limit(value: str | bytes | None) -> tuple[str, float | None] | None:
    """The (lease token, limit in seconds or None) of an `announce_time_limit` value, None without one."""
    text = value.decode() if isinstance(value, bytes) else (value or "")
    token, _, seconds = text.rpartition(":")
    return (token, float(seconds) if seconds else None) if token else None


@dataclass(frozen=True, slots=True)
class RequeueRequest:
    """Someone asked a running attempt back into the queue (`nightshift requeue`), held there or not."""

    user: str
    hold: bool


def requeue_asked(value: str | bytes | None, token: str) -> RequeueRequest | None:
    """The request to put attempt `token` back in the queue, from a `request_requeue` value; None when there
    is none for it (no value, or one for another attempt of the task)."""
    if not value:
        return None
    try:
        asked = json.loads(value)
    except ValueError:
        return None
    if not isinstance(asked, dict) or asked.get("token") != token:
        return None
    return RequeueRequest(str(asked.get("user") or "someone"), bool(asked.get("hold")))
