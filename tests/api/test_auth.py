"""Bearer-token auth, and team isolation: another team's task answers exactly like a missing one."""

from __future__ import annotations

import pytest

from scheduler.store.identity import revoke_token
from tests.api.conftest import bearer

PROTECTED = [
    pytest.param("POST", "/api/v1/tasks", id="submit"),
    pytest.param("GET", "/api/v1/tasks", id="list"),
    pytest.param("GET", "/api/v1/tasks/1", id="get"),
    pytest.param("POST", "/api/v1/tasks/1/cancel", id="cancel"),
    pytest.param("GET", "/api/v1/tasks/1/logs", id="logs"),
    pytest.param("GET", "/api/v1/queue", id="queue"),
    pytest.param("GET", "/api/v1/gpus", id="gpus"),
]


def _submit(client, headers, command="echo hi") -> int:
    response = client.post("/api/v1/tasks", json={"command": command}, headers=headers)
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


@pytest.mark.parametrize(("method", "path"), PROTECTED)
def test_a_request_without_a_token_gets_401(client, cluster, method, path):
    response = client.request(method, path, json={"command": "echo hi"})

    assert response.status_code == 401
    assert "missing API token" in response.json()["detail"]
    assert response.headers["WWW-Authenticate"] == "Bearer"
    assert cluster.tasks.count_by_status() == {}


@pytest.mark.parametrize(("method", "path"), PROTECTED)
def test_a_request_with_an_unknown_token_gets_401(client, cluster, make_identity, method, path):
    make_identity()  # a real token exists, but not this one
    response = client.request(
        method, path, json={"command": "echo hi"}, headers=bearer("ns_not-a-real-token")
    )

    assert response.status_code == 401
    assert response.json()["detail"] == "unknown API token"
    assert cluster.tasks.count_by_status() == {}


def test_a_non_bearer_authorization_header_gets_401(client, make_identity):
    _, token = make_identity()

    response = client.get("/api/v1/tasks", headers={"Authorization": f"Basic {token}"})

    assert response.status_code == 401


def test_a_revoked_token_stops_working_at_once(client, cluster, make_identity):
    _, token = make_identity()
    assert client.get("/api/v1/tasks", headers=bearer(token)).status_code == 200

    revoke_token(cluster.factory, token)
    response = client.post("/api/v1/tasks", json={"command": "echo hi"}, headers=bearer(token))

    assert response.status_code == 401
    assert response.json()["detail"] == "this API token was revoked"
    assert cluster.tasks.count_by_status() == {}


@pytest.mark.parametrize(
    ("method", "path"),
    [
        pytest.param("GET", "/api/v1/tasks/{id}", id="get"),
        pytest.param("POST", "/api/v1/tasks/{id}/cancel", id="cancel"),
        pytest.param("GET", "/api/v1/tasks/{id}/logs", id="logs"),
    ],
)
def test_another_teams_task_answers_exactly_like_a_missing_one(
    client, cluster, alice, make_identity, method, path
):
    _, bob_token = make_identity("bob", "nlp")
    theirs = _submit(client, bearer(bob_token))
    missing = theirs + 1000

    foreign = client.request(method, path.format(id=theirs), headers=alice)
    absent = client.request(method, path.format(id=missing), headers=alice)

    assert foreign.status_code == absent.status_code == 404
    assert foreign.json() == {"detail": f"task {theirs} not found"}
    assert foreign.text.replace(str(theirs), "N") == absent.text.replace(str(missing), "N")
    assert foreign.headers.get("content-type") == absent.headers.get("content-type")
    assert cluster.tasks.get_any(theirs).status == "queued"


def test_depending_on_another_teams_task_reads_like_a_missing_task(client, cluster, alice, make_identity):
    _, bob_token = make_identity("bob", "nlp")
    theirs = _submit(client, bearer(bob_token))

    response = client.post("/api/v1/tasks", json={"command": "x", "depends_on": [theirs]}, headers=alice)

    assert response.status_code == 422
    assert response.json()["detail"] == f"depends_on names task {theirs}, which does not exist"
    assert cluster.tasks.count_by_status() == {"queued": 1}


def test_a_team_mate_sees_and_may_cancel_a_task_of_the_same_team(client, alice, make_identity):
    _, carol_token = make_identity("carol", "vision")
    task_id = _submit(client, alice)

    assert client.get(f"/api/v1/tasks/{task_id}", headers=bearer(carol_token)).status_code == 200
    assert (
        client.post(f"/api/v1/tasks/{task_id}/cancel", headers=bearer(carol_token)).json()["status"]
        == "cancelled"
    )


def test_the_list_shows_only_the_callers_teams_tasks(client, alice, make_identity):
    _, bob_token = make_identity("bob", "nlp")
    mine = [_submit(client, alice) for _ in range(2)]
    _submit(client, bearer(bob_token))

    listed = client.get("/api/v1/tasks", headers=alice).json()
    asked_for_other_team = client.get("/api/v1/tasks?team=nlp", headers=alice)

    assert [task["id"] for task in listed["tasks"]] == sorted(mine, reverse=True)
    assert listed["count"] == 2
    assert asked_for_other_team.status_code == 403  # not her own tasks in their place


def test_an_admin_asking_for_a_team_that_does_not_exist_gets_a_404(client, make_identity):
    _, admin_token = make_identity("root", "ops", admin=True)

    response = client.get("/api/v1/tasks?team=nosuchteam", headers=bearer(admin_token))

    assert response.status_code == 404 and "team 'nosuchteam' not found" in response.text


def test_an_admin_sees_every_team_and_can_filter_by_team(client, alice, make_identity):
    _, bob_token = make_identity("bob", "nlp")
    _, admin_token = make_identity("root", "ops", admin=True)
    mine = _submit(client, alice)
    theirs = _submit(client, bearer(bob_token))

    everything = client.get("/api/v1/tasks", headers=bearer(admin_token)).json()
    only_nlp = client.get("/api/v1/tasks", params={"team": "nlp"}, headers=bearer(admin_token)).json()

    assert {task["id"] for task in everything["tasks"]} == {mine, theirs}
    assert [task["id"] for task in only_nlp["tasks"]] == [theirs]
    assert client.get(f"/api/v1/tasks/{theirs}", headers=bearer(admin_token)).status_code == 200


def test_the_list_filters_by_status(client, alice):
    kept = _submit(client, alice)
    dropped = _submit(client, alice)
    client.post(f"/api/v1/tasks/{dropped}/cancel", headers=alice)

    queued = client.get("/api/v1/tasks", params={"status": "queued"}, headers=alice).json()
    bad = client.get("/api/v1/tasks", params={"status": "done"}, headers=alice)

    assert [task["id"] for task in queued["tasks"]] == [kept]
    assert bad.status_code == 422
    assert "status" in bad.json()["detail"]


def test_the_list_filters_by_user_within_what_the_caller_may_see(client, alice, make_identity):
    _, carol_token = make_identity("carol", "vision")
    _, bob_token = make_identity("bob", "nlp")
    _, admin_token = make_identity("root", "ops", admin=True)
    alices = [_submit(client, alice) for _ in range(2)]
    carols = _submit(client, bearer(carol_token))
    bobs = _submit(client, bearer(bob_token))

    def ids(query: str, token: str | None = None) -> list[int]:
        headers = bearer(token) if token else alice
        return [task["id"] for task in client.get(f"/api/v1/tasks?{query}", headers=headers).json()["tasks"]]

    other_team = client.get("/api/v1/tasks?user=bob", headers=alice)
    nobody = client.get("/api/v1/tasks?user=nobody", headers=alice)
    nobody_for_admin = client.get("/api/v1/tasks?user=nobody", headers=bearer(admin_token))

    assert ids("user=alice") == sorted(alices, reverse=True)
    assert ids("user=carol", carol_token) == [carols]
    assert ids("user=alice&status=succeeded") == []
    assert ids("user=bob", admin_token) == [bobs]
    # bob exists, in another team: answered as a user who does not exist, in the same words
    assert other_team.status_code == nobody.status_code == 404
    assert other_team.json()["detail"] == "no user 'bob' in team vision"
    assert nobody.json()["detail"] == "no user 'nobody' in team vision"
    assert nobody_for_admin.status_code == 404 and nobody_for_admin.json()["detail"] == "no user 'nobody'"
