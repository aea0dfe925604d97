"""`GET /sweeps`: the team's sweeps newest first with their tasks counted; another team's never; an admin's
every team's; `user` narrows to one person; bad query values answer 4xx with what to fix."""

from __future__ import annotations

from sqlalchemy import event

from tests.api.conftest import bearer

GRID = {"lr": [0.1, 0.01, 0.001]}


def _sweep(client, headers: dict[str, str], name: str) -> dict[str, object]:
    """A three-task sweep submitted by `headers`' user; the API's answer."""
    spec = {"command": "python train.py --lr {lr}", "gpus": 0, "name": name, "sweep": GRID}
    response = client.post("/api/v1/sweeps", json=spec, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()


def _listed(client, headers: dict[str, str], **params: object) -> list[dict[str, object]]:
    response = client.get("/api/v1/sweeps", params=params, headers=headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["count"] == len(body["sweeps"])
    return body["sweeps"]


def test_the_list_holds_the_teams_sweeps_newest_first_with_their_counts(client, cluster, make_identity):
    alice, bob = (bearer(make_identity(name, "vision")[1]) for name in ("alice", "bob"))
    carol = bearer(make_identity("carol", "nlp")[1])
    first = _sweep(client, alice, "morning")
    theirs = _sweep(client, carol, "nlp-run")
    second = _sweep(client, bob, "noon")
    ids = [task["id"] for task in first["tasks"]]  # type: ignore[index]
    client.post(f"/api/v1/tasks/{ids[0]}/cancel", headers=alice)
    client.post(f"/api/v1/tasks/{ids[1]}/hold", headers=alice)

    listed = _listed(client, alice)

    assert [sweep["id"] for sweep in listed] == [second["id"], first["id"]]  # carol's is absent
    morning = listed[1]
    assert (morning["name"], morning["user"], morning["team"], morning["kind"]) == (
        "morning",
        "alice",
        "vision",
        "sweep",
    )
    assert (morning["status"], morning["tasks_count"], morning["held"]) == ("queued", 3, 1)
    assert morning["counts"] == {"cancelled": 1, "queued": 2}
    assert (morning["first_task"], morning["last_task"]) == (ids[0], ids[-1])
    assert "tasks" not in morning
    assert listed[0]["counts"] == {"queued": 3} and listed[0]["user"] == "bob"
    assert [sweep["id"] for sweep in _listed(client, carol)] == [theirs["id"]]


def test_an_admin_sees_every_teams_sweeps_and_user_narrows_to_one_person(client, make_identity):
    alice, bob = (bearer(make_identity(name, "vision")[1]) for name in ("alice", "bob"))
    carol = bearer(make_identity("carol", "nlp")[1])
    root = bearer(make_identity("root", "ops", admin=True)[1])
    made = [_sweep(client, who, name) for who, name in ((alice, "a"), (carol, "c"), (bob, "b"))]

    assert [sweep["id"] for sweep in _listed(client, root)] == [s["id"] for s in reversed(made)]
    assert [sweep["id"] for sweep in _listed(client, alice, user="alice")] == [made[0]["id"]]
    assert [sweep["id"] for sweep in _listed(client, root, user="carol")] == [made[1]["id"]]
    assert [sweep["id"] for sweep in _listed(client, bob, limit=1)] == [made[2]["id"]]
    hidden = client.get("/api/v1/sweeps", params={"user": "carol"}, headers=alice)
    assert hidden.status_code == 404 and "no user 'carol' in team vision" in hidden.text


def test_a_bad_limit_is_refused_with_what_to_fix(client, alice):
    for value, words in (("0", "greater than or equal to 1"), ("5000", "1000"), ("many", "integer")):
        response = client.get("/api/v1/sweeps", params={"limit": value}, headers=alice)

        assert response.status_code == 422, response.text
        assert "limit" in response.text and words in response.text


def test_the_counts_of_many_sweeps_take_a_fixed_number_of_queries(client, cluster, alice):
    for number in range(6):
        _sweep(client, alice, f"s{number}")
    statements: list[str] = []
    engine = cluster.factory.kw["bind"]

    def count(*args: object) -> None:
        statements.append(str(args[2]))

    event.listen(engine, "before_cursor_execute", count)
    try:
        listed = _listed(client, alice)
    finally:
        event.remove(engine, "before_cursor_execute", count)

    assert len(listed) == 6 and all(sweep["counts"] == {"queued": 3} for sweep in listed)
    on_tasks = [sql for sql in statements if "FROM tasks" in sql]
    assert len(on_tasks) == 1, on_tasks
