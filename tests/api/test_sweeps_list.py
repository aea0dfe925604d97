"""`GET /sweeps`: the team's sweeps newest first with their tasks counted; another team's never; an admin's
every team's or one `team`'s; `user` narrows to one person, `status` to the sweeps the list reports in it;
`offset` pages on and `total` counts every match, as `GET /tasks` does; bad query values answer 4xx with
what to fix."""

from __future__ import annotations

from sqlalchemy import event, update

from scheduler.store.tables import Task
from tests.api.conftest import bearer

GRID = {"lr": [0.1, 0.01, 0.001]}


def _sweep(client, headers: dict[str, str], name: str) -> dict[str, object]:
    """A three-task sweep submitted by `headers`' user; the API's answer."""
    spec = {"command": "python train.py --lr {lr}", "gpus": 0, "name": name, "sweep": GRID}
    response = client.post("/api/v1/sweeps", json=spec, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()


def _page(client, headers: dict[str, str], **params: object) -> tuple[list[int], int, int]:
    """(ids, count, total) of `GET /sweeps` with these query parameters."""
    response = client.get("/api/v1/sweeps", params=params, headers=headers)
    assert response.status_code == 200, response.text
    body = response.json()
    return [sweep["id"] for sweep in body["sweeps"]], body["count"], body["total"]


def _listed(client, headers: dict[str, str], **params: object) -> list[dict[str, object]]:
    response = client.get("/api/v1/sweeps", params=params, headers=headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["count"] == len(body["sweeps"])
    return body["sweeps"]


def _set_status(cluster, task_ids: list[int], status: str) -> None:
    """These tasks' status, set in SQL (as their ending would leave it)."""
    with cluster.factory.begin() as session:
        session.execute(update(Task).where(Task.id.in_(task_ids)).values(status=status))


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


def test_offset_pages_on_and_total_counts_every_match(client, alice):
    made = [_sweep(client, alice, f"s{number}")["id"] for number in range(5)]

    assert _page(client, alice) == (made[::-1], 5, 5)
    assert _page(client, alice, limit=2) == ([made[4], made[3]], 2, 5)
    assert _page(client, alice, limit=2, offset=2) == ([made[2], made[1]], 2, 5)
    assert _page(client, alice, limit=2, offset=4) == ([made[0]], 1, 5)
    assert _page(client, alice, limit=2, offset=10) == ([], 0, 5)  # past the end: still counted


def test_status_keeps_the_sweeps_the_list_reports_in_it(client, cluster, alice, make_identity):
    # Given a sweep in each status: one left queued, one with a task running, one ended, one cancelled
    queued, running, done, cancelled = (_sweep(client, alice, name) for name in ("q", "r", "d", "c"))
    ids = {sweep["name"]: [task["id"] for task in sweep["tasks"]] for sweep in (running, done, cancelled)}
    _set_status(cluster, ids["r"][:1], "running")
    _set_status(cluster, ids["d"][:2], "succeeded")
    _set_status(cluster, ids["d"][2:], "cancelled")  # ended, one cancelled among them: done
    client.post(f"/api/v1/sweeps/{cancelled['id']}/cancel", headers=alice)
    expected = {"queued": queued, "running": running, "done": done, "cancelled": cancelled}

    for status, sweep in expected.items():
        # When the sweeps in one status are listed
        listed = _listed(client, alice, status=status)

        # Then the one sweep in it is, with that status, and counted alone
        assert [(found["id"], found["status"]) for found in listed] == [(sweep["id"], status)], status
        assert _page(client, alice, status=status)[1:] == (1, 1)
    bobs = _sweep(client, bearer(make_identity("bob", "vision")[1]), "b")
    _set_status(cluster, [task["id"] for task in bobs["tasks"]], "failed")
    assert _page(client, alice, status="done") == ([bobs["id"], done["id"]], 2, 2)
    assert _page(client, alice, status="done", user="alice") == ([done["id"]], 1, 1)  # the filters combine


def test_an_unknown_status_is_refused_with_the_known_ones(client, alice):
    response = client.get("/api/v1/sweeps", params={"status": "active"}, headers=alice)

    assert response.status_code == 422, response.text
    assert "status" in response.text
    assert "'queued', 'running', 'done' or 'cancelled'" in response.text


def test_team_narrows_an_admins_list_and_a_member_asking_for_another_is_refused_as_for_tasks(
    client, make_identity
):
    alice = bearer(make_identity("alice", "vision")[1])
    carol = bearer(make_identity("carol", "nlp")[1])
    root = bearer(make_identity("root", "ops", admin=True)[1])
    mine, theirs = _sweep(client, alice, "a")["id"], _sweep(client, carol, "c")["id"]

    assert _page(client, root, team="nlp") == ([theirs], 1, 1)
    assert _page(client, root, team="vision", status="queued") == ([mine], 1, 1)
    assert _page(client, alice, team="vision") == ([mine], 1, 1)  # one's own team: as without `team`
    for team in ("nlp", "nosuch"):
        other = client.get("/api/v1/sweeps", params={"team": team}, headers=alice)
        tasks = client.get("/api/v1/tasks", params={"team": team}, headers=alice)
        assert other.status_code == tasks.status_code == 403, other.text
        said = other.json()["detail"]
        assert (
            said
            == "you can see only your own team's sweeps (team vision); only admins may list another team's"
        )
        assert said.replace("sweeps", "tasks") == tasks.json()["detail"]
    nosuch = client.get("/api/v1/sweeps", params={"team": "nosuch"}, headers=root)
    assert nosuch.status_code == 404 and "team 'nosuch' not found" in nosuch.text


def test_a_bad_offset_is_refused_with_what_to_fix(client, alice):
    for value, words in (("-1", "greater than or equal to 0"), ("next", "integer")):
        response = client.get("/api/v1/sweeps", params={"offset": value}, headers=alice)

        assert response.status_code == 422, response.text
        assert "offset" in response.text and words in response.text
