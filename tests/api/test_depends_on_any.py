"""`depends_on_any` (Slurm's afterany) on a real cluster: a task starts once its parents ended, succeeded,
failed or cancelled, and is never failed because of them."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.api.conftest import bearer, submitted_id, task_of
from tests.conftest import wait_until


def _ended(client, headers, task_id: int) -> dict | None:
    task = task_of(client, headers, task_id)
    return task if task["status"] in ("succeeded", "failed", "cancelled") else None


def test_a_task_after_any_of_a_failing_parent_waits_then_runs_once_it_failed(
    client, alice, running_cluster, tmp_path
):
    # the parent fails only once the test has asked about the child (a timed parent could end first)
    go = tmp_path / "go"
    parent = submitted_id(
        client, alice, command=f"until [ -e {go} ]; do sleep 0.05; done; exit 3", workdir=str(tmp_path)
    )
    child = submitted_id(
        client, alice, command="echo cleanup", workdir=str(tmp_path), depends_on_any=[parent]
    )
    wait_until(lambda: task_of(client, alice, parent)["status"] == "running")

    waiting = client.get(f"/api/v1/tasks/{child}/explain", headers=alice).json()
    go.touch()
    done = wait_until(lambda: _ended(client, alice, child), timeout_s=30)

    assert waiting["status"] == "queued" and waiting["reason"] == f"waiting for task {parent} to end"
    failed = task_of(client, alice, parent)
    assert failed["status"] == "failed" and done["status"] == "succeeded"
    assert done["started_at"] >= failed["finished_at"]
    assert task_of(client, alice, child)["spec"]["depends_on_any"] == [parent]


def test_a_task_after_any_of_a_cancelled_parent_runs(client, alice, running_cluster, tmp_path):
    running = submitted_id(client, alice, command="sleep 30", workdir=str(tmp_path))
    queued = submitted_id(client, alice, workdir=str(tmp_path), not_before="2030-01-07T12:00:00Z")
    child = submitted_id(client, alice, workdir=str(tmp_path), depends_on_any=[running, queued])
    wait_until(lambda: task_of(client, alice, running)["status"] == "running")
    for parent in (running, queued):
        client.post(f"/api/v1/tasks/{parent}/cancel", headers=alice)

    done = wait_until(lambda: _ended(client, alice, child), timeout_s=30)

    assert done["status"] == "succeeded"
    assert {task_of(client, alice, p)["status"] for p in (running, queued)} == {"cancelled"}


def test_both_lists_together_wait_for_each_and_only_depends_on_fails_thetask_of(
    client, alice, running_cluster, tmp_path
):
    # The parents wait for a file, so neither can end before both children are submitted (a parent that
    # already failed is refused at submit, which is another test's business).
    wait_for_go = "while [ ! -e go ]; do sleep 0.05; done"
    good = submitted_id(client, alice, command=f"{wait_for_go}; true", workdir=str(tmp_path))
    bad = submitted_id(client, alice, command=f"{wait_for_go}; exit 2", workdir=str(tmp_path))
    runs = submitted_id(client, alice, workdir=str(tmp_path), depends_on=[good], depends_on_any=[bad])
    fails = submitted_id(client, alice, workdir=str(tmp_path), depends_on=[bad], depends_on_any=[good])
    (tmp_path / "go").touch()

    ran = wait_until(lambda: _ended(client, alice, runs), timeout_s=30)
    orphan = wait_until(lambda: _ended(client, alice, fails), timeout_s=30)

    assert ran["status"] == "succeeded"
    assert orphan["status"] == "failed"
    assert orphan["reason"] == "dependency_failed"


def test_a_parent_that_already_ended_is_accepted_and_a_missing_or_foreign_one_refused(
    client, alice, make_identity
):
    parent = submitted_id(client, alice, not_before="2030-01-07T12:00:00Z")
    client.post(f"/api/v1/tasks/{parent}/cancel", headers=alice)
    _, bob_token = make_identity("bob", "nlp")
    bobs = submitted_id(client, bearer(bob_token))

    after_any = client.post(
        "/api/v1/tasks", json={"command": "true", "depends_on_any": [parent]}, headers=alice
    )
    missing = client.post("/api/v1/tasks", json={"command": "true", "depends_on_any": [99999]}, headers=alice)
    foreign = client.post("/api/v1/tasks", json={"command": "true", "depends_on_any": [bobs]}, headers=alice)
    negative = client.post("/api/v1/tasks", json={"command": "true", "depends_on_any": [-1]}, headers=alice)

    assert after_any.status_code == 201, after_any.text
    for refused, parent_id in ((missing, 99999), (foreign, bobs)):
        assert refused.status_code == 422
        assert refused.json()["detail"] == f"depends_on_any names task {parent_id}, which does not exist"
    assert (
        negative.status_code == 422 and "depends_on_any holds task ids, which are positive" in negative.text
    )


def test_it_changes_on_a_queued_task_as_depends_on_does(client, alice):
    parent = submitted_id(client, alice, not_before="2030-01-07T12:00:00Z")
    task = submitted_id(client, alice, not_before="2030-01-07T12:00:00Z")

    changed = client.patch(f"/api/v1/tasks/{task}", json={"depends_on_any": [parent]}, headers=alice)
    itself = client.patch(f"/api/v1/tasks/{task}", json={"depends_on_any": [task]}, headers=alice)

    assert changed.status_code == 200 and changed.json()["spec"]["depends_on_any"] == [parent]
    assert itself.status_code == 422 and f"task {task} cannot wait for itself" in itself.text


def test_an_estimate_for_a_new_task_waits_for_its_parents_to_end(client, alice, four_gpu_node, make_identity):
    parent = submitted_id(
        client, alice, command="sleep 1", gpus=1, not_before="2030-01-07T12:00:00Z", estimated_minutes=60
    )
    cancelled = submitted_id(client, alice, not_before="2030-01-07T12:00:00Z")
    client.post(f"/api/v1/tasks/{cancelled}/cancel", headers=alice)
    _, bob_token = make_identity("bob", "nlp")
    bobs = submitted_id(client, bearer(bob_token))

    after = client.get("/api/v1/estimate", params={"gpus": 1, "depends_on_any": [parent]}, headers=alice)
    ended = client.get("/api/v1/estimate", params={"gpus": 1, "depends_on_any": [cancelled]}, headers=alice)
    foreign = client.get("/api/v1/estimate", params={"depends_on_any": [bobs]}, headers=alice)

    assert datetime.fromisoformat(after.json()["start"]) == datetime(2030, 1, 7, 13, tzinfo=UTC)  # its end
    assert datetime.fromisoformat(ended.json()["start"]) < datetime(2030, 1, 1, tzinfo=UTC)  # not held
    assert foreign.status_code == 422 and f"task {bobs}, which does not exist" in foreign.text
