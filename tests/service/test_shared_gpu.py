"""Small tasks sharing one GPU (`gpu_fraction`), live: a scheduler and a worker in threads, over real Redis
and SQL. Sharers start side by side while their fractions sum to at most 1 and their memory fits; a whole-GPU
task waits for them; each is charged its part of the GPU-hours."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from assistant.agent import Assistant
from assistant.client import AssistantClient
from scheduler.dispatcher import Dispatcher
from scheduler.errors import SpecError
from scheduler.service import Cluster
from scheduler.usage import gpu_spans
from tests.assistant.conftest import AppTransport, new_endpoints
from tests.conftest import wait_until

NODE = "node-a"


def _held_until(flag: Path, tmp_path: Path, **spec: object) -> dict[str, object]:
    """A task that runs until `flag` exists."""
    return {"command": f"while [ ! -f {flag} ]; do sleep 0.05; done", "workdir": str(tmp_path), **spec}


def _status(cluster: Cluster, task_id: int) -> str:
    return cluster.tasks.get_any(task_id).status


def test_half_gpu_tasks_share_one_gpu_and_a_whole_gpu_task_waits_for_them(
    cluster, make_identity, start_worker, tmp_path: Path
):
    # Given one 24 GB GPU, and three half-GPU tasks then a whole-GPU one
    who, token = make_identity()
    worker = start_worker("1x24")
    first, second, third = (tmp_path / name for name in ("first", "second", "third"))
    a = cluster.submit(who, _held_until(first, tmp_path, gpu_fraction=0.5))[0]
    b = cluster.submit(who, _held_until(second, tmp_path, gpu_fraction=0.5))[0]
    wait_until(lambda: _status(cluster, a.id) == _status(cluster, b.id) == "running")
    c = cluster.submit(who, _held_until(third, tmp_path, gpu_fraction=0.5))[0]
    whole = cluster.submit(who, {"command": "true", "workdir": str(tmp_path)})[0]

    # Then the first two run side by side on GPU 0, and neither of the others starts beside them
    wait_until(lambda: worker.gpu_holders() == {a.id: (0,), b.id: (0,)})
    Dispatcher(cluster).run_pass()
    assert (_status(cluster, c.id), _status(cluster, whole.id)) == ("queued", "queued")
    # and GET /gpus shows the half each holds
    with TestClient(create_app(cluster)) as client:
        [gpu] = client.get("/api/v1/gpus", headers={"Authorization": f"Bearer {token}"}).json()["gpus"]
    assert sorted(gpu["tasks"]) == sorted([a.id, b.id])
    assert gpu["shares"] == {str(a.id): 0.5, str(b.id): 0.5}

    # When one sharer ends, the third takes its half; the whole-GPU task still waits
    first.touch()
    wait_until(lambda: _status(cluster, c.id) == "running")
    assert _status(cluster, whole.id) == "queued"
    wait_until(lambda: worker.gpu_holders() == {b.id: (0,), c.id: (0,)})

    # And once both are done, the whole-GPU task runs
    second.touch()
    third.touch()
    wait_until(lambda: _status(cluster, whole.id) == "succeeded")
    assert [_status(cluster, t.id) for t in (a, b, c)] == ["succeeded"] * 3


def test_sharers_whose_memory_would_not_fit_together_take_turns(
    cluster, make_identity, start_worker, tmp_path: Path
):
    # Given one 24 GB GPU and two half-GPU tasks that each ask for 16 GB
    who, token = make_identity()
    worker = start_worker("1x24")
    flag = tmp_path / "done"
    a = cluster.submit(who, _held_until(flag, tmp_path, gpu_fraction=0.5, gpu_memory_gb=16))[0]
    wait_until(lambda: _status(cluster, a.id) == "running")
    b = cluster.submit(who, _held_until(flag, tmp_path, gpu_fraction=0.5, gpu_memory_gb=16))[0]

    # Then the second waits (memory is never oversubscribed) for the GPU, reserved for it
    Dispatcher(cluster).run_pass()
    wait_until(lambda: worker.gpu_holders() == {a.id: (0,)})
    assert _status(cluster, b.id) == "queued"
    with TestClient(create_app(cluster)) as api:
        headers = {"Authorization": f"Bearer {token}"}
        explained = api.get(f"/api/v1/tasks/{b.id}/explain", headers=headers).json()
    # the memory that keeps it out, then its place: the first to start once a 16 GB part frees
    assert explained["reason"].startswith("no GPU has 16 GB free; next in line: 1 GPU reserved on node-a"), (
        explained
    )
    flag.touch()
    wait_until(lambda: _status(cluster, b.id) == "succeeded")


def test_a_sharer_is_charged_its_part_of_the_gpu_hours(cluster, make_identity, start_worker, tmp_path: Path):
    who, _ = make_identity()
    start_worker("1x24")
    half = cluster.submit(who, {"command": "sleep 1", "gpu_fraction": 0.25, "workdir": str(tmp_path)})[0]
    wait_until(lambda: _status(cluster, half.id) == "succeeded")

    [span] = [s for s in gpu_spans(cluster.factory, now_s=2e10, history_s=4e10)]
    row = cluster.tasks.get_any(half.id)
    held_s = (row.finished_at - row.started_at).total_seconds()
    assert span.gpus == 0.25
    assert span.end_s is not None and span.end_s - span.start_s == pytest.approx(held_s, abs=0.5)


def test_a_fraction_needs_one_gpu_and_says_so(cluster, make_identity):
    who, token = make_identity()
    with pytest.raises(SpecError, match="gpu_fraction below 1 shares one GPU: it needs gpus 1"):
        cluster.submit(who, {"command": "true", "gpus": 2, "gpu_fraction": 0.5})
    with TestClient(create_app(cluster)) as api:
        headers = {"Authorization": f"Bearer {token}"}
        zero = api.post("/api/v1/tasks", json={"command": "true", "gpu_fraction": 0}, headers=headers)
        above = api.post("/api/v1/tasks", json={"command": "true", "gpu_fraction": 1.5}, headers=headers)
    assert zero.status_code == 422 and "gpu_fraction" in zero.text
    assert above.status_code == 422 and "gpu_fraction" in above.text
    assert cluster.tasks.with_status("queued") == []


def test_the_estimate_and_the_chat_know_a_half_gpu_task_fits_beside_another(
    cluster, make_identity, start_worker, tmp_path: Path
):
    # Given one GPU, half of it taken by a running sharer
    who, token = make_identity("alice", "vision")
    start_worker("1x24")
    flag = tmp_path / "done"
    a = cluster.submit(who, _held_until(flag, tmp_path, gpu_fraction=0.5, estimated_minutes=30))[0]
    wait_until(lambda: _status(cluster, a.id) == "running")
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(create_app(cluster)) as api:
        # a half-GPU task would start now; a whole one waits for the sharer; a fraction needs gpus 1
        half = api.get("/api/v1/estimate?gpu_fraction=0.5", headers=headers).json()
        whole = api.get("/api/v1/estimate", headers=headers).json()
        wide = api.get("/api/v1/estimate?gpus=2&gpu_fraction=0.5", headers=headers)
        # the chat reads "half a GPU", shows it on the card, and submits it as a sharer
        client = AssistantClient("http://testserver", token, transport=AppTransport(api, new_endpoints))
        assistant = Assistant(cluster.settings, client, user="alice", team="vision")
        free = assistant.ask("which GPUs are free?").reply
        free_zh = assistant.ask("哪些卡空闲").reply
        asked = assistant.ask(f"run `echo shared` on half a GPU in {tmp_path}")
        confirmed = assistant.confirm(asked.cards[0]["action_id"])
        client.close()

    assert half["wait"] == "none", half
    assert whole["wait"] != "none" and whole["reason"].startswith("next in line"), whole
    assert half["energy_kwh"] == pytest.approx(whole["energy_kwh"] / 2, abs=0.002)
    assert wide.status_code == 422 and "gpu_fraction below 1 shares one GPU" in wide.text
    assert "GPU 0 of node-a is shared: 0.5 taken, room for 0.5 more." in free, free
    assert "node-a 的 0 号卡为共享使用：已占 0.5，还能再放 0.5。" in free_zh, free_zh
    assert "0.5 of a GPU (shared)" in asked.reply, asked.reply
    assert confirmed["ok"], confirmed
    task = cluster.tasks.get_any(confirmed["task"]["id"])
    assert (task.gpus, task.spec["gpu_fraction"]) == (1, 0.5)
    wait_until(lambda: _status(cluster, task.id) == "succeeded")  # beside the first, still running
    assert _status(cluster, a.id) == "running"
    flag.touch()
