"""`nightshift requeue` (POST /tasks/{id}/requeue, Slurm's `scontrol requeue`): a running task is stopped
(its stop signal, its grace period) and put back in the queue with its age, not counted against its
retries; its next attempt resumes from its checkpoint. Only a running task can be requeued."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from api.main import create_app
from assistant.agent import Assistant
from assistant.client import AssistantClient
from scheduler.store.identity import create_token
from tests.assistant.conftest import AppTransport, new_endpoints
from tests.cli.conftest import cli_as
from tests.conftest import wait_until

TRAIN = """\
if [ "$1" = "--resume" ]; then
  echo "attempt $NIGHTSHIFT_ATTEMPT resumed from step $(cat "$2")"
  exit 0
fi
mkdir -p "$NIGHTSHIFT_CHECKPOINT_DIR/ckpt"
trap 'echo "attempt $NIGHTSHIFT_ATTEMPT got TERM, saving"; echo 42 > "$NIGHTSHIFT_CHECKPOINT_DIR/ckpt/step42.pt"; exit 0' TERM
echo "attempt $NIGHTSHIFT_ATTEMPT training"
while true; do sleep 0.1; done
"""


def _status(cluster, task_id: int) -> str:
    return cluster.tasks.get_any(task_id).status


def test_a_requeued_task_stops_goes_back_to_the_queue_and_resumes_from_its_checkpoint(
    cluster, make_identity, start_worker, tmp_path: Path
):
    who, _ = make_identity("alice", "vision")
    # a lease that outlasts a loaded machine's stalls: one lost mid-save (the 5-s test lease, once, under the
    # full suite) kills the job before its checkpoint, and the retry then trains from scratch until the timeout
    cluster.settings.lease_ttl_s = 30.0
    start_worker()
    (tmp_path / "train.sh").write_text(TRAIN)
    spec = {
        "command": "sh train.sh",
        "workdir": str(tmp_path),
        "gpus": 1,
        "retries": 0,
        "resume_arg": "--resume {latest}",
        "checkpoint_glob": "ckpt/*.pt",
    }
    task, _ = cluster.submit(who, spec)
    log = cluster.log_path(task.id)
    wait_until(lambda: log.exists() and "attempt 1 training" in log.read_text())
    enqueued = cluster.tasks.get_any(task.id).enqueued_at

    asked = cluster.requeue(who, task.id)

    assert asked.status == "running"
    wait_until(lambda: _status(cluster, task.id) in ("succeeded", "failed", "cancelled"), timeout_s=60)
    row = cluster.tasks.get_any(task.id)
    assert (row.status, row.attempts_count) == ("succeeded", 2), (row.reason, row.message)
    assert [attempt.reason for attempt in cluster.tasks.attempts(task.id)] == ["requeued", "exit"]
    assert row.enqueued_at == enqueued  # its age is kept
    text = log.read_text()
    assert "attempt 1 got TERM, saving" in text and "attempt 2 resumed from step 42" in text
    assert f"==> nightshift task {task.id} attempt 1 ended: stopped and put back in the queue (" in text


def test_only_a_running_task_of_ones_team_is_requeued(cluster, make_identity, start_worker, tmp_path: Path):
    alice = create_token(cluster.factory, user="alice", team="vision")
    bob = create_token(cluster.factory, user="bob", team="nlp")
    headers = {"Authorization": f"Bearer {alice}"}
    with TestClient(create_app(cluster)) as client:
        later = client.post(
            "/api/v1/tasks",
            json={
                "command": "true",
                "gpus": 0,
                "not_before": "2030-01-01T00:00:00Z",
                "workdir": str(tmp_path),
            },
            headers=headers,
        ).json()
        queued = client.post(f"/api/v1/tasks/{later['id']}/requeue", headers=headers)
        start_worker()
        done = client.post(
            "/api/v1/tasks", json={"command": "true", "gpus": 0, "workdir": str(tmp_path)}, headers=headers
        ).json()
        wait_until(lambda: _status(cluster, done["id"]) == "succeeded")
        ended = client.post(f"/api/v1/tasks/{done['id']}/requeue", headers=headers)
        running = client.post(
            "/api/v1/tasks",
            json={"command": "sleep 30", "gpus": 0, "workdir": str(tmp_path)},
            headers=headers,
        ).json()
        wait_until(lambda: _status(cluster, running["id"]) == "running")
        other_team = client.post(
            f"/api/v1/tasks/{running['id']}/requeue", headers={"Authorization": f"Bearer {bob}"}
        )
        client.post(f"/api/v1/tasks/{running['id']}/cancel", headers=headers)
        being_cancelled = client.post(f"/api/v1/tasks/{running['id']}/requeue", headers=headers)

    assert queued.status_code == 409
    assert (
        queued.json()["detail"]
        == f"task {later['id']} is queued: only a running task can be put back in the queue"
    )
    assert (
        ended.status_code == 409
        and f"task {done['id']} already succeeded: only a running" in ended.json()["detail"]
    )
    assert other_team.status_code == 404
    assert being_cancelled.status_code == 409
    assert wait_until(lambda: _status(cluster, running["id"]) == "cancelled")


def test_nightshift_requeue_stops_a_running_task_and_says_where_it_goes(
    cluster, make_identity, start_worker, monkeypatch, tmp_path: Path
):
    _, token = make_identity("alice", "vision")
    start_worker()
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        submitted = json.loads(nightshift("submit", "--json", "--gpus", "0", "--", "sleep", "30").stdout)
        wait_until(lambda: _status(cluster, submitted["id"]) == "running")
        requeued = nightshift("requeue", str(submitted["id"]))
        wait_until(lambda: cluster.tasks.get_any(submitted["id"]).attempts_count == 2)
        twice = nightshift("requeue", str(submitted["id"]), "999999")
        nightshift("cancel", str(submitted["id"]))

    assert requeued.exit_code == 0, requeued.output
    assert f"task {submitted['id']} stopping on node-a" in requeued.output
    assert "it goes back to the queue with its age" in " ".join(requeued.output.split())
    assert twice.exit_code == 1 and "task 999999 not found" in twice.output  # the other one was requeued


def test_the_chat_puts_a_running_task_back_in_the_queue_once_the_card_is_confirmed(
    cluster, make_identity, start_worker, tmp_path: Path
):
    who, token = make_identity("alice", "vision")
    start_worker()
    running, _ = cluster.submit(who, {"command": "sleep 30", "gpus": 0, "workdir": str(tmp_path)})
    later, _ = cluster.submit(
        who, {"command": "true", "gpus": 0, "workdir": str(tmp_path), "not_before": "2030-01-01T00:00:00Z"}
    )
    ended, _ = cluster.submit(who, {"command": "true", "gpus": 0, "workdir": str(tmp_path)})
    wait_until(
        lambda: _status(cluster, running.id) == "running" and _status(cluster, ended.id) == "succeeded"
    )
    with TestClient(create_app(cluster)) as api:
        client = AssistantClient("http://testserver", token, transport=AppTransport(api, new_endpoints))
        assistant = Assistant(cluster.settings, client, user="alice", team="vision")
        asked = assistant.ask(f"requeue {running.id}")
        untouched = cluster.tasks.get_any(running.id).attempts_count
        confirmed = assistant.confirm(asked.cards[0]["action_id"])
        wait_until(lambda: cluster.tasks.get_any(running.id).attempts_count == 2)
        waiting = assistant.ask(f"把{later.id}号重新排队")
        again = assistant.ask(f"put {ended.id} back in the queue")
        client.close()
    cluster.cancel(who, running.id)

    assert asked.tool_calls == [{"name": "requeue_task", "args": {"task_id": running.id}}]
    assert asked.cards[0]["kind"] == "requeue" and untouched == 1
    assert (
        f"Put running task #{running.id} (" in asked.reply and "on node-a back in the queue?" in asked.reply
    )
    assert confirmed["ok"] and confirmed["message"] == (
        f"Task #{running.id} is stopping (its stop signal is sent); it goes back to the queue with its age."
    )
    assert cluster.tasks.attempts(running.id)[0].reason == "requeued"
    assert (
        waiting.cards == [] and waiting.reply == f"抱歉，没能完成：任务 {later.id} 排队中：它已经在队列里等待"
    )
    assert [card["kind"] for card in again.cards] == ["submit"]  # an ended task runs again as a new task
    assert again.cards[0]["spec"]["command"] == "true"


def test_a_task_requeued_with_hold_waits_held_until_released(
    cluster, make_identity, start_worker, tmp_path: Path
):
    who, _ = make_identity("alice", "vision")
    start_worker()
    marker = tmp_path / "runs"
    task, _ = cluster.submit(
        who, {"command": f"echo run >> {marker}; sleep 30", "gpus": 1, "workdir": str(tmp_path)}
    )
    wait_until(lambda: _status(cluster, task.id) == "running")

    cluster.requeue(who, task.id, hold=True)

    wait_until(lambda: cluster.tasks.get_any(task.id).held_by == "alice")
    row = cluster.tasks.get_any(task.id)
    assert (row.status, row.reason) == ("queued", "requeued")
    assert (
        row.message
        == f"requeued by alice: stopped and put back in the queue, held until `nightshift release {task.id}`"
    )
    assert task.id not in cluster.queue.queued_ids()  # held: out of the queue, as `hold` leaves a task
    assert marker.read_text().count("run") == 1  # and it did not start again

    cluster.release(who, task.id)

    wait_until(
        lambda: cluster.tasks.get_any(task.id).attempts_count == 2 and _status(cluster, task.id) == "running"
    )
    cluster.cancel(who, task.id)
