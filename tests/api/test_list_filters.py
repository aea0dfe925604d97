"""`GET /api/v1/tasks?since=&until=&name=&tag=&node=`: history search, as `sacct -S/-E --name` gives, with
`total` (how many match) beside `count` (the page's length). On SQLite and on PostgreSQL: tags are read
from the JSON spec by each database's own functions, and times are compared as each stores them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import update

from scheduler.batches import sweeps_of
from scheduler.service import Cluster
from scheduler.settings import Settings
from scheduler.store.identity import Identity
from scheduler.store.tables import Task
from tests.api.conftest import bearer
from tests.conftest import opened_cluster

ZONE = "Asia/Shanghai"  # UTC+8 all year: a time without an offset is 8 hours before the same one in UTC


@pytest.fixture
def cluster(make_settings: Callable[..., Settings], redis_url: str, database_url: str) -> Iterator[Cluster]:
    """The API tests' cluster, here on SQLite and on PostgreSQL, in a zone that is not UTC."""
    with opened_cluster(make_settings(database_url=database_url, timezone=ZONE), redis_url) as opened:
        yield opened


@pytest.fixture
def people(make_identity, four_gpu_node) -> dict[str, tuple[Identity, dict[str, str]]]:
    """alice and bob (team vision), carol (team nlp), root (an admin of team ops): identity, headers."""
    made = {
        "alice": make_identity("alice", "vision"),
        "bob": make_identity("bob", "vision"),
        "carol": make_identity("carol", "nlp"),
        "root": make_identity("root", "ops", admin=True),
    }
    return {name: (who, bearer(token)) for name, (who, token) in made.items()}


def _submit(cluster: Cluster, who: Identity, name: str, at: datetime | None = None, **spec: Any) -> int:
    """A queued task named `name`, submitted at `at` (its row's time set in SQL) when given."""
    task, _ = cluster.submit(who, {"command": f"python {name}", "name": name, "gpus": 0, **spec})
    if at is not None:
        with cluster.factory.begin() as session:
            session.execute(update(Task).where(Task.id == task.id).values(submitted_at=at))
    return task.id


def _list(client, headers: dict[str, str], **params: Any) -> tuple[list[int], int, int]:
    """(ids, count, total) of `GET /tasks` with these query parameters."""
    answer = client.get("/api/v1/tasks", params=params, headers=headers)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    return [task["id"] for task in body["tasks"]], body["count"], body["total"]


def _refused(client, headers: dict[str, str], **params: Any) -> str:
    """The message of a 422 answer to `GET /tasks` with these query parameters."""
    answer = client.get("/api/v1/tasks", params=params, headers=headers)
    assert answer.status_code == 422, answer.text
    return str(answer.json()["detail"])


def test_since_and_until_bound_the_submission_time_with_both_ends_included(client, cluster, people):
    alice, headers = people["alice"]
    monday = _submit(cluster, alice, "a.py", datetime(2026, 3, 2, 12, tzinfo=UTC))
    tuesday = _submit(cluster, alice, "b.py", datetime(2026, 3, 3, 12, tzinfo=UTC))
    wednesday = _submit(cluster, alice, "c.py", datetime(2026, 3, 4, 12, tzinfo=UTC))

    assert _list(client, headers, since="2026-03-03T12:00:00Z") == ([wednesday, tuesday], 2, 2)
    assert _list(client, headers, until="2026-03-03T12:00:00+00:00") == ([tuesday, monday], 2, 2)
    assert _list(client, headers, since="2026-03-03T20:00+08:00", until="2026-03-03T20:00+08:00") == (
        [tuesday],
        1,
        1,
    )
    assert _list(client, headers, since="2026-03-05") == ([], 0, 0)


def test_a_time_without_an_offset_is_read_in_the_clusters_zone(client, cluster, people):
    alice, headers = people["alice"]
    task = _submit(cluster, alice, "a.py", datetime(2026, 3, 2, 1, 30, tzinfo=UTC))  # 09:30 in Shanghai

    assert _list(client, headers, since="2026-03-02T09:00")[0] == [task]  # 01:00 UTC
    assert _list(client, headers, since="2026-03-02T09:00Z")[0] == []
    assert _list(client, headers, until="2026-03-02")[0] == []  # midnight in Shanghai: 16:00 UTC before
    assert _list(client, headers, since="2026-03-02", until="2026-03-03")[0] == [task]


def test_name_matches_exactly_or_as_a_prefix_with_a_trailing_star(client, cluster, people):
    alice, headers = people["alice"]
    train = _submit(cluster, alice, "train.py")
    train_big = _submit(cluster, alice, "train_big.py")
    train_x = _submit(cluster, alice, "trainXbig.py")
    _submit(cluster, alice, "Train.py")
    _submit(cluster, alice, "eval.py")

    assert _list(client, headers, name="train.py")[0] == [train]
    assert _list(client, headers, name="train*")[0] == [train_x, train_big, train]  # case counts
    # `_` and `%` are plain characters, not LIKE's wildcards
    assert _list(client, headers, name="train_*")[0] == [train_big]
    assert _list(client, headers, name="%*")[0] == []
    assert _list(client, headers, name="train")[0] == []  # no star: exact


def test_tag_finds_the_tasks_carrying_exactly_that_tag(client, cluster, people):
    alice, headers = people["alice"]
    tagged = _submit(cluster, alice, "a.py", tags=["baseline", "exp7"])
    _submit(cluster, alice, "b.py", tags=["exp70"])
    _submit(cluster, alice, "c.py", tags=["exp"])
    _submit(cluster, alice, "d.py")
    quoted = _submit(cluster, alice, "e.py", tags=['lr "small"', "a\\b"])

    assert _list(client, headers, tag="exp7") == ([tagged], 1, 1)
    assert _list(client, headers, tag='lr "small"')[0] == [quoted]
    assert _list(client, headers, tag="a\\b")[0] == [quoted]
    assert _list(client, headers, tag="nothing")[0] == []


def test_compare_by_tag_finds_a_tagged_task_behind_any_number_of_newer_untagged_ones(client, cluster, people):
    alice, headers = people["alice"]
    tagged = _submit(cluster, alice, "a.py", tags=["exp7"])
    for _ in range(12):  # the store once read only the newest 5 x limit rows and looked for the tag there
        _submit(cluster, alice, "b.py")
    newest = _submit(cluster, alice, "c.py", tags=["exp7"])

    found = [row.id for row in sweeps_of(cluster).tasks_with_tag(alice, "exp7", limit=2)]
    compared = client.get("/api/v1/results", params={"tag": "exp7"}, headers=headers)

    assert found == [tagged, newest]
    assert compared.status_code == 200, compared.text
    assert sorted(row["task_id"] for row in compared.json()["rows"]) == [tagged, newest]


def test_node_finds_the_tasks_that_ran_there_even_once(client, cluster, people):
    alice, headers = people["alice"]
    first, second, never = (_submit(cluster, alice, name) for name in ("a.py", "b.py", "c.py"))
    assert cluster.tasks.mark_running(first, "e-1", "node-a", [0])
    assert cluster.tasks.mark_running(second, "e-2", "node-b", [0])

    assert _list(client, headers, node="node-a")[0] == [first]
    assert _list(client, headers, node="node-b")[0] == [second]
    assert _list(client, headers, node="node-c")[0] == []
    assert never not in _list(client, headers, node="node-a")[0]


def test_filters_combine_and_total_counts_every_match_while_count_is_the_page(client, cluster, people):
    alice, headers = people["alice"]
    (bob, _) = people["bob"]
    old = datetime(2026, 1, 5, tzinfo=UTC)
    recent = [
        _submit(cluster, alice, "train.py", datetime(2026, 3, 2, 9, i, tzinfo=UTC), tags=["exp7"])
        for i in range(5)
    ]
    _submit(cluster, alice, "train.py", old, tags=["exp7"])  # before the window
    _submit(cluster, alice, "train.py", datetime(2026, 3, 2, 10, tzinfo=UTC))  # no tag
    _submit(cluster, bob, "train.py", datetime(2026, 3, 2, 10, tzinfo=UTC), tags=["exp7"])  # bob's
    query = {"name": "train.py", "tag": "exp7", "since": "2026-03-01T00:00:00Z", "user": "alice"}

    assert _list(client, headers, **query) == (recent[::-1], 5, 5)
    assert _list(client, headers, **query, limit=2) == ([recent[4], recent[3]], 2, 5)
    assert _list(client, headers, **query, limit=2, offset=4) == ([recent[0]], 1, 5)
    assert _list(client, headers, **query, limit=2, offset=10) == ([], 0, 5)  # past the end: still counted
    assert _list(client, headers, **query, status="running") == ([], 0, 0)
    assert _list(client, headers, limit=3)[1:] == (3, 8)  # no filter: the team's every task


def test_a_member_never_sees_another_teams_tasks_through_a_filter(client, cluster, people):
    alice, alice_headers = people["alice"]
    carol, carol_headers = people["carol"]
    _, root_headers = people["root"]
    mine = _submit(cluster, alice, "train.py", datetime(2026, 3, 2, tzinfo=UTC), tags=["exp7"])
    theirs = _submit(cluster, carol, "train.py", datetime(2026, 3, 2, tzinfo=UTC), tags=["exp7"])
    assert cluster.tasks.mark_running(mine, "e-1", "node-a", [0])
    assert cluster.tasks.mark_running(theirs, "e-2", "node-a", [1])
    everything = {"name": "train*", "tag": "exp7", "node": "node-a", "since": "2026-03-01", "limit": 1}

    assert _list(client, alice_headers, **everything) == ([mine], 1, 1)
    assert _list(client, carol_headers, **everything) == ([theirs], 1, 1)
    assert _list(client, root_headers, **everything) == ([theirs], 1, 2)  # an admin: every team's
    assert _list(client, root_headers, **everything, team="vision") == ([mine], 1, 1)
    refused = client.get("/api/v1/tasks", params={**everything, "team": "nlp"}, headers=alice_headers)
    assert refused.status_code == 403


@pytest.mark.parametrize(
    ("params", "said"),
    [
        ({"since": "2026-03-04", "until": "2026-03-02"}, "is after until"),
        ({"since": "2026-03-04T00:00+08:00", "until": "2026-03-03T15:30Z"}, "is after until"),
        ({"since": "monday"}, "since: cannot read 'monday' as a time: use ISO 8601, e.g. 2026-12-01"),
        ({"until": "2026-13-01"}, "until: cannot read '2026-13-01' as a time"),
        ({"since": "0001-01-01T00:00:00+05:00"}, "since: 0001-01-01T00:00:00+05:00 is out of range"),
        ({"until": "9999-12-31T23:00:00-05:00"}, "until: 9999-12-31T23:00:00-05:00 is out of range"),
        ({"name": "x" * 200}, "name"),
        ({"tag": "x" * 65}, "tag"),
        ({"node": "x" * 129}, "node"),
    ],
)
def test_bad_filters_are_refused_with_what_to_fix(client, people, params, said):
    _, headers = people["alice"]
    assert said in _refused(client, headers, **params)


def test_held_lists_only_the_tasks_held_back_and_false_the_others(client, cluster, people):
    alice, headers = people["alice"]
    bob, _ = people["bob"]
    held = _submit(cluster, alice, "a.py", not_before="2030-01-01T00:00:00Z")
    free = _submit(cluster, alice, "b.py", not_before="2030-01-01T00:00:00Z")
    teammates = _submit(cluster, bob, "c.py", not_before="2030-01-01T00:00:00Z")
    released = _submit(cluster, alice, "d.py", not_before="2030-01-01T00:00:00Z")
    for task_id in (held, teammates, released):
        cluster.hold(alice if task_id != teammates else bob, task_id)
    cluster.release(alice, released)
    carol, carols = people["carol"]
    _submit(cluster, carol, "e.py", not_before="2030-01-01T00:00:00Z")

    assert _list(client, headers, held="true") == ([teammates, held], 2, 2)
    assert _list(client, headers, held="false")[0] == [released, free]
    assert _list(client, headers, held="true", user="alice")[0] == [held]
    assert _list(client, carols, held="true") == ([], 0, 0)  # another team's held tasks are not seen
    assert client.get("/api/v1/tasks", params={"held": "maybe"}, headers=headers).status_code == 422


def test_sweep_id_lists_one_sweeps_tasks_of_a_status_and_no_other_teams(client, cluster, people):
    alice, headers = people["alice"]
    _, carols = people["carol"]
    later = "2030-01-01T00:00:00Z"
    body = {
        "command": "python train.py --lr {lr}",
        "gpus": 0,
        "sweep": {"lr": [0.1, 0.01]},
        "not_before": later,
    }
    sweep = client.post("/api/v1/sweeps", json=body, headers=headers).json()
    other = client.post("/api/v1/sweeps", json=body, headers=headers).json()
    _submit(cluster, alice, "alone.py", not_before=later)
    first, second = (task["id"] for task in sweep["tasks"])
    client.post(f"/api/v1/tasks/{first}/cancel", headers=headers)

    assert _list(client, headers, sweep_id=sweep["id"]) == ([second, first], 2, 2)
    assert _list(client, headers, sweep_id=sweep["id"], status="cancelled")[0] == [first]
    assert len(_list(client, headers, sweep_id=other["id"])[0]) == 2
    assert _list(client, carols, sweep_id=sweep["id"]) == ([], 0, 0)  # another team's sweep shows nothing
    assert client.get("/api/v1/tasks", params={"sweep_id": 0}, headers=headers).status_code == 422


def test_filters_left_empty_as_the_brief_writes_them_mean_no_filter(client, cluster, people):
    alice, headers = people["alice"]
    queued = _submit(cluster, alice, "train")
    _root, admin = people["root"]

    # `GET /tasks?status=&team=`: blank fields of a form
    blank = client.get("/api/v1/tasks?status=&team=", headers=headers)
    blank_admin = client.get("/api/v1/tasks?status=&team=&name=train&tag=&node=&user=", headers=admin)
    bogus = client.get("/api/v1/tasks?status=bogus", headers=headers)

    assert blank.status_code == 200, blank.text
    assert [task["id"] for task in blank.json()["tasks"]] == [queued]
    assert [task["id"] for task in blank_admin.json()["tasks"]] == [queued]  # the other filters still hold
    assert bogus.status_code == 422  # a value that is not a status is still refused
