"""A scheduler and a worker in threads, over real Redis and SQLite, run what is submitted."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import psutil

from scheduler.dispatcher import Dispatcher
from scheduler.gpus import SimulatedGpus
from scheduler.service import Cluster
from scheduler.store.identity import authenticate, create_token
from scheduler.worker import Worker
from tests.cli.conftest import cli_as
from tests.conftest import wait_until


def _start(cluster: Cluster, run_in_thread: Callable, node: str = "node-a", gpus: str = "4x24") -> Worker:
    worker = Worker(cluster, node, SimulatedGpus(gpus, node=node), base_env=dict(os.environ))
    worker.publish_node()
    run_in_thread(Dispatcher(cluster).run)
    run_in_thread(worker.run)
    return worker


def _status(cluster: Cluster, task_id: int) -> str:
    return cluster.tasks.get_any(task_id).status


def test_submitted_tasks_run_and_their_output_lands_in_the_log(
    cluster, make_identity, run_in_thread, tmp_path
):
    who, _ = make_identity()
    _start(cluster, run_in_thread)
    ids = [
        cluster.submit(who, {"command": f"echo hello {i}", "workdir": str(tmp_path)})[0].id for i in range(3)
    ]
    for task_id in ids:
        wait_until(lambda task_id=task_id: _status(cluster, task_id) == "succeeded")
    for i, task_id in enumerate(ids):
        assert f"hello {i}" in cluster.log_path(task_id).read_text()
        assert cluster.tasks.get_any(task_id).exit_code == 0


def test_a_job_sees_only_its_gpus_and_its_task_id(cluster, make_identity, run_in_thread, tmp_path):
    who, _ = make_identity()
    _start(cluster, run_in_thread)
    task, _ = cluster.submit(
        who,
        {
            "command": "echo gpus=$CUDA_VISIBLE_DEVICES id=$NIGHTSHIFT_TASK_ID",
            "gpus": 2,
            "workdir": str(tmp_path),
        },
    )
    wait_until(lambda: _status(cluster, task.id) == "succeeded")
    row = cluster.tasks.get_any(task.id)
    expected = ",".join(map(str, row.gpu_indices or []))
    assert len(row.gpu_indices or []) == 2
    assert f"gpus={expected} id={task.id}" in cluster.log_path(task.id).read_text()


def test_a_nonzero_exit_fails_the_task_with_its_code(cluster, make_identity, run_in_thread, tmp_path):
    who, _ = make_identity()
    _start(cluster, run_in_thread)
    task, _ = cluster.submit(who, {"command": "exit 3", "workdir": str(tmp_path)})
    wait_until(lambda: _status(cluster, task.id) == "failed")
    row = cluster.tasks.get_any(task.id)
    assert (row.exit_code, row.reason) == (3, "nonzero_exit")


def test_retries_run_a_failing_task_again_then_give_up(cluster, make_identity, run_in_thread, tmp_path):
    who, _ = make_identity()
    _start(cluster, run_in_thread)
    task, _ = cluster.submit(who, {"command": "echo try; exit 1", "retries": 2, "workdir": str(tmp_path)})
    wait_until(lambda: _status(cluster, task.id) == "failed")
    assert cluster.tasks.get_any(task.id).attempts_count == 3
    assert cluster.log_path(task.id).read_text().splitlines().count("try") == 3


def test_cancelling_a_running_task_kills_its_whole_process_group(
    cluster, make_identity, run_in_thread, tmp_path
):
    who, _ = make_identity()
    _start(cluster, run_in_thread)
    pids_file = tmp_path / "pids"
    command = f"sleep 300 & echo $! >> {pids_file}; sleep 301 & echo $! >> {pids_file}; wait"
    task, _ = cluster.submit(who, {"command": command, "workdir": str(tmp_path)})
    wait_until(lambda: pids_file.exists() and len(pids_file.read_text().split()) == 2)
    children = [int(pid) for pid in pids_file.read_text().split()]
    cluster.cancel(who, task.id)
    wait_until(lambda: _status(cluster, task.id) == "cancelled")
    wait_until(
        lambda: (
            not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie" for pid in children)
        )
    )


def test_a_time_limit_stops_the_job_and_fails_the_task(cluster, make_identity, run_in_thread, tmp_path):
    who, _ = make_identity()
    _start(cluster, run_in_thread)
    task, _ = cluster.submit(
        who, {"command": "sleep 300", "time_limit_minutes": 0.01, "workdir": str(tmp_path)}
    )
    wait_until(lambda: _status(cluster, task.id) == "failed")
    assert cluster.tasks.get_any(task.id).reason == "timeout"


def test_a_job_printing_past_the_log_limit_is_stopped_and_the_task_fails_saying_why(
    make_cluster, run_in_thread, tmp_path
):
    limited = make_cluster(max_log_mb=0.01)  # 10 KiB per attempt
    who = authenticate(limited.factory, create_token(limited.factory, user="alice", team="vision"))
    _start(limited, run_in_thread)
    task, _ = limited.submit(
        who, {"command": "yes flood | head -c 200000; sleep 300", "workdir": str(tmp_path)}
    )
    wait_until(lambda: _status(limited, task.id) == "failed")
    row = limited.tasks.get_any(task.id)

    assert row.reason == "output_limit"
    assert (row.message or "").startswith("stopped: its output passed the log size limit (")
    assert limited.log_path(task.id).stat().st_size < 250_000  # stopped, not left to print on


def test_a_missing_workdir_fails_the_task_with_a_clear_reason(
    cluster, make_identity, run_in_thread, tmp_path
):
    who, _ = make_identity()
    _start(cluster, run_in_thread)
    task, _ = cluster.submit(who, {"command": "true", "workdir": str(tmp_path / "nope")})
    wait_until(lambda: _status(cluster, task.id) == "failed")
    row = cluster.tasks.get_any(task.id)
    assert row.reason == "executor"
    # named by its node: read from anywhere in the cluster, "this node" says nothing
    assert (
        row.message == f"workdir {str(tmp_path / 'nope')!r} does not exist or is not a folder on node node-a"
    )


def test_a_conda_task_fails_clearly_when_conda_is_not_installed(
    cluster, make_identity, run_in_thread, tmp_path
):
    who, _ = make_identity()
    worker = _start(cluster, run_in_thread)
    worker.base_env["PATH"] = str(tmp_path)  # no conda here
    task, _ = cluster.submit(who, {"command": "python x.py", "conda_env": "torch", "workdir": str(tmp_path)})
    wait_until(lambda: _status(cluster, task.id) == "failed")
    assert "conda is not installed" in (cluster.tasks.get_any(task.id).message or "")


def test_tasks_wait_for_free_gpus_and_then_start(cluster, make_identity, run_in_thread, tmp_path: Path):
    who, _ = make_identity()
    _start(cluster, run_in_thread, gpus="2x24")
    gate = tmp_path / "gate"
    first, _ = cluster.submit(
        who, {"command": f"while [ ! -e {gate} ]; do sleep 0.05; done", "gpus": 2, "workdir": str(tmp_path)}
    )
    wait_until(lambda: _status(cluster, first.id) == "running")
    second, _ = cluster.submit(who, {"command": "true", "gpus": 1, "workdir": str(tmp_path)})
    assert _status(cluster, second.id) == "queued"
    gate.touch()
    wait_until(lambda: _status(cluster, second.id) == "succeeded")


def test_a_burst_of_tasks_runs_to_the_end_with_one_exit_watcher_or_a_thread_per_job(
    cluster, make_identity, run_in_thread, tmp_path
):
    """Both ways of learning that a job ended (pidfds, or a waiting thread where pidfds are missing)."""
    who, _ = make_identity()
    worker = Worker(cluster, "node-a", SimulatedGpus("4x24", node="node-a"), base_env=dict(os.environ))
    worker._watch_exits = False  # the fallback: a waiting thread per job
    worker.publish_node()
    run_in_thread(Dispatcher(cluster).run)
    run_in_thread(worker.run)
    first = [cluster.submit(who, {"command": "true", "workdir": str(tmp_path)})[0].id for _ in range(10)]
    wait_until(lambda: all(_status(cluster, task_id) == "succeeded" for task_id in first))
    assert worker._exit_watcher is None

    worker._watch_exits = True
    second = [cluster.submit(who, {"command": "true", "workdir": str(tmp_path)})[0].id for _ in range(10)]
    wait_until(lambda: all(_status(cluster, task_id) == "succeeded" for task_id in second))
    assert worker._exit_watcher is not None
    assert {len(cluster.tasks.attempts(task_id)) for task_id in first + second} == {1}


def test_a_task_that_could_not_start_says_so_in_logs_and_explain_points_to_no_log(
    cluster, make_identity, run_in_thread, monkeypatch, tmp_path
):
    who, token = make_identity()
    _start(cluster, run_in_thread)
    task, _ = cluster.submit(who, {"command": "true", "workdir": str(tmp_path / "nope")})
    wait_until(lambda: _status(cluster, task.id) == "failed")

    with cli_as(cluster, token, monkeypatch, tmp_path / "home") as nightshift:
        logs = " ".join(nightshift("logs", str(task.id)).output.split())
        explained = " ".join(nightshift("explain", str(task.id)).output.split())

    assert f"task {task.id} has no output: it could not start on node-a (failed: workdir " in logs
    assert "its log file is gone" not in logs
    assert f"nightshift logs {task.id}" not in explained and "does not exist or is not a folder" in explained
