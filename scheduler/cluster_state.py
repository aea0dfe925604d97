"""One consistent picture of the live cluster for the policy: queue head, GPU holders, nodes, usage."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace

from scheduler.clock import now_ms, now_s, to_epoch_s
from scheduler.nodes import NodeState, nodes_from_raw
from scheduler.policy.config import PolicyConfig, TeamUsage
from scheduler.policy.estimate import DurationHistory, estimate_duration_s, with_typical_run
from scheduler.policy.rolling import (
    WEEK_S,
    FinishedSpan,
    team_spans,
    used_up_teams,
    with_budget_frees,
    with_running_to,
)
from scheduler.policy.types import GpuSlot, QueuedTask, RunningTask
from scheduler.policy.window import absent_member_heads, person_heads_apply
from scheduler.policy_input import gpu_slots, holder_of, queued_task_of, running_task_of
from scheduler.service import Cluster
from scheduler.store.tasks import RowVersion, RunningVersion
from scheduler.usage import gpu_spans, learned_durations, team_usage

USAGE_CACHE_S = 10.0


@dataclass
class ClusterState:
    """Everything one scheduling pass (or one forecast) decides on."""

    now_s: float
    queued: list[QueuedTask]
    running: list[RunningTask]
    gpus: list[GpuSlot]
    nodes: list[NodeState]
    usage: dict[str, TeamUsage]
    succeeded: set[int]
    failed: set[int]
    typical_run_s: float | None = None  # the cluster's recent median run time (`DurationHistory.typical_s`)
    # GPU work of the last week that has ended, (team, gpus, start_s, end_s, user): when used-up budgets free
    finished: list[FinishedSpan] = field(default_factory=list)
    next_lease_expiry_ms: int | None = None  # when the first lease runs out (read by the scheduler's pass)

    def nodes_in_service(self, stamp_ms: int) -> list[str]:
        """Names of the nodes that may be given work: alive (heartbeat) and not drained."""
        return [node.name for node in self.nodes if node.alive(stamp_ms) and not node.drained_at(stamp_ms)]

    def nodes_for_cpu_tasks(self, stamp_ms: int) -> list[str]:
        """The nodes in service a CPU-only task goes to: those with no maintenance ahead where there are any
        (such a task has no GPU that a maintenance would keep it off), else all in service."""
        in_service = self.nodes_in_service(stamp_ms)
        staying = {node.name for node in self.nodes if node.maintenance(stamp_ms) is None}
        return [name for name in in_service if name in staying] or in_service

    def policy_config(self, base: PolicyConfig) -> PolicyConfig:
        """`base` as the policy applies it to this state: with the observed typical run time."""
        return with_typical_run(base, self.typical_run_s)


class UsageCache:
    """Team usage and learned run times, recomputed from SQL at most every `USAGE_CACHE_S` seconds.

    With `background=True` (the scheduler) a stale value is returned at once while a thread recomputes it,
    so the O(history) queries never sit on a scheduling pass; only the very first call waits.
    """

    def __init__(self, cluster: Cluster, background: bool = False) -> None:
        self.cluster = cluster
        self.background = background
        self._lock = threading.Lock()
        self._refreshing = False
        self._at = -1e9
        self._usage: dict[str, TeamUsage] = {}
        self._usage_at_s = 0.0  # the clock time `_usage` was computed for
        self._history = DurationHistory()
        self._finished: list[FinishedSpan] = []

    def _compute(self, now: float) -> tuple[dict[str, TeamUsage], DurationHistory, list[FinishedSpan]]:
        config = self.cluster.policy_config
        spans = gpu_spans(self.cluster.factory, now, 4 * config.fairshare_half_life_s)
        usage = team_usage(spans, now, config.fairshare_half_life_s)
        finished = [
            (s.team, float(s.gpus), s.start_s, s.end_s, s.user)
            for s in spans
            if s.end_s is not None and s.end_s >= now - WEEK_S
        ]
        return usage, learned_durations(self.cluster.factory, now, config.history_runs), finished

    def _refresh_in_background(self, now: float) -> None:
        try:
            usage, history, finished = self._compute(now)
            with self._lock:
                self._usage, self._history, self._finished = usage, history, finished
                self._usage_at_s, self._at = now, time.monotonic()
        finally:
            with self._lock:
                self._refreshing = False

    def get(self, now: float) -> tuple[dict[str, TeamUsage], DurationHistory]:
        """The cached usage and history, refreshed when stale."""
        usage, history, _ = self.get_with_time(now)
        return usage, history

    def get_with_time(self, now: float) -> tuple[dict[str, TeamUsage], DurationHistory, float]:
        """`get`, with the clock time the usage was computed for (`rolling.with_running_to` brings it to
        now)."""
        with self._lock:
            stale = time.monotonic() - self._at >= USAGE_CACHE_S
            if stale and self.background and self._at > 0:
                if not self._refreshing:
                    self._refreshing = True
                    threading.Thread(
                        target=self._refresh_in_background, args=(now,), name="usage-refresh", daemon=True
                    ).start()
                return self._usage, self._history, self._usage_at_s
            if stale:
                self._usage, self._history, self._finished = self._compute(now)
                self._usage_at_s, self._at = now, time.monotonic()
            return self._usage, self._history, self._usage_at_s

    def finished_spans(self) -> list[FinishedSpan]:
        """The GPU work of the last week that had ended at the last refresh (with the usage `get` gives)."""
        with self._lock:
            return self._finished

    def invalidate(self) -> None:
        """Recompute on the next call (a task just finished)."""
        with self._lock:
            self._at = -1e9


class RowCache:
    """The scheduler's policy views of task rows, reused across passes while the row has not changed.

    A queued row is keyed by (id, claim count, spec changes) and a running one by (id, lease token): what
    the policy reads of a row does not change while those stay the same, so a pass checks a few columns
    instead of loading every row of the window and every running task.
    """

    def __init__(self) -> None:
        self.queued: dict[tuple[int, RowVersion], QueuedTask] = {}
        self.running: dict[tuple[int, RunningVersion], RunningTask | None] = {}
        self._estimated: dict[int, tuple[QueuedTask, QueuedTask]] = {}  # id -> (view, with its estimate)
        self._estimated_from: DurationHistory | None = None  # the history those estimates came from

    def queued_views(
        self, cluster: Cluster, task_ids: list[int], versions: dict[int, RowVersion] | None = None
    ) -> dict[int, QueuedTask]:
        """The policy view of each of these tasks that is still queued (others are absent).

        `versions` is `tasks.queued_versions(task_ids)` when the caller already read it.
        """
        if versions is None:
            versions = cluster.tasks.queued_versions(task_ids)
        missing = [task_id for task_id, version in versions.items() if (task_id, version) not in self.queued]
        # a row changed (`nightshift change`) between reading its version and loading it is still queued:
        # its loaded view stands, or the scheduler would take the task for a stale entry and drop it
        loaded: dict[int, QueuedTask] = {}
        if missing:
            for row in cluster.tasks.by_ids(missing).values():
                if row.status == "queued":
                    loaded[row.id] = queued_task_of(row)
                    self.queued[(row.id, (row.attempts_count, row.revision))] = loaded[row.id]
        found = {
            task_id: self.queued.get((task_id, version)) or loaded.get(task_id)
            for task_id, version in versions.items()
        }
        return {task_id: view for task_id, view in found.items() if view is not None}

    def with_learned_estimates(
        self, views: list[QueuedTask], history: DurationHistory, config: PolicyConfig
    ) -> list[QueuedTask]:
        """`with_learned_estimate` of each view, reused while the view (same cached object) and the history
        stay the same, so a pass does not re-estimate the whole window."""
        if history is not self._estimated_from:
            self._estimated, self._estimated_from = {}, history
        out = []
        for view in views:
            known = self._estimated.get(view.task_id)
            if known is None or known[0] is not view:
                known = (view, with_learned_estimate(view, history, config))
                self._estimated[view.task_id] = known
            out.append(known[1])
        return out

    def running_views(
        self, cluster: Cluster, tokens: dict[int, RunningVersion] | None = None
    ) -> list[RunningTask]:
        """The policy view of every running task (`tokens`: `tasks.running_tokens()`, when already read)."""
        if tokens is None:
            tokens = cluster.tasks.running_tokens()
        missing = [task_id for task_id, token in tokens.items() if (task_id, token) not in self.running]
        loaded: dict[int, RunningTask | None] = {}  # as `queued_views`: a row that changed meanwhile stands
        if missing:
            for row in cluster.tasks.by_ids(missing).values():
                if row.status != "running":
                    continue
                view = None
                if row.node is not None and row.started_at is not None:
                    view = running_task_of(row, row.node, row.gpu_indices or [], to_epoch_s(row.started_at))
                self.running[(row.id, (row.lease_token, row.revision))] = loaded[row.id] = view
        views = [self.running.get(item) or loaded.get(item[0]) for item in tokens.items()]
        return [view for view in views if view is not None]

    def prune(self, keep_queued: set[int], keep_running: set[int]) -> None:
        """Forget rows no longer in the window or running, so the cache stays the size of one pass."""
        if len(self.queued) > 4 * max(len(keep_queued), 256):
            self.queued = {key: view for key, view in self.queued.items() if key[0] in keep_queued}
        if len(self._estimated) > 4 * max(len(keep_queued), 256):
            self._estimated = {key: item for key, item in self._estimated.items() if key in keep_queued}
        if len(self.running) > 4 * max(len(keep_running), 256):
            self.running = {key: view for key, view in self.running.items() if key[0] in keep_running}


def with_learned_estimate(task: QueuedTask, history: DurationHistory, config: PolicyConfig) -> QueuedTask:
    """The task with `estimated_s` filled from past runs of the same user, name and size, when it has none."""
    if task.estimated_s is not None:
        return task
    estimate = estimate_duration_s(task, history, config)
    if estimate.source.startswith("median"):
        return replace(task, estimated_s=estimate.seconds)
    return task


def gather_state(
    cluster: Cluster, usage_cache: UsageCache, window: int, rows: RowCache | None = None
) -> ClusterState:
    """Read the window (the overdue tasks, then the head of the queue: `window` tasks in all; then each
    member's first queued tasks, `policy.window`), the tasks holding GPUs, the nodes and the teams' usage.

    With `rows` (the scheduler's cache) unchanged rows are not loaded again.
    """
    if rows is not None:
        return _gather_cached(cluster, usage_cache, window, rows)
    now = now_s()
    config = cluster.policy_config
    snap = cluster.queue.pass_snapshot(window, now, _per_member(config))
    views = _still_queued(cluster, snap.head)
    views.update(_still_queued(cluster, absent_member_heads(views.values(), snap.member_heads)))
    usage, history, usage_at_s = usage_cache.get_with_time(now)
    queued = [with_learned_estimate(view, history, config) for view in views.values()]
    holders = _holders(cluster, now, snap.assignments)
    usage = _used_by_now(usage, holders, usage_at_s, now, config)
    nodes = nodes_from_raw(snap.nodes)  # read in the same snapshot, not again
    return _state(cluster, now, queued, holders, usage, history, usage_cache.finished_spans(), nodes)


def _state(
    cluster: Cluster,
    now: float,
    queued: list[QueuedTask],
    holders: list[RunningTask],
    usage: dict[str, TeamUsage],
    history: DurationHistory,
    finished: list[FinishedSpan],
    nodes: list[NodeState] | None = None,
) -> ClusterState:
    if nodes is None:
        nodes = cluster.nodes.all()
    parents = cluster.tasks.statuses(
        {parent for task in queued for parent in (*task.depends_on, *task.depends_on_any)}
    )
    return ClusterState(
        now_s=now,
        queued=queued,
        running=holders,
        gpus=gpu_slots(nodes, holders, now_ms()),
        nodes=nodes,
        usage=_with_budget_frees(usage, finished, holders, now, cluster.policy_config),
        succeeded={task_id for task_id, status in parents.items() if status == "succeeded"},
        failed={task_id for task_id, status in parents.items() if status in ("failed", "cancelled")},
        typical_run_s=history.typical_s(),
        finished=finished,
    )


def _used_by_now(
    usage: dict[str, TeamUsage],
    holders: list[RunningTask],
    usage_at_s: float,
    now: float,
    config: PolicyConfig,
) -> dict[str, TeamUsage]:
    """Where budgets are set, the cached usage with the running work since it was read (up to 10 s of it:
    without it a team could start more for as long just after its budget ran out)."""
    if not config.has_budgets:
        return usage
    return with_running_to(usage, holders, usage_at_s, now)


def _with_budget_frees(
    usage: dict[str, TeamUsage],
    finished: list[FinishedSpan],
    holders: list[RunningTask],
    now: float,
    config: PolicyConfig,
) -> dict[str, TeamUsage]:
    """`usage` with when each used-up budget frees again (its team's work to the expected ends)."""
    used_up = used_up_teams(usage, config)
    if not used_up:
        return usage
    return with_budget_frees(usage, team_spans(used_up, finished, holders, now, config), config, now)


def _gather_cached(cluster: Cluster, usage_cache: UsageCache, window: int, rows: RowCache) -> ClusterState:
    queue = cluster.queue
    now = now_s()
    # Redis in two round trips (head, assignments, leases, nodes), SQL on one connection (versions, running)
    snap = queue.pass_snapshot(window, now, _per_member(cluster.policy_config))
    head, assigned = snap.head, snap.assignments
    # a task claimed (leased) but not yet marked running in SQL still holds its GPUs: without looking at
    # the leases, a pass in that moment would see them free and hand them out twice
    claimed = sorted(snap.leased - assigned.keys())
    versions, tokens = cluster.tasks.pass_versions(head + list(assigned) + claimed)
    views = rows.queued_views(cluster, head + list(assigned) + claimed, versions)
    # each absent member's first tasks (`policy.window`): loaded only when kept, so mostly never
    extra = absent_member_heads((views[i] for i in head if i in views), snap.member_heads)
    if extra:
        views.update(rows.queued_views(cluster, extra))
        head = head + extra
    for task_id in head:
        if task_id not in views:
            queue.remove(task_id)
    usage, history, usage_at_s = usage_cache.get_with_time(now)
    config = cluster.policy_config
    queued = rows.with_learned_estimates(
        [views[task_id] for task_id in head if task_id in views], history, config
    )
    holders = rows.running_views(cluster, tokens)
    for task_id, (node, gpu_indices) in assigned.items():
        view = views.get(task_id)
        if view is not None:
            holders.append(holder_of(view, node, gpu_indices, now))
    in_flight = [task_id for task_id in claimed if task_id not in tokens and task_id in views]
    for task_id, (node, gpu_indices) in queue.leased_gpus(in_flight).items():
        holders.append(holder_of(views[task_id], node, gpu_indices, now))
    rows.prune(set(views), {holder.task_id for holder in holders})
    finished = usage_cache.finished_spans()
    usage = _used_by_now(usage, holders, usage_at_s, now, config)
    state = _state(cluster, now, queued, holders, usage, history, finished, nodes_from_raw(snap.nodes))
    state.next_lease_expiry_ms = snap.next_lease_expiry_ms
    return state


def _still_queued(cluster: Cluster, task_ids: list[int]) -> dict[int, QueuedTask]:
    """The policy view of each of these tasks that SQL still has queued, in order; the others are taken out
    of the Redis queue (stale entries)."""
    rows = cluster.tasks.by_ids(task_ids) if task_ids else {}
    views = {}
    for task_id in task_ids:
        row = rows.get(task_id)
        if row is None or row.status != "queued":
            cluster.queue.remove(task_id)
        else:
            views[task_id] = queued_task_of(row)
    return views


def _per_member(config: PolicyConfig) -> int:
    """How many of each member's first queued tasks join the window (`policy.window`): none where they
    cannot be ranked ahead (fifo, backfill)."""
    return config.window_per_person if person_heads_apply(config) else 0


def _holders(
    cluster: Cluster, now: float, assigned: dict[int, tuple[str, tuple[int, ...]]]
) -> list[RunningTask]:
    """Running tasks (SQL) and tasks assigned to a node but not yet claimed (`assigned`, from Redis): both
    hold GPUs."""
    holders: list[RunningTask] = []
    for task in cluster.tasks.with_status("running"):
        if task.node is not None and task.started_at is not None:
            holders.append(
                running_task_of(task, task.node, task.gpu_indices or [], to_epoch_s(task.started_at))
            )
    rows = cluster.tasks.by_ids(assigned)
    for task_id, (node, gpu_indices) in assigned.items():
        if task_id in rows and rows[task_id].status == "queued":
            holders.append(running_task_of(rows[task_id], node, gpu_indices, now))
    return holders
