"""A sweep (or batch) that runs at most N of its tasks at once (`max_running`, Slurm's `--array=0-99%4`):
only N are in Redis at a time; the others wait for a slot, queued in SQL and in Redis nowhere."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import update

from scheduler.dispatcher import Dispatcher
from scheduler.service import Cluster
from scheduler.store.tables import Task
from tests.conftest import wait_until

SIX = {"i": [0, 1, 2, 3, 4, 5]}


def _submit(client, headers: dict[str, str], max_running: int | None = 2, **extra: Any) -> dict[str, Any]:
    spec = {"command": "python train.py --seed {i}", "gpus": 1, "sweep": SIX, **extra}
    if max_running is not None:
        spec["max_running"] = max_running
    response = client.post("/api/v1/sweeps", json=spec, headers=headers)
    assert response.status_code == 201, response.text
    return dict(response.json())


def _ids(sweep: dict[str, Any]) -> list[int]:
    return [task["id"] for task in sweep["tasks"]]


def _in_redis(cluster: Cluster) -> set[int]:
    return set(cluster.queue.queued_ids())


def _waiting(cluster: Cluster, ids: list[int]) -> list[int]:
    rows = cluster.tasks.by_ids(ids)
    return [i for i in ids if rows[i].waits_for_slot and rows[i].status == "queued"]


def _claim(cluster: Cluster, task_id: int, token: str) -> None:
    """What a worker's claim does to SQL and the queue: the task runs under `token`."""
    cluster.queue.remove(task_id)
    assert cluster.tasks.mark_running(task_id, token, "node-a", [0]) is not None


def _overlap(lines: list[str]) -> int:
    """The most jobs running at once, from `start`/`end` lines in the order they were written."""
    running = most = 0
    for line in lines:
        running += 1 if line.startswith("start") else -1
        most = max(most, running)
    return most


def test_six_tasks_limited_to_two_never_run_more_than_two_at_once_and_all_finish(
    client, running_cluster, alice, tmp_path: Path
):
    trace = tmp_path / "trace.txt"
    command = f"echo start {{i}} >> {trace}; sleep 0.4; echo end {{i}} >> {trace}"
    sweep = _submit(client, alice, command=command)

    done = wait_until(lambda: running_cluster.tasks.count_by_status() == {"succeeded": 6}, timeout_s=60.0)

    assert done
    lines = trace.read_text().splitlines()
    assert len(lines) == 12
    assert _overlap(lines) <= 2, lines
    assert client.get(f"/api/v1/sweeps/{sweep['id']}", headers=alice).json()["waiting"] == 0


def test_the_waiting_tasks_are_in_redis_nowhere_and_explain_says_why(client, cluster, four_gpu_node, alice):
    sweep = _submit(client, alice)
    ids = _ids(sweep)

    assert _in_redis(cluster) == set(ids[:2])
    assert _waiting(cluster, ids) == ids[2:]
    assert [task["waits_for_slot"] for task in sweep["tasks"]] == [False, False, True, True, True, True]
    view = client.get(f"/api/v1/sweeps/{sweep['id']}", headers=alice).json()
    assert (view["max_running"], view["waiting"], view["counts"]) == (2, 4, {"queued": 6})
    explained = client.get(f"/api/v1/tasks/{ids[4]}/explain", headers=alice).json()
    assert explained["position"] is None
    assert explained["reason"] == f"waiting for a slot: sweep {sweep['id']} runs at most 2 at a time"
    admitted = client.get(f"/api/v1/tasks/{ids[0]}/explain", headers=alice).json()
    assert "waiting for a slot" not in admitted["reason"]


def test_raising_the_limit_admits_more_at_once_and_lowering_it_stops_nothing(
    client, cluster, four_gpu_node, alice
):
    sweep = _submit(client, alice)
    ids, url = _ids(sweep), f"/api/v1/sweeps/{sweep['id']}"

    raised = client.patch(url, json={"max_running": 4}, headers=alice)
    assert raised.status_code == 200, raised.text
    assert (raised.json()["max_running"], raised.json()["waiting"]) == (4, 2)
    assert _in_redis(cluster) == set(ids[:4])

    lowered = client.patch(url, json={"max_running": 1}, headers=alice).json()
    assert (lowered["max_running"], lowered["waiting"]) == (1, 2)
    assert _in_redis(cluster) == set(ids[:4])  # already admitted: it applies as tasks end
    client.post(f"/api/v1/tasks/{ids[0]}/cancel", headers=alice)
    assert _in_redis(cluster) == set(ids[1:4])  # 3 admitted > 1: the freed slot is not handed on

    lifted = client.patch(url, json={"max_running": None}, headers=alice).json()
    assert (lifted["max_running"], lifted["waiting"]) == (None, 0)
    assert _in_redis(cluster) == set(ids[1:])


def test_cancelling_a_queued_admitted_task_admits_the_next(client, cluster, four_gpu_node, alice):
    ids = _ids(_submit(client, alice))

    client.post(f"/api/v1/tasks/{ids[1]}/cancel", headers=alice)
    client.post(f"/api/v1/tasks/{ids[4]}/cancel", headers=alice)  # a waiting one: frees no slot

    assert _in_redis(cluster) == {ids[0], ids[2]}
    assert _waiting(cluster, ids) == [ids[3], ids[5]]


def test_hold_gives_the_slot_away_and_release_waits_for_a_free_one(client, cluster, four_gpu_node, alice):
    ids = _ids(_submit(client, alice))

    client.post(f"/api/v1/tasks/{ids[0]}/hold", headers=alice)
    assert _in_redis(cluster) == {ids[1], ids[2]}

    released = client.post(f"/api/v1/tasks/{ids[0]}/release", headers=alice).json()
    assert released["waits_for_slot"] is True  # no slot free: it waits for one
    assert _in_redis(cluster) == {ids[1], ids[2]}

    client.post(f"/api/v1/tasks/{ids[2]}/cancel", headers=alice)
    assert _in_redis(cluster) == {ids[0], ids[1]}  # the lowest id waiting takes the slot

    client.post(f"/api/v1/tasks/{ids[1]}/hold", headers=alice)
    client.post(f"/api/v1/tasks/{ids[3]}/cancel", headers=alice)  # frees nothing; ids[4] took ids[1]'s slot
    client.post(f"/api/v1/tasks/{ids[4]}/cancel", headers=alice)
    assert _in_redis(cluster) == {ids[0], ids[5]}
    released = client.post(f"/api/v1/tasks/{ids[1]}/release", headers=alice).json()
    assert released["waits_for_slot"] is True
    client.post(f"/api/v1/tasks/{ids[5]}/cancel", headers=alice)
    assert _in_redis(cluster) == {ids[0], ids[1]}


def test_hold_and_release_of_the_whole_sweep_keep_the_limit(client, cluster, four_gpu_node, alice):
    sweep = _submit(client, alice)
    ids, url = _ids(sweep), f"/api/v1/sweeps/{sweep['id']}"

    held = client.post(f"{url}/hold", headers=alice).json()
    assert (held["held"], _in_redis(cluster)) == (6, set())
    released = client.post(f"{url}/release", headers=alice).json()

    assert (released["held"], released["waiting"]) == (0, 4)
    assert _in_redis(cluster) == set(ids[:2])


def test_a_retried_task_keeps_its_slot_and_an_ending_hands_it_on(client, cluster, four_gpu_node, alice):
    ids = _ids(_submit(client, alice, retries=1))
    _claim(cluster, ids[0], "t-0")
    _claim(cluster, ids[1], "t-1")

    assert cluster.settle_attempt(ids[0], "t-0", "nonzero_exit", exit_code=1) == "queued"
    assert _in_redis(cluster) == {ids[0]}  # back in the queue, in its own slot
    assert _waiting(cluster, ids) == ids[2:]

    assert cluster.settle_attempt(ids[1], "t-1", "exit", exit_code=0) == "succeeded"
    assert _in_redis(cluster) == {ids[0], ids[2]}
    _claim(cluster, ids[0], "t-0b")
    assert cluster.settle_attempt(ids[0], "t-0b", "nonzero_exit", exit_code=1) == "failed"
    assert _in_redis(cluster) == {ids[2], ids[3]}


def test_a_batch_takes_max_running_beside_its_name(client, cluster, four_gpu_node, alice):
    specs = [{"command": f"python eval.py --part {n}", "gpus": 1} for n in range(3)]

    response = client.post("/api/v1/tasks/batch", json={"specs": specs, "max_running": 1}, headers=alice)
    per_spec = client.post(
        "/api/v1/tasks/batch", json={"specs": [{**specs[0], "max_running": 1}]}, headers=alice
    )

    assert response.status_code == 201, response.text
    batch = response.json()
    assert (batch["max_running"], batch["waiting"]) == (1, 2)
    assert _in_redis(cluster) == {batch["tasks"][0]["id"]}
    assert per_spec.status_code == 422 and "once for the whole batch" in per_spec.json()["detail"]


def test_max_running_on_a_single_task_or_out_of_range_is_a_422(client, cluster, four_gpu_node, alice):
    single = client.post("/api/v1/tasks", json={"command": "true", "max_running": 2}, headers=alice)
    assert single.status_code == 422, single.text
    assert re.search(r"limits how many of a sweep's tasks.*beside `sweep`", single.json()["detail"])
    for bad in (0, 10_001, "many", 2.5, True):
        body = {"command": "x {i}", "gpus": 1, "sweep": SIX, "max_running": bad}
        assert client.post("/api/v1/sweeps", json=body, headers=alice).status_code == 422, bad
    sweep = _submit(client, alice)
    for bad in (0, 10_001, "many", 2.5, True, [3]):
        patched = client.patch(f"/api/v1/sweeps/{sweep['id']}", json={"max_running": bad}, headers=alice)
        assert patched.status_code == 422, (bad, patched.text)
        assert "max_running must be a whole number from 1 to 10000" in patched.json()["detail"]
    assert cluster.tasks.count_by_status() == {"queued": 6}


def test_rebuild_and_reconcile_leave_waiting_tasks_out(client, cluster, four_gpu_node, alice):
    ids = _ids(_submit(client, alice))
    dispatcher = Dispatcher(cluster)

    assert dispatcher._redis_suspects(None) == set()
    cluster.queue.client.flushall()
    report = cluster.rebuild_redis()

    assert report.queued_restored == 2
    assert _in_redis(cluster) == set(ids[:2])
    assert dispatcher._redis_suspects(None) == set()


def test_a_task_admitted_in_sql_but_never_enqueued_is_restored(client, cluster, four_gpu_node, alice):
    sweep = _submit(client, alice)
    ids = _ids(sweep)
    cluster.sweeps.set_max_running(sweep["id"], 3)
    assert [task.id for task in cluster.sweeps.admit_waiting(sweep["id"])] == [ids[2]]  # then a crash
    dispatcher = Dispatcher(cluster)

    assert dispatcher._redis_suspects(None) == {ids[2]}
    cluster.rebuild_redis()

    assert _in_redis(cluster) == set(ids[:3])


def test_a_raised_limit_whose_admission_never_ran_is_admitted_by_the_rebuild(
    client, cluster, four_gpu_node, alice
):
    sweep = _submit(client, alice)
    ids = _ids(sweep)
    cluster.sweeps.set_max_running(sweep["id"], 4)  # the process died before admitting

    cluster.rebuild_redis()

    assert _in_redis(cluster) == set(ids[:4])
    assert _waiting(cluster, ids) == ids[4:]


def test_the_minute_check_admits_into_a_slot_an_ending_left_free(client, cluster, four_gpu_node, alice):
    # Given a sweep limited to 2 whose admitted task ended in SQL, and the process died before admitting
    sweep = _submit(client, alice)
    ids = _ids(sweep)
    with cluster.factory.begin() as session:
        session.execute(update(Task).where(Task.id == ids[0]).values(status="cancelled"))
    cluster.queue.remove(ids[0])
    dispatcher = Dispatcher(cluster)
    assert dispatcher._redis_suspects(None) == set()  # nothing is lost: the rebuild would not run

    # When the scheduler's minute check runs
    dispatcher._reconcile_redis(-1e9)

    # Then the next waiting task has the slot
    assert _in_redis(cluster) == {ids[1], ids[2]}
    assert _waiting(cluster, ids) == ids[3:]


def test_max_running_on_one_task_of_a_sweep_says_to_change_it_on_the_sweep(
    client, cluster, four_gpu_node, alice
):
    one = _ids(_submit(client, alice))[0]

    refused = client.patch(f"/api/v1/tasks/{one}", json={"max_running": 4}, headers=alice)

    assert refused.status_code == 422
    assert "change it on the sweep, PATCH /api/v1/sweeps/{id}" in refused.json()["detail"]


def _start_of(client, headers: dict[str, str], task_id: int) -> datetime:
    explained = client.get(f"/api/v1/tasks/{task_id}/explain", headers=headers).json()
    assert explained["estimated_start"] is not None, explained
    return datetime.fromisoformat(explained["estimated_start"])


def test_a_task_waiting_for_a_slot_gets_a_start_when_the_slots_before_it_free(
    client, cluster, four_gpu_node, alice
):
    # Given six 1-h tasks, two at a time, on four free GPUs: the first two run, the others wait for slots
    sweep = _submit(client, alice, estimated_minutes=60)
    ids = _ids(sweep)
    _claim(cluster, ids[0], "token-0")
    now = datetime.now(UTC)

    # Then each waiting pair starts an hour after the pair before it (not at once, though GPUs are free)
    starts = [_start_of(client, alice, task_id) for task_id in ids[2:]]
    hours = [(start - now).total_seconds() / 3600 for start in starts]
    assert [round(h) for h in hours] == [1, 1, 2, 2], hours
    explained = client.get(f"/api/v1/tasks/{ids[5]}/explain", headers=alice).json()
    assert explained["reason"] == f"waiting for a slot: sweep {sweep['id']} runs at most 2 at a time"
    end = datetime.fromisoformat(explained["estimated_end"])
    assert round((end - now).total_seconds() / 3600) == 3
    assert (
        explained["estimated_start_low"] <= explained["estimated_start"] <= explained["estimated_start_high"]
    )


def test_with_the_limit_lowered_below_what_runs_the_first_slot_frees_after_enough_endings(
    client, cluster, four_gpu_node, alice
):
    # Given a sweep's two running tasks, of 1 h and 3 h, and its limit then lowered to one
    sweep = _submit(client, alice, max_running=2, estimated_minutes=60)
    ids = _ids(sweep)
    longer = cluster.tasks.by_ids([ids[1]])[ids[1]]
    with cluster.factory() as session, session.begin():
        session.execute(
            update(Task).where(Task.id == ids[1]).values(spec={**longer.spec, "estimated_minutes": 180})
        )
    _claim(cluster, ids[0], "token-0")
    _claim(cluster, ids[1], "token-1")
    lowered = client.patch(f"/api/v1/sweeps/{sweep['id']}", json={"max_running": 1}, headers=alice)
    assert lowered.status_code == 200, lowered.text
    now = datetime.now(UTC)

    # Then the first waiting task starts when both have ended (one slot, two holders), not after the first
    hours = (_start_of(client, alice, ids[2]) - now).total_seconds() / 3600
    assert round(hours) == 3, hours
