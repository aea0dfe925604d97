"""The folder a task is to run in, said in the chat ("run python train.py in /data/exp1", "在 /data/exp1 目录下
跑"): the card says it, and the task runs there; without one, the card says the default it gets."""

from __future__ import annotations

from datetime import datetime

import pytest

from assistant.parsing.intents import understand

NOW = datetime.fromisoformat("2026-03-02T15:00:00+08:00")


@pytest.mark.parametrize(
    ("text", "workdir"),
    [
        ("run python train.py in /data/exp1", "/data/exp1"),
        ("run `python train.py` in folder /data/exp1 on 2 gpus", "/data/exp1"),
        ("run python train.py with workdir /srv/x/", "/srv/x/"),
        ("在 /data/exp1 目录下跑 python train.py", "/data/exp1"),
        ("工作目录是 /home/a/exp，跑 python t.py", "/home/a/exp"),
    ],
)
def test_the_folder_a_request_names_is_the_tasks_workdir(text, workdir):
    reading = understand(text, NOW)

    assert (reading.tool, reading.args["workdir"]) == ("submit_task", workdir)


@pytest.mark.parametrize(
    "text",
    ["run python train.py --out /data/o", "run `python train.py` in the torch2 env", "run `python train.py`"],
)
def test_a_path_in_the_command_or_no_path_sets_no_workdir(text):
    assert "workdir" not in understand(text, NOW).args


def test_the_card_says_the_folder_and_the_task_runs_there(make_assistant, cluster, tmp_path):
    assistant = make_assistant()

    named = assistant.ask(f"run `python train.py` in {tmp_path} tonight")
    default = make_assistant().ask("run `python train.py` tonight")

    assert f"• in folder: {tmp_path}" in named.reply
    assert "• in folder: /" in default.reply  # the default, said all the same
    assert assistant.confirm(named.cards[0]["action_id"])["ok"]
    [task] = assistant.client.list_tasks()
    assert task["spec"]["workdir"] == str(tmp_path)
