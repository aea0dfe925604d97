"""A deadline an idle cluster would meet but the work queued ahead of the task would not: the submit and
change answers say so in `warnings`, and `/estimate` with a `deadline` says it before submitting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from scheduler.policy import reasons
from tests.conftest import wait_until

TASKS = "/api/v1/tasks"


def _occupy_every_gpu(client, alice, tmp_path) -> dict:
    """A running 4-GPU task expected to take 2 h: the node's every GPU is busy until then."""
    spec = {"command": "sleep 600", "gpus": 4, "estimated_minutes": 120, "workdir": str(tmp_path)}
    busy = client.post(TASKS, json=spec, headers=alice).json()
    wait_until(lambda: client.get(f"{TASKS}/{busy['id']}", headers=alice).json()["status"] == "running")
    return client.get(f"{TASKS}/{busy['id']}", headers=alice).json()


def _late_spec(tmp_path, deadline: datetime) -> dict:
    return {
        "command": "python eval.py",
        "gpus": 2,
        "estimated_minutes": 60,
        "deadline": deadline.isoformat(),
        "workdir": str(tmp_path),
    }


def test_a_submit_behind_busy_gpus_warns_that_it_should_end_after_its_deadline(
    client, alice, running_cluster, tmp_path
):
    busy = _occupy_every_gpu(client, alice, tmp_path)
    now = datetime.now(UTC)
    late = client.post(TASKS, json=_late_spec(tmp_path, now + timedelta(minutes=90)), headers=alice)
    in_time = client.post(TASKS, json=_late_spec(tmp_path, now + timedelta(hours=5)), headers=alice)
    client.post(f"{TASKS}/{busy['id']}/cancel", headers=alice)

    assert (late.status_code, late.json()["status"]) == (201, "queued")  # a goal, not a limit: accepted
    [warning] = late.json()["warnings"]
    # an idle cluster would end it in an hour; behind the 2-h task it starts when that should end
    started = datetime.fromisoformat(busy["started_at"].replace("Z", "+00:00"))
    start = started + timedelta(minutes=120)
    assert warning == reasons.queue_ends_after_deadline(
        start.timestamp(),
        (start + timedelta(minutes=60)).timestamp(),
        (now + timedelta(minutes=90)).timestamp(),
        datetime.now(UTC).timestamp(),
        "UTC",
    )
    assert in_time.json()["warnings"] == []


def test_estimate_with_a_deadline_says_before_submitting_what_the_submit_would_answer(
    client, alice, running_cluster, tmp_path
):
    busy = _occupy_every_gpu(client, alice, tmp_path)
    deadline = datetime.now(UTC) + timedelta(minutes=90)
    params = {"gpus": 2, "estimated_minutes": 60}
    asked = client.get("/api/v1/estimate", params={**params, "deadline": deadline.isoformat()}, headers=alice)
    without = client.get("/api/v1/estimate", params=params, headers=alice)
    submitted = client.post(TASKS, json=_late_spec(tmp_path, deadline), headers=alice)
    client.post(f"{TASKS}/{busy['id']}/cancel", headers=alice)

    assert asked.status_code == 200, asked.text
    warning = asked.json()["deadline_warning"]
    assert warning.startswith("with the work queued ahead of it, it should start around ")
    assert warning == submitted.json()["warnings"][0]  # the same words, the same forecast
    end = datetime.fromisoformat(asked.json()["end"])
    assert end == datetime.fromisoformat(asked.json()["start"]) + timedelta(minutes=60)
    assert without.json()["deadline_warning"] is None


def test_a_change_or_a_sweep_change_that_puts_the_deadline_behind_the_queue_is_warned(
    client, alice, running_cluster, tmp_path
):
    busy = _occupy_every_gpu(client, alice, tmp_path)
    far = datetime.now(UTC) + timedelta(hours=6)
    single = client.post(TASKS, json=_late_spec(tmp_path, far), headers=alice).json()
    sweep = client.post(
        "/api/v1/sweeps",
        json={**_late_spec(tmp_path, far), "command": "python eval.py --lr {lr}", "sweep": {"lr": [1, 2]}},
        headers=alice,
    ).json()
    soon = (datetime.now(UTC) + timedelta(minutes=90)).isoformat()

    changed = client.patch(f"{TASKS}/{single['id']}", json={"deadline": soon}, headers=alice)
    sweep_changed = client.patch(f"/api/v1/sweeps/{sweep['id']}", json={"deadline": soon}, headers=alice)
    client.post(f"{TASKS}/{busy['id']}/cancel", headers=alice)

    assert [single["warnings"], [task["warnings"] for task in sweep["tasks"]]] == [[], [[], []]]
    assert changed.status_code == 200, changed.text
    assert changed.json()["warnings"][0].startswith("with the work queued ahead of it")
    assert sweep_changed.status_code == 200, sweep_changed.text
    assert all(
        task["warnings"][0].startswith("with the work queued ahead of it")
        for task in sweep_changed.json()["tasks"]
    )


def test_a_held_task_gets_no_queue_forecast_and_an_idle_cluster_miss_keeps_its_plainer_note(
    client, alice, running_cluster, tmp_path
):
    busy = _occupy_every_gpu(client, alice, tmp_path)
    now = datetime.now(UTC)
    too_short = client.post(TASKS, json=_late_spec(tmp_path, now + timedelta(minutes=30)), headers=alice)
    held = client.post(TASKS, json=_late_spec(tmp_path, now + timedelta(hours=6)), headers=alice).json()
    client.post(f"{TASKS}/{held['id']}/hold", headers=alice)
    changed = client.patch(
        f"{TASKS}/{held['id']}", json={"deadline": (now + timedelta(minutes=90)).isoformat()}, headers=alice
    )
    client.post(f"{TASKS}/{busy['id']}/cancel", headers=alice)

    # an hour's estimate misses a 30-min deadline even on an idle cluster: that plainer why is said alone
    [note] = too_short.json()["warnings"]
    assert note.startswith("it cannot finish by its deadline ")
    # held: out of the queue, no forecast to speak of (explain says it is held)
    assert changed.status_code == 200 and changed.json()["warnings"] == []
