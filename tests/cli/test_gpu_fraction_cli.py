"""`nightshift submit --gpu-fraction 0.5`: a task that shares one GPU, from the command line."""

from __future__ import annotations

from tests.cli.conftest import cli_as


def _new_id(output: str) -> int:
    return int(output.split("submitted task ")[1].split(" ")[0])


def test_a_shared_gpu_task_from_the_command_line_and_run_again_whole(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        half = nightshift("submit", "--gpu-fraction", "0.5", "--", "python", "eval.py")
        wide = nightshift("submit", "--like", str(_new_id(half.output)), "--gpus", "2")
        whole = nightshift(
            "submit", "--like", str(_new_id(half.output)), "--gpus", "2", "--gpu-fraction", "1"
        )
        listed = nightshift("ls")
        queue = nightshift("queue")

    assert half.exit_code == 0, half.output
    shared = cluster.tasks.get_any(_new_id(half.output))
    assert (shared.gpus, shared.spec["gpu_fraction"]) == (1, 0.5)
    assert wide.exit_code != 0
    said = " ".join(wide.output.split())
    assert "gpu_fraction below 1 shares one GPU: it needs gpus 1 (you asked for 2)" in said, said
    assert "(gpu_fraction 1)" in said
    assert whole.exit_code == 0, whole.output
    again = cluster.tasks.get_any(_new_id(whole.output))
    assert (again.gpus, again.spec["gpu_fraction"]) == (2, 1.0)
    # the tables show the shared task's part of its GPU
    for table in (listed.output, queue.output):
        row = next(
            line for line in table.splitlines() if f" {shared.id} " in f" {line} " and "eval.py" in line
        )
        assert " 0.5 " in f" {row} ", table
