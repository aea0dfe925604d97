"""Sweeps and batches on a cluster: submit many tasks at once (all or nothing), cancel or hold them, compare
them.

    submit_group(cluster, who, specs, kind)   -> every spec checked and expanded, then one SQL transaction
                                                 (the sweep row and all its tasks), then Redis (one
                                                 transaction for all the tasks)
    cancel_sweep(cluster, who, sweep_id)      -> each queued task cancelled, each running one stopped
    hold_sweep / release_sweep                -> each queued task held back, or each held one let go
    rerun_sweep(cluster, who, sweep_id, sts)  -> each task that ended so (failed, by default) run again in
                                                 the sweep: a new task with its parameters takes its place
    change_sweep(cluster, who, sweep_id, ch)  -> the same change to each queued task (`Cluster.update`);
                                                 `max_running` changes the sweep's limit instead
    sweep_results(cluster, who, sweep_id)     -> `results.compare()` over the sweep's tasks
    list_sweeps(cluster, who, filters, ...)   -> a page of the sweeps the caller may see, newest first, each
                                                 counted, and how many pass the filters (at most three
                                                 queries however many sweeps)

Nothing reaches SQL before every spec is valid, fits the cluster and stays within the size cap, so a bad
parameter set leaves no row behind. With `max_running` N only the first N tasks enter the queue; the others
wait for a slot (`Cluster.admit_waiting`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.clock import from_epoch_s, now_s
from scheduler.edits import changed_spec
from scheduler.errors import ConflictError, NotFoundError, RateLimited, SpecError
from scheduler.priority_limits import over_limit
from scheduler.resubmit import RERUNNABLE, spec_again
from scheduler.results import Comparison, Goal, ResultRow, code_of, compare
from scheduler.service import Cluster
from scheduler.spec import MAX_RUNNING_LIMIT, TaskSpec, parse_spec
from scheduler.store.identity import Identity
from scheduler.store.sweeps import (
    NewSweep,
    Rerun,
    SweepFilter,
    SweepStore,
    SweepTally,
    group_status,
    tally_of_tasks,
)
from scheduler.store.tables import FINAL_STATUSES, Sweep, Task
from scheduler.store.tasks import ClassLimitReached
from scheduler.submission import check_against_cluster, check_times_ahead, resolve
from scheduler.sweeps import MAX_SWEEP_TASKS, Expanded, expand_all, in_batch
from scheduler.task_names import default_name


@dataclass(frozen=True, slots=True)
class SweepView:
    """A sweep with its tasks and how many are in each status."""

    sweep: Sweep
    tasks: list[Task]

    @property
    def tally(self) -> SweepTally:
        """Its tasks counted by status, held and waiting for a slot (as `GET /sweeps` counts them)."""
        return tally_of_tasks(self.tasks)

    @property
    def counts(self) -> dict[str, int]:
        """Tasks per status."""
        return self.tally.counts

    @property
    def held(self) -> int:
        """Queued tasks someone holds back (`hold_sweep`)."""
        return self.tally.held

    @property
    def waiting(self) -> int:
        """Queued tasks waiting for a slot (the sweep's `max_running`), not held."""
        return self.tally.waiting

    @property
    def status(self) -> str:
        """`running` while any task runs, `queued` while any other has not ended, else `done` (or
        `cancelled` when all were): `group_status`."""
        return group_status(set(self.counts))


@dataclass(frozen=True, slots=True)
class SweepSummary:
    """A sweep with its tasks counted but not loaded (`GET /sweeps` lists many at once)."""

    sweep: Sweep
    tally: SweepTally

    @property
    def status(self) -> str:
        """As `SweepView.status`, from the counts."""
        return group_status(set(self.tally.counts))


def sweeps_of(cluster: Cluster) -> SweepStore:
    """The sweep store over the cluster's database."""
    return SweepStore(cluster.factory)


def _check_queued_cap(cluster: Cluster, who: Identity, adding: int) -> None:
    cap = cluster.settings.max_queued_per_team
    if cap is None:
        return
    queued = cluster.tasks.count_queued_for_team(who.team_id)
    if queued + adding > cap:
        raise RateLimited(
            f"team {who.team!r} has {queued} tasks queued and this would add {adding} (the cap is {cap}); "
            "submit fewer at once or wait for some to start",
            retry_after_s=60,
        )


def check_group(cluster: Cluster, who: Identity, specs: Sequence[TaskSpec], kind: str) -> list[Expanded]:
    """Every check a group's submission makes before it creates anything (the tasks its specs expand to,
    each against the cluster, the queued cap, priority limits): its tasks, or the error of the first
    spec refused (`in_batch` says which)."""
    if kind == "batch":
        _refuse_limit_per_spec(specs)
    expanded = expand_all(specs, MAX_SWEEP_TASKS)
    nodes = cluster.nodes.all()
    for number, spec in enumerate(specs, 1):
        try:
            check_against_cluster(spec, nodes, cluster.settings.max_task_gpus)
            check_times_ahead(spec, cluster.zone, from_epoch_s(now_s()))
            cluster.check_dependencies(who, spec.depends_on, spec.depends_on_any)
            cluster.check_secrets(who, spec.secrets)
        except SpecError as exc:
            raise in_batch(exc, number, len(specs)) from None
    _check_queued_cap(cluster, who, len(expanded))
    cluster.check_priority_room(who, Counter(item.spec.priority for item in expanded))
    return expanded


def submit_group(
    cluster: Cluster,
    who: Identity,
    specs: Sequence[TaskSpec],
    kind: str,
    idempotency_key: str | None = None,
    name: str | None = None,
    max_running: int | None = None,
) -> tuple[SweepView, bool]:
    """Create every task of these specs (sweeps expanded) under one sweep id, all or nothing; with
    `max_running` N, the first N are queued and the others wait for a slot.

    Returns (view, created); `created` is False when this user already used `idempotency_key` for a group.
    """
    store = sweeps_of(cluster)
    if idempotency_key:
        existing = store.by_key(who, idempotency_key)
        if existing is not None:
            return SweepView(existing, store.tasks_of(existing.id)), False
    check_max_running(max_running)
    expanded = check_group(cluster, who, specs, kind)
    workdir = cluster.default_workdir()
    new_tasks = [(resolve(item.spec, cluster.zone, workdir), dict(item.params)) for item in expanded]
    first = specs[0]
    label = name or first.name or default_name(first.command)
    template = first.command if kind == "sweep" else None
    try:
        sweep, tasks, created = store.create(
            who,
            NewSweep(kind, label[:120], template, new_tasks, max_running),
            idempotency_key,
            cluster.class_limits(who),
        )
    except ClassLimitReached as full:  # other submissions took the places since `check_group`
        raise _class_full(cluster, who, full) from None
    if created:
        # one Redis transaction and one round trip for the whole group; those waiting for a slot stay out
        admitted = [task for task in tasks if task.status == "queued" and not task.waits_for_slot]
        cluster.queue.enqueue_many(cluster.queue_entries(admitted))
    return SweepView(sweep, tasks), created


def submit_sweep(
    cluster: Cluster, who: Identity, spec: TaskSpec, idempotency_key: str | None = None
) -> tuple[SweepView, bool]:
    """One spec with a `sweep`: one task per parameter set, grouped under one sweep id."""
    if spec.sweep is None:
        raise SpecError(
            "this spec has no `sweep`: add a grid like {lr: [0.1, 0.01]} or submit it as one task",
            [{"field": "sweep", "message": "sweep is required here"}],
        )
    return submit_group(cluster, who, [spec], "sweep", idempotency_key, max_running=spec.max_running)


def check_max_running(value: object) -> None:
    """SpecError unless `value` is None (no limit) or a whole number from 1 to `MAX_RUNNING_LIMIT`."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_RUNNING_LIMIT:
        message = f"max_running must be a whole number from 1 to {MAX_RUNNING_LIMIT}, or null for no limit"
        raise SpecError(message, [{"field": "max_running", "message": message}])


def _refuse_limit_per_spec(specs: Sequence[TaskSpec]) -> None:
    """A batch has one `max_running`, beside its `name`: SpecError when a spec of it carries its own."""
    for number, spec in enumerate(specs, 1):
        if spec.max_running is not None:
            message = (
                f"spec {number} of the batch gives max_running: give it once for the whole batch, "
                'beside "name" ({"specs": [...], "max_running": 4})'
            )
            raise SpecError(message, [{"field": f"specs.{number - 1}.max_running", "message": message}])


def get_sweep(cluster: Cluster, who: Identity, sweep_id: int) -> SweepView:
    """A sweep the caller may see, with its tasks."""
    store = sweeps_of(cluster)
    sweep = store.get_for(who, sweep_id)
    return SweepView(sweep, store.tasks_of(sweep.id))


def list_sweeps(
    cluster: Cluster, who: Identity, filters: SweepFilter, limit: int = 50, offset: int = 0
) -> tuple[list[SweepSummary], int]:
    """A page of the sweeps the caller may see that pass `filters` (`SweepStore.page_for`), newest first,
    each with its tasks counted, and how many pass in all: one query for the page, one for all its counts,
    and one for the total when the page is cut."""
    store = sweeps_of(cluster)
    page = store.page_for(who, filters, limit, offset)
    tallies = store.tallies([sweep.id for sweep in page.sweeps])
    return [SweepSummary(sweep, tallies.get(sweep.id, SweepTally({}))) for sweep in page.sweeps], page.total


def cancel_sweep(cluster: Cluster, who: Identity, sweep_id: int) -> SweepView:
    """Cancel every queued task of the sweep and stop every running one; finished tasks stay as they are.

    ConflictError when every task has finished already, as `hold_sweep` says when none is queued.
    """
    view = get_sweep(cluster, who, sweep_id)
    if all(task.status in FINAL_STATUSES for task in view.tasks):
        raise ConflictError(f"sweep {sweep_id}: nothing to cancel ({_counts_text(view)})")
    _each(
        _waiting_first(view.tasks),
        lambda task: task.status not in FINAL_STATUSES,
        lambda task_id: cluster.cancel(who, task_id),
    )
    return get_sweep(cluster, who, sweep_id)


def hold_sweep(cluster: Cluster, who: Identity, sweep_id: int) -> SweepView:
    """Hold back every queued task of the sweep that is not held yet (running and finished ones go on).

    ConflictError when the sweep has no queued task left, so a late hold says it came too late.
    """
    view = get_sweep(cluster, who, sweep_id)
    if not any(task.status == "queued" for task in view.tasks):
        raise ConflictError(f"sweep {sweep_id} has no queued task to hold ({_counts_text(view)})")
    queued = [task for task in _waiting_first(view.tasks) if _queued(task, held=False)]
    _each(queued, lambda task: True, lambda task_id: cluster.hold(who, task_id))
    return get_sweep(cluster, who, sweep_id)


def release_sweep(cluster: Cluster, who: Identity, sweep_id: int) -> SweepView:
    """Let every held task of the sweep start again, with the priority and age each had."""
    view = get_sweep(cluster, who, sweep_id)
    if view.held == 0:
        raise ConflictError(f"sweep {sweep_id} has no held task to release ({_counts_text(view)})")
    _each(view.tasks, lambda task: _queued(task, held=True), lambda task_id: cluster.release(who, task_id))
    return get_sweep(cluster, who, sweep_id)


def _class_full(cluster: Cluster, who: Identity, full: ClassLimitReached) -> SpecError:
    """The refusal of a group whose tasks would pass `who`'s limit of a class, counted as it was written."""
    limit = cluster.class_limits(who).get(full.priority, 0)
    return over_limit(who, full.priority, full.live, full.adding, limit)


def rerun_sweep(
    cluster: Cluster,
    who: Identity,
    sweep_id: int,
    statuses: Sequence[str] = ("failed",),
    task_ids: Sequence[int] | None = None,
) -> tuple[SweepView, dict[int, int]]:
    """Run again each task of the sweep that ended in one of `statuses` (failed, by default), as Slurm's
    `scontrol requeue` of an array's failed tasks: each gets a new task in the sweep, with its parameters
    and spec (`spec_again`: a start time that has passed is left out), which takes its place in the sweep's
    counts, status and results; the old task keeps its record. All or nothing: every new spec is checked
    first (the cluster may have changed since). With `max_running` the new tasks wait for slots as a new
    sweep's do. `task_ids` narrows it to those tasks of the sweep. Returns the sweep and {replaced task id:
    new task id}.

    SpecError for a status that has not ended or a task outside the sweep; ConflictError when no task of
    the sweep ended so, or one named has not ended so or was run again already.
    """
    wanted = _rerunnable(statuses)
    view = get_sweep(cluster, who, sweep_id)
    if task_ids is not None:
        _check_named(cluster, view, task_ids, wanted)
    chosen = [
        task for task in view.tasks if task.status in wanted and (task_ids is None or task.id in task_ids)
    ]
    if not chosen:
        raise ConflictError(
            f"sweep {sweep_id} has no {' or '.join(wanted)} task to run again ({_counts_text(view)})"
        )
    now = from_epoch_s(now_s()).astimezone(cluster.zone)
    owner = _owner(view.sweep)  # an admin may rerun another team's sweep: its tasks stay that team's
    cluster.check_priority_room(owner, Counter(task.priority for task in chosen))
    reruns = []
    for task in chosen:
        try:
            new = cluster.prepare(owner, parse_spec(spec_again(task.spec or {}, now).spec))
        except SpecError as exc:
            message = f"task {task.id} of sweep {sweep_id} cannot run again: {exc.message}"
            raise SpecError(message, exc.errors) from None
        reruns.append(Rerun(task.id, new))
    _check_queued_cap(cluster, owner, len(reruns))
    try:
        created = sweeps_of(cluster).add_reruns(sweep_id, reruns, wanted, cluster.class_limits(owner))
    except ClassLimitReached as full:  # other submissions took the places since the check above
        raise _class_full(cluster, owner, full) from None
    admitted = [task for task in created if task.status == "queued" and not task.waits_for_slot]
    cluster.queue.enqueue_many(cluster.queue_entries(admitted))
    return get_sweep(cluster, who, sweep_id), {
        rerun.replaces: task.id for rerun, task in zip(reruns, created, strict=True)
    }


def _check_named(cluster: Cluster, view: SweepView, task_ids: Sequence[int], wanted: Sequence[str]) -> None:
    """Each named task is a current task of the sweep that ended as `wanted` says: SpecError for one outside
    the sweep, ConflictError for one run again already or not ended so."""
    current = {task.id: task for task in view.tasks}
    rows = cluster.tasks.by_ids([task_id for task_id in task_ids if task_id not in current])
    for task_id in task_ids:
        row = current.get(task_id) or rows.get(task_id)
        if row is None or row.sweep_id != view.sweep.id:
            message = f"task {task_id} is not a task of sweep {view.sweep.id}"
            raise SpecError(message, [{"field": "task_ids", "message": message}])
        if row.replaced_by is not None:
            raise ConflictError(
                f"task {task_id} of sweep {view.sweep.id} was run again already, as {row.replaced_by}"
            )
        if row.status not in wanted:
            state = row.status if row.status in FINAL_STATUSES else f"is {row.status}"
            raise ConflictError(
                f"task {task_id} of sweep {view.sweep.id} {state}: only tasks that {' or '.join(wanted)} run "
                "again here (the status option names the others)"
            )


def _owner(sweep: Sweep) -> Identity:
    """Whoever submitted the sweep, as the caller they were: its tasks' team and user."""
    return Identity(sweep.user_id, sweep.user.name, sweep.team_id, sweep.team.name, is_admin=False)


def _rerunnable(statuses: Sequence[str]) -> tuple[str, ...]:
    """The statuses asked for, checked: each one a task ends in (SpecError naming the others)."""
    wanted = tuple(dict.fromkeys(statuses))
    unknown = [status for status in wanted if status not in RERUNNABLE]
    if unknown or not wanted:
        message = f"only tasks that ended can run again: status one of {', '.join(RERUNNABLE)}" + (
            f", not {', '.join(unknown)}" if unknown else ""
        )
        raise SpecError(message, [{"field": "status", "message": message}])
    return wanted


def change_sweep(cluster: Cluster, who: Identity, sweep_id: int, changes: Mapping[str, Any]) -> SweepView:
    """The same change (priority, start window, limits, ...) to every queued task of the sweep.

    The change is checked against every queued task before any is changed (`check_sweep_change`), so a
    refused change leaves them all as they were.
    """
    view, queued = check_sweep_change(cluster, who, sweep_id, changes)
    task_changes = {field: value for field, value in changes.items() if field != "max_running"}
    if task_changes:
        _each(queued, lambda task: True, lambda task_id: cluster.update(who, task_id, task_changes))
    if "max_running" in changes:
        return set_max_running(cluster, view, changes["max_running"])
    return get_sweep(cluster, who, sweep_id)


def check_sweep_change(
    cluster: Cluster, who: Identity, sweep_id: int, changes: Mapping[str, Any]
) -> tuple[SweepView, list[Task]]:
    """Every check of `change_sweep`, nothing changed (`PATCH /sweeps/{id}?dry_run=true`, the chat's card):
    the sweep and the queued tasks the change would touch. Each task's change is checked as `update`
    checks it (`Cluster.check_update`: fields, times, what it waits for), and the owner's priority limit
    over all of them at once."""
    view = get_sweep(cluster, who, sweep_id)
    task_changes = {field: value for field, value in changes.items() if field != "max_running"}
    if "max_running" in changes:
        check_max_running(changes["max_running"])
        if not task_changes:
            return view, []
    queued = [task for task in view.tasks if task.status == "queued"]
    if not queued:
        raise ConflictError(f"sweep {sweep_id} has no queued task to change ({_counts_text(view)})")
    raised = task_changes.get("priority")
    unraised = {field: value for field, value in task_changes.items() if field != "priority"}
    for task in queued:  # the priority limit is counted over the whole sweep below, not one task at a time
        changed_spec(task.id, task.spec or {}, task_changes)
    if unraised:  # a task that started or ended meanwhile is skipped, as the change itself skips it
        _each(queued, lambda task: True, lambda task_id: cluster.check_update(who, task_id, unraised))
    if raised is not None and not who.is_admin:
        moving = sum(task.priority != raised for task in queued)
        cluster.check_priority_room(_owner(view.sweep), {raised: moving})
    return view, queued


def set_max_running(cluster: Cluster, view: SweepView, max_running: int | None) -> SweepView:
    """Change how many of the sweep's tasks run at once (None: no limit), as Slurm's `scontrol update
    ArrayTaskThrottle`: a higher limit (or none) admits waiting tasks at once; a lower one stops nothing
    already admitted and applies as tasks end."""
    cluster.sweeps.set_max_running(view.sweep.id, max_running)
    cluster.admit_waiting(view.sweep.id)
    store = sweeps_of(cluster)
    return SweepView(store.get_any(view.sweep.id), store.tasks_of(view.sweep.id))


def _waiting_first(tasks: Sequence[Task]) -> list[Task]:
    """The tasks waiting for a slot first: cancelling or holding the admitted ones then frees slots that
    no waiting task is left to take (it would be queued, maybe started, only to be stopped)."""
    return sorted(tasks, key=lambda task: (not task.waits_for_slot, task.id))


def _queued(task: Task, *, held: bool) -> bool:
    return task.status == "queued" and (task.held_by is not None) == held


def _each(tasks: Sequence[Task], wanted: Callable[[Task], bool], act: Callable[[int], object]) -> None:
    """`act` on every wanted task; one that changed meanwhile (finished, started, released) is skipped."""
    for task in tasks:
        if not wanted(task):
            continue
        try:
            act(task.id)
        except ConflictError:
            continue


def _counts_text(view: SweepView) -> str:
    """`4 running, 2 succeeded`: the sweep's tasks by status, for a message."""
    return ", ".join(f"{count} {status}" for status, count in sorted(view.counts.items()))


def result_rows(tasks: Sequence[Task]) -> list[ResultRow]:
    """Each task's parameters and metrics, as `compare()` takes them."""
    return [
        ResultRow(
            task.id,
            task.name,
            task.status,
            task.params or {},
            task.metrics or {},
            task.metrics_note,
            code=code_of((task.spec or {}).get("git")),
        )
        for task in tasks
    ]


def sweep_results(
    cluster: Cluster, who: Identity, sweep_id: int, sort: str | None = None, goal: Goal | None = None
) -> tuple[SweepView, Comparison]:
    """The sweep and its table of parameters vs metrics, best first."""
    view = get_sweep(cluster, who, sweep_id)
    return view, compare(result_rows(view.tasks), sort, goal)


def tag_results(
    cluster: Cluster, who: Identity, tag: str, sort: str | None = None, goal: Goal | None = None
) -> tuple[list[Task], Comparison]:
    """The caller's tasks carrying `tag` and their table; NotFoundError when there are none."""
    tasks = sweeps_of(cluster).tasks_with_tag(who, tag)
    if not tasks:
        raise NotFoundError(f"no task carries the tag {tag!r}")
    params_from_tags = result_rows(tasks)
    return tasks, compare(params_from_tags, sort, goal)
