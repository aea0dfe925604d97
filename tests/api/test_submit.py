"""POST /api/v1/tasks: a valid spec becomes one queued task; Idempotency-Key makes retries safe."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.api.conftest import bearer


def test_submitting_a_spec_returns_201_and_the_resolved_task(client, cluster, alice, tmp_path):
    response = client.post(
        "/api/v1/tasks", json={"command": "python train.py --lr 3e-4", "gpus": 2}, headers=alice
    )

    assert response.status_code == 201
    task = response.json()
    assert task["status"] == "queued"
    assert task["name"] == "train.py"
    assert (task["team"], task["user"]) == ("vision", "alice")
    assert task["gpus"] == 2
    assert task["priority"] == "normal"
    assert task["spec"]["workdir"] == cluster.default_workdir()
    assert task["spec"]["name"] == "train.py"
    assert cluster.tasks.count_by_status() == {"queued": 1}
    assert cluster.queue.length() == 1


def test_an_explicit_name_and_workdir_are_kept(client, alice, tmp_path):
    spec = {"command": "echo hi", "name": "greeting", "workdir": str(tmp_path), "gpus": 0}

    task = client.post("/api/v1/tasks", json=spec, headers=alice).json()

    assert (task["name"], task["spec"]["workdir"], task["gpus"]) == ("greeting", str(tmp_path), 0)


def test_the_same_idempotency_key_from_the_same_user_returns_the_first_task_with_200(client, cluster, alice):
    headers = {**alice, "Idempotency-Key": "run-42"}

    first = client.post("/api/v1/tasks", json={"command": "echo once"}, headers=headers)
    again = client.post("/api/v1/tasks", json={"command": "echo once"}, headers=headers)

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    assert cluster.tasks.count_by_status() == {"queued": 1}
    assert cluster.queue.length() == 1


def test_an_idempotency_key_used_again_for_another_spec_is_a_409_that_names_the_first_task(
    client, cluster, alice
):
    headers = {**alice, "Idempotency-Key": "run-7"}
    first = client.post("/api/v1/tasks", json={"command": "echo one"}, headers=headers)
    retried = client.post(  # a retry whose relative start was resolved again: the same task
        "/api/v1/tasks", json={"command": "echo one", "not_before": "2030-01-01T10:00:00Z"}, headers=headers
    )

    other = client.post("/api/v1/tasks", json={"command": "echo two"}, headers=headers)

    assert (first.status_code, retried.status_code, other.status_code) == (201, 200, 409)
    assert other.json()["detail"] == (
        f"idempotency key 'run-7' was already used for task {first.json()['id']} with another spec; "
        "use a new key to submit this one"
    )
    assert cluster.tasks.count_by_status() == {"queued": 1}


def test_another_user_with_the_same_idempotency_key_gets_a_new_task(client, cluster, alice, make_identity):
    _, bob_token = make_identity("bob", "vision")

    first = client.post(
        "/api/v1/tasks", json={"command": "echo a"}, headers={**alice, "Idempotency-Key": "k"}
    )
    other = client.post(
        "/api/v1/tasks", json={"command": "echo a"}, headers={**bearer(bob_token), "Idempotency-Key": "k"}
    )

    assert (first.status_code, other.status_code) == (201, 201)
    assert other.json()["id"] != first.json()["id"]
    assert other.json()["user"] == "bob"
    assert cluster.tasks.count_by_status() == {"queued": 2}


def test_submissions_without_a_key_are_never_merged(client, cluster, alice):
    ids = {
        client.post("/api/v1/tasks", json={"command": "echo same"}, headers=alice).json()["id"]
        for _ in range(2)
    }

    assert len(ids) == 2
    assert cluster.tasks.count_by_status() == {"queued": 2}


def test_submissions_written_together_each_get_their_own_answer(cluster, make_identity, four_gpu_node):
    from scheduler.errors import SpecError
    from scheduler.spec import TaskSpec

    alice, _ = make_identity("alice", "vision")
    bob, _ = make_identity("bob", "nlp")
    items = [
        (alice, TaskSpec.model_validate({"command": "echo a", "gpus": 1})),
        (bob, TaskSpec.model_validate({"command": "echo too-big", "gpus": 8})),
        (bob, TaskSpec.model_validate({"command": "echo b", "gpus": 2, "priority": "high"})),
    ]

    first, refused, second = cluster.submit_many(items)

    assert isinstance(refused, SpecError) and "gpus must be between 0 and 4" in str(refused)
    assert (first.team.name, first.user.name, first.status) == ("vision", "alice", "queued")
    assert (second.team.name, second.priority, second.gpus) == ("nlp", "high", 2)
    stored = {task.id: task for task in cluster.tasks.with_status("queued")}
    assert set(stored) == {first.id, second.id}
    assert stored[second.id].submitted_at == second.submitted_at
    assert stored[second.id].spec == second.spec
    assert cluster.queue.queued_ids() == {first.id, second.id}


def test_depending_on_a_task_that_was_cancelled_is_refused_and_writes_nothing(client, cluster, alice):
    parent = client.post("/api/v1/tasks", json={"command": "true", "gpus": 0}, headers=alice).json()["id"]
    queued_child = client.post(
        "/api/v1/tasks", json={"command": "true", "depends_on": [parent]}, headers=alice
    )
    client.post(f"/api/v1/tasks/{parent}/cancel", headers=alice)

    late_child = client.post("/api/v1/tasks", json={"command": "true", "depends_on": [parent]}, headers=alice)

    assert queued_child.status_code == 201  # a child already waiting fails with the reason instead
    assert late_child.status_code == 422
    assert late_child.json()["detail"].startswith(
        f"depends_on names task {parent}, which was cancelled: this task could never start"
    )
    assert cluster.tasks.count_by_status() == {"cancelled": 1, "queued": 1}


def test_a_task_that_cannot_meet_its_deadline_is_queued_with_a_warning_that_says_why(client, alice):
    now = datetime.now(UTC)
    start = now + timedelta(hours=2)
    spec = {"command": "python eval.py", "not_before": start.isoformat(), "estimated_minutes": 60}

    late = client.post(
        "/api/v1/tasks", json={**spec, "deadline": (start + timedelta(minutes=30)).isoformat()}, headers=alice
    )
    in_time = client.post(
        "/api/v1/tasks", json={**spec, "deadline": (start + timedelta(hours=2)).isoformat()}, headers=alice
    )
    path = f"/api/v1/tasks/{in_time.json()['id']}"
    changed = client.patch(path, json={"estimated_minutes": 180}, headers=alice)

    assert (late.status_code, late.json()["status"]) == (201, "queued")  # a deadline is a goal: accepted
    [warning] = late.json()["warnings"]
    assert warning.startswith("it cannot finish by its deadline ")
    assert "(not before), and its ~60 min estimate ends it around " in warning
    assert in_time.json()["warnings"] == []
    assert (
        changed.status_code == 200 and "its ~3.0 h estimate ends it around" in changed.json()["warnings"][0]
    )
    assert client.get(path, headers=alice).json()["warnings"] == []  # said to whoever submits or changes


def test_a_sweep_or_batch_that_cannot_meet_its_deadline_says_so_for_each_task(client, alice):
    start = datetime.now(UTC) + timedelta(hours=2)
    late = {
        "not_before": start.isoformat(),
        "estimated_minutes": 60,
        "deadline": (start + timedelta(minutes=30)).isoformat(),
    }
    sweep = client.post(
        "/api/v1/sweeps",
        json={"command": "python t.py --lr {lr}", "sweep": {"lr": [1, 2]}, **late},
        headers=alice,
    )
    batch = client.post(
        "/api/v1/tasks/batch", json={"specs": [{"command": "a", **late}, {"command": "b"}]}, headers=alice
    )

    assert sweep.status_code == batch.status_code == 201, sweep.text + batch.text
    assert [len(task["warnings"]) for task in sweep.json()["tasks"]] == [1, 1]
    assert [len(task["warnings"]) for task in batch.json()["tasks"]] == [1, 0]
    assert sweep.json()["tasks"][0]["warnings"][0].startswith("it cannot finish by its deadline ")
