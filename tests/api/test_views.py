"""The queue, the GPUs, health, and the OpenAPI document."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from scheduler.policy import reasons
from scheduler.policy.tariff import estimate_cost, gpu_power_w
from tests.api.conftest import bearer
from tests.conftest import wait_until


def _submit(client, headers, **spec) -> int:
    response = client.post("/api/v1/tasks", json={"command": "echo hi", **spec}, headers=headers)
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def test_the_queue_shows_positions_best_first_counting_every_team(client, alice, make_identity):
    _, bob_token = make_identity("bob", "nlp")
    _, admin_token = make_identity("root", "ops", admin=True)
    normal = _submit(client, alice)
    bobs = _submit(client, bearer(bob_token))
    high = _submit(client, alice, priority="high")
    low = _submit(client, alice, priority="low")

    mine = client.get("/api/v1/queue", headers=alice).json()
    everyone = client.get("/api/v1/queue", headers=bearer(admin_token)).json()

    assert mine["length"] == everyone["length"] == 4
    assert [(e["position"], e["task"]["id"]) for e in mine["entries"]] == [(1, high), (2, normal), (4, low)]
    assert [(e["position"], e["task"]["id"]) for e in everyone["entries"]] == [
        (1, high),
        (2, normal),
        (3, bobs),
        (4, low),
    ]


def test_a_cancelled_task_leaves_the_queue(client, alice):
    first = _submit(client, alice)
    second = _submit(client, alice)
    client.post(f"/api/v1/tasks/{first}/cancel", headers=alice)

    queue = client.get("/api/v1/queue", headers=alice).json()

    assert queue["length"] == 1
    assert [(e["position"], e["task"]["id"]) for e in queue["entries"]] == [(1, second)]


def test_the_gpus_endpoint_shows_the_nodes_gpus(client, alice, four_gpu_node):
    data = client.get("/api/v1/gpus", headers=alice).json()

    assert [(node["name"], node["gpus"], node["alive"], node["drained"]) for node in data["nodes"]] == [
        ("node-a", 4, True, False)
    ]
    assert data["nodes"][0]["source"] == "simulated"
    assert [(gpu["node"], gpu["index"]) for gpu in data["gpus"]] == [("node-a", i) for i in range(4)]
    for gpu in data["gpus"]:
        assert gpu["memory_total_mib"] == 24 * 1024
        assert gpu["memory_free_mib"] == 24 * 1024
        assert gpu["tasks"] == []


def test_with_no_worker_yet_the_gpus_endpoint_is_empty(client, alice):
    assert client.get("/api/v1/gpus", headers=alice).json() == {"nodes": [], "gpus": []}


def test_the_browsers_icon_request_is_answered_with_no_icon_not_a_404(client):
    answer = client.get("/favicon.ico")

    assert (answer.status_code, answer.content) == (204, b"")


def test_healthz_answers_200_without_a_token(client):
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "database": "ok",
        "redis": "ok",
        "scheduler": "none running",  # no Dispatcher in this test: said, still a 200
        "timezone": "UTC",
        "offpeak": "23:00-07:00",  # what "tonight" means to clients elsewhere
    }


def test_the_openapi_document_puts_every_route_under_api_v1_and_declares_bearer_auth(client):
    document = client.get("/openapi.json").json()

    paths = set(document["paths"])
    assert {
        "/api/v1/tasks",
        "/api/v1/tasks/{task_id}",
        "/api/v1/tasks/{task_id}/cancel",
        "/api/v1/tasks/{task_id}/logs",
        "/api/v1/queue",
        "/api/v1/gpus",
    } <= paths
    assert paths - {"/healthz", "/metrics"} == {path for path in paths if path.startswith("/api/v1/")}
    schemes = document["components"]["securitySchemes"]
    bearer_schemes = {
        name for name, scheme in schemes.items() if scheme == {**scheme, "type": "http", "scheme": "bearer"}
    }
    assert bearer_schemes
    for path, operations in document["paths"].items():
        if not path.startswith("/api/v1/"):
            continue
        for method, operation in operations.items():
            declared = {name for requirement in operation.get("security", []) for name in requirement}
            assert declared & bearer_schemes, f"{method.upper()} {path} declares no bearer security"
    assert set(document["paths"]["/api/v1/tasks"]["post"]["responses"]) >= {"201", "401", "422"}


def test_explain_says_how_a_task_that_is_not_waiting_ended(client, alice):
    first = _submit(client, alice)
    child = _submit(client, alice, depends_on=[first])
    client.post(f"/api/v1/tasks/{first}/cancel", headers=alice)

    cancelled = client.get(f"/api/v1/tasks/{first}/explain", headers=alice).json()

    assert (cancelled["status"], cancelled["position"]) == ("cancelled", None)
    assert cancelled["reason"] == "cancelled by alice"  # the status is beside it, not repeated in it
    orphan = client.get(f"/api/v1/tasks/{child}/explain", headers=alice).json()  # failed at the next pass
    assert (orphan["status"], orphan["reason"]) == (
        "queued",
        f"task {first}, which it depends on, did not succeed",
    )
    submitted = client.get(f"/api/v1/tasks/{child}", headers=alice).json()["submitted_at"]
    assert (_instant(orphan["submitted_at"]), orphan["started_at"]) == (_instant(submitted), None)


def _instant(text: str) -> datetime:
    """An ISO time as an aware datetime, whichever way the API wrote its zone."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_explain_shows_what_a_failed_task_printed_last(client, alice, running_cluster, tmp_path):
    command = "echo loading; echo 'ValueError: loss is nan' >&2; exit 3"
    failed = _submit(client, alice, command=command, workdir=str(tmp_path))
    succeeded = _submit(client, alice, command="echo fine", workdir=str(tmp_path))
    for task_id in (failed, succeeded):
        wait_until(
            lambda task_id=task_id: (
                client.get(f"/api/v1/tasks/{task_id}", headers=alice).json()["status"]
                in ("failed", "succeeded")
            )
        )

    explained = client.get(f"/api/v1/tasks/{failed}/explain", headers=alice).json()
    fine = client.get(f"/api/v1/tasks/{succeeded}/explain", headers=alice).json()

    assert (explained["status"], explained["reason"]) == ("failed", "exit code 3")
    assert explained["last_output"] == ["loading", "ValueError: loss is nan"]
    assert "last_output" not in fine


def test_explain_says_where_a_running_task_runs_since_when_and_when_it_should_end(
    client, alice, running_cluster, tmp_path
):
    deadline = (datetime.now(UTC) + timedelta(minutes=5)).isoformat()  # it cannot make it by its estimate
    task_id = _submit(
        client, alice, command="sleep 30", workdir=str(tmp_path), estimated_minutes=10, deadline=deadline
    )
    wait_until(lambda: client.get(f"/api/v1/tasks/{task_id}", headers=alice).json()["status"] == "running")

    explained = client.get(f"/api/v1/tasks/{task_id}/explain", headers=alice).json()
    estimate = client.get("/api/v1/estimate", params={"task_id": task_id}, headers=alice).json()
    row = client.get(f"/api/v1/tasks/{task_id}", headers=alice).json()
    started = row["started_at"]
    client.post(f"/api/v1/tasks/{task_id}/cancel", headers=alice)

    # its own times, for "how long did 12 wait" and "when did 12 start"
    for key in ("submitted_at", "started_at"):
        assert _instant(explained[key]) == _instant(row[key])
    assert explained["attempts"] == 1
    assert explained["command"] == "sleep 30"
    assert (explained["priority_class"], explained["time_limit_minutes"], explained["tags"]) == (
        "normal",
        None,
        [],
    )
    assert _instant(explained["deadline"]) == _instant(deadline)

    reason = explained["reason"]
    assert re.fullmatch(r"running on node-a GPUs \d since \d\d:\d\d", reason), reason
    # when it should end, by its estimate: 10 min after it started
    end = datetime.fromisoformat(explained["estimated_end"])
    assert end - datetime.fromisoformat(started.replace("Z", "+00:00")) == timedelta(minutes=10)
    warning = explained["deadline_warning"]
    assert re.fullmatch(
        r"expected to end around (tomorrow )?\d\d:\d\d, after its deadline (tomorrow )?\d\d:\d\d", warning
    )
    assert (estimate["status"], estimate["start"], estimate["end"]) == (
        "running",
        None,
        explained["estimated_end"],
    )


def test_explain_says_when_a_task_is_expected_to_end_after_its_deadline(client, alice, four_gpu_node):
    now = datetime.now(UTC)
    start, deadline = now + timedelta(hours=3), now + timedelta(hours=3, minutes=30)
    late = _submit(
        client, alice, not_before=start.isoformat(), deadline=deadline.isoformat(), estimated_minutes=60
    )
    in_time = (start + timedelta(hours=2)).isoformat()
    fine = _submit(client, alice, not_before=start.isoformat(), deadline=in_time, estimated_minutes=60)

    explained = client.get(f"/api/v1/tasks/{late}/explain", headers=alice).json()
    made_it = client.get(f"/api/v1/tasks/{fine}/explain", headers=alice).json()
    estimated = client.get("/api/v1/estimate", params={"task_id": late}, headers=alice).json()

    end = datetime.fromisoformat(explained["estimated_end"])
    assert end == start + timedelta(hours=1)  # its not_before plus its estimate: 30 min after the deadline
    zone = "UTC"  # the test cluster's
    assert explained["deadline_warning"] == reasons.ends_after_deadline(
        end.timestamp(), deadline.timestamp(), now.timestamp(), zone
    )
    assert explained["deadline_warning"].startswith("expected to end around ")
    assert made_it["deadline_warning"] is None
    assert estimated["deadline_warning"] == explained["deadline_warning"]  # "when will it start?" says it too


def test_an_estimate_gives_the_energy_and_its_cost_from_the_expected_start(
    client, alice, four_gpu_node, cluster
):
    asked = {"gpus": 2, "estimated_minutes": 60}
    now = client.get("/api/v1/estimate", params=asked, headers=alice).json()
    tonight = client.get("/api/v1/estimate", params={**asked, "offpeak": "true"}, headers=alice).json()
    later = client.get(
        "/api/v1/estimate", params={**asked, "not_before": "2030-01-07T12:00:00+00:00"}, headers=alice
    ).json()

    config = cluster.policy_config
    power = gpu_power_w(cluster.nodes.all()[0].gpus[0].name, None, config.gpu_power_w)
    assert (
        now["energy_kwh"] == round(2 * power * 3600 / 3.6e6, 3) and now["currency"] == config.tariff.currency
    )
    for answer in (now, tonight, later):
        start = datetime.fromisoformat(answer["start"]).timestamp()
        assert answer["energy_cost"] == round(
            estimate_cost(start, start + 3600, answer["energy_kwh"], config.tariff), 2
        )
    local = datetime.fromisoformat(tonight["start"]).astimezone(cluster.zone)
    assert local.hour >= 23 or local.hour < 7, local  # the default off-peak window, 23:00-07:00
    assert datetime.fromisoformat(later["start"]) == datetime(2030, 1, 7, 12, tzinfo=UTC)


def test_the_runs_of_a_sweep_teach_the_estimates_of_its_other_settings_and_of_its_name(
    client, alice, running_cluster, tmp_path
):
    # Given a sweep of two settings that ran and succeeded
    response = client.post(
        "/api/v1/sweeps",
        json={
            "command": "sleep {s}",
            "name": "nap",
            "gpus": 1,
            "sweep": {"s": [0.2, 0.3]},
            "workdir": str(tmp_path),
        },
        headers=alice,
    )
    assert response.status_code == 201, response.text
    ran = [task["id"] for task in response.json()["tasks"]]
    wait_until(
        lambda: all(
            client.get(f"/api/v1/tasks/{task_id}", headers=alice).json()["status"] == "succeeded"
            for task_id in ran
        )
    )

    def estimate(name):
        response = client.get("/api/v1/estimate", params={"gpus": 1, "name": name}, headers=alice)
        assert response.status_code == 200, response.text
        return response.json()

    # Then a setting that never ran, and the sweep's own name, are estimated from those two runs
    other_setting, by_name, itself = estimate("nap s:0.9"), estimate("nap"), estimate("nap s:0.2")
    assert other_setting["estimate_source"] == "median of 2 recent runs of nap with other parameters"
    assert by_name["estimate_source"] == "median of 2 recent runs of nap sweeps"
    assert itself["estimate_source"] == "median of 1 recent run"
    assert 0.2 <= other_setting["estimated_run_s"] < 30
    # And another name is not
    assert estimate("napkin s:0.2")["estimate_source"] == "default"


def test_an_estimate_for_a_new_task_says_what_run_time_it_assumes_and_learns_it_by_name(
    client, alice, running_cluster, tmp_path
):
    quick = [
        _submit(client, alice, command="sleep 0.2", name="quick", workdir=str(tmp_path)) for _ in range(3)
    ]
    wait_until(
        lambda: all(
            client.get(f"/api/v1/tasks/{task_id}", headers=alice).json()["status"] == "succeeded"
            for task_id in quick
        )
    )

    def estimate(**params):
        response = client.get("/api/v1/estimate", params={"gpus": 1, **params}, headers=alice)
        assert response.status_code == 200, response.text
        return response.json()

    learned = estimate(name="quick")
    unseen = estimate(name="never-ran")
    limited = estimate(name="never-ran", time_limit_minutes=30)
    given = estimate(name="quick", estimated_minutes=45)
    other_size = estimate(name="quick", gpus=2)  # learned by user, name and size

    assert learned["estimate_source"] == "median of 3 recent runs"
    assert 0.2 <= learned["estimated_run_s"] < 30
    assert (unseen["estimate_source"], unseen["estimated_run_s"]) == ("default", 3600.0)
    assert (limited["estimate_source"], limited["estimated_run_s"]) == ("time limit", 1800.0)
    assert (given["estimate_source"], given["estimated_run_s"]) == ("spec estimate", 2700.0)
    assert other_size["estimate_source"] == "default"
    assert learned["energy_kwh"] < unseen["energy_kwh"]  # priced for the run time it assumes
    assert (learned["wait_s"], learned["wait"]) == (0.0, "none")  # four idle GPUs: it starts at once


def test_an_estimate_refuses_a_name_a_task_could_not_have(client, alice):
    response = client.get("/api/v1/estimate", params={"name": "x" * 121}, headers=alice)

    assert response.status_code == 422
    assert "name" in response.text


def test_an_estimate_for_a_new_task_waits_for_the_tasks_it_depends_on(
    client, alice, four_gpu_node, make_identity
):
    parent = _submit(
        client, alice, command="sleep 1", not_before="2030-01-07T12:00:00Z", estimated_minutes=60
    )
    _, bob_token = make_identity("bob", "nlp")
    bobs = _submit(client, bearer(bob_token))

    alone = client.get("/api/v1/estimate", params={"gpus": 1}, headers=alice).json()
    after = client.get("/api/v1/estimate", params={"gpus": 1, "depends_on": [parent]}, headers=alice).json()
    foreign = client.get("/api/v1/estimate", params={"depends_on": [bobs]}, headers=alice)

    assert datetime.fromisoformat(alone["start"]) < datetime(2030, 1, 1, tzinfo=UTC)
    assert datetime.fromisoformat(after["start"]) == datetime(2030, 1, 7, 13, tzinfo=UTC)  # the parent's end
    assert foreign.status_code == 422 and f"task {bobs}, which does not exist" in foreign.text


def test_a_member_asking_for_another_teams_tasks_is_refused_as_for_its_quota(client, alice, make_identity):
    _, bob_token = make_identity("bob", "nlp")
    _, admin_token = make_identity("root", "ops", admin=True)
    mine = _submit(client, alice)
    bobs = _submit(client, bearer(bob_token))

    other = client.get("/api/v1/tasks", params={"team": "nlp"}, headers=alice)
    nosuch = client.get("/api/v1/tasks", params={"team": "nosuch"}, headers=alice)
    quota = client.get("/api/v1/quota", params={"team": "nlp"}, headers=alice)
    own = client.get("/api/v1/tasks", params={"team": "vision"}, headers=alice)
    admin = client.get("/api/v1/tasks", params={"team": "nlp"}, headers=bearer(admin_token))
    admin_nosuch = client.get("/api/v1/tasks", params={"team": "nosuch"}, headers=bearer(admin_token))

    assert other.status_code == nosuch.status_code == quota.status_code == 403, other.text
    assert "only your own team's tasks (team vision)" in other.text and "vision" in nosuch.text
    assert [task["id"] for task in own.json()["tasks"]] == [mine]
    assert [task["id"] for task in admin.json()["tasks"]] == [bobs]
    assert admin_nosuch.status_code == 404


def test_a_cpu_only_task_waits_for_a_node_in_service_and_says_so(client, cluster, alice, four_gpu_node):
    """No GPU picks a CPU-only task's node: with every node drained the dispatcher leaves it queued, so the
    forecasts must not promise 'starts now'."""
    cluster.nodes.set_drained("node-a", True)
    task_id = client.post("/api/v1/tasks", json={"command": "echo d", "gpus": 0}, headers=alice).json()["id"]

    explained = client.get(f"/api/v1/tasks/{task_id}/explain", headers=alice).json()
    entries = client.get("/api/v1/queue", headers=alice).json()["entries"]
    queued = {entry["task"]["id"]: entry for entry in entries}
    asked = client.get("/api/v1/estimate", params={"gpus": 0}, headers=alice).json()

    waiting = "waiting for a node in service (all are drained or down"
    assert explained["reason"].startswith(waiting) and explained["estimated_start"] is None
    assert queued[task_id]["reason"].startswith(waiting) and queued[task_id]["estimated_start"] is None
    assert asked["reason"].startswith(waiting) and asked["start"] is None and asked["wait"] == "unknown"

    cluster.nodes.set_drained("node-a", False)
    explained = client.get(f"/api/v1/tasks/{task_id}/explain", headers=alice).json()
    assert explained["estimated_start"] is not None and "node in service" not in explained["reason"]
