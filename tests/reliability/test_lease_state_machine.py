"""A hypothesis state machine of claim / heartbeat / expire / complete over the real RedisQueue + TaskStore.

Workers claim tasks the "scheduler" assigned, heartbeat (or not: a paused worker), complete them (even
late, after their lease expired: the paused worker waking up), while a fake clock moves (every Redis
script takes `now_ms` as an argument) and the reaper requeues expired leases. After every step:

- no task is lost: each one is final, or queued in Redis, or assigned to a node, or leased under the very
  token SQL holds;
- no task completes twice: a completion is accepted only from the claim SQL last gave the task, and at
  most once (when the machine is torn down, every task is driven to completion: exactly one each).

`test_no_lost_or_double_completed_task` runs `EXAMPLES` examples of up to `STEPS` steps (1,000 x 6 by
default, ~30 s; set NIGHTSHIFT_STATEFUL_EXAMPLES to change it).

That the machine can find the bug is shown by `test_the_machine_finds_the_bug_without_fencing`: it runs
the same machine over `UnfencedTaskStore`, whose `finish` ignores the lease token, and hypothesis finds
(and shrinks to) a run like this one:

    w0 claims task 1 (token A); clock += TTL and the reaper requeues it; w1 claims it (token B);
    w0 completes with token A  -> accepted: AssertionError "task 1 completed by a stale claim"
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
import redis
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    multiple,
    rule,
    run_state_machine_as_test,
)
from sqlalchemy import update

from scheduler.store.db import create_db_engine, make_session_factory, migrate, transaction
from scheduler.store.identity import authenticate, create_token
from scheduler.store.queue import RedisQueue, RenewResult
from scheduler.store.tables import FINAL_STATUSES, Task, utcnow
from scheduler.store.tasks import NewTask, TaskStore

EXAMPLES = int(os.environ.get("NIGHTSHIFT_STATEFUL_EXAMPLES", "1000"))
STEPS = 6
TTL_MS = 1_000
WORKERS = ("w0", "w1")
MAX_TASKS = 3  # a few tasks per run: the interleavings of their claims are what matters


class UnfencedTaskStore(TaskStore):
    """The bug the fencing token prevents: `finish` checks the status but not the lease token."""

    def finish(self, task_id, token, status, *, exit_code, reason, message=None):  # type: ignore[override]
        with transaction(self.factory) as session:
            result = session.execute(
                update(Task)
                .where(Task.id == task_id, Task.status == "running")
                .values(status=status, finished_at=utcnow(), exit_code=exit_code, reason=reason)
            )
            return bool(result.rowcount)


class World:
    """What the machine runs against, made once per test: a migrated SQLite file, the test Redis, a caller."""

    def __init__(self, redis_url: str, database_path: Path, store_class: type[TaskStore]) -> None:
        self.engine = create_db_engine(f"sqlite:///{database_path}")
        migrate(self.engine)
        factory = make_session_factory(self.engine)
        self.tasks = store_class(factory)
        self.who = authenticate(factory, create_token(factory, user="alice", team="vision"))
        self.queue = RedisQueue(redis.Redis.from_url(redis_url, decode_responses=True))

    def close(self) -> None:
        self.queue.client.close()
        self.engine.dispose()


WORLD: World | None = None  # set by the test that runs the machine


def _new_task() -> NewTask:
    return NewTask("t", "true", {"command": "true"}, "normal", 1, None, 0)


class LeaseMachine(RuleBasedStateMachine):
    """Claims, heartbeats, expiries and completions; the invariants are the model's promises."""

    claims = Bundle("claims")

    def __init__(self) -> None:
        super().__init__()
        assert WORLD is not None
        self.world = WORLD
        self.queue = WORLD.queue
        self.tasks = WORLD.tasks
        self.queue.client.flushall()
        self.queue.start_epoch()
        self.now = 1_000_000
        self.ids: list[int] = []
        self.current_token: dict[int, str] = {}  # the token SQL last gave each task (mark_running)
        self.completed_by: dict[int, list[str]] = {}
        self.live: set[tuple[str, int, str]] = set()  # claims a worker still believes it holds
        self.broken = False  # a promise was already broken: teardown has nothing more to show
        self.draining = False

    # --- the scheduler side ---------------------------------------------------------------------

    def submit(self) -> None:
        task, _ = self.tasks.create(self.world.who, _new_task())
        self.queue.enqueue(task.id, float(task.id))
        self.ids.append(task.id)

    def assign_head(self, worker: str) -> None:
        for task_id, _ in self.queue.head(1):
            self.queue.assign(task_id, worker, [0], self.now)

    @rule(ms=st.sampled_from([TTL_MS // 2, TTL_MS]), beating=st.sampled_from([(), ("w0",), ("w1",), WORKERS]))
    def tick(self, ms: int, beating: tuple[str, ...]) -> None:
        """Time passes; the `beating` workers heartbeat meanwhile (the others are paused); the reaper runs."""
        self.now += ms // 2
        for held in sorted(self.live):
            if held[0] in beating:
                self.heartbeat(held)
        self.now += ms - ms // 2
        self.reap()

    def reap(self) -> None:
        # an assignment unclaimed for a TTL goes back (as if its node had died: the claim may still race it)
        self.queue.return_stale_assignments(self.now, TTL_MS, alive_nodes=())
        for task_id, token in self.queue.expired(self.now):
            if self.tasks.requeue(task_id, token, "lost_worker") is not None:
                self.queue.enqueue(task_id, float(task_id))

    # --- the worker side --------------------------------------------------------------------------

    @rule(target=claims, worker=st.sampled_from(WORKERS))
    def claim(self, worker: str):
        held = self._claim(worker)
        return multiple() if held is None else held

    def _claim(self, worker: str) -> tuple[str, int, str] | None:
        """A worker with an empty inbox first gets the queue's head (the scheduler's part), then claims.

        With nothing queued, a person submits a task first (up to MAX_TASKS a run).
        """
        if not self.queue.length() and len(self.ids) < MAX_TASKS and not self.draining:
            self.submit()
        if not self.queue.client.llen(self.queue.keys.inbox(worker)):
            self.assign_head(worker)
        claim = self.queue.claim(worker, self.now, TTL_MS)
        if claim is None:
            return None
        attempt = self.tasks.mark_running(claim.task_id, claim.token, worker, claim.gpu_indices)
        if attempt is None:
            self.queue.release(claim.task_id, claim.token)
            return None
        self.current_token[claim.task_id] = claim.token
        held = (worker, claim.task_id, claim.token)
        self.live.add(held)
        return held

    def heartbeat(self, held) -> None:
        """A heartbeat as the worker sends it: a lost lease makes the worker drop (kill) its job."""
        if held not in self.live:
            return
        _, task_id, token = held
        answer = self.queue.renew(task_id, token, self.now, TTL_MS)
        if answer in (RenewResult.STOLEN, RenewResult.MISSING):
            row = self.tasks.get_any(task_id)
            if answer == RenewResult.MISSING and row.status == "running" and row.lease_token == token:
                self.queue.restore_lease(task_id, token, held[0], [0], self.now + TTL_MS)
            else:
                self.live.discard(held)  # the real worker kills its job here

    @rule(held=consumes(claims))
    def complete(self, held) -> None:
        """The job ended: its worker reports, whether or not its lease is still valid (a paused worker)."""
        self.live.discard(held)
        _, task_id, token = held
        accepted = self.tasks.finish(task_id, token, "succeeded", exit_code=0, reason="exit")
        self.queue.release(task_id, token)
        if accepted:
            self.completed_by.setdefault(task_id, []).append(token)
            if token != self.current_token.get(task_id):
                self.broken = True
                raise AssertionError(f"task {task_id} completed by a stale claim")

    # --- promises ---------------------------------------------------------------------------------

    @invariant()
    def no_task_completes_twice(self) -> None:
        for task_id, tokens in self.completed_by.items():
            if len(tokens) > 1:
                self.broken = True
                raise AssertionError(f"task {task_id} completed {len(tokens)} times")

    @invariant()
    def no_task_is_lost(self) -> None:
        if not self.ids:
            return
        statuses = self.tasks.statuses(self.ids)
        queued = self.queue.queued_ids()
        assigned = self.queue.assignments()
        for task_id, status in statuses.items():
            if status == "queued":
                assert task_id in queued or task_id in assigned, f"queued task {task_id} is nowhere in Redis"
            elif status == "running":
                lease = self.queue.lease(task_id)
                token = self.tasks.get_any(task_id).lease_token
                assert lease is not None and lease.token == token, f"running task {task_id} lost its lease"
            else:
                assert status in FINAL_STATUSES, f"task {task_id} in unknown status {status}"

    def teardown(self) -> None:
        """Drive everything to completion with a healthy worker: every task ends succeeded exactly once."""
        if self.broken:
            return
        self.draining = True
        self.now += 10 * TTL_MS
        for _ in range(3):
            self.reap()
            while (held := self._claim("healthy")) is not None:
                self.complete(held)
            statuses = self.tasks.statuses(self.ids)
            if set(statuses.values()) <= {"succeeded"}:
                break
        assert set(statuses.values()) <= {"succeeded"}, statuses
        assert all(len(self.completed_by.get(t, [])) == 1 for t in self.ids), self.completed_by


def _run_machine(
    redis_url: str, store_class: type[TaskStore], examples: int, shrink: bool = True, steps: int = STEPS
) -> None:
    global WORLD
    with tempfile.TemporaryDirectory() as folder:
        WORLD = World(redis_url, Path(folder) / "machine.db", store_class)
        try:
            run_state_machine_as_test(
                LeaseMachine,
                settings=settings(
                    max_examples=examples,
                    stateful_step_count=steps,
                    derandomize=not shrink,  # the bug hunt explores the same runs every time: no flakes
                    deadline=None,
                    database=None,
                    suppress_health_check=list(HealthCheck),
                    print_blob=False,
                    report_multiple_bugs=False,
                    phases=list(Phase) if shrink else [Phase.generate],
                ),
            )
        finally:
            WORLD.close()
            WORLD = None


@pytest.mark.slow
def test_no_lost_or_double_completed_task(redis_url):
    _run_machine(redis_url, TaskStore, EXAMPLES)


def test_the_machine_finds_the_bug_without_fencing(redis_url):
    with pytest.raises(AssertionError, match=r"completed by a stale claim|completed 2 times"):
        _run_machine(redis_url, UnfencedTaskStore, 1_000, shrink=False, steps=10)
