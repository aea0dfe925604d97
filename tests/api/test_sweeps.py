"""Sweeps and batches over HTTP: expansion under one sweep id, all-or-nothing refusals, cancel, hold and
release, results."""

from __future__ import annotations

import json

from tests.api.conftest import bearer
from tests.conftest import wait_until

GRID = {"lr": [0.1, 0.01, 0.001], "bs": [32, 64]}


def _sweep(command: str = "python train.py --lr {lr} --bs {bs}", **extra: object) -> dict[str, object]:
    return {"command": command, "gpus": 0, "sweep": GRID, **extra}


def test_a_grid_sweep_becomes_one_queued_task_per_combination_under_one_sweep_id(client, cluster, alice):
    response = client.post("/api/v1/sweeps", json=_sweep(name="train"), headers=alice)

    assert response.status_code == 201, response.text
    sweep = response.json()
    assert (sweep["kind"], sweep["tasks_count"], sweep["status"]) == ("sweep", 6, "queued")
    assert sweep["params"] == ["lr", "bs"]
    commands = [task["command"] for task in sweep["tasks"]]
    assert commands[:2] == ["python train.py --lr 0.1 --bs 32", "python train.py --lr 0.1 --bs 64"]
    assert len(set(commands)) == 6
    assert {task["sweep_id"] for task in sweep["tasks"]} == {sweep["id"]}
    assert sweep["tasks"][5]["params"] == {"lr": 0.001, "bs": 64}
    assert sweep["tasks"][0]["name"] == "train lr:0.1 bs:32"
    assert cluster.tasks.count_by_status() == {"queued": 6}
    assert cluster.queue.length() == 6
    assert client.get(f"/api/v1/sweeps/{sweep['id']}", headers=alice).json()["counts"] == {"queued": 6}


def test_a_list_sweep_makes_exactly_the_given_parameter_sets_with_values_shell_quoted(client, alice):
    spec = {
        "command": "python eval.py --data {data} --k {k}",
        "gpus": 0,
        "sweep": [{"data": "my set", "k": 1}, {"data": "b;rm -rf /", "k": 5}],
    }

    sweep = client.post("/api/v1/sweeps", json=spec, headers=alice).json()

    assert [task["command"] for task in sweep["tasks"]] == [
        "python eval.py --data 'my set' --k 1",
        "python eval.py --data 'b;rm -rf /' --k 5",
    ]


def test_template_mistakes_answer_422_with_the_reason_and_create_no_task(client, cluster, alice):
    cases = {
        "{wd}, which is not a sweep parameter": _sweep("python train.py --lr {lr} --bs {bs} --wd {wd}"),
        "not used": _sweep("python train.py --lr {lr}"),
        "empty": {"command": "python train.py {lr}", "gpus": 0, "sweep": {}},
        "non-empty list": {"command": "python train.py {lr}", "gpus": 0, "sweep": {"lr": []}},
        "at most 1000": {
            "command": "x {a} {b}",
            "gpus": 0,
            "sweep": {"a": list(range(40)), "b": list(range(30))},
        },
    }
    for expected, spec in cases.items():
        response = client.post("/api/v1/sweeps", json=spec, headers=alice)
        assert response.status_code == 422, (expected, response.text)
        assert expected in response.json()["detail"], (expected, response.json())
    assert cluster.tasks.count_by_status() == {}
    assert cluster.queue.length() == 0


def test_a_sweep_sent_to_post_tasks_is_refused_with_where_to_send_it(client, alice):
    response = client.post("/api/v1/tasks", json=_sweep(), headers=alice)

    assert response.status_code == 422
    assert "/api/v1/sweeps" in response.json()["detail"]


def test_a_batch_is_all_or_nothing(client, cluster, alice, four_gpu_node):
    good = [{"command": f"echo {i}", "gpus": 1} for i in range(3)]

    refused = client.post(
        "/api/v1/tasks/batch", json={"specs": [*good, {"command": "big", "gpus": 9}]}, headers=alice
    )
    assert refused.status_code == 422
    assert "spec 4 of the batch" in refused.json()["detail"]
    assert cluster.tasks.count_by_status() == {}

    created = client.post("/api/v1/tasks/batch", json={"specs": good, "name": "echoes"}, headers=alice)
    assert created.status_code == 201, created.text
    batch = created.json()
    assert (batch["kind"], batch["name"], batch["tasks_count"]) == ("batch", "echoes", 3)
    assert cluster.tasks.count_by_status() == {"queued": 3}


def test_the_same_idempotency_key_returns_the_first_batch_with_200(client, cluster, alice):
    headers = {**alice, "Idempotency-Key": "grid-1"}
    body = {"specs": [{"command": "echo a", "gpus": 0}, {"command": "echo b", "gpus": 0}]}

    first = client.post("/api/v1/tasks/batch", json=body, headers=headers)
    again = client.post("/api/v1/tasks/batch", json=body, headers=headers)

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    assert cluster.tasks.count_by_status() == {"queued": 2}


def test_cancelling_a_sweep_cancels_every_queued_task(client, cluster, alice):
    sweep = client.post("/api/v1/sweeps", json=_sweep(), headers=alice).json()

    response = client.post(f"/api/v1/sweeps/{sweep['id']}/cancel", headers=alice)

    assert response.status_code == 200
    assert response.json()["counts"] == {"cancelled": 6}
    assert response.json()["status"] == "cancelled"
    assert cluster.queue.length() == 0


def test_holding_a_sweep_holds_every_queued_task_until_the_sweep_is_released(client, cluster, alice):
    sweep = client.post("/api/v1/sweeps", json=_sweep(), headers=alice).json()
    ids = [task["id"] for task in sweep["tasks"]]
    client.post(f"/api/v1/tasks/{ids[0]}/cancel", headers=alice)  # finished tasks stay as they are
    client.post(f"/api/v1/tasks/{ids[1]}/hold", headers=alice)  # one held already: held once, not refused
    enqueued = {task_id: cluster.tasks.get_any(task_id).enqueued_at for task_id in ids}

    held = client.post(f"/api/v1/sweeps/{sweep['id']}/hold", headers=alice)
    in_queue_while_held = cluster.queue.length()
    again = client.post(f"/api/v1/sweeps/{sweep['id']}/hold", headers=alice)
    released = client.post(f"/api/v1/sweeps/{sweep['id']}/release", headers=alice)
    twice = client.post(f"/api/v1/sweeps/{sweep['id']}/release", headers=alice)

    assert held.status_code == 200, held.text
    assert (held.json()["counts"], held.json()["held"]) == ({"cancelled": 1, "queued": 5}, 5)
    assert {task["held_by"] for task in held.json()["tasks"] if task["status"] == "queued"} == {"alice"}
    assert in_queue_while_held == 0  # held tasks leave the queue: no node can be given one
    assert again.status_code == 200 and again.json()["held"] == 5
    assert released.status_code == 200 and released.json()["held"] == 0
    assert cluster.queue.length() == 5
    assert all(cluster.tasks.get_any(i).enqueued_at == enqueued[i] for i in ids)  # each keeps its age
    assert twice.status_code == 409
    assert (
        twice.json()["detail"] == f"sweep {sweep['id']} has no held task to release (1 cancelled, 5 queued)"
    )


def test_a_change_to_a_sweep_reaches_every_queued_task_or_none(client, cluster, alice):
    sweep = client.post("/api/v1/sweeps", json=_sweep(), headers=alice).json()
    ids = [task["id"] for task in sweep["tasks"]]
    client.post(f"/api/v1/tasks/{ids[0]}/cancel", headers=alice)

    refused = client.patch(
        f"/api/v1/sweeps/{sweep['id']}", json={"priority": "low", "gpus": 2}, headers=alice
    )
    untouched = {cluster.tasks.get_any(i).priority for i in ids}
    changed = client.patch(f"/api/v1/sweeps/{sweep['id']}", json={"priority": "low"}, headers=alice)

    assert refused.status_code == 422 and refused.json()["detail"].startswith("gpus cannot change")
    assert untouched == {"normal"}
    assert changed.status_code == 200, changed.text
    assert [task["priority"] for task in changed.json()["tasks"]] == ["normal"] + [
        "low"
    ] * 5  # cancelled stays


def test_a_sweep_with_nothing_queued_cannot_be_held(client, alice):
    sweep = client.post("/api/v1/sweeps", json=_sweep(), headers=alice).json()
    client.post(f"/api/v1/sweeps/{sweep['id']}/cancel", headers=alice)

    response = client.post(f"/api/v1/sweeps/{sweep['id']}/hold", headers=alice)

    assert response.status_code == 409
    assert response.json()["detail"] == f"sweep {sweep['id']} has no queued task to hold (6 cancelled)"


def test_another_teams_sweep_answers_like_a_missing_one(client, cluster, alice, make_identity):
    sweep = client.post("/api/v1/sweeps", json=_sweep(), headers=alice).json()
    _, carol = make_identity("carol", "audio")

    for path in (f"/api/v1/sweeps/{sweep['id']}", f"/api/v1/sweeps/{sweep['id']}/results"):
        assert client.get(path, headers=bearer(carol)).status_code == 404
    for action in ("cancel", "hold", "release"):
        assert client.post(f"/api/v1/sweeps/{sweep['id']}/{action}", headers=bearer(carol)).status_code == 404
    assert cluster.tasks.count_by_status() == {"queued": 6}
    assert all(task.held_by is None for task in cluster.tasks.with_status("queued"))
    assert client.get("/api/v1/sweeps/999999", headers=alice).json()["detail"] == "sweep 999999 not found"


def test_node_and_gpu_model_no_node_could_satisfy_are_refused_naming_what_exists(
    client, alice, four_gpu_node
):
    cases = [
        ({"command": "x", "node": "gpu-box-9"}, "no node named 'gpu-box-9'"),
        ({"command": "x", "gpu_model": "A100"}, "no GPU model matches 'A100'"),
        ({"command": "x", "gpu_model": "24gb", "gpus": 5}, "between 0 and 4"),
    ]
    for spec, expected in cases:
        response = client.post("/api/v1/tasks", json=spec, headers=alice)
        assert response.status_code == 422, spec
        assert expected in response.json()["detail"], response.json()
    accepted = client.post(
        "/api/v1/tasks", json={"command": "x", "gpu_model": "24GB", "node": "NODE-A"}, headers=alice
    )
    assert accepted.status_code == 201, accepted.text


def test_results_show_each_tasks_params_and_metrics_with_the_best_row_first(client, alice, running_cluster):
    # Given a sweep whose jobs write their loss (lr × 10) and accuracy to metrics.json
    command = (
        "printf '{\"loss\": %s, \"acc\": %s}' $(python3 -c 'print({lr} * 10, 1 - {lr})') "
        '> "$NIGHTSHIFT_OUTPUT_DIR/metrics.json"'
    )
    spec = {"command": command, "gpus": 0, "sweep": {"lr": [0.5, 0.1, 0.3]}}
    sweep = client.post("/api/v1/sweeps", json=spec, headers=alice).json()

    # When they have all run
    def done() -> bool:
        view = client.get(f"/api/v1/sweeps/{sweep['id']}", headers=alice).json()
        return view["status"] == "done"

    wait_until(done, timeout_s=60)
    table = client.get(f"/api/v1/sweeps/{sweep['id']}/results", headers=alice).json()

    # Then the table lists params and metrics, sorted by loss (smaller is better), best first
    assert (table["params"], table["metrics"], table["sort"], table["goal"]) == (
        ["lr"],
        ["loss", "acc"],
        "loss",
        "min",
    )
    assert [row["params"]["lr"] for row in table["rows"]] == [0.1, 0.3, 0.5]
    assert table["rows"][0]["best"] and not any(row["best"] for row in table["rows"][1:])
    assert table["best_task_id"] == table["rows"][0]["task_id"]
    by_acc = client.get(f"/api/v1/sweeps/{sweep['id']}/results?sort=acc", headers=alice).json()
    assert (by_acc["goal"], by_acc["rows"][0]["params"]) == ("max", {"lr": 0.1})
    flipped = client.get(f"/api/v1/sweeps/{sweep['id']}/results?sort=loss&goal=max", headers=alice).json()
    assert flipped["rows"][0]["params"] == {"lr": 0.5}


def test_a_bad_metrics_file_is_noted_on_the_task_which_still_succeeds(client, alice, running_cluster):
    jobs = {
        "not json": 'echo "loss=0.3" > "$NIGHTSHIFT_OUTPUT_DIR/metrics.json"',
        "symbolic link": 'ln -s /etc/hostname "$NIGHTSHIFT_OUTPUT_DIR/metrics.json"',
        "nested": 'echo \'{"loss": 0.2, "hist": [1, 2]}\' > "$NIGHTSHIFT_OUTPUT_DIR/metrics.json"',
    }
    ids = {
        kind: client.post(
            "/api/v1/tasks", json={"command": cmd, "gpus": 0, "tags": ["bad"]}, headers=alice
        ).json()["id"]
        for kind, cmd in jobs.items()
    }

    def finished() -> list[dict[str, object]] | None:
        tasks = [client.get(f"/api/v1/tasks/{i}", headers=alice).json() for i in ids.values()]
        return tasks if all(t["status"] == "succeeded" for t in tasks) else None

    not_json, link, nested = wait_until(finished, timeout_s=60)
    assert not_json["metrics"] is None and "not valid JSON" in not_json["metrics_note"]
    assert link["metrics"] is None and "symbolic link" in link["metrics_note"]
    assert nested["metrics"] == {"loss": 0.2} and "'hist'" in nested["metrics_note"]
    by_tag = client.get("/api/v1/results?tag=bad", headers=alice).json()
    assert by_tag["best_task_id"] == nested["id"]
    assert json.dumps(by_tag)  # plain JSON all the way


def test_a_sweep_with_nothing_left_to_cancel_says_so_as_hold_does(client, alice):
    sweep = client.post("/api/v1/sweeps", json=_sweep(), headers=alice).json()
    first = client.post(f"/api/v1/sweeps/{sweep['id']}/cancel", headers=alice)

    again = client.post(f"/api/v1/sweeps/{sweep['id']}/cancel", headers=alice)
    hold = client.post(f"/api/v1/sweeps/{sweep['id']}/hold", headers=alice)

    assert first.status_code == 200
    assert again.status_code == hold.status_code == 409
    assert again.json()["detail"] == f"sweep {sweep['id']}: nothing to cancel (6 cancelled)"
