"""`nightshift shell`: a shell (or a command) on GPUs from the queue, against a real cluster of processes
(API, scheduler and two workers, `box-a` and `box-b`, one simulated GPU each)."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from api.cli.session import BEGIN, READY, session_env
from tests.conftest import is_alive
from tests.reliability.stack import NIGHTSHIFT, Stack, poll


def _cli(stack: Stack, node: str = "box-a") -> dict[str, str]:
    """The environment of `nightshift` run by alice on machine `node`."""
    return {
        **stack.env,
        "NIGHTSHIFT_API_URL": f"http://127.0.0.1:{stack.port}",
        "NIGHTSHIFT_TOKEN": stack.token,
        "NIGHTSHIFT_NODE_NAME": node,
    }


def _shell(stack: Stack, *args: str, node: str = "box-a") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [NIGHTSHIFT, "shell", *args],
        env=_cli(stack, node),
        cwd=stack.folder,
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
    )


def _in_background(stack: Stack, said: Path, *args: str) -> subprocess.Popen[bytes]:
    """`nightshift shell ARGS` started by alice on box-a, what it says to people written to `said`."""
    with said.open("w") as stderr:
        return subprocess.Popen(
            [NIGHTSHIFT, "shell", *args],
            env=_cli(stack),
            cwd=stack.folder,
            stdin=subprocess.DEVNULL,
            stderr=stderr,
        )


def _task(stack: Stack, task_id: int) -> dict[str, Any]:
    response = stack.api.get(f"/api/v1/tasks/{task_id}")
    assert response.status_code == 200, response.text
    return dict(response.json())


def _newest(stack: Stack) -> dict[str, Any]:
    tasks = stack.api.get("/api/v1/tasks").json()["tasks"]
    return dict(max(tasks, key=lambda task: task["id"], default={"id": 0, "status": "none"}))


@pytest.fixture
def stack(tmp_path: Path, redis_url: str):
    stack = Stack(tmp_path, redis_url)
    try:
        stack.start_api()
        stack.start("scheduler", "scheduler")
        stack.start_worker("box-a", gpus="1x24")
        stack.start_worker("box-b", gpus="1x24")
        poll(
            lambda: (
                {node["name"] for node in stack.api.get("/api/v1/nodes").json() if node["alive"]}
                == {"box-a", "box-b"}
            ),
            what="both workers to heartbeat",
        )
        yield stack
    finally:
        stack.close()


@pytest.mark.slow
def test_a_command_runs_here_on_the_sessions_gpu_and_its_leftovers_stop_with_it(stack):
    pid_file = stack.folder / "pid"
    script = (
        f"echo GPUS=$CUDA_VISIBLE_DEVICES TASK=$NIGHTSHIFT_TASK_ID; sleep 300 & echo $! > {pid_file}; exit 3"
    )
    done = _shell(stack, "--", "sh", "-c", script)

    assert done.returncode == 3, done.stderr  # the command's own exit code
    task = _newest(stack)
    assert f"GPUS={task['gpu_indices'][0]} TASK={task['id']}" in done.stdout
    # pinned to this machine, since it is a node; a task like any other, tagged, ended as succeeded
    assert task["node"] == "box-a" and task["spec"]["node"] == "box-a"
    assert task["name"] == "shell" and task["spec"]["tags"] == ["session"]
    poll(lambda: _task(stack, task["id"])["status"] == "succeeded", what="the session's task to succeed")
    assert f"task {task['id']}: GPU 0 on box-a for up to 60 min" in done.stderr
    assert not is_alive(int(pid_file.read_text()))  # the background `sleep` did not outlive the session
    assert "stopped 1 process(es) the session had left running" in done.stderr

    # a closed terminal (SIGHUP) stops the shell and cancels the session: its GPU is not held to the limit
    said = stack.folder / "said"
    hung = _in_background(stack, said, "--", "sh", "-c", f"echo $$ > {pid_file}; exec sleep 60")
    try:
        poll(lambda: "exit the shell to give it back" in said.read_text(), what="the session to start")
        shell_pid = int(poll(lambda: pid_file.read_text().strip(), what="the shell's pid"))
        hung.send_signal(signal.SIGHUP)
        hung.wait(timeout=30)
    finally:
        if hung.poll() is None:
            hung.kill()
    assert hung.returncode == 129, said.read_text()
    assert "SIGHUP: ending the session" in said.read_text()
    assert _newest(stack)["status"] == "cancelled"
    assert not is_alive(shell_pid)


@pytest.mark.slow
def test_the_time_limit_stops_the_shell_and_a_queued_session_is_given_up_with_ctrl_c(stack):
    timed = _shell(stack, "--time-limit", "0.05", "--", "sleep", "60")

    assert timed.returncode == 124, timed.stderr
    task = _newest(stack)
    assert task["status"] == "failed" and task["reason"] == "timeout"
    assert f"task {task['id']} failed: stopped at its time limit" in timed.stderr

    # box-a's one GPU is busy: the session waits, says why, and Ctrl-C gives it up
    blocker = stack.submit({"command": "sleep 120", "node": "box-a", "workdir": str(stack.folder)})
    poll(lambda: _task(stack, blocker)["status"] == "running", what="the blocker to start")
    said = stack.folder / "said"
    waiting = _in_background(stack, said)
    try:
        poll(lambda: "waiting: " in said.read_text(), what="the session to say why it waits")
        session = _newest(stack)
        assert session["status"] == "queued" and session["id"] != blocker
        waiting.send_signal(signal.SIGINT)
        waiting.wait(timeout=30)
    finally:
        if waiting.poll() is None:
            waiting.kill()
    err = said.read_text()
    assert waiting.returncode == 130, err
    assert f"gave up: task {session['id']} cancelled" in err
    assert _task(stack, session["id"])["status"] == "cancelled"
    assert _task(stack, blocker)["status"] == "running"  # nothing else was touched


@pytest.mark.slow
def test_a_session_on_another_node_is_held_until_enter_and_a_command_there_is_refused(stack):
    held = subprocess.Popen(
        [NIGHTSHIFT, "shell", "--node", "box-b"],
        env=_cli(stack),
        cwd=stack.folder,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        task = poll(
            lambda: (found := _newest(stack))["status"] == "running" and found, what="the session to start"
        )
        poll(lambda: READY in stack.api.get(f"/api/v1/tasks/{task['id']}/logs").text, what="its environment")
        assert held.poll() is None  # holding the GPU until told
        _, err = held.communicate("\n", timeout=30)
    finally:
        if held.poll() is None:
            held.kill()
    assert held.returncode == 0, err
    assert f"task {task['id']} holds GPU 0 on box-b for up to 60 min" in err
    assert "CUDA_VISIBLE_DEVICES=0" in err and f"NIGHTSHIFT_TASK_ID={task['id']}" in err
    assert "NIGHTSHIFT_SESSION_HOLDER" not in err  # the placeholder's own pid is not the shell's to export
    assert f"task {task['id']}: given back" in err
    assert _task(stack, task["id"])["status"] == "cancelled"

    count = len(stack.api.get("/api/v1/tasks").json()["tasks"])
    elsewhere = _shell(stack, "--node", "box-b", "--", "nvidia-smi")
    nowhere = _shell(stack, "--", "nvidia-smi", node="laptop")
    assert elsewhere.returncode == 2 and "would be on box-b, not this machine (box-a)" in elsewhere.stderr
    assert nowhere.returncode == 2 and "this machine (laptop) is none" in nowhere.stderr
    assert len(stack.api.get("/api/v1/tasks").json()["tasks"]) == count  # nothing was queued


def test_the_environment_is_the_last_complete_block_the_placeholder_printed():
    first = [
        BEGIN,
        "CUDA_VISIBLE_DEVICES=0",
        "NIGHTSHIFT_RUN_TOKEN=a:task1:x1",
        "NIGHTSHIFT_SESSION_HOLDER=9",
        READY,
    ]
    second = [
        BEGIN,
        "CUDA_VISIBLE_DEVICES=1,2",
        "NIGHTSHIFT_RUN_TOKEN=b:task1:x2",
        "NIGHTSHIFT_SESSION_HOLDER=7",
    ]
    log = "\n".join(["==> nightshift task 1 attempt 1", *first, "lost", *second, "HOME=/root", READY, ""])

    assert session_env(log) == {
        "CUDA_VISIBLE_DEVICES": "1,2",
        "NIGHTSHIFT_RUN_TOKEN": "b:task1:x2",
        "NIGHTSHIFT_SESSION_HOLDER": "7",
    }
    assert session_env("\n".join([*first[:-1], ""])) is None  # not ready yet
    assert session_env(json.dumps({"no": "block"})) is None


def test_a_session_says_once_before_its_time_limit_how_to_get_more_time():
    from api.cli.session import warn_before_the_end

    said: list[str] = []
    task = {"id": 7, "started_at": "2026-12-07T10:00:00+00:00", "spec": {"time_limit_minutes": 60}}
    end = 1_796_641_200.0  # 11:00 UTC that day
    assert warn_before_the_end(task, None, end - 600, said.append) is None  # 10 min left: not yet
    warned = warn_before_the_end(task, None, end - 240, said.append)
    assert warned == end and said == [
        "nightshift: this session ends in 4 min, at its time limit; `nightshift change 7 --time-limit 120` "
        "gives it an hour more"
    ]
    assert warn_before_the_end(task, warned, end - 200, said.append) == end and len(said) == 1  # once
    longer = {**task, "spec": {"time_limit_minutes": 120}}  # given more: warned again before the new end
    assert warn_before_the_end(longer, warned, end - 100, said.append) == end and len(said) == 1
    assert warn_before_the_end(longer, warned, end + 3600 - 120, said.append) == end + 3600 and len(said) == 2
    assert warn_before_the_end({"id": 8, "spec": {}}, None, end, said.append) is None  # no limit, no warning


@pytest.mark.slow
def test_a_session_whose_node_is_lost_is_cancelled_not_left_to_start_again(stack):
    said = stack.folder / "said"
    lost = _in_background(stack, said, "--", "sleep", "120")
    try:
        poll(lambda: "exit the shell to give it back" in said.read_text(), what="the session to start")
        task = _newest(stack)
        stack.kill9("box-a")  # its worker dies: a lease TTL later the task is back in the queue
        lost.wait(timeout=60)
    finally:
        if lost.poll() is None:
            lost.kill()
    assert lost.returncode != 0, said.read_text()  # its command was killed with the node's jobs, or stopped
    ended = said.read_text()
    assert f"task {task['id']}: its node was lost" in ended or "is its node down?" in ended, ended
    poll(lambda: _task(stack, task["id"])["status"] == "cancelled", what="the session to be cancelled")
