"""`nightshift ask --dry-run --json`: one JSON object, a resolved spec or an error, and no API needed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from api.cli.app import app
from scheduler.settings import get_settings
from tests.cli.conftest import cli_as

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def offline_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """No API running (a closed port), no LLM configured, a temp data folder."""
    env = {
        "NIGHTSHIFT_API_URL": "http://127.0.0.1:9",
        "NIGHTSHIFT_HOME": str(tmp_path / "home"),
        "NIGHTSHIFT_TIMEZONE": "",
        "NIGHTSHIFT_TOKEN": "ns_test",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for key in (
        "NIGHTSHIFT_LLM_BASE_URL",
        "NIGHTSHIFT_LLM_MODEL",
        "NIGHTSHIFT_LLM_API_KEY",
        "OPENAI_API_KEY",
    ):
        monkeypatch.delenv(key, raising=False)
    get_settings.cache_clear()
    yield env
    get_settings.cache_clear()


def ask(*args: str) -> dict:
    result = CliRunner().invoke(app, ["ask", *args])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, result.stdout
    return json.loads(lines[0])


def test_a_chinese_request_gives_the_resolved_spec(offline_env):
    out = ask("--dry-run", "--json", "--now", "2026-03-02T15:00:00+08:00", "今晚用两张卡跑 train.py")

    assert set(out) == {"reply", "tool_calls", "spec", "error"}
    assert out["tool_calls"] == [
        {"name": "submit_task", "args": {"command": "python train.py", "gpus": 2, "offpeak": True}}
    ]
    assert (
        out["spec"]["command"] == "python train.py"
        and out["spec"]["gpus"] == 2
        and out["spec"]["offpeak"] is True
    )
    assert out["spec"]["name"] == "train.py" and out["spec"]["workdir"].startswith("/")
    assert out["error"] is None and "23:00" in out["reply"]


def test_times_are_resolved_against_now_with_its_offset(offline_env):
    out = ask(
        "--dry-run",
        "--json",
        "--now",
        "2026-03-02T15:00:00+08:00",
        "run `python train.py` after 11pm on 2 GPUs with 40GB, at most 3 hours",
    )

    spec = out["spec"]
    assert spec["not_before"] == "2026-03-02T23:00:00+08:00"
    assert (spec["gpu_memory_gb"], spec["time_limit_minutes"]) == (40, 180)


def test_tomorrow_9am_in_chinese(offline_env):
    out = ask("--dry-run", "--json", "--now", "2026-03-02T15:00:00+08:00", "明天早上9点跑 python eval.py")
    assert out["spec"]["not_before"] == "2026-03-03T09:00:00+08:00"


def test_an_invalid_request_gives_the_validation_message(offline_env):
    out = ask(
        "--dry-run",
        "--json",
        "run `python train.py` on 2 GPUs in conda env torch and docker image pytorch/pytorch",
    )

    assert out["spec"] is None and "conda_env or docker_image" in out["error"]


def test_a_missing_command_is_a_question_without_tool_calls(offline_env):
    out = ask("--dry-run", "--json", "run something on 2 GPUs tonight")
    assert (
        out == {"reply": out["reply"], "tool_calls": [], "spec": None, "error": None} and "?" in out["reply"]
    )


def test_a_read_question_without_a_server_says_it_cannot_reach_the_api(offline_env):
    out = ask("--dry-run", "--json", "where is my job in the queue?")
    assert out["tool_calls"] == [{"name": "queue_position", "args": {}}]
    assert "cannot reach" in out["reply"] and out["spec"] is None
    assert out["error"].startswith("cannot reach the nightshift API at http://127.0.0.1:9")


def test_a_request_the_api_refuses_says_why_in_error(cluster, make_identity, monkeypatch, tmp_path):
    _who, token = make_identity("alice", "vision")
    bob, _ = make_identity("bob", "nlp")
    theirs, _ = cluster.submit(bob, {"command": "sleep 1", "workdir": str(tmp_path)})
    with cli_as(cluster, token, monkeypatch, tmp_path / "home"):
        missing = ask("--dry-run", "--json", "cancel task 9999")
        other_team = ask("--dry-run", "--json", f"why isn't {theirs.id} running?")
        fine = ask("--dry-run", "--json", "where is my job in the queue?")

    assert missing["tool_calls"] == [{"name": "cancel_task", "args": {"task_id": 9999}}]
    assert missing["error"] == "task 9999 not found" and missing["spec"] is None
    assert other_team["error"] == f"task {theirs.id} not found"  # as a missing one
    assert fine["error"] is None


def test_the_installed_command_prints_exactly_one_json_object(offline_env):
    env = {**os.environ, **offline_env, "PYTHONWARNINGS": "ignore"}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from api.cli.app import main; main()",
            "ask",
            "--dry-run",
            "--json",
            "--now",
            "2026-03-02T15:00:00+08:00",
            "run `python train.py` tonight on 2 GPUs",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["spec"]["offpeak"] is True and out["spec"]["gpus"] == 2


def test_the_command_line_under_a_card_is_introduced_in_the_language_of_the_request(offline_env):
    now = ("--dry-run", "--now", "2026-03-02T15:00:00+08:00")
    chinese = CliRunner().invoke(app, ["ask", *now, "今晚用两张卡跑 train.py"])
    english = CliRunner().invoke(app, ["ask", *now, "run train.py on 2 GPUs tonight"])

    assert chinese.exit_code == 0 and english.exit_code == 0, chinese.output + english.output
    assert "用这条命令提交: nightshift submit --gpus 2" in chinese.stdout
    assert "（试运行：什么都没有改）" in chinese.stdout and "to submit it" not in chinese.stdout
    assert "to submit it: nightshift submit --gpus 2" in english.stdout
    assert "(dry run: nothing was changed)" in english.stdout


def test_a_now_that_is_not_a_time_is_still_one_json_object_with_the_error(offline_env):
    result = CliRunner().invoke(app, ["ask", "--dry-run", "--json", "--now", "garbage", "run python a.py"])

    assert result.exit_code == 2
    out = json.loads(result.stdout)
    assert out["tool_calls"] == [] and out["spec"] is None and "garbage" in out["error"]
