"""`nightshift rerun --sweep ID`: a sweep's failed tasks run again in their place (`--status` for
cancelled or succeeded ones); `sweeps`, `compare`, `ls` and `show` then say which task took whose place."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result

from scheduler.service import Cluster
from tests.cli.conftest import cli_as, lr_sweep_file


def _fail(cluster: Cluster, task_id: int) -> None:
    """What a worker does with a run that exits 3 (no retries): the task failed."""
    cluster.queue.remove(task_id)
    assert cluster.tasks.mark_running(task_id, f"t-{task_id}", "box-1", [0]) is not None
    assert cluster.settle_attempt(task_id, f"t-{task_id}", "nonzero_exit", exit_code=3) == "failed"


def _sweep_of_three(nightshift: Callable[..., Result], folder: Path) -> tuple[dict[str, Any], list[int]]:
    """A one-GPU sweep over three learning rates, submitted: its answer and its task ids."""
    sweep = json.loads(
        nightshift("submit", "--json", str(lr_sweep_file(folder, "[0.1, 0.01, 0.001]"))).output
    )
    return sweep, [task["id"] for task in sweep["tasks"]]


def test_rerun_runs_the_failed_tasks_again_and_the_views_follow(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, alice = make_identity("alice", "vision")
    with cli_as(cluster, alice, monkeypatch, tmp_path / "alice") as nightshift:
        sweep, ids = _sweep_of_three(nightshift, tmp_path)
        _fail(cluster, ids[0])
        nightshift("cancel", str(ids[2]))
        rerun = nightshift("rerun", "--sweep", str(sweep["id"]))
        new = max(task.id for task in cluster.tasks.with_status("queued"))
        listed = nightshift("sweeps")
        shown = nightshift("show", str(ids[0]))
        again = nightshift("rerun", "--sweep", str(sweep["id"]))
        cancelled = json.loads(
            nightshift("rerun", "--sweep", str(sweep["id"]), "--status", "cancelled", "--json").stdout
        )
        bad_status = nightshift("rerun", "--sweep", str(sweep["id"]), "--status", "running")
        missing = nightshift("rerun", "--sweep", "999")

    assert rerun.exit_code == 0, rerun.output
    assert f"sweep {sweep['id']}: ran again {ids[0]} (lr:0.1) as {new}" in rerun.stdout
    assert f"sweep {sweep['id']}: 1 cancelled, 2 queued" in rerun.stdout
    row = next(line for line in listed.stdout.splitlines() if f" {sweep['id']} " in line)
    assert f"3 tasks, {ids[1]}-{new}" in row and "1 cancelled, 2 queued" in row  # 2, 3 and the new 4
    assert f"failed (nonzero_exit) (run again as {new})" in shown.stdout
    assert again.exit_code == 1
    assert f"sweep {sweep['id']} has no failed task to run again (1 cancelled, 2 queued)" in again.stderr
    assert [rerun["replaced"] for rerun in cancelled["reruns"]] == [ids[2]]
    assert cancelled["counts"] == {"queued": 3}
    assert [task["params"] for task in cancelled["tasks"]] == [{"lr": 0.01}, {"lr": 0.1}, {"lr": 0.001}]
    assert (
        bad_status.exit_code == 1
        and "Input should be 'failed', 'cancelled' or 'succeeded'" in bad_status.stderr
    )
    assert missing.exit_code == 1 and "sweep 999 not found" in missing.stderr


def test_the_span_of_a_sweeps_tasks_reads_each_run_of_ids():
    from api.cli.sweeps import id_ranges, task_span

    assert id_ranges([17, 11, 12, 18, 20]) == "11-12, 17-18, 20"
    assert task_span({"tasks": [{"id": 11}, {"id": 12}, {"id": 17}]}) == "3 tasks, 11-12, 17"
    assert task_span({"first_task": 11, "last_task": 16, "tasks_count": 6}) == "6 tasks, 11-16"
    assert task_span({"first_task": 11, "last_task": 18, "tasks_count": 6}) == "6 tasks, 11 to 18"
    assert task_span({"first_task": 11, "last_task": 11, "tasks_count": 1}) == "1 task, 11"


def test_rerun_of_named_tasks_finds_their_sweep_and_refuses_a_task_of_none(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, alice = make_identity("alice", "vision")
    with cli_as(cluster, alice, monkeypatch, tmp_path / "alice") as nightshift:
        sweep, ids = _sweep_of_three(nightshift, tmp_path)
        loose = json.loads(nightshift("submit", "--json", "--gpus", "0", "--", "echo", "hi").output)["id"]
        _fail(cluster, ids[0])
        nightshift("cancel", str(ids[1]))
        named = nightshift("rerun", str(ids[0]), str(ids[1]))
        queued = nightshift("rerun", str(ids[2]))
        of_none = nightshift("rerun", str(loose))
        nothing = nightshift("rerun")

    assert named.exit_code == 0, named.output
    assert f"ran again {ids[0]} (lr:0.1) as " in named.stdout and f", {ids[1]} (lr:0.01) as " in named.stdout
    assert queued.exit_code == 1 and f"task {ids[2]} of sweep {sweep['id']} is queued" in queued.stderr
    assert of_none.exit_code == 1
    assert (
        f"task {loose} is in no sweep: run it again with `nightshift submit --like {loose}`" in of_none.stderr
    )
    assert nothing.exit_code == 2 and "give --sweep ID" in nothing.stderr
