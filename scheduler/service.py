"""Where store, queue and nodes meet: the operations the API, the CLI and the assistant call."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from scheduler.clock import from_epoch_s, local_zone, machine_zone_name, now_ms, now_s, to_epoch_s
from scheduler.dependencies import PARENT_FIELDS, refuse_dependency_loop, refuse_parent, waited_for
from scheduler.edits import changed_spec, check_changes, check_running_changes
from scheduler.errors import ConflictError, NotFoundError, SpecError
from scheduler.keys import RedisKeys
from scheduler.nodes import NodeRegistry, NodeState, TeamReservation
from scheduler.policy.aging import overdue_at_s, static_score
from scheduler.policy.config import PolicyConfig
from scheduler.policy.estimate import expected_end_s
from scheduler.policy.retry import decide_retry
from scheduler.policy_input import queued_task_of, running_task_of
from scheduler.priority_limits import check_priority_room, limit_for, over_limit
from scheduler.repeats import check_repeat
from scheduler.settings import Settings
from scheduler.spec import TaskSpec, parse_spec
from scheduler.store.db import create_db_engine, make_session_factory, migrate
from scheduler.store.identity import Identity
from scheduler.store.node_settings import NodeSettingsStore, ReservationHistory
from scheduler.store.queue import QueueEntry, RedisQueue, member_name
from scheduler.store.secret_sealing import SecretSealer
from scheduler.store.secrets import SecretStore
from scheduler.store.sweeps import SweepStore
from scheduler.store.tables import FINAL_STATUSES, Task
from scheduler.store.tasks import ClassLimitReached, Finish, NewTask, TaskStore
from scheduler.submission import check_against_cluster, check_times_ahead, resolve

log = logging.getLogger(__name__)

_PENDING = Exception("not stored yet")  # a placeholder of `Cluster.submit_many`, always replaced


def task_score(task: Task, config: PolicyConfig | None = None) -> float:
    """The static queue score of a task row: class, age and short-job credit (`policy.aging.static_score`)."""
    return static_score(queued_task_of(task), config or PolicyConfig())


def policy_config_of(settings: Settings) -> PolicyConfig:
    """The policy's knobs from the settings (the time zone: the configured one, else the machine's)."""
    return PolicyConfig(
        policy=settings.policy,
        offpeak=settings.offpeak,
        timezone=settings.timezone or machine_zone_name(),
        team_gpu_caps=dict(settings.team_gpu_caps),
        default_team_gpu_cap=settings.default_team_gpu_cap,
        user_gpu_caps=dict(settings.user_gpu_caps),
        default_user_gpu_cap=settings.default_user_gpu_cap,
        day_budget_gpu_h=dict(settings.day_budget_gpu_h),
        week_budget_gpu_h=dict(settings.week_budget_gpu_h),
        user_day_budget_gpu_h=dict(settings.user_day_budget_gpu_h),
        user_week_budget_gpu_h=dict(settings.user_week_budget_gpu_h),
        default_user_day_budget_gpu_h=settings.default_user_day_budget_gpu_h,
        default_user_week_budget_gpu_h=settings.default_user_week_budget_gpu_h,
        borrowing=settings.borrowing,
        fairshare_half_life_s=settings.fairshare_half_life_h * 3600.0,
        fairshare_within_teams=settings.fairshare_within_teams,
        oldest_first_after_s=settings.wide_task_first_after_min * 60.0,
        short_job_width_exponent=settings.short_job_width_exponent,
    )


# resolved from words like "+2h" or "tomorrow 9am" at each try: a retried submission may differ there alone
# a retried submission may resolve "tonight" to another instant, or be sent from a workdir edited since
_RETRY_MAY_CHANGE = frozenset({"not_before", "deadline", "git"})
MIN_TIME_LEFT_S = 60.0  # a running task's new time limit leaves it at least this long to run


def same_submission(first: dict[str, object], again: dict[str, object]) -> bool:
    """True when a submission with an already used idempotency key asks for the same task (a retry)."""
    keys = (set(first) | set(again)) - _RETRY_MAY_CHANGE
    return all(first.get(key) == again.get(key) for key in keys)


@dataclass(frozen=True, slots=True)
class Settlement:
    """How one attempt ended, as its worker reports it (`Cluster.settle_attempts`)."""

    task_id: int
    token: str
    reason: str  # an executor outcome reason: exit, cancelled, lost_lease, timeout, nonzero exit, ...
    exit_code: int | None = None
    message: str | None = None
    held_by: str | None = None  # a requeue asked held: queued again held by this person


@dataclass(frozen=True, slots=True)
class RebuildReport:
    """What a rebuild of Redis from SQL put back."""

    queued_restored: int
    leases_restored: int
    stale_removed: int
    nodes_restored: int = 0  # nodes whose admin settings (drained, maintenance, reservations) came back


class Cluster:
    """One nightshift cluster as seen by a process: its database, its Redis and its settings."""

    def __init__(self, settings: Settings, engine: Engine, queue: RedisQueue) -> None:
        self.settings = settings
        self.engine = engine
        self.factory: sessionmaker[Session] = make_session_factory(engine)
        self.tasks = TaskStore(self.factory)
        self.sweeps = SweepStore(self.factory)
        sealer = SecretSealer(settings.secrets_key, settings.secrets_key_file)
        self.secrets = SecretStore(self.factory, sealer)
        self.queue = queue
        self.nodes = NodeRegistry(queue.client, queue.keys)
        self.node_settings = NodeSettingsStore(self.factory)
        self.reservations = ReservationHistory(self.factory)
        self.zone = local_zone(settings.timezone)
        self.policy_config = policy_config_of(settings)
        self._default_workdir: str | None = None

    @classmethod
    def open(cls, settings: Settings, redis_url: str, keys: RedisKeys | None = None) -> Cluster:
        """Connect to the database (migrating it) and to Redis."""
        engine = create_db_engine(settings.resolved_database_url)
        migrate(engine)
        return cls(settings, engine, RedisQueue.from_url(redis_url, keys))

    def close(self) -> None:
        """Release connections."""
        self.queue.client.close()
        self.engine.dispose()

    def score(self, task: Task) -> float:
        """The static queue score of a task under this cluster's policy."""
        return task_score(task, self.policy_config)

    def due(self, task: Task) -> float:
        """When a task passes its aging bound under this cluster's policy: its overdue-set score."""
        return overdue_at_s(queued_task_of(task), self.policy_config)

    def queue_entry(self, task: Task) -> QueueEntry:
        """How the queue indexes `task`: its static score, overdue time and member (its policy view built
        once)."""
        view = queued_task_of(task)
        config = self.policy_config
        return QueueEntry(task.id, static_score(view, config), overdue_at_s(view, config), member_name(view))

    def queue_entries(self, tasks: Sequence[Task]) -> list[QueueEntry]:
        """`queue_entry` of each task, for `RedisQueue.enqueue_many`."""
        return [self.queue_entry(task) for task in tasks]

    # --- submit, cancel --------------------------------------------------------------------------

    def default_workdir(self) -> str:
        """Where a task runs when its spec names no workdir (created once per process)."""
        if self._default_workdir is None:
            workdir = self.settings.home / "work"
            workdir.mkdir(parents=True, exist_ok=True)
            self._default_workdir = str(workdir)
        return self._default_workdir

    def check_fits(self, spec: TaskSpec) -> None:
        """SpecError when no node of this cluster could run `spec` (`check_against_cluster`).

        Accepts on the node list read up to 1 s ago, refuses only on a fresh read: a node that just joined
        counts at once, and one that just left is like one that left right after the submission.
        """
        try:
            check_against_cluster(spec, self.nodes.recent(), self.settings.max_task_gpus)
        except SpecError:
            check_against_cluster(spec, self.nodes.all(), self.settings.max_task_gpus)

    def submit(
        self, who: Identity, spec: TaskSpec | dict[str, object], idempotency_key: str | None = None
    ) -> tuple[Task, bool]:
        """Validate, store, then enqueue a task; returns (task, created). SQL first: Redis can be rebuilt."""
        return self._store(who, self.prepare(who, spec), idempotency_key)

    def _store(self, who: Identity, new: NewTask, idempotency_key: str | None) -> tuple[Task, bool]:
        """Insert a prepared task (its class limit counted again as it is inserted) and enqueue it."""
        limit = limit_for(self._priority_limits(), who, new.priority)
        try:
            task, created = self.tasks.create(who, new, idempotency_key, class_limit=limit)
        except ClassLimitReached as full:  # another submission took the last place since `prepare`
            raise over_limit(who, new.priority, full.live, 1, limit or 0) from None
        if not created and not same_submission(task.spec or {}, new.spec):
            raise ConflictError(
                f"idempotency key {idempotency_key!r} was already used for task {task.id} with another spec; "
                "use a new key to submit this one"
            )
        if created:
            self._enqueue_stored([task], lambda: self.queue.enqueue(*self.queue_entry(task)))
        elif (
            task.status == "queued"
            and task.held_by is None
            and not task.waits_for_slot
            and self.queue.restore_queued(*self.queue_entry(task))
        ):
            self.queue.ring_scheduler()  # repairs a lost entry; never re-queues a claimed task
        return task, created

    @staticmethod
    def _enqueue_stored(tasks: Sequence[Task], enqueue: Callable[[], object]) -> None:
        """Put tasks just stored in SQL into the queue; when Redis cannot be reached they stay submitted
        (SQL is the source of truth) and the scheduler queues them once it answers (`_reconcile_redis`),
        so a caller is not told to submit again what is already in."""
        try:
            enqueue()
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            log.warning(
                "task(s) %s stored, but Redis cannot be reached (%s): the scheduler queues them once it "
                "answers",
                ", ".join(str(task.id) for task in tasks),
                exc,
            )

    def submit_many(self, items: Sequence[tuple[Identity, TaskSpec]]) -> list[Task | Exception]:
        """Independent submissions (no idempotency keys) in one SQL transaction and one Redis round trip.

        Each spec is checked on its own, exactly as `submit` checks it: a refused one gets its exception in
        its place and the others go on. Those that pass are inserted together (all of them or, on a
        database error, none: each then gets that error), then enqueued together. Returns, in order, the
        created task or the exception of each item.
        """
        results: list[Task | Exception] = []
        accepted: list[tuple[int, Identity, NewTask]] = []
        limits = self._priority_limits()
        for number, (who, spec) in enumerate(items):
            try:
                new = self.prepare(who, spec)
                if limit_for(limits, who, new.priority) is not None:  # counted again as it is inserted
                    results.append(self._store(who, new, None)[0])
                    continue
                accepted.append((number, who, new))
                results.append(_PENDING)
            except Exception as exc:  # this submission's own error, answered to its caller alone
                results.append(exc)
        if not accepted:
            return results
        try:
            tasks = self.tasks.create_many([(who, new) for _, who, new in accepted])
            self._enqueue_stored(tasks, lambda: self.queue.enqueue_many(self.queue_entries(tasks)))
        except Exception as exc:
            for number, _, _ in accepted:
                results[number] = exc
            return results
        for (number, _, _), task in zip(accepted, tasks, strict=True):
            results[number] = task
        return results

    def prepare(self, who: Identity, spec: TaskSpec | dict[str, object]) -> NewTask:
        """The row a spec becomes, after every check of a single submission (SpecError when refused)."""
        parsed = spec if isinstance(spec, TaskSpec) else parse_spec(spec)
        if parsed.sweep is not None:
            raise SpecError(
                "a spec with `sweep` makes several tasks: send it to POST /api/v1/sweeps "
                "(`nightshift submit FILE` and the chat do that by themselves)",
                [{"field": "sweep", "message": "use POST /api/v1/sweeps for a sweep"}],
            )
        if parsed.max_running is not None:
            message = (
                "max_running limits how many of a sweep's tasks run at once; a single task has nothing to "
                "limit: give it beside `sweep` in a sweep spec, or beside `name` in POST /api/v1/tasks/batch"
            )
            raise SpecError(message, [{"field": "max_running", "message": message}])
        self.check_fits(parsed)
        check_times_ahead(parsed, self.zone, from_epoch_s(now_s()))
        self.check_dependencies(who, parsed.depends_on, parsed.depends_on_any)
        self.check_secrets(who, parsed.secrets)
        self.check_priority_room(who, {parsed.priority: 1})
        return resolve(parsed, self.zone, self.default_workdir())

    def check_priority_room(self, who: Identity, adding: Mapping[str, int]) -> None:
        """422 when `who` would have more tasks of a class queued or running than `priority_limits` allows."""
        if self.settings.priority_limits:
            check_priority_room(self.tasks, self._priority_limits(), who, adding)

    def class_limits(self, who: Identity) -> dict[str, int]:
        """The limits of `priority_limits` that bind `who` (none for an admin): class -> limit."""
        return {} if who.is_admin else self._priority_limits()

    def _priority_limits(self) -> dict[str, int]:
        return {str(name): limit for name, limit in self.settings.priority_limits.items()}

    def check_secrets(self, who: Identity, names: Sequence[str]) -> None:
        """422 when the spec names a secret its submitter has not set: the job could not be given it."""
        missing = self.secrets.missing(who.user, names)
        if missing:
            said = ", ".join(missing)
            message = (
                f"you have no secret {said}: store it with `nightshift secret set {missing[0]}` in a "
                "terminal (its value is never shown, nor typed into the chat), then submit again"
            )
            raise SpecError(message, [{"field": "secrets", "message": message}])

    def check_dependencies(
        self, who: Identity, depends_on: Sequence[int], depends_on_any: Sequence[int] = ()
    ) -> None:
        """422 when `depends_on` or `depends_on_any` names a task that does not exist for this caller (or
        another team's), or when `depends_on` names one that already failed or was cancelled: the new task
        could never start (as Slurm refuses it). A `depends_on_any` parent that already ended is fine: it
        no longer holds the task back."""
        for field, parents in (("depends_on", depends_on), ("depends_on_any", depends_on_any)):
            for parent in parents:
                refuse_parent(field, parent, self._status_for(who, parent))

    def _check_new_parents(
        self, who: Identity, task_id: int, spec: TaskSpec, changes: Mapping[str, Any]
    ) -> None:
        """For a change of the tasks a queued task waits for ("start 12 after 13 succeeds"): the same checks
        as a submission's, and no loop (13 already waiting for 12) in which neither could start."""
        parents = {field: getattr(spec, field) for field in PARENT_FIELDS if changes.get(field)}
        if not parents:
            return
        self.check_dependencies(who, parents.get("depends_on", ()), parents.get("depends_on_any", ()))
        refuse_dependency_loop(task_id, parents, self._waited_for)

    def _waited_for(self, task_id: int) -> list[int]:
        """The tasks task `task_id` still waits for (`dependencies.waited_for`)."""
        try:
            task = self.tasks.get_any(task_id)
        except NotFoundError:
            return []
        return waited_for(task.status, task.spec)

    def _status_for(self, who: Identity, task_id: int) -> str | None:
        """The status of task `task_id` as `who` may see it; None when they have no such task."""
        try:
            return self.tasks.get_for(who, task_id).status
        except NotFoundError:
            return None

    def cancel(self, who: Identity, task_id: int) -> Task:
        """Cancel a queued task at once, or ask the worker of a running one to stop it."""
        task = self.tasks.get_for(who, task_id)
        if task.status in FINAL_STATUSES:
            raise ConflictError(f"task {task_id} already {task.status}; nothing to cancel")
        if task.status == "queued" and self.tasks.cancel_queued(task_id, who.user):
            self.queue.remove(task_id)
            self.queue.unassign(task_id)
            self.queue.ring_scheduler()
            self._admit_in_sweep_of(task)
            return self.tasks.get_any(task_id)
        task = self.tasks.request_cancel(task_id)
        if task.status == "running" and task.node:
            self.queue.request_cancel(task_id, task.node)
        return task

    def requeue(self, who: Identity, task_id: int, hold: bool = False) -> Task:
        """Ask the worker of a running task to stop it (its stop signal, grace, KILL) and put it back in the
        queue with its age, not counted against its retries (Slurm's `scontrol requeue`; with `hold`,
        `requeuehold`: held there until released): to free a node, or to move a task that resumes from its
        checkpoint. ConflictError unless it is running."""
        task = self.tasks.get_for(who, task_id)
        if task.status != "running" or task.node is None or task.lease_token is None:
            what = f"already {task.status}" if task.status in FINAL_STATUSES else f"is {task.status}"
            raise ConflictError(f"task {task_id} {what}: only a running task can be put back in the queue")
        if task.cancel_requested:
            raise ConflictError(f"task {task_id} is being cancelled: it is not put back in the queue")
        self.queue.request_requeue(task_id, task.node, task.lease_token, who.user, hold)
        return task

    def drain_later(
        self,
        who: Identity,
        node: str,
        at_s: float,
        requeue: bool = False,
        until_s: float | None = None,
        repeat: str | None = None,
    ) -> list[int] | None:
        """Drain `node` from `at_s` on (a maintenance, to `until_s` when given, when the node is back in
        service by itself, coming round again with `repeat` in the cluster's zone; with `requeue`, the
        tasks still running there then are requeued as `who`, each time: `requeue_at_maintenance`); the ids
        of the tasks running there now that are expected (by their estimate, else time limit, as forecasts
        expect it) to run past its start. None for an unknown node; SpecError for a repeat it cannot keep."""
        by = json.dumps({"user_id": who.user_id, "user": who.user, "team_id": who.team_id, "team": who.team})
        until_ms = None if until_s is None else round(until_s * 1000)
        zone_name = self.policy_config.timezone
        if repeat is not None:
            if until_s is None:
                raise SpecError(
                    "a repeating maintenance needs an end (`until`): the node comes back by itself each time",
                    [{"field": "until", "message": "required with repeat"}],
                )
            check_repeat(repeat, at_s, until_s, zone_name)
        at_ms = round(at_s * 1000)
        if not self.nodes.set_drained(
            node, True, at_ms, by if requeue else None, until_ms, repeat, zone_name
        ):
            return None
        self._keep_node_settings(node)
        return [task_id for task_id, _team, _gpus in self._running_past(node, at_s)]

    def reserve_node(
        self,
        who: Identity,
        node: str,
        team: str,
        at_s: float,
        until_s: float,
        repeat: str | None = None,
        gpus: int | None = None,
    ) -> tuple[TeamReservation, list[int]] | None:
        """Reserve `node`'s GPUs for `team` from `at_s` to `until_s` (with `repeat`, at that time every day,
        working day, weekend day or week in the cluster's zone, until called off; with `gpus`, that many of
        its GPUs), as `who` asks (recorded for the reports): then only its tasks start there. The reservation
        as written (its GPUs chosen), and the ids of other teams' tasks running there now, on the GPUs it
        holds, that are expected to run past its start (they are not stopped); None for an unknown node.
        ConflictError when it overlaps another of the node's (or too few GPUs are free of them); SpecError
        for a repeat it cannot keep."""
        zone_name = self.policy_config.timezone
        if repeat is not None:
            check_repeat(repeat, at_s, until_s, zone_name)
        held = TeamReservation(team, round(at_s * 1000), round(until_s * 1000), repeat, zone_name)
        written = self.nodes.reserve(node, held, now_ms(), gpus)
        if written is None:
            return None
        self._keep_node_settings(node)
        self.reservations.add(node, team, at_s, until_s, who.user, repeat, zone_name, written.gpus)
        return written, [
            task_id
            for task_id, owner, on in self._running_past(node, at_s)
            if owner != team and (not written.gpus or any(written.holds_gpu(index) for index in on))
        ]

    def set_node_drained(self, node: str, drained: bool) -> bool:
        """Drain `node` now (no new tasks) or put it back in service (a maintenance set is called off
        too); False for an unknown node."""
        if not self.nodes.set_drained(node, drained):
            return False
        self._keep_node_settings(node)
        return True

    def unreserve_node(self, node: str, team: str | None) -> bool:
        """Call off `node`'s reservations for `team` (None: all of them); False for an unknown node."""
        if not self.nodes.unreserve(node, team, now_ms()):
            return False
        self._keep_node_settings(node)
        self.reservations.call_off(node, team, now_s())
        return True

    def _keep_node_settings(self, node: str) -> None:
        """Write what admins set on `node` to SQL, as Redis now holds it, for `rebuild_redis`."""
        self.node_settings.save(node, lambda: self.nodes.admin_fields(node))

    def _running_past(self, node: str, at_s: float) -> list[tuple[int, str, list[int]]]:
        """(id, team, GPU indices) of each task running on `node` expected (by its estimate, else time limit,
        as forecasts expect it) to run past `at_s`."""
        now, config = now_s(), self.policy_config
        past: list[tuple[int, str, list[int]]] = []
        for task in self.tasks.with_status("running"):
            if task.node != node or task.started_at is None:
                continue
            view = running_task_of(task, node, task.gpu_indices or [], to_epoch_s(task.started_at))
            if expected_end_s(view, now, config, config.forecast_overrun_factor) > at_s:
                past.append((task.id, view.team, list(view.gpu_indices)))
        return past

    def requeue_at_maintenance(self, node: str, due_ms: int) -> list[int]:
        """Requeue the tasks running on `node`, whose maintenance asked it and has come (its time that began
        at `due_ms`), as the admin who asked it; once (the ask is taken), so a second caller requeues
        nothing."""
        by = self.nodes.take_due_requeue(node, due_ms)
        if by is None:
            return []
        self._keep_node_settings(node)
        return self.requeue_node(Identity(**json.loads(by), is_admin=True), node)

    def requeue_node(self, who: Identity, node: str) -> list[int]:
        """Requeue every task running on `node` (a drained node to be rebooted now): the ids asked; one that
        ended or is being cancelled meanwhile is left alone."""
        asked = []
        for task in self.tasks.with_status("running"):
            if task.node != node:
                continue
            try:
                self.requeue(who, task.id)
            except (ConflictError, NotFoundError):
                continue
            asked.append(task.id)
        return asked

    def hold(self, who: Identity, task_id: int) -> Task:
        """Keep a queued task from starting until it is released (like Slurm's `scontrol hold`): it leaves
        the queue, keeps its place in time (its age counts as if it had waited), and runs on no node."""
        task = self.tasks.get_for(who, task_id)
        if task.held_by is not None and task.status == "queued":
            raise ConflictError(
                f"task {task_id} is already held by {task.held_by}; nightshift release {task_id}"
            )
        if task.status != "queued" or not self.tasks.hold(task_id, who.user):
            now = self.tasks.get_any(task_id).status
            what = "is running: cancel stops it" if now == "running" else f"already {now}"
            raise ConflictError(f"task {task_id} {what}; only a queued task can be held")
        # out of Redis; a node that claimed it meanwhile is refused when it marks it running (held_by)
        self.queue.remove(task_id)
        self.queue.unassign(task_id)
        self.queue.ring_scheduler()
        self._admit_in_sweep_of(task)  # its slot, if it held one, goes to the next waiting task
        return self.tasks.get_any(task_id)

    def update(self, who: Identity, task_id: int, changes: Mapping[str, Any]) -> Task:
        """Change when a queued task may start or how long it may run (`edits.EDITABLE_FIELDS`), keeping its
        age, as Slurm's `scontrol update` does; it is re-queued with the score it now has. A running task
        may change how long it may run (`_update_running`).

        SpecError when a field may not change or the result is not a valid spec; ConflictError when the
        task has ended, or a node has already claimed it (it is starting as it was).
        """
        task = self.tasks.get_for(who, task_id)
        if task.status == "running":
            return self._update_running(task, changes)
        spec = self._checked_queued_change(who, task, changes)
        new = resolve(spec, self.zone, self.default_workdir())
        limit = None
        if new.priority != task.priority:  # counted again as it is stored
            limit = limit_for(self._priority_limits(), who, new.priority)
        with self._dependency_changes(changes):
            self._check_new_parents(who, task_id, spec, changes)
            return self._store_change(task, new, limit)

    def check_update(self, who: Identity, task_id: int, changes: Mapping[str, Any]) -> tuple[Task, NewTask]:
        """Every check `update` makes, and nothing changed (`PATCH /tasks/{id}?dry_run=true`, the chat's
        change card): the task, and what it would become."""
        task = self.tasks.get_for(who, task_id)
        if task.status == "running":
            spec = self._checked_running_change(task, changes)
        else:
            spec = self._checked_queued_change(who, task, changes)
            self._check_new_parents(who, task_id, spec, changes)
        return task, resolve(spec, self.zone, self.default_workdir())

    def _checked_queued_change(self, who: Identity, task: Task, changes: Mapping[str, Any]) -> TaskSpec:
        """A queued task's spec after `changes`, each checked as `update` must (ConflictError for a task
        that is neither queued nor running)."""
        if task.status != "queued":
            raise ConflictError(
                f"task {task.id} already {task.status}; only a queued or running task can be changed"
            )
        spec = changed_spec(task.id, task.spec or {}, changes)
        raised = changes.get("priority")
        if raised is not None and raised != task.priority:  # counted against the task's owner
            owner = Identity(task.user_id, task.user.name, task.team_id, task.team.name, who.is_admin)
            self.check_priority_room(owner, {raised: 1})
        if changes.get("deadline") is not None:  # one that passed while it waited stays as it was
            check_times_ahead(spec, self.zone, from_epoch_s(now_s()))
        return spec

    @contextmanager
    def _dependency_changes(self, changes: Mapping[str, Any]) -> Iterator[None]:
        """One change of what tasks wait for at a time, across API processes (a Redis lock): two changes
        checked at once ("12 waits for 13", "13 waits for 12") could each pass the loop check."""
        if not any(changes.get(field) for field in PARENT_FIELDS):
            yield
            return
        lock = self.queue.client.lock(self.queue.keys.dependency_lock, timeout=30, blocking_timeout=30)
        if not lock.acquire():
            raise ConflictError("another change of what tasks wait for is in progress; try again")
        try:
            yield
        finally:
            lock.release()

    def _store_change(self, task: Task, new: NewTask, class_limit: int | None = None) -> Task:
        """Store a queued task's changed spec and queue it again with the score it now has. `class_limit`:
        the limit of the class its priority rises into, counted again as it is stored (a refusal puts it
        back in the queue as it was)."""
        task_id = task.id
        if _in_redis(task):
            # out of the queue and its node's inbox first, so no node can claim it while it changes
            self.queue.remove(task_id)
            self.queue.unassign(task_id)
            claimed = self.queue.leased_gpus([task_id]).get(task_id)
            if claimed is not None:
                raise ConflictError(
                    f"task {task_id} is starting on {claimed[0]}; it can no longer be changed"
                )
        try:
            limit = None if class_limit is None else (task.user_id, class_limit)
            stored = self.tasks.update_queued(task_id, new, limit)
        except ClassLimitReached as full:  # another task took the last place of the class since the check
            if _in_redis(task):
                self.queue.restore_queued(*self.queue_entry(task))
            owner = Identity(task.user_id, task.user.name, task.team_id, task.team.name, False)
            raise over_limit(owner, new.priority, full.live, 1, class_limit or 0) from None
        if not stored:
            now = self.tasks.get_any(task_id).status
            raise ConflictError(f"task {task_id} already {now}; only a queued task can be changed")
        updated = self.tasks.get_any(task_id)
        if _in_redis(updated):
            entry = self.queue_entry(updated)
            # rescored where a release meanwhile queued it again (with its old score); else queued again,
            # unless Redis holds it elsewhere (assigned or claimed after that release)
            self.queue.rescore(*entry)
            self.queue.restore_queued(*entry)
            self.queue.ring_scheduler()
        self._admit_in_sweep_of(updated)
        return updated

    def _update_running(self, task: Task, changes: Mapping[str, Any]) -> Task:
        """Give a running task a new time limit (or estimate, retries, name, tags): stored for its next
        attempts and forecasts, and told to the worker running it, which applies it on its next loop. A
        limit it has already run past is refused: that would stop it at once, which is a cancel."""
        spec = self._checked_running_change(task, changes)
        limit = spec.time_limit_minutes
        new = resolve(spec, self.zone, self.default_workdir())
        token = task.lease_token
        if token is None or task.node is None or not self.tasks.update_running(task.id, token, new):
            now = self.tasks.get_any(task.id).status
            raise ConflictError(f"task {task.id} already {now}; it can no longer be changed")
        if "time_limit_minutes" in changes:
            self.queue.announce_time_limit(task.id, task.node, token, None if limit is None else limit * 60.0)
        return self.tasks.get_any(task.id)

    def _checked_running_change(self, task: Task, changes: Mapping[str, Any]) -> TaskSpec:
        """A running task's spec after `changes`, each checked as `_update_running` must."""
        check_changes(task.id, changes)  # what is no spec field, or never changes (command, GPUs): a 422
        check_running_changes(task.id, changes)
        spec = changed_spec(task.id, task.spec or {}, changes)
        limit = spec.time_limit_minutes
        if limit is not None and task.started_at is not None:
            ran_s = now_s() - to_epoch_s(task.started_at)
            if limit * 60 <= ran_s + MIN_TIME_LEFT_S:
                at_least = ran_s / 60 + MIN_TIME_LEFT_S / 60
                raise ConflictError(
                    f"task {task.id} has run {ran_s / 60:.0f} min already; a {limit:g}-min time limit would "
                    f"stop it at once: give it more than {at_least:.0f} min, or cancel it"
                )
        return spec

    def requeue_waiting(self, task_ids: Sequence[int]) -> None:
        """Queue again those of these tasks that still wait (queued, not held, not being cancelled) and that
        Redis holds nowhere: a node refused to start them because their row changed after the scheduler
        decided to (`TaskStore.mark_running_many`)."""
        rows = self.tasks.by_ids(task_ids).values()
        waiting = [row for row in rows if _in_redis(row) and not row.cancel_requested]
        restored = [self.queue.restore_queued(*self.queue_entry(row)) for row in waiting]
        if any(restored):
            self.queue.ring_scheduler()

    def release(self, who: Identity, task_id: int) -> Task:
        """Let a held task start again, with the priority and age it had.

        It is queued again unless a node's claim of it, made before the hold, is still in flight: that
        node's start now goes on (the row is no longer held), or, refused, `requeue_waiting` queues it.
        """
        task = self.tasks.get_for(who, task_id)
        limited = task.sweep_id is not None and self.sweeps.get_any(task.sweep_id).max_running is not None
        if not self.tasks.release(task_id, wait_for_slot=limited):
            raise ConflictError(f"task {task_id} is not held ({task.status}); nothing to release")
        if limited:  # it takes a slot only if one is free, else it waits for one
            self._admit_in_sweep_of(task)
            return self.tasks.get_any(task_id)
        released = self.tasks.get_any(task_id)
        if self.queue.restore_queued(*self.queue_entry(released)):
            self.queue.ring_scheduler()
        return released

    # --- a sweep's slots (`max_running`) -------------------------------------------------------------

    def admit_waiting(self, sweep_id: int) -> int:
        """Give the sweep's free slots to its tasks waiting for one (SQL, one transaction), then queue those
        in Redis with their scores and ring the scheduler; how many were admitted.

        One whose claim by a node is still in flight (claimed, then held and released to wait) is not
        queued a second time: that node's start goes on, or, refused, `requeue_waiting` queues it.
        """
        admitted = self.sweeps.admit_waiting(sweep_id)
        if admitted:
            self.queue.restore_queued_many(self.queue_entries(admitted))
            self.queue.ring_scheduler()
        return len(admitted)

    def _admit_in_sweep_of(self, task: Task) -> None:
        """`admit_waiting` for the task's sweep, if it has one."""
        if task.sweep_id is not None:
            self.admit_waiting(task.sweep_id)

    def admit_after_endings(self, task_ids: Sequence[int]) -> None:
        """After these tasks ended for good: admit waiting tasks into the slots they freed. A failure is
        logged, not raised (the endings are settled); the next rebuild from SQL admits them then."""
        if not task_ids:
            return
        try:
            for sweep_id in sorted(self.sweeps.limited_sweeps_of(task_ids)):
                self.admit_waiting(sweep_id)
        except Exception:
            log.exception("admitting waiting sweep tasks after tasks %s ended failed", list(task_ids))

    def settle_attempt(
        self, task_id: int, token: str, reason: str, exit_code: int | None = None, message: str | None = None
    ) -> str | None:
        """After an attempt ended: mark it succeeded, cancelled or failed, or requeue it (retry policy).

        Only the holder of `token` changes anything. Returns the task's new status, or None when the claim
        was no longer ours. The lease is released either way, which wakes the scheduler, except after
        `lost_lease` (a job its worker killed because its lease ran out): the reaper takes that one.
        """
        return self.settle_attempts([Settlement(task_id, token, reason, exit_code, message)])[0]

    def settle_attempts(self, settlements: Sequence[Settlement]) -> list[str | None]:
        """`settle_attempt` for several ended attempts at once, their new statuses in the same order.

        Successes and cancels (most of a busy node's endings) change SQL in one transaction and release
        their leases in one Redis round trip, waking the scheduler once; failures go through the retry
        policy one by one.
        """
        try:
            statuses = self._settle_many(settlements)
            ended = [item.task_id for item, status in zip(settlements, statuses, strict=True)]
            self.admit_after_endings(
                [task_id for task_id, status in zip(ended, statuses, strict=True) if status in FINAL_STATUSES]
            )
            return statuses
        finally:
            # a lost lease is left to run out, so the reaper requeues its task: released here, it would
            # leave the task running in SQL with no lease anywhere to expire
            self.queue.release_many(
                [(item.task_id, item.token) for item in settlements if item.reason != "lost_lease"]
            )

    def _settle_many(self, settlements: Sequence[Settlement]) -> list[str | None]:
        statuses: list[str | None] = [None] * len(settlements)
        plain: list[tuple[int, Finish]] = []
        for i, item in enumerate(settlements):
            if item.reason == "lost_lease":
                continue
            if item.reason == "exit":
                plain.append((i, Finish(item.task_id, item.token, "succeeded", 0, "exit")))
            elif item.reason == "cancelled":
                code, message = item.exit_code, item.message
                plain.append((i, Finish(item.task_id, item.token, "cancelled", code, "cancelled", message)))
            else:
                statuses[i] = self._settle_failure(item)
        done = self.tasks.finish_many([finish for _, finish in plain])
        for i, finish in plain:
            statuses[i] = finish.status if finish.task_id in done else None
        return statuses

    def _settle_failure(self, item: Settlement) -> str | None:
        """A failed attempt: requeue it when the retry policy says so, else fail the task; a task someone
        asked to cancel is cancelled instead (a retry would be refused by every node, and lost)."""
        tasks, task_id, token = self.tasks, item.task_id, item.token
        task = tasks.get_any(task_id)
        if task.cancel_requested:
            code, why = item.exit_code, item.message
            done = tasks.finish(task_id, token, "cancelled", exit_code=code, reason="cancelled", message=why)
            return "cancelled" if done else None
        previous = tasks.attempt_reasons(task_id, excluding_token=token)
        decision = decide_retry(previous, item.reason, task.retries, self.settings.retry_backoff_s)
        if decision.retry:
            hold = from_epoch_s(now_s() + decision.delay_s) if decision.delay_s else None
            if tasks.requeue(task_id, token, item.reason, item.message, hold, item.held_by) is None:
                return None
            if item.held_by is not None:  # out of the queue until released, as `hold` leaves it
                self._admit_in_sweep_of(task)
                return "queued"
            self.queue.enqueue(*self.queue_entry(task))
            return "queued"
        done = tasks.finish(
            task_id,
            token,
            "failed",
            exit_code=item.exit_code,
            reason=decision.reason or item.reason,
            message=decision.message or item.message,
        )
        return "failed" if done else None

    # --- views -------------------------------------------------------------------------------------

    def queue_positions(self, limit: int = 500) -> list[tuple[int, Task]]:
        """The queue as it stands, best first: (0-based position, task)."""
        head = self.queue.head(limit)
        rows = self.tasks.by_ids(task_id for task_id, _ in head)
        ordered = [
            rows[task_id] for task_id, _ in head if task_id in rows and rows[task_id].status == "queued"
        ]
        return list(enumerate(ordered))

    def alive_nodes(self) -> list[NodeState]:
        """Nodes whose workers heartbeat."""
        now = now_ms()
        return [node for node in self.nodes.all() if node.alive(now)]

    def log_path(self, task_id: int) -> Path:
        """The log file of a task: derived from its id only, never from anything a caller sends."""
        return self.settings.logs_dir / f"{int(task_id)}.log"

    # --- rebuild Redis from SQL -------------------------------------------------------------------

    def rebuild_redis(self) -> RebuildReport:
        """Put back into Redis what SQL says: queued tasks into the queue, running ones' leases.

        Safe at any time: tasks Redis already holds (queued, assigned or leased) are left alone. When Redis
        lost its data (no epoch), what admins set on the nodes (drained, maintenance, reservations) comes
        back too, before any pass could give a drained node work.
        """
        nodes_restored = 0
        if self.queue.epoch() is None:
            for name, fields in self.node_settings.all().items():
                self.nodes.restore_admin_fields(name, fields)
                nodes_restored += 1
            self.queue.start_epoch()
        queued = restored_leases = 0
        expires = now_ms() + int(self.settings.lease_ttl_s * 1000)
        for task in self.tasks.with_status("queued", "running"):
            if task.status == "queued" and _in_redis(task):
                queued += self.queue.restore_queued(*self.queue_entry(task))
            elif task.lease_token and task.node is not None:
                restored_leases += self.queue.restore_lease(
                    task.id, task.lease_token, task.node, task.gpu_indices or [], expires
                )
        stale = self._drop_stale_queue_entries()
        queued += self.admit_all_waiting()
        if queued or restored_leases:
            self.queue.ring_scheduler()
        return RebuildReport(queued, restored_leases, stale, nodes_restored)

    def admit_all_waiting(self) -> int:
        """`admit_waiting` for every sweep with a task waiting for a slot: repairs an admission that a
        failure after a task's ending left undone (the rebuild and the scheduler's minute check call it).
        How many were admitted."""
        return sum(self.admit_waiting(sweep_id) for sweep_id in sorted(self.sweeps.sweeps_with_waiting()))

    def _drop_stale_queue_entries(self) -> int:
        in_redis = self.queue.queued_ids()
        states = self.tasks.schedulable_states(in_redis)
        stale = [task_id for task_id in in_redis if states.get(task_id) != "queued"]
        for task_id in stale:
            self.queue.remove(task_id)
        return len(stale)


def _in_redis(task: Task) -> bool:
    """True when a queued task belongs in Redis: nobody holds it and its sweep gave it a slot."""
    return task.status == "queued" and task.held_by is None and not task.waits_for_slot
