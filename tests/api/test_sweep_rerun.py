"""Running a sweep's failed tasks again (`POST /sweeps/{id}/rerun`, as Slurm's `scontrol requeue` of an
array's failed tasks): each gets a new task with its parameters, which takes its place in the sweep's
counts, status and results, while the old task keeps its record."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from scheduler.batches import rerun_sweep
from scheduler.errors import ConflictError
from scheduler.service import Cluster
from scheduler.settings import Settings
from scheduler.store.identity import Identity
from scheduler.store.sweeps import Rerun, SweepStore
from scheduler.store.tasks import NewTask
from tests.api.conftest import bearer
from tests.conftest import opened_cluster

FOUR = {"lr": [0.1, 0.01, 0.001, 0.5]}


@pytest.fixture
def cluster(make_settings: Callable[..., Settings], redis_url: str, database_url: str) -> Iterator[Cluster]:
    """A cluster on SQLite and on PostgreSQL: the rerun locks the sweep row and filters replaced tasks."""
    with opened_cluster(make_settings(database_url=database_url), redis_url) as opened:
        yield opened


def _submit(client, headers: dict[str, str], **extra: Any) -> dict[str, Any]:
    spec = {"command": "python train.py --lr {lr}", "gpus": 0, "sweep": FOUR, "name": "lr", **extra}
    response = client.post("/api/v1/sweeps", json=spec, headers=headers)
    assert response.status_code == 201, response.text
    return dict(response.json())


def _end(cluster: Cluster, task_id: int, exit_code: int, metrics: dict[str, Any] | None = None) -> str:
    """What a worker does with one attempt: claim it, report its metrics, settle it (no retries)."""
    token = f"t-{task_id}"
    cluster.queue.remove(task_id)
    assert cluster.tasks.mark_running(task_id, token, "node-a", []) is not None
    if metrics is not None:
        assert SweepStore(cluster.factory).record_metrics(task_id, token, metrics, None)
    return cluster.settle_attempt(task_id, token, "exit" if exit_code == 0 else "nonzero_exit", exit_code)


def _two_failed(client, cluster: Cluster, headers: dict[str, str], **extra: Any) -> tuple[int, list[int]]:
    """A sweep of four whose first and last tasks failed and the middle two succeeded."""
    sweep = _submit(client, headers, **extra)
    ids = [task["id"] for task in sweep["tasks"]]
    exits = (3, 0, 0, 3)
    assert [
        _end(cluster, i, code, {"acc": 1 - n / 10})
        for n, (i, code) in enumerate(zip(ids, exits, strict=True))
    ] == [
        "failed",
        "succeeded",
        "succeeded",
        "failed",
    ]
    return int(sweep["id"]), ids


def test_the_failed_tasks_run_again_in_their_place_and_the_old_ones_keep_their_record(client, cluster, alice):
    sweep_id, ids = _two_failed(client, cluster, alice)

    response = client.post(f"/api/v1/sweeps/{sweep_id}/rerun", headers=alice)

    assert response.status_code == 201, response.text
    sweep = response.json()
    new = {rerun["replaced"]: rerun["task_id"] for rerun in sweep["reruns"]}
    assert sorted(new) == [ids[0], ids[3]]
    assert (sweep["status"], sweep["counts"], sweep["tasks_count"]) == (
        "queued",
        {"queued": 2, "succeeded": 2},
        4,
    )
    current = {task["id"]: task for task in sweep["tasks"]}
    assert sorted(current) == sorted([ids[1], ids[2], new[ids[0]], new[ids[3]]])
    assert current[new[ids[0]]]["params"] == {"lr": 0.1}
    assert current[new[ids[3]]]["command"] == "python train.py --lr 0.5"
    assert current[new[ids[0]]]["user"] == "alice"
    assert set(cluster.queue.queued_ids()) == {new[ids[0]], new[ids[3]]}
    old = client.get(f"/api/v1/tasks/{ids[0]}", headers=alice).json()
    assert (old["status"], old["exit_code"], old["replaced_by"]) == ("failed", 3, new[ids[0]])
    listed = client.get(f"/api/v1/tasks?sweep_id={sweep_id}", headers=alice).json()
    assert listed["total"] == 6  # the sweep's whole history
    rows = client.get(f"/api/v1/sweeps/{sweep_id}/results", headers=alice).json()["rows"]
    assert {row["task_id"] for row in rows} == set(current)


def test_the_rerun_counts_as_the_sweeps_result_once_it_ends(client, cluster, alice):
    sweep_id, ids = _two_failed(client, cluster, alice)
    new = {
        r["replaced"]: r["task_id"]
        for r in client.post(f"/api/v1/sweeps/{sweep_id}/rerun", headers=alice).json()["reruns"]
    }

    assert _end(cluster, new[ids[0]], 0, {"acc": 0.99}) == "succeeded"
    assert _end(cluster, new[ids[3]], 3) == "failed"

    sweep = client.get(f"/api/v1/sweeps/{sweep_id}", headers=alice).json()
    assert (sweep["status"], sweep["counts"]) == ("done", {"failed": 1, "succeeded": 3})
    table = client.get(f"/api/v1/sweeps/{sweep_id}/results", headers=alice).json()
    assert table["best_task_id"] == new[ids[0]]
    listed = client.get("/api/v1/sweeps?status=done", headers=alice).json()
    assert [(s["id"], s["counts"]) for s in listed["sweeps"]] == [(sweep_id, {"failed": 1, "succeeded": 3})]


def test_a_second_rerun_finds_nothing_left_and_creates_nothing(client, cluster, alice):
    sweep_id, _ = _two_failed(client, cluster, alice)
    assert client.post(f"/api/v1/sweeps/{sweep_id}/rerun", headers=alice).status_code == 201

    again = client.post(f"/api/v1/sweeps/{sweep_id}/rerun", headers=alice)

    assert again.status_code == 409
    assert (
        again.json()["detail"] == f"sweep {sweep_id} has no failed task to run again (2 queued, 2 succeeded)"
    )
    assert cluster.tasks.count_by_status() == {"failed": 2, "succeeded": 2, "queued": 2}


def test_cancelled_or_succeeded_tasks_run_again_when_asked_and_other_statuses_are_refused(
    client, cluster, alice
):
    sweep = _submit(client, alice)
    ids = [task["id"] for task in sweep["tasks"]]
    client.post(f"/api/v1/tasks/{ids[0]}/cancel", headers=alice)
    url = f"/api/v1/sweeps/{sweep['id']}/rerun"

    refused = client.post(url, json={"status": ["queued"]}, headers=alice)
    assert refused.status_code == 422
    assert "Input should be 'failed', 'cancelled' or 'succeeded'" in refused.json()["detail"]
    assert client.post(url, json={"status": []}, headers=alice).status_code == 422
    assert client.post(url, json={"status": ["cancelled"], "extra": 1}, headers=alice).status_code == 422
    assert client.post(url, headers=alice).status_code == 409  # none failed

    response = client.post(url, json={"status": ["cancelled", "failed"]}, headers=alice)
    assert response.status_code == 201, response.text
    assert [r["replaced"] for r in response.json()["reruns"]] == [ids[0]]
    assert response.json()["counts"] == {"queued": 4}


def test_with_max_running_the_reruns_wait_for_slots_as_a_new_sweeps_tasks_do(client, cluster, alice):
    sweep_id, _ = _two_failed(client, cluster, alice, max_running=1)

    sweep = client.post(f"/api/v1/sweeps/{sweep_id}/rerun", headers=alice).json()

    first, second = sorted(r["task_id"] for r in sweep["reruns"])
    assert (sweep["waiting"], set(cluster.queue.queued_ids())) == (1, {first})
    assert _end(cluster, first, 0) == "succeeded"
    assert set(cluster.queue.queued_ids()) == {second}


def test_a_task_that_can_no_longer_start_refuses_the_whole_rerun(client, cluster, alice):
    parent = client.post("/api/v1/tasks", json={"command": "echo prep", "gpus": 0}, headers=alice).json()[
        "id"
    ]
    sweep = _submit(client, alice, depends_on=[parent])
    client.post(f"/api/v1/sweeps/{sweep['id']}/cancel", headers=alice)
    client.post(f"/api/v1/tasks/{parent}/cancel", headers=alice)

    response = client.post(
        f"/api/v1/sweeps/{sweep['id']}/rerun", json={"status": ["cancelled"]}, headers=alice
    )

    assert response.status_code == 422
    first = sweep["tasks"][0]["id"]
    assert response.json()["detail"].startswith(f"task {first} of sweep {sweep['id']} cannot run again: ")
    assert str(parent) in response.json()["detail"]
    assert cluster.tasks.count_by_status() == {"cancelled": 5}
    assert all(task.replaced_by is None for task in cluster.tasks.with_status("cancelled"))


def test_another_teams_sweep_cannot_be_rerun(client, cluster, alice, make_identity):
    sweep_id, _ = _two_failed(client, cluster, alice)
    _, carol = make_identity("carol", "audio")

    response = client.post(f"/api/v1/sweeps/{sweep_id}/rerun", headers=bearer(carol))

    assert (response.status_code, response.json()["detail"]) == (404, f"sweep {sweep_id} not found")
    assert cluster.tasks.count_by_status() == {"failed": 2, "succeeded": 2}


def test_an_admins_rerun_of_another_teams_sweep_keeps_its_tasks_that_teams(
    client, cluster, alice, make_identity
):
    sweep_id, ids = _two_failed(client, cluster, alice)
    _, root = make_identity("root", "ops", admin=True)

    response = client.post(f"/api/v1/sweeps/{sweep_id}/rerun", headers=bearer(root))

    assert response.status_code == 201, response.text
    new = [task for task in response.json()["tasks"] if task["id"] not in ids]
    assert [(task["team"], task["user"]) for task in new] == [("vision", "alice"), ("vision", "alice")]


def test_a_task_replaced_meanwhile_makes_the_store_write_nothing(client, cluster, alice):
    sweep_id, ids = _two_failed(client, cluster, alice)
    store = SweepStore(cluster.factory)
    row = NewTask(
        "lr lr:0.1", "python train.py --lr 0.1", {"command": "python train.py --lr 0.1"}, "normal", 0, None, 0
    )
    store.add_reruns(sweep_id, [Rerun(ids[0], row)], ["failed"])

    with pytest.raises(ConflictError, match="changed while its tasks were being run again"):
        store.add_reruns(sweep_id, [Rerun(ids[3], row), Rerun(ids[0], row)], ["failed"])

    assert cluster.tasks.count_by_status() == {"failed": 2, "succeeded": 2, "queued": 1}
    assert cluster.tasks.get_any(ids[3]).replaced_by is None


def test_two_reruns_at_once_run_each_failed_task_again_once(client, cluster, alice, make_identity):
    sweep_id, _ = _two_failed(client, cluster, alice)
    who: Identity = make_identity("alice", "vision")[0]
    outcomes: list[str] = []

    def rerun() -> None:
        try:
            rerun_sweep(cluster, who, sweep_id)
            outcomes.append("ran")
        except ConflictError:
            outcomes.append("conflict")

    threads = [threading.Thread(target=rerun) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == ["conflict", "ran"]
    assert cluster.tasks.count_by_status() == {"failed": 2, "succeeded": 2, "queued": 2}


def test_named_tasks_of_the_sweep_run_again_and_nothing_else(client, cluster, alice):
    sweep_id, ids = _two_failed(client, cluster, alice)
    url = f"/api/v1/sweeps/{sweep_id}/rerun"

    response = client.post(url, json={"task_ids": [ids[3]]}, headers=alice)

    assert response.status_code == 201, response.text
    assert [r["replaced"] for r in response.json()["reruns"]] == [ids[3]]
    assert cluster.tasks.get_any(ids[0]).replaced_by is None  # the other failed one stays
    succeeded = client.post(url, json={"task_ids": [ids[1]], "status": ["succeeded"]}, headers=alice)
    assert succeeded.status_code == 201 and [r["replaced"] for r in succeeded.json()["reruns"]] == [ids[1]]


@pytest.mark.parametrize(
    ("which", "status", "detail"),
    [
        (
            lambda ids, other: [ids[1]],
            409,
            "task {0} of sweep {s} succeeded: only tasks that failed run again",
        ),
        (lambda ids, other: [other], 422, "task {0} is not a task of sweep {s}"),
        (lambda ids, other: [ids[0], 99999], 422, "task 99999 is not a task of sweep {s}"),
    ],
)
def test_a_named_task_that_cannot_run_again_refuses_the_whole_rerun(
    client, cluster, alice, which, status, detail
):
    sweep_id, ids = _two_failed(client, cluster, alice)
    other = client.post("/api/v1/tasks", json={"command": "echo", "gpus": 0}, headers=alice).json()["id"]
    named = which(ids, other)

    response = client.post(f"/api/v1/sweeps/{sweep_id}/rerun", json={"task_ids": named}, headers=alice)

    assert response.status_code == status
    assert response.json()["detail"].startswith(detail.format(named[0], s=sweep_id))
    assert cluster.tasks.get_any(ids[0]).replaced_by is None


def test_a_task_named_again_after_its_rerun_says_which_task_took_its_place(client, cluster, alice):
    sweep_id, ids = _two_failed(client, cluster, alice)
    url = f"/api/v1/sweeps/{sweep_id}/rerun"
    new = client.post(url, json={"task_ids": [ids[0]]}, headers=alice).json()["reruns"][0]["task_id"]

    again = client.post(url, json={"task_ids": [ids[0]]}, headers=alice)

    assert again.status_code == 409
    assert again.json()["detail"] == f"task {ids[0]} of sweep {sweep_id} was run again already, as {new}"
