"""The node registry in Redis: each worker publishes its GPUs and a heartbeat; the scheduler reads them."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, NamedTuple, cast

import redis

from scheduler.clock import from_epoch_s
from scheduler.errors import ConflictError, SpecError
from scheduler.gpus.outside import OutsideProcess
from scheduler.keys import RedisKeys
from scheduler.repeats import occurrences

NODE_STALE_AFTER_MS = 30_000
# how far ahead a repeating reservation's times are handed to the policy and the forecasts, and looked at
# for its next one and for overlaps: two weeks, over which every repeat comes round the same way
REPEATS_AHEAD_MS = 14 * 86_400_000


@dataclass(frozen=True, slots=True)
class NodeGpu:
    """One GPU of a node, as last reported by its worker."""

    index: int
    name: str
    memory_total_mib: int
    memory_free_mib: int
    utilization_pct: float | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    out_of_service: str | None = None  # why it takes no new tasks (too hot, memory left behind), if so
    # processes on it that are none of nightshift's jobs (a notebook), largest memory first
    outside: tuple[OutsideProcess, ...] = ()
    # the memory they hold in all, where the driver lists the processes with their memory (else None)
    outside_mib: int | None = None
    # the memory its driver holds for itself: in use beyond its processes' (`DriverReserve`); 0 if unknown
    driver_reserved_mib: int = 0

    @property
    def shareable_mib(self) -> int:
        """The memory tasks can have: the total less what the driver holds for itself."""
        return max(0, self.memory_total_mib - self.driver_reserved_mib)


class TeamReservation(NamedTuple):
    """A node kept for one team from `start_ms` to `end_ms` (Slurm's reservation for an account): only that
    team's tasks start there then. With `repeat` (`scheduler.repeats`), it comes round again at the same
    wall-clock time in `zone` until called off, and `start_ms`..`end_ms` is its first time. With `gpus`, it
    holds only those GPUs of the node (Slurm's reservation of some GPUs, `TRES=gres/gpu:N`)."""

    team: str
    start_ms: int
    end_ms: int
    repeat: str | None = None
    zone: str = "UTC"
    gpus: tuple[int, ...] = ()  # the indices of the GPUs it holds; () for all of the node's

    def holds_gpu(self, index: int) -> bool:
        """True when it holds GPU `index` of its node."""
        return not self.gpus or index in self.gpus

    def shares_gpus(self, other: TeamReservation) -> bool:
        """True when it and `other` hold some GPU in common."""
        return not self.gpus or not other.gpus or bool(set(self.gpus) & set(other.gpus))

    def over(self, now_ms: int) -> bool:
        """True when it will not hold the node again after `now_ms`."""
        return self.repeat is None and now_ms >= self.end_ms

    def times(self, since_ms: int, until_ms: int) -> list[TeamReservation]:
        """Each time it holds the node that is not over at `since_ms` and starts before `until_ms` (a
        one-off reservation: itself when not over, whenever it starts), in order."""
        if self.repeat is None:
            return [] if self.over(since_ms) else [self]
        return [
            self._replace(start_ms=round(start_s * 1000), end_ms=round(end_s * 1000))
            for start_s, end_s in occurrences(
                self.repeat,
                self.start_ms / 1000,
                self.end_ms / 1000,
                self.zone,
                since_ms / 1000,
                until_ms / 1000,
            )
        ]

    def overlap(self, other: TeamReservation) -> TeamReservation | None:
        """The first time of `other` that overlaps one of this one's on a GPU both hold, if any (repeating
        ones are compared over two weeks from the later start: every repeat comes round the same way each
        week)."""
        if not self.shares_gpus(other):
            return None
        since_ms = max(self.start_ms, other.start_ms)
        longest_ms = max(self.end_ms - self.start_ms, other.end_ms - other.start_ms)
        until_ms = since_ms + REPEATS_AHEAD_MS + longest_ms
        mine = self.times(since_ms, until_ms)
        for theirs in other.times(since_ms, until_ms):
            if any(held.start_ms < theirs.end_ms and theirs.start_ms < held.end_ms for held in mine):
                return theirs
        return None

    def next_time(self, now_ms: int) -> TeamReservation | None:
        """Its time that holds the node at `now_ms` or comes next; None when it is over."""
        return next(iter(self.times(now_ms, now_ms + REPEATS_AHEAD_MS)), None)


@dataclass(frozen=True, slots=True)
class NodeState:
    """A worker's node: its GPUs, when it last spoke, and whether it takes new tasks."""

    name: str
    gpus: tuple[NodeGpu, ...]
    heartbeat_ms: int
    source: str = "simulated"
    drained: bool = False
    labels: dict[str, str] = field(default_factory=dict)
    # how its worker holds each job: in a cgroup of its own, or as a process group (found by run token)
    job_isolation: str = "process group"
    # how long its worker may go without a heartbeat before it counts as down: its lease TTL, so that the
    # scheduler stops placing work on it exactly when its leases (and any worker) give that work back
    stale_after_ms: int = NODE_STALE_AFTER_MS
    # a drain set for later (maintenance, Slurm's `MAINT` reservation): until then only tasks that end by then
    # start there (`GpuSlot.down_at_s`), from then it is drained; None when none is set
    drain_at_ms: int | None = None
    # when that maintenance ends and the node is back in service by itself; None: when undrained
    drain_until_ms: int | None = None
    # a maintenance with an end that comes round again (`scheduler.repeats`), at that time in `drain_zone`:
    # `drain_at_ms`..`drain_until_ms` is its first time
    drain_repeat: str | None = None
    drain_zone: str = "UTC"
    # the start of the maintenance time whose running tasks were last requeued (a repeating one requeues
    # them each time)
    drain_requeued_ms: int | None = None
    # its reservations for teams (Slurm's `scontrol create reservation accounts=`), never overlapping
    reservations: tuple[TeamReservation, ...] = ()
    # the admin who asked the drain set for later to requeue the tasks still running then (`due_requeue`)
    drain_requeue_by: str | None = None
    # when its worker stopped cleanly (`mark_stopped`): down from then, not a lease TTL later; None: running
    stopped_ms: int | None = None

    def alive(self, now_ms: int) -> bool:
        """True when the node's worker heartbeat is recent (within its own `stale_after_ms`) and the worker
        has not stopped."""
        return self.stopped_ms is None and now_ms - self.heartbeat_ms <= self.stale_after_ms

    def drained_at(self, now_ms: int) -> bool:
        """True when the node takes no new task at `now_ms`: drained, or inside its maintenance."""
        window = self.maintenance(now_ms)
        return self.drained or (window is not None and now_ms >= window[0])

    def team_reservations(self, now_ms: int, ahead_ms: int = REPEATS_AHEAD_MS) -> list[TeamReservation]:
        """Each time the node is reserved for a team that is not over at `now_ms`, soonest first: a
        repeating reservation's times that start within `ahead_ms`, a one-off one whenever it starts."""
        times = (time for held in self.reservations for time in held.times(now_ms, now_ms + ahead_ms))
        return sorted(times, key=_by_start)

    def next_reservations(self, now_ms: int) -> list[TeamReservation]:
        """Each of the node's reservations not over at `now_ms`, at its current or next time (what `nodes`
        shows), soonest first."""
        times = (held.next_time(now_ms) for held in self.reservations)
        return sorted((time for time in times if time is not None), key=_by_start)

    def maintenance(self, now_ms: int) -> tuple[int, int | None] | None:
        """The node's maintenance (start, end; no end: until undrained) unless none is set or it is over; a
        repeating one's time that holds the node at `now_ms` or comes next."""
        if self.drain_at_ms is None:
            return None
        if self.drain_repeat is not None and self.drain_until_ms is not None:
            times = occurrences(
                self.drain_repeat,
                self.drain_at_ms / 1000,
                self.drain_until_ms / 1000,
                self.drain_zone,
                now_ms / 1000,
                (now_ms + REPEATS_AHEAD_MS) / 1000,
            )
            return next(((round(start * 1000), round(end * 1000)) for start, end in times), None)
        if self.drain_until_ms is not None and now_ms >= self.drain_until_ms:
            return None
        return self.drain_at_ms, self.drain_until_ms


class NodeRegistry:
    """Read and write node records."""

    # what admins set on a node (the rest its worker publishes): kept in SQL too (`NodeSettingsStore`)
    ADMIN_FIELDS = (
        "drained",
        "drain_at_ms",
        "drain_until_ms",
        "drain_repeat",
        "drain_zone",
        "drain_requeue_by",
        "drain_requeued_ms",
        "reservations",
    )

    def __init__(self, client: redis.Redis, keys: RedisKeys | None = None) -> None:
        self.client = client
        self.keys = keys or RedisKeys()
        self._last_read: tuple[float, list[NodeState]] | None = None  # (monotonic time, nodes) of `all()`

    def publish(
        self,
        name: str,
        gpus: list[NodeGpu],
        now_ms: int,
        source: str,
        labels: dict[str, str] | None = None,
        job_isolation: str = "process group",
        stale_after_ms: int = NODE_STALE_AFTER_MS,
    ) -> None:
        """Record the node's GPUs and heartbeat (and how long it may go without one: its lease TTL); wake
        the scheduler the first time it is seen."""
        inventory = json.dumps([_gpu_dict(gpu) for gpu in gpus])
        pipe = self.client.pipeline(transaction=False)
        pipe.sadd(self.keys.nodes, name)
        pipe.hset(
            self.keys.node(name),
            mapping={
                "gpus": inventory,
                "heartbeat_ms": now_ms,
                "source": source,
                "labels": json.dumps(labels or {}),
                "job_isolation": job_isolation,
                "stale_after_ms": stale_after_ms,
            },
        )
        pipe.hdel(self.keys.node(name), "stopped_ms")  # a worker (again) serves it
        added, *_ = pipe.execute()
        if added:
            self.client.rpush(self.keys.scheduler_doorbell, "1")

    def mark_stopped(self, name: str, now_ms: int) -> None:
        """Record that the node's worker stopped cleanly (its jobs stopped and requeued): the node is down
        at once, so no task is assigned to it or waits for it as if it were up, until a worker publishes
        again."""
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(self.keys.node(name), "stopped_ms", now_ms)
        pipe.rpush(self.keys.scheduler_doorbell, "1")
        pipe.execute()

    def set_drained(
        self,
        name: str,
        drained: bool,
        at_ms: int | None = None,
        requeue_by: str | None = None,
        until_ms: int | None = None,
        repeat: str | None = None,
        zone: str = "UTC",
    ) -> bool:
        """Mark a node drained (no new tasks), drained from `at_ms` on (maintenance then, to `until_ms` when
        given, coming round again with `repeat` in `zone`; with `requeue_by`, the admin's JSON identity, the
        tasks still running then are requeued: `take_due_requeue`), or back in service (all cleared); False
        for an unknown node."""
        if not self.client.sismember(self.keys.nodes, name):
            return False
        key = self.keys.node(name)
        pipe = self.client.pipeline(transaction=True)
        pipe.hdel(key, "drain_repeat", "drain_zone", "drain_requeued_ms")
        if drained and at_ms is not None and until_ms is not None and repeat is not None:
            pipe.hset(key, mapping={"drain_repeat": repeat, "drain_zone": zone})
        pipe.hset(key, "drained", "1" if drained and at_ms is None else "0")
        if drained and at_ms is not None:
            pipe.hset(key, "drain_at_ms", at_ms)
        else:
            pipe.hdel(key, "drain_at_ms")
        if drained and at_ms is not None and until_ms is not None:
            pipe.hset(key, "drain_until_ms", until_ms)
        else:
            pipe.hdel(key, "drain_until_ms")
        if drained and at_ms is not None and requeue_by is not None:
            pipe.hset(key, "drain_requeue_by", requeue_by)
        else:
            pipe.hdel(key, "drain_requeue_by")
        pipe.rpush(self.keys.scheduler_doorbell, "1")
        pipe.execute()
        return True

    def reserve(
        self, name: str, held: TeamReservation, now_ms: int, gpu_count: int | None = None
    ) -> TeamReservation | None:
        """Add a reservation of the node for a team (those over by `now_ms` are dropped as it is written),
        of `gpu_count` of its GPUs when given (the highest-numbered free of other reservations then, so GPU
        0 stays everyone's longest): the reservation as written (its GPUs chosen), None for an unknown node.
        Raises ConflictError when it overlaps one the node has, naming it, or too few GPUs are free of them;
        SpecError when the node has fewer."""
        indices = [gpu.index for gpu in self._gpus(name)] if gpu_count is not None else []
        if gpu_count is not None and gpu_count > len(indices):
            raise SpecError(
                f"node {name} has {len(indices)} GPUs, so a reservation of {gpu_count} cannot fit: ask for "
                "fewer",
                [{"field": "gpus", "message": f"at most {len(indices)}"}],
            )

        written: list[TeamReservation] = []

        def add(kept: list[TeamReservation]) -> list[TeamReservation]:
            chosen = held if gpu_count is None else _some_gpus(name, held, gpu_count, indices, kept)
            written[:] = [chosen]
            for other in kept:
                if (clash := chosen.overlap(other)) is not None:
                    raise ConflictError(
                        f"node {name} is already reserved for team {other.team} from "
                        f"{_iso(clash.start_ms)} until {_iso(clash.end_ms)}{_repeating(other)}, which "
                        f"overlaps: call that off first (`nightshift node unreserve {name} --team "
                        f"{other.team}`) or choose other times"
                    )
            return [*kept, chosen]

        return written[0] if self._change_reservations(name, now_ms, add) else None

    def _gpus(self, name: str) -> list[NodeGpu]:
        """The GPUs the node's worker last published (none for an unknown node)."""
        raw = cast(str | None, self.client.hget(self.keys.node(name), "gpus"))
        return [_node_gpu(item) for item in json.loads(raw or "[]")]

    def unreserve(self, name: str, team: str | None, now_ms: int) -> bool:
        """Call off the node's reservations for `team` (None: for every team); False for an unknown node."""
        return self._change_reservations(
            name, now_ms, lambda kept: [held for held in kept if team is not None and held.team != team]
        )

    def _change_reservations(
        self, name: str, now_ms: int, change: Callable[[list[TeamReservation]], list[TeamReservation]]
    ) -> bool:
        """Rewrite the node's reservations as `change` makes them from those not over, atomically against
        another admin's change at the same time (optimistic: WATCH the node's record)."""
        key = self.keys.node(name)
        with self.client.pipeline(transaction=True) as pipe:
            while True:
                try:
                    pipe.watch(key)  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
                    if not pipe.sismember(self.keys.nodes, name):
                        return False
                    kept = [
                        held
                        for held in _reservations(pipe.hget(key, "reservations"))
                        if not held.over(now_ms)
                    ]
                    changed = change(kept)
                    pipe.multi()
                    pipe.hset(
                        key,
                        "reservations",
                        json.dumps([list(held) for held in sorted(changed, key=_by_start)]),
                    )
                    pipe.rpush(self.keys.scheduler_doorbell, "1")
                    pipe.execute()
                    return True
                except redis.WatchError:
                    continue

    def admin_fields(self, name: str) -> dict[str, str] | None:
        """The node's admin fields that are set (None for an unknown node)."""
        if not self.client.sismember(self.keys.nodes, name):
            return None
        values = cast(list[str | None], self.client.hmget(self.keys.node(name), list(self.ADMIN_FIELDS)))
        return {field: value for field, value in zip(self.ADMIN_FIELDS, values, strict=True) if value}

    def restore_admin_fields(self, name: str, fields: dict[str, str]) -> None:
        """Put a node's admin fields back (Redis lost them); the node shows as down until its worker
        publishes again."""
        pipe = self.client.pipeline(transaction=True)
        pipe.sadd(self.keys.nodes, name)
        if any(field in self.ADMIN_FIELDS for field in fields):
            pipe.hset(
                self.keys.node(name),
                mapping={field: value for field, value in fields.items() if field in self.ADMIN_FIELDS},
            )
        pipe.execute()

    def take_due_requeue(self, name: str, due_ms: int) -> str | None:
        """Who asked the node's maintenance, whose time began at `due_ms`, to requeue its running tasks,
        taken (so exactly one caller acts on it, once each time a repeating one comes round), or None when
        nobody asked or another caller took it."""
        key = self.keys.node(name)
        with self.client.pipeline(transaction=True) as pipe:
            while True:
                try:
                    pipe.watch(key)  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
                    by, repeat, done = cast(
                        list[str | None],
                        pipe.hmget(key, ["drain_requeue_by", "drain_repeat", "drain_requeued_ms"]),
                    )
                    if by is None or (done is not None and int(done) >= due_ms):
                        return None
                    pipe.multi()
                    if repeat is None:
                        pipe.hdel(key, "drain_requeue_by")
                    else:  # kept for its next time
                        pipe.hset(key, "drain_requeued_ms", due_ms)
                    pipe.execute()
                    return by
                except redis.WatchError:
                    continue

    def all(self) -> list[NodeState]:
        """Every registered node, alive or not."""
        read_at = time.monotonic()
        names = sorted(cast(set[str], self.client.smembers(self.keys.nodes)))
        nodes: list[NodeState] = []
        if names:
            pipe = self.client.pipeline(transaction=False)
            for name in names:
                pipe.hgetall(self.keys.node(name))
            nodes = [_parse(name, raw) for name, raw in zip(names, pipe.execute(), strict=True) if raw]
        self._last_read = (read_at, nodes)
        return list(nodes)

    def recent(self, max_age_s: float = 1.0) -> list[NodeState]:
        """`all()` as this registry read it at most `max_age_s` seconds ago (else read now).

        For checks that may accept on slightly old data but refuse only on fresh data (`Cluster.submit`).
        """
        last = self._last_read
        if last is not None and time.monotonic() - last[0] < max_age_s:
            return list(last[1])
        return self.all()


def nodes_from_raw(raw_by_name: Mapping[str, Mapping[str, str]]) -> list[NodeState]:
    """The nodes of raw Redis records (name -> hash, as `RedisQueue.pass_snapshot` reads them), by name."""
    return [_parse(name, dict(raw)) for name, raw in sorted(raw_by_name.items()) if raw]


def _gpu_dict(gpu: NodeGpu) -> dict[str, Any]:
    return {
        "index": gpu.index,
        "name": gpu.name,
        "memory_total_mib": gpu.memory_total_mib,
        "memory_free_mib": gpu.memory_free_mib,
        "utilization_pct": gpu.utilization_pct,
        "temperature_c": gpu.temperature_c,
        "power_w": gpu.power_w,
        "out_of_service": gpu.out_of_service,
        "outside": [asdict(process) for process in gpu.outside],
        "outside_mib": gpu.outside_mib,
        "driver_reserved_mib": gpu.driver_reserved_mib,
    }


_GPU_FIELDS = {f.name for f in fields(NodeGpu)}


def _node_gpu(item: dict[str, Any]) -> NodeGpu:
    """A GPU of a published record; fields a newer worker added are left out, not an error."""
    known = {key: value for key, value in item.items() if key in _GPU_FIELDS}
    known["outside"] = tuple(OutsideProcess(**process) for process in known.get("outside") or ())
    return NodeGpu(**known)


def _reservations(raw: str | bytes | None) -> list[TeamReservation]:
    """The reservations a node's record holds (a JSON list of [team, start_ms, end_ms, repeat, zone, gpus];
    the last three absent before reservations could repeat or hold some GPUs)."""
    read = []
    for team, start, end, *rest in json.loads(raw or "[]"):
        repeat: str | None = rest[0] if rest else None
        zone: str = rest[1] if len(rest) > 1 else "UTC"
        gpus: list[int] = rest[2] if len(rest) > 2 else []
        read.append(TeamReservation(str(team), int(start), int(end), repeat, zone, tuple(gpus)))
    return read


def _some_gpus(
    node: str, held: TeamReservation, count: int, indices: list[int], kept: list[TeamReservation]
) -> TeamReservation:
    """`held` on `count` of the node's GPUs (`indices`) that no reservation of `kept` overlapping it holds:
    the highest-numbered; ConflictError naming those in the way when too few are free."""
    in_the_way = [other for other in kept if held.overlap(other) is not None]
    taken = {index for other in in_the_way for index in (other.gpus or indices)}
    free = [index for index in indices if index not in taken]
    if len(free) < count:
        holders = ", ".join(
            f"team {other.team} (GPUs {', '.join(map(str, other.gpus or indices))})" for other in in_the_way
        )
        raise ConflictError(
            f"only {len(free)} of node {node}'s GPUs are free of other reservations then, not {count}: "
            f"{holders} hold the rest; ask for fewer GPUs or other times"
        )
    return held._replace(gpus=tuple(free[-count:]))


def _repeating(held: TeamReservation) -> str:
    """ " (repeating weekly)", or nothing for a one-off reservation."""
    return "" if held.repeat is None else f" (repeating {held.repeat})"


def _by_start(held: TeamReservation) -> int:
    return held.start_ms


def _iso(epoch_ms: int) -> str:
    return from_epoch_s(epoch_ms / 1000).isoformat(timespec="minutes")


def _parse(name: str, raw: dict[str, str]) -> NodeState:
    gpus = tuple(_node_gpu(item) for item in json.loads(raw.get("gpus", "[]")))
    return NodeState(
        name=name,
        gpus=gpus,
        heartbeat_ms=int(float(raw.get("heartbeat_ms", 0))),
        source=raw.get("source", "unknown"),
        drained=raw.get("drained") == "1",
        labels=json.loads(raw.get("labels", "{}")),
        job_isolation=raw.get("job_isolation", "process group"),
        stale_after_ms=int(float(raw.get("stale_after_ms", NODE_STALE_AFTER_MS))),
        drain_at_ms=int(float(raw["drain_at_ms"])) if raw.get("drain_at_ms") else None,
        drain_until_ms=int(float(raw["drain_until_ms"])) if raw.get("drain_until_ms") else None,
        drain_repeat=raw.get("drain_repeat") or None,
        drain_zone=raw.get("drain_zone") or "UTC",
        drain_requeued_ms=int(raw["drain_requeued_ms"]) if raw.get("drain_requeued_ms") else None,
        reservations=tuple(_reservations(raw.get("reservations"))),
        drain_requeue_by=raw.get("drain_requeue_by") or None,
        stopped_ms=int(float(raw["stopped_ms"])) if raw.get("stopped_ms") else None,
    )
