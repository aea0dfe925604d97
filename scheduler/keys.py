"""Every Redis key nightshift uses, in one place. Redis is an index: all of it can be rebuilt from SQL."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RedisKeys:
    """Key names under one prefix (default `ns:`), so two clusters can share a Redis server."""

    prefix: str = "ns:"

    @property
    def queue(self) -> str:
        """ZSET task_id -> static priority score (lower runs first); tasks not yet assigned."""
        return f"{self.prefix}queue"

    @property
    def overdue(self) -> str:
        """ZSET task_id -> when the task passes its aging bound (epoch s, `policy.aging.overdue_at_s`): the
        same tasks as `queue`, so a pass finds the overdue ones with one range query however deep they sit."""
        return f"{self.prefix}overdue"

    @property
    def queued_by(self) -> str:
        """HASH task_id -> member ("team/person") of each queued task with a member index: the index entry
        follows the task when it is assigned and given back."""
        return f"{self.prefix}queue:queued-by"

    @property
    def members(self) -> str:
        """SET of the members ("team/person") with a `member_queue`."""
        return f"{self.prefix}queue:members"

    def member_queue(self, member: str) -> str:
        """ZSET task_id -> static score of one member's queued tasks (`policy.window`: each person's first
        ones join a pass's window). An index of hints: an entry whose task left the queue is dropped when a
        pass reads past it (`snapshot.lua`); `lua/*.lua` build the same name from the prefix."""
        return f"{self.prefix}queue:member:{member}"

    @property
    def leases(self) -> str:
        """ZSET task_id -> lease expiry (ms since epoch), for the reaper."""
        return f"{self.prefix}leases"

    @property
    def fence(self) -> str:
        """Counter behind fencing tokens."""
        return f"{self.prefix}fence"

    def rate_bucket(self, key: str) -> str:
        """HASH tokens, at: one API token's rate-limit bucket, shared by every API process."""
        return f"{self.prefix}rate:{key}"

    @property
    def epoch(self) -> str:
        """Random id of the current Redis state; missing means Redis lost its data and must be rebuilt."""
        return f"{self.prefix}epoch"

    @property
    def nodes(self) -> str:
        """SET of known node names."""
        return f"{self.prefix}nodes"

    @property
    def scheduler_doorbell(self) -> str:
        """LIST the scheduler blocks on; anything pushed wakes it (submit, finish, cancel, node change)."""
        return f"{self.prefix}scheduler:doorbell"

    @property
    def scheduler_lock(self) -> str:
        """Leader lock: one scheduler decides at a time."""
        return f"{self.prefix}scheduler:lock"

    @property
    def dependency_lock(self) -> str:
        """Held while a change of what a task waits for is checked and stored: two at once could each pass
        the loop check against what the other has not stored yet."""
        return f"{self.prefix}dependencies:lock"

    @property
    def assigned(self) -> str:
        """SET of task ids assigned to a node but not yet claimed."""
        return f"{self.prefix}assigned"

    def lease(self, task_id: int) -> str:
        """HASH node, token, gpus, expires_ms of the claim on a running task."""
        return f"{self.prefix}lease:{task_id}"

    def assignment(self, task_id: int) -> str:
        """HASH node, gpus, assigned_ms of a task the scheduler gave to a node."""
        return f"{self.prefix}assign:{task_id}"

    def inbox(self, node: str) -> str:
        """LIST of task ids assigned to `node`, claimed in order."""
        return f"{self.prefix}node:{node}:inbox"

    def node_doorbell(self, node: str) -> str:
        """LIST a worker blocks on; pushed on assignment and on cancel."""
        return f"{self.prefix}node:{node}:doorbell"

    def node_owner(self, node: str) -> str:
        """STRING (with expiry) naming the one worker that serves `node` (`node_owner.NodeOwnership`)."""
        return f"{self.prefix}node:{node}:owner"

    def node(self, node: str) -> str:
        """HASH inventory (JSON), heartbeat_ms, stale_after_ms, source, drained of a worker's node."""
        return f"{self.prefix}node:{node}"

    def log_requests(self, node: str) -> str:
        """LIST (expiring) of JSON requests for task logs that `node`'s worker answers (`log_relay`)."""
        return f"{self.prefix}node:{node}:logreq"

    def log_reply(self, request_id: str) -> str:
        """LIST (expiring) holding the one answer to a log request."""
        return f"{self.prefix}logreply:{request_id}"

    def cancel(self, task_id: int) -> str:
        """STRING set when a running task should be stopped; its worker sees it on the next loop."""
        return f"{self.prefix}cancel:{task_id}"

    def requeue(self, task_id: int) -> str:
        """STRING `token:user` set when a person asks a running task back into the queue (`nightshift
        requeue`): the worker running the attempt with that lease token stops it, and only that attempt."""
        return f"{self.prefix}requeue:{task_id}"

    def time_limit(self, task_id: int) -> str:
        """STRING `token:seconds` (no seconds: no limit) set when a running task's time limit changes; the
        worker running the attempt with that lease token applies it on its next loop."""
        return f"{self.prefix}limit:{task_id}"

    def notified(self, what: str) -> str:
        """STRING (with expiry) marking a once-only notification as sent, e.g. a team's quota warning."""
        return f"{self.prefix}notified:{what}"
