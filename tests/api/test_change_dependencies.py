"""Changing what a queued task waits for (`PATCH /tasks/{id}` with `depends_on`, `nightshift change
--depends-on`), as Slurm's `scontrol update Dependency=`: the task waits for the new parent on a real
cluster; a parent that does not exist, failed, or would close a loop is refused and nothing changes."""

from __future__ import annotations

import contextlib
import threading

import scheduler.service as service
from tests.api.conftest import bearer, submitted_id, task_of
from tests.conftest import wait_until

LATER = "2030-01-07T12:00:00Z"


def test_a_queued_task_changed_to_wait_for_a_running_one_starts_only_after_it_succeeds(
    client, alice, running_cluster, tmp_path
):
    go = tmp_path / "go"
    parent = submitted_id(
        client, alice, command=f"until [ -e {go} ]; do sleep 0.05; done", workdir=str(tmp_path)
    )
    child = submitted_id(client, alice, workdir=str(tmp_path), not_before=LATER)
    wait_until(lambda: task_of(client, alice, parent)["status"] == "running")

    changed = client.patch(
        f"/api/v1/tasks/{child}", json={"depends_on": [parent], "not_before": None}, headers=alice
    )
    waiting = client.get(f"/api/v1/tasks/{child}/explain", headers=alice).json()
    go.touch()
    done = wait_until(
        lambda: task_of(client, alice, child)["status"] == "succeeded" and task_of(client, alice, child)
    )

    assert changed.status_code == 200, changed.text
    assert changed.json()["spec"]["depends_on"] == [parent]
    assert waiting["status"] == "queued" and waiting["reason"] == f"waiting for task {parent} to succeed"
    assert done["started_at"] >= task_of(client, alice, parent)["finished_at"]


def test_clearing_what_a_task_waits_for_lets_it_start(client, alice, running_cluster, tmp_path):
    parent = submitted_id(client, alice, workdir=str(tmp_path), not_before=LATER)
    child = submitted_id(client, alice, workdir=str(tmp_path), depends_on=[parent])

    changed = client.patch(f"/api/v1/tasks/{child}", json={"depends_on": None}, headers=alice)
    done = wait_until(lambda: task_of(client, alice, child)["status"] == "succeeded")

    assert changed.status_code == 200 and done
    assert changed.json()["spec"].get("depends_on") in (None, [])
    assert task_of(client, alice, parent)["status"] == "queued"


def test_a_change_that_would_make_tasks_wait_for_each_other_is_refused(client, alice, tmp_path):
    first = submitted_id(client, alice, workdir=str(tmp_path), not_before=LATER)
    second = submitted_id(client, alice, workdir=str(tmp_path), depends_on=[first])
    third = submitted_id(client, alice, workdir=str(tmp_path), depends_on_any=[second])
    before = task_of(client, alice, first)

    direct = client.patch(f"/api/v1/tasks/{first}", json={"depends_on": [second]}, headers=alice)
    through = client.patch(f"/api/v1/tasks/{first}", json={"depends_on_any": [third]}, headers=alice)
    itself = client.patch(f"/api/v1/tasks/{first}", json={"depends_on": [first]}, headers=alice)

    assert direct.status_code == 422, direct.text
    assert direct.json()["detail"] == (
        f"depends_on: task {second} already waits for task {first}; if {first} waited for it too, neither "
        "could ever start"
    )
    assert through.status_code == 422
    assert f"(task {third} → task {second} → task {first})" in through.json()["detail"]
    assert [error["field"] for error in through.json()["errors"]] == ["depends_on_any"]
    assert (
        itself.status_code == 422
        and itself.json()["detail"] == f"depends_on: task {first} cannot wait for itself"
    )
    assert task_of(client, alice, first) == before


def test_a_parent_that_ended_a_task_waits_for_no_more_makes_no_loop(client, alice, tmp_path):
    first = submitted_id(client, alice, workdir=str(tmp_path), not_before=LATER)
    second = submitted_id(client, alice, workdir=str(tmp_path), depends_on=[first])
    client.post(f"/api/v1/tasks/{second}/cancel", headers=alice)  # it no longer waits for anything

    changed = client.patch(f"/api/v1/tasks/{first}", json={"depends_on_any": [second]}, headers=alice)

    assert changed.status_code == 200, changed.text


def test_a_parent_that_failed_or_is_not_ones_own_is_refused(client, alice, make_identity, tmp_path):
    _, bob_token = make_identity("bob", "speech")
    theirs = submitted_id(client, bearer(bob_token), workdir=str(tmp_path), not_before=LATER)
    cancelled = submitted_id(client, alice, workdir=str(tmp_path), not_before=LATER)
    client.post(f"/api/v1/tasks/{cancelled}/cancel", headers=alice)
    task = submitted_id(client, alice, workdir=str(tmp_path), not_before=LATER)
    before = task_of(client, alice, task)

    other_team = client.patch(f"/api/v1/tasks/{task}", json={"depends_on": [theirs]}, headers=alice)
    ended = client.patch(f"/api/v1/tasks/{task}", json={"depends_on": [cancelled]}, headers=alice)
    unchanged = task_of(client, alice, task)
    after_any = client.patch(f"/api/v1/tasks/{task}", json={"depends_on_any": [cancelled]}, headers=alice)

    assert other_team.status_code == 422
    assert other_team.json()["detail"] == f"depends_on names task {theirs}, which does not exist"
    assert ended.status_code == 422 and f"task {cancelled}, which was cancelled" in ended.json()["detail"]
    assert unchanged == before
    assert after_any.status_code == 200  # however it ended, it no longer holds the task back
    assert after_any.json()["spec"]["depends_on_any"] == [cancelled]


def test_a_running_task_cannot_change_what_it_waits_for(client, alice, running_cluster, tmp_path):
    go = tmp_path / "go"
    running = submitted_id(
        client, alice, command=f"until [ -e {go} ]; do sleep 0.05; done", workdir=str(tmp_path)
    )
    other = submitted_id(client, alice, workdir=str(tmp_path), not_before=LATER)
    wait_until(lambda: task_of(client, alice, running)["status"] == "running")

    refused = client.patch(f"/api/v1/tasks/{running}", json={"depends_on": [other]}, headers=alice)
    go.touch()

    assert refused.status_code == 409
    assert "depends_on can no longer change" in refused.json()["detail"]


def test_two_changes_that_would_close_a_loop_together_are_taken_one_at_a_time(
    cluster, make_identity, monkeypatch, tmp_path
):
    who, _ = make_identity("alice", "vision")
    first, _ = cluster.submit(
        who, {"command": "true", "gpus": 0, "not_before": LATER, "workdir": str(tmp_path)}
    )
    second, _ = cluster.submit(
        who, {"command": "true", "gpus": 0, "not_before": LATER, "workdir": str(tmp_path)}
    )
    checked = threading.Barrier(2, timeout=2)
    resolve = service.resolve

    def slow_resolve(*args, **kwargs):  # both changes checked before either is stored, were they not locked
        with contextlib.suppress(threading.BrokenBarrierError):  # the other waits for the lock: on alone
            checked.wait()
        return resolve(*args, **kwargs)

    monkeypatch.setattr(service, "resolve", slow_resolve)
    outcomes: dict[int, object] = {}

    def change(task_id: int, parent: int) -> None:
        try:
            outcomes[task_id] = cluster.update(who, task_id, {"depends_on": [parent]})
        except Exception as exc:  # the one refused
            outcomes[task_id] = exc

    threads = [
        threading.Thread(target=change, args=pair) for pair in ((first.id, second.id), (second.id, first.id))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    refused = [outcome for outcome in outcomes.values() if isinstance(outcome, Exception)]
    assert len(outcomes) == 2 and len(refused) == 1, outcomes
    assert "already waits for task" in str(refused[0])
    waits = [cluster.tasks.get_any(task_id).spec.get("depends_on") for task_id in (first.id, second.id)]
    assert sorted(map(bool, waits)) == [False, True]  # one waits for the other, never both
