"""Two GPU nodes for real: `nightshift api`, `nightshift scheduler` and two `nightshift worker` processes with
different simulated inventories (2×80 GB and 4×24 GB), sharing one PostgreSQL database and one Redis.

The stack is started once for the module; each test leaves both nodes undrained. The last test kills a
worker, so it stays last.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from scheduler.redis_server import EmbeddedRedis
from tests.conftest import _reset_postgres
from tests.reliability.stack import NIGHTSHIFT, Stack, poll

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
BIG, SMALL = "big-80", "small-24"
TIMEOUT_S = 90.0

TRAIN_PY = """\
import argparse, json, os
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float)
parser.add_argument("--bs", type=int)
args = parser.parse_args()
metrics = {"loss": round(args.lr * 100 + 64 / args.bs, 4), "acc": round(1 - args.lr, 4)}
with open(os.path.join(os.environ["NIGHTSHIFT_OUTPUT_DIR"], "metrics.json"), "w") as out:
    json.dump(metrics, out)
"""


@pytest.fixture(scope="module")
def stack(
    postgres_database: str, redis_server: EmbeddedRedis, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    """API, scheduler and two workers as processes, on a fresh PostgreSQL schema and a flushed Redis."""
    _reset_postgres(postgres_database)
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    client.close()
    cluster = Stack(tmp_path_factory.mktemp("multinode"), redis_server.url, database_url=postgres_database)
    try:
        cluster.start_api()
        cluster.start("scheduler", "scheduler")
        cluster.start_worker(BIG, "2x80", own_home=True)  # two machines: no folder shared with the API
        cluster.start_worker(SMALL, "4x24", own_home=True)
        poll(lambda: _alive_nodes(cluster) >= {BIG, SMALL}, TIMEOUT_S, "both workers to register")
        yield cluster
    finally:
        cluster.close()


def _alive_nodes(stack: Stack) -> set[str]:
    return {node["name"] for node in stack.api.get("/api/v1/nodes").json() if node["alive"]}


def _task(stack: Stack, task_id: int) -> dict[str, Any]:
    response = stack.api.get(f"/api/v1/tasks/{task_id}")
    assert response.status_code == 200, response.text
    return dict(response.json())


def _wait_status(stack: Stack, ids: list[int], status: str = "succeeded") -> list[dict[str, Any]]:
    def reached() -> list[dict[str, Any]] | None:
        tasks = [_task(stack, task_id) for task_id in ids]
        failed = [t for t in tasks if t["status"] in ("failed", "cancelled") and t["status"] != status]
        assert not failed, failed
        return tasks if all(t["status"] == status for t in tasks) else None

    return list(poll(reached, TIMEOUT_S, f"tasks {ids} to be {status}"))


def _drain(stack: Stack, node: str, drained: bool = True) -> None:
    action = "drain" if drained else "undrain"
    response = stack.api.post(f"/api/v1/nodes/{node}/{action}")
    assert response.status_code == 200, response.text


def test_tasks_land_on_the_node_whose_gpus_fit_them(stack: Stack) -> None:
    # Given a 2×80 GB node and a 4×24 GB node
    # When tasks ask for 60 GB, for 4 GPUs, for a node by name and for a GPU model
    big_memory = stack.submit({"command": "echo on-the-big-node", "gpus": 1, "gpu_memory_gb": 60})
    four_gpus = stack.submit({"command": "true", "gpus": 4})
    pinned = stack.submit({"command": "true", "gpus": 1, "node": SMALL})
    by_model = stack.submit({"command": "true", "gpus": 1, "gpu_model": "80gb"})

    # Then each ran where it fits
    tasks = _wait_status(stack, [big_memory, four_gpus, pinned, by_model])
    assert [task["node"] for task in tasks] == [BIG, SMALL, SMALL, BIG]
    assert sorted(tasks[1]["gpu_indices"]) == [0, 1, 2, 3]
    # and the API, sharing no folder with them, reads each log from its node
    logs = stack.api.get(f"/api/v1/tasks/{big_memory}/logs")
    assert logs.status_code == 200 and "on-the-big-node" in logs.text.splitlines()

    # And what no node could ever run is refused at submission
    refused = stack.api.post("/api/v1/tasks", json={"command": "true", "gpus": 4, "gpu_memory_gb": 60})
    assert refused.status_code == 422 and "no node has 4 GPUs with 60 GB" in refused.json()["detail"]


def test_a_drained_node_gets_no_new_task_until_it_is_undrained(stack: Stack) -> None:
    _drain(stack, BIG)
    try:
        # While the 80 GB node is drained, small tasks all go to the other node
        small = [stack.submit({"command": "true", "gpus": 1}) for _ in range(4)]
        needs_big = stack.submit({"command": "true", "gpus": 1, "gpu_memory_gb": 60})
        assert {task["node"] for task in _wait_status(stack, small)} == {SMALL}
        # and the 60 GB task waits, though the drained node's GPUs are idle
        assert _task(stack, needs_big)["status"] == "queued"
        explain = stack.api.get(f"/api/v1/tasks/{needs_big}/explain").json()
        assert explain["status"] == "queued"
    finally:
        _drain(stack, BIG, drained=False)
    # Once undrained, it runs there
    assert _wait_status(stack, [needs_big])[0]["node"] == BIG


def test_a_sweep_of_3_by_2_runs_as_6_tasks_and_compare_shows_their_metrics(
    stack: Stack, tmp_path: Path
) -> None:
    # Given a training script that writes metrics.json, and a spec file sweeping lr × bs
    (tmp_path / "train.py").write_text(TRAIN_PY)
    spec = {
        "command": f"{sys.executable} train.py --lr {{lr}} --bs {{bs}}",
        "name": "train",
        "workdir": str(tmp_path),
        "gpus": 1,
        "sweep": {"lr": [0.1, 0.01, 0.001], "bs": [32, 64]},
        "tags": ["grid-a"],
    }
    (tmp_path / "sweep.json").write_text(json.dumps(spec))
    env = {
        **stack.env,
        "NIGHTSHIFT_API_URL": f"http://127.0.0.1:{stack.port}",
        "NIGHTSHIFT_TOKEN": stack.token,
    }

    def cli(*args: str) -> str:
        done = subprocess.run(
            [NIGHTSHIFT, *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    # When it is submitted with the CLI
    out = cli("submit", "sweep.json")
    match = re.search(r"submitted sweep (\d+) \(train\): 6 tasks", out)
    assert match, out
    sweep_id = int(match.group(1))

    # Then it expands into 6 tasks that all run and report their metrics
    sweep = stack.api.get(f"/api/v1/sweeps/{sweep_id}").json()
    assert len(sweep["tasks"]) == 6
    _wait_status(stack, [task["id"] for task in sweep["tasks"]])

    # And `nightshift compare` shows params vs metrics, sorted by loss, the best row marked
    table = json.loads(cli("compare", str(sweep_id), "--json"))
    assert (table["params"], table["metrics"], table["sort"], table["goal"]) == (
        ["lr", "bs"],
        ["loss", "acc"],
        "loss",
        "min",
    )
    assert len(table["rows"]) == 6
    best = table["rows"][0]
    assert best["best"] and best["params"] == {"lr": 0.001, "bs": 64}
    assert best["metrics"] == {"loss": 1.1, "acc": 0.999}
    losses = [row["metrics"]["loss"] for row in table["rows"]]
    assert losses == sorted(losses)

    text = cli("compare", str(sweep_id), "--sort", "acc", "--minimize")
    assert "★" in text and "best by acc (min)" in text
    lowest_acc = min(row["task_id"] for row in table["rows"] if row["params"]["lr"] == 0.1)  # ties: first
    assert f"task {lowest_acc}" in text
    assert "0.999" in cli("compare", "grid-a")  # by tag


def test_a_node_killed_mid_run_has_its_task_finish_on_the_other_node(stack: Stack) -> None:
    # Given a task running on the 80 GB node (the other one drained meanwhile); its first attempt hangs
    _drain(stack, SMALL)
    try:
        task_id = stack.submit({"command": 'test "$NIGHTSHIFT_ATTEMPT" -gt 1 || sleep 600', "gpus": 1})
        running = _wait_status(stack, [task_id], "running")[0]
        assert running["node"] == BIG
    finally:
        _drain(stack, SMALL, drained=False)

    # When that node's worker is killed with SIGKILL
    stack.kill9(BIG)

    # Then its lease expires, the task is requeued and finishes on the other node
    done = _wait_status(stack, [task_id])[0]
    assert done["node"] == SMALL
    assert done["attempts"] == 2
    # and a log left on the dead node is a 503 that names it, not an empty log
    ended = stack.api.get("/api/v1/tasks", params={"status": "succeeded", "limit": 1000}).json()["tasks"]
    ran_there = next(task["id"] for task in ended if task["node"] == BIG and task["attempts"] == 1)
    earlier = stack.api.get(f"/api/v1/tasks/{ran_there}/logs")
    assert earlier.status_code == 503 and f"is on node {BIG}, whose worker " in earlier.text
