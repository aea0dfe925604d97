"""`nightshift wait` and `submit --wait`: block until tasks end and exit as `sbatch --wait` does, against a
real API with a scheduler and a worker running."""

from __future__ import annotations

import json

import pytest

from api.cli.waiting import TIMED_OUT_EXIT, WaitTimedOut, wait_exit_code, wait_for_tasks
from api.client import ClientError, NightshiftClient
from tests.api.conftest import running_cluster  # noqa: F401  (a fixture)
from tests.cli.conftest import cli_as, lr_sweep_file


@pytest.fixture
def nightshift(running_cluster, make_identity, monkeypatch, tmp_path):  # noqa: F811
    _, token = make_identity("alice", "vision")
    monkeypatch.chdir(tmp_path)
    with cli_as(running_cluster, token, monkeypatch, tmp_path / "client-home") as run:
        yield run


def test_submit_wait_exits_with_the_jobs_own_exit_code(nightshift):
    ok = nightshift("submit", "--wait", "--name", "fine", "--", "true")
    bad = nightshift("submit", "--wait", "--name", "broken", "--", "sh -c 'exit 3'")

    assert ok.exit_code == 0, ok.output
    assert "submitted task" in ok.output and "(fine) succeeded after" in ok.output
    assert bad.exit_code == 3, bad.output
    assert "(broken) failed: exit code 3" in bad.output


def test_wait_for_several_tasks_gives_the_first_failure_and_json_of_all(nightshift):
    first = json.loads(nightshift("submit", "--json", "--", "sh -c 'exit 7'").output)["id"]
    second = json.loads(nightshift("submit", "--json", "--", "true").output)["id"]

    waited = nightshift("wait", str(second), str(first), "--json")

    assert waited.exit_code == 7, waited.output
    tasks = json.loads(waited.stdout)
    assert [(t["id"], t["status"], t["exit_code"]) for t in tasks] == [
        (second, "succeeded", 0),
        (first, "failed", 7),
    ]


def test_a_timeout_leaves_the_task_running_and_exits_124(nightshift):
    task_id = json.loads(nightshift("submit", "--json", "--", "sleep 60").output)["id"]

    waited = nightshift("wait", str(task_id), "--timeout", "1")
    after = json.loads(nightshift("show", str(task_id), "--json").output)
    nightshift("cancel", str(task_id))

    assert waited.exit_code == TIMED_OUT_EXIT, waited.output
    assert f"still not ended: {task_id}" in waited.output and "they go on" in waited.output
    assert after["status"] in {"queued", "running"}


def test_a_cancelled_task_exits_1(nightshift):
    task_id = json.loads(nightshift("submit", "--json", "--after", "+2h", "--", "true").output)["id"]
    nightshift("cancel", str(task_id))

    waited = nightshift("wait", str(task_id))

    assert waited.exit_code == 1 and f"task {task_id}" in waited.output and "cancelled" in waited.output


def test_a_sweep_is_waited_for_as_a_whole(nightshift, tmp_path):
    (tmp_path / "train.py").write_text("import sys\nsys.exit(0)\n")
    submitted = nightshift("submit", "--wait", "--json", str(lr_sweep_file(tmp_path, "[0.1, 0.01]")))

    assert submitted.exit_code == 0, submitted.output
    tasks = json.loads(submitted.stdout)
    assert len(tasks) == 2 and {t["status"] for t in tasks} == {"succeeded"}


def test_wait_without_tasks_or_for_one_not_there_is_a_clear_error(nightshift):
    nothing = nightshift("wait")
    missing = nightshift("wait", "999")

    assert nothing.exit_code == 2 and "give task ids, or --sweep ID" in nothing.output
    assert missing.exit_code == 1 and "999" in missing.output and "not found" in missing.output


def test_an_api_that_does_not_answer_is_waited_out_until_the_timeout():
    """A restarting API is no reason to give up: each poll is told, and the wait ends only at --timeout."""
    client = NightshiftClient("http://127.0.0.1:9", None, timeout_s=1.0)  # nothing listens on port 9
    now = [0.0]
    pauses: list[float] = []
    troubles: list[ClientError] = []

    def sleep(seconds: float) -> None:
        pauses.append(seconds)
        now[0] += seconds

    with pytest.raises(WaitTimedOut) as raised:
        wait_for_tasks(
            client, [4, 5], timeout_s=30, on_unreachable=troubles.append, sleep=sleep, clock=lambda: now[0]
        )
    client.close()

    assert raised.value.pending == [4, 5]
    assert len(troubles) == len(pauses) + 1 and all("cannot reach" in t.message for t in troubles)
    assert pauses[0] == 0.5 and max(pauses) == 5.0 and sum(pauses) == pytest.approx(30)


@pytest.mark.parametrize(
    ("tasks", "code"),
    [
        ([{"status": "succeeded", "exit_code": 0}], 0),
        ([{"status": "succeeded", "exit_code": 0}, {"status": "failed", "exit_code": 2}], 2),
        ([{"status": "failed", "exit_code": None}, {"status": "failed", "exit_code": 5}], 1),
        ([{"status": "cancelled", "exit_code": None}], 1),
        ([{"status": "failed", "exit_code": -9}], 1),  # killed by a signal
        ([], 0),
    ],
)
def test_the_exit_code_is_the_first_failures_own_else_1(tasks, code):
    assert wait_exit_code(tasks) == code


def test_submit_env_tag_and_workdir_reach_the_job(nightshift, tmp_path):
    (tmp_path / "runs").mkdir()
    done = nightshift(
        "submit", "--wait", "--json", "--env", "GREETING=hi there", "--tag", "smoke", "--workdir", "runs",
        "--", 'echo "$GREETING from $(basename "$PWD")"',
    )  # fmt: skip

    assert done.exit_code == 0, done.output
    task = json.loads(done.stdout)[0]
    assert task["spec"]["tags"] == ["smoke"] and task["spec"]["workdir"] == str(tmp_path / "runs")
    assert "hi there from runs" in nightshift("logs", str(task["id"])).stdout.splitlines()
