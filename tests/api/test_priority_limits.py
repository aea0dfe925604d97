"""`priority_limits` ({urgent = 2}): how many tasks of a class one person may have queued or running at
once, checked on every way in (submit, sweep, change, a sweep's change); a refused request changes nothing
and says what to do; admins are exempt."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from api.main import create_app
from scheduler.batches import rerun_sweep, submit_group
from scheduler.errors import SpecError
from scheduler.spec import TaskSpec, parse_spec
from scheduler.store.identity import authenticate, create_token
from tests.api.conftest import TestClient, bearer
from tests.conftest import opened_cluster


def _post(client, path: str, spec: dict[str, Any], token: dict[str, str]) -> Any:
    return client.post(path, json={"command": "true", "gpus": 0, **spec}, headers=token)


def test_a_person_has_at_most_the_limit_of_urgent_tasks_however_they_ask(make_cluster):
    cluster = make_cluster(priority_limits={"urgent": 2})
    alice = bearer(create_token(cluster.factory, user="alice", team="vision"))
    bob = bearer(create_token(cluster.factory, user="bob", team="vision"))
    admin = bearer(create_token(cluster.factory, user="root", team="admins", is_admin=True))
    with TestClient(create_app(cluster)) as client:
        first, second = (
            _post(client, "/api/v1/tasks", {"priority": "urgent"}, alice).json() for _ in range(2)
        )
        third = _post(client, "/api/v1/tasks", {"priority": "urgent"}, alice)
        normal = _post(client, "/api/v1/tasks", {}, alice).json()
        raised = client.patch(f"/api/v1/tasks/{normal['id']}", json={"priority": "urgent"}, headers=alice)
        sweep = _post(client, "/api/v1/sweeps", {"command": "t {x}", "sweep": {"x": [1, 2, 3]}}, bob).json()
        bobs_raise = client.patch(f"/api/v1/sweeps/{sweep['id']}", json={"priority": "urgent"}, headers=bob)
        bobs_urgent_sweep = _post(
            client,
            "/api/v1/sweeps",
            {"command": "t {x}", "sweep": {"x": [1, 2, 3]}, "priority": "urgent"},
            bob,
        )
        admins = [_post(client, "/api/v1/tasks", {"priority": "urgent"}, admin).status_code for _ in range(3)]
        client.post(f"/api/v1/tasks/{first['id']}/cancel", headers=alice)
        raised_after = client.patch(
            f"/api/v1/tasks/{normal['id']}", json={"priority": "urgent"}, headers=alice
        )

    assert third.status_code == 422
    assert third.json()["detail"] == (
        f"alice has 2 urgent tasks queued or running ({first['id']}, {second['id']}) and this would add 1: "
        "at most 2 per person. Ask for a lower priority, or wait until one ends"
    )
    assert normal["priority"] == "normal"  # other classes are not limited
    assert raised.status_code == 422 and "alice has 2 urgent tasks" in raised.json()["detail"]
    assert bobs_raise.status_code == 422
    assert "bob has 0 urgent tasks queued or running and this would add 3" in bobs_raise.json()["detail"]
    assert {task.priority for task in cluster.tasks.with_status("queued") if task.user.name == "bob"} == {
        "normal"
    }
    assert bobs_urgent_sweep.status_code == 422 and "would add 3" in bobs_urgent_sweep.json()["detail"]
    assert admins == [201, 201, 201]
    assert raised_after.status_code == 200 and raised_after.json()["priority"] == "urgent"


def test_a_change_checked_with_dry_run_says_what_the_change_would_and_changes_nothing(make_cluster):
    cluster = make_cluster(priority_limits={"urgent": 1})
    alice = bearer(create_token(cluster.factory, user="alice", team="vision"))
    with TestClient(create_app(cluster)) as client:
        task = _post(client, "/api/v1/tasks", {"time_limit_minutes": 60}, alice).json()
        path = f"/api/v1/tasks/{task['id']}"
        would = client.patch(path, params={"dry_run": "true"}, json={"priority": "urgent"}, headers=alice)
        after_dry_run = client.get(path, headers=alice).json()
        _post(client, "/api/v1/tasks", {"priority": "urgent"}, alice)
        refused = client.patch(path, params={"dry_run": "true"}, json={"priority": "urgent"}, headers=alice)
        not_editable = client.patch(path, params={"dry_run": "true"}, json={"gpus": 2}, headers=alice)

    assert would.status_code == 200, would.text
    assert would.json()["priority"] == "urgent" and would.json()["spec"]["priority"] == "urgent"
    assert after_dry_run["priority"] == "normal" and after_dry_run["spec"].get("priority") in (None, "normal")
    assert (
        refused.status_code == 422 and "alice has 1 urgent task queued or running" in refused.json()["detail"]
    )
    assert not_editable.status_code == 422


def test_a_sweeps_change_checked_with_dry_run_makes_every_check_and_changes_nothing(make_cluster):
    cluster = make_cluster(priority_limits={"urgent": 2})
    alice = bearer(create_token(cluster.factory, user="alice", team="vision"))
    with TestClient(create_app(cluster)) as client:
        small = _post(client, "/api/v1/sweeps", {"command": "t {x}", "sweep": {"x": [1, 2]}}, alice).json()
        large = _post(client, "/api/v1/sweeps", {"command": "t {x}", "sweep": {"x": [1, 2, 3]}}, alice).json()
        path = f"/api/v1/sweeps/{small['id']}"
        would = client.patch(path, params={"dry_run": "true"}, json={"priority": "urgent"}, headers=alice)
        too_many = client.patch(
            f"/api/v1/sweeps/{large['id']}",
            params={"dry_run": "true"},
            json={"priority": "urgent"},
            headers=alice,
        )
        limit_only = client.patch(path, params={"dry_run": "true"}, json={"max_running": 0}, headers=alice)
        after = client.get(path, headers=alice).json()

    assert would.status_code == 200, would.text
    assert (
        too_many.status_code == 422 and "this would add 3: at most 2 per person" in too_many.json()["detail"]
    )
    assert limit_only.status_code == 422  # max_running is checked too
    assert {task["priority"] for task in after["tasks"]} == {"normal"} and after["max_running"] is None
    assert {task.priority for task in cluster.tasks.with_status("queued")} == {"normal"}


def test_a_sweeps_change_one_of_its_tasks_refuses_changes_none_of_them(make_cluster):
    cluster = make_cluster()
    alice = bearer(create_token(cluster.factory, user="alice", team="vision"))
    with TestClient(create_app(cluster)) as client:
        sweep = _post(client, "/api/v1/sweeps", {"command": "t {x}", "sweep": {"x": [1, 2, 3]}}, alice).json()
        ids = [task["id"] for task in sweep["tasks"]]
        # each task is to wait for the last one: the last would wait for itself
        looped = client.patch(f"/api/v1/sweeps/{sweep['id']}", json={"depends_on": [ids[-1]]}, headers=alice)
        checked = client.patch(
            f"/api/v1/sweeps/{sweep['id']}",
            params={"dry_run": "true"},
            json={"depends_on": [ids[-1]]},
            headers=alice,
        )

    assert looped.status_code in (409, 422), looped.text
    assert checked.status_code == looped.status_code
    assert [cluster.tasks.get_any(task_id).spec.get("depends_on") or [] for task_id in ids] == [[], [], []]


@pytest.mark.parametrize("threads", [8])
def test_submissions_racing_for_the_last_places_of_a_class_never_pass_its_limit(
    make_settings, redis_url, database_url, threads
):
    settings = make_settings(database_url=database_url, priority_limits={"urgent": 2})
    with opened_cluster(settings, redis_url) as cluster:
        who = authenticate(cluster.factory, create_token(cluster.factory, user="alice", team="vision"))
        start = threading.Barrier(threads)
        outcomes: list[str] = []

        def submit() -> None:
            start.wait()
            try:
                cluster.submit(who, {"command": "true", "gpus": 0, "priority": "urgent"})
                outcomes.append("created")
            except SpecError as refused:
                assert "at most 2 per person" in refused.message
                outcomes.append("refused")

        runners = [threading.Thread(target=submit) for _ in range(threads)]
        for runner in runners:
            runner.start()
        for runner in runners:
            runner.join(60)
        urgent = cluster.tasks.live_in_class(who.user_id, "urgent")

    assert sorted(outcomes) == ["created"] * 2 + ["refused"] * (threads - 2)
    assert len(urgent) == 2


def _race(threads: int, attempt: Callable[[int], None]) -> list[str]:
    """Run `attempt(i)` for i in range(threads) at once: "created" or "refused" (a priority limit) each."""
    start = threading.Barrier(threads)
    outcomes: list[str] = []

    def run(number: int) -> None:
        start.wait()
        try:
            attempt(number)
            outcomes.append("created")
        except SpecError as refused:
            assert "per person" in refused.message, refused.message
            outcomes.append("refused")

    runners = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for runner in runners:
        runner.start()
    for runner in runners:
        runner.join(60)
    return sorted(outcomes)


def _urgent(count: int) -> list[TaskSpec]:
    return [parse_spec({"command": f"echo {i}", "gpus": 0, "priority": "urgent"}) for i in range(count)]


def test_sweeps_racing_for_the_last_places_of_a_class_never_pass_its_limit(
    make_settings, redis_url, database_url
):
    settings = make_settings(database_url=database_url, priority_limits={"urgent": 4})
    with opened_cluster(settings, redis_url) as cluster:
        who = authenticate(cluster.factory, create_token(cluster.factory, user="alice", team="vision"))

        outcomes = _race(6, lambda _: submit_group(cluster, who, _urgent(2), "batch"))
        urgent = cluster.tasks.live_in_class(who.user_id, "urgent")

    assert outcomes == ["created"] * 2 + ["refused"] * 4
    assert len(urgent) == 4


def test_reruns_and_changes_racing_for_the_last_places_of_a_class_never_pass_its_limit(
    make_settings, redis_url, database_url
):
    settings = make_settings(database_url=database_url, priority_limits={"urgent": 2})
    with opened_cluster(settings, redis_url) as cluster:
        who = authenticate(cluster.factory, create_token(cluster.factory, user="alice", team="vision"))
        # two batches of two urgent tasks that failed: each rerun would bring two back
        batches = []
        for _ in range(2):
            batches.append(submit_group(cluster, who, _urgent(2), "batch")[0])
            for task in batches[-1].tasks:
                assert cluster.tasks.fail_queued(task.id, "nonzero_exit", "exit code 1")

        reruns = _race(2, lambda i: rerun_sweep(cluster, who, batches[i].sweep.id))
        after_reruns = cluster.tasks.live_in_class(who.user_id, "urgent")
        for task_id in after_reruns:
            cluster.cancel(who, task_id)
        normal = [cluster.submit(who, {"command": "true", "gpus": 0})[0].id for _ in range(5)]
        changes = _race(5, lambda i: cluster.update(who, normal[i], {"priority": "urgent"}))
        urgent = cluster.tasks.live_in_class(who.user_id, "urgent")
        in_queue = {task_id for task_id, _ in cluster.queue.head(100)}

    assert reruns == ["created", "refused"] and len(after_reruns) == 2
    assert changes == ["created"] * 2 + ["refused"] * 3 and len(urgent) == 2
    assert set(normal) <= in_queue  # a refused change leaves its task queued as it was
