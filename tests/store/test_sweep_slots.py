"""A sweep's slots (`max_running`) under concurrency: two settles of the same sweep at once never admit
more than the limit (the sweep row is locked while its slots are counted), on SQLite and PostgreSQL; and
`GET /sweeps`'s store side (the listing and its one grouped count) on both."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy.orm import Session

from scheduler.batches import submit_sweep
from scheduler.gpus import SimulatedGpus
from scheduler.service import Cluster
from scheduler.settings import Settings
from scheduler.spec import parse_spec
from scheduler.store.sweeps import SweepFilter, SweepStore
from scheduler.worker import Worker
from tests.conftest import opened_cluster


@pytest.fixture
def cluster(make_settings: Callable[..., Settings], redis_url: str, database_url: str) -> Iterator[Cluster]:
    """A cluster on SQLite and on PostgreSQL."""
    with opened_cluster(make_settings(database_url=database_url), redis_url) as opened:
        Worker(
            opened, "node-a", SimulatedGpus("4x24", node="node-a"), base_env=dict(os.environ)
        ).publish_node()
        yield opened


def _slow_first_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first caller to count a sweep's slots pauses after counting, long enough for a second caller to
    count, admit and commit: without a lock on the sweep row both would fill the same free slots."""
    counted = SweepStore._admitted_count
    first = threading.Lock()

    def slow(session: Session, sweep_id: int) -> int:
        number = counted(session, sweep_id)
        if first.acquire(blocking=False):
            time.sleep(0.5)
        return number

    monkeypatch.setattr(SweepStore, "_admitted_count", staticmethod(slow))


def test_two_settles_of_one_sweep_at_once_never_admit_more_than_its_limit(
    cluster, make_identity, monkeypatch
):
    who, _ = make_identity("alice", "vision")
    spec = parse_spec({"command": "python train.py {i}", "gpus": 1, "sweep": {"i": list(range(6))}})
    view, _ = submit_sweep(cluster, who, spec.model_copy(update={"max_running": 2}))
    ids = [task.id for task in view.tasks]
    for task_id in ids[:2]:
        cluster.queue.remove(task_id)
        assert cluster.tasks.mark_running(task_id, f"t-{task_id}", "node-a", [0]) is not None
    _slow_first_count(monkeypatch)
    results: list[Any] = []

    def settle(task_id: int) -> None:
        results.append(cluster.settle_attempt(task_id, f"t-{task_id}", "exit", exit_code=0))

    threads = [threading.Thread(target=settle, args=(task_id,)) for task_id in ids[:2]]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)

    assert results == ["succeeded", "succeeded"]
    rows = cluster.tasks.by_ids(ids)
    admitted = [i for i in ids if rows[i].status == "queued" and not rows[i].waits_for_slot]
    assert admitted == ids[2:4]
    assert set(cluster.queue.queued_ids()) == set(ids[2:4])


def test_sweeps_are_listed_and_counted_in_one_grouped_query(cluster, make_identity):
    # Given two sweeps of alice's team (one with a limit of 2 running) and one of another team
    alice, _ = make_identity("alice", "vision")
    bob, _ = make_identity("bob", "vision")
    carol, _ = make_identity("carol", "nlp")
    spec = parse_spec({"command": "python train.py {i}", "gpus": 1, "sweep": {"i": list(range(5))}})
    limited, _ = submit_sweep(cluster, alice, spec.model_copy(update={"max_running": 2}))
    plain, _ = submit_sweep(cluster, bob, spec)
    submit_sweep(cluster, carol, spec)
    first = limited.tasks[0].id
    cluster.queue.remove(first)
    assert cluster.tasks.mark_running(first, "t-1", "node-a", [0]) is not None
    store = cluster.sweeps

    # When alice's team's sweeps are listed and counted
    listed = store.page_for(alice).sweeps
    tallies = store.tallies([sweep.id for sweep in listed])

    # Then both are there, newest first, each counted by status with its waiting tasks and task range
    assert [sweep.id for sweep in listed] == [plain.sweep.id, limited.sweep.id]
    assert [sweep.id for sweep in store.page_for(alice, SweepFilter(user="bob")).sweeps] == [plain.sweep.id]
    ids = [task.id for task in limited.tasks]
    assert tallies[limited.sweep.id].counts == {"running": 1, "queued": 4}
    assert (tallies[limited.sweep.id].waiting, tallies[limited.sweep.id].held) == (3, 0)
    assert (tallies[limited.sweep.id].first_task, tallies[limited.sweep.id].last_task) == (min(ids), max(ids))
    assert tallies[plain.sweep.id].counts == {"queued": 5} and tallies[plain.sweep.id].waiting == 0
