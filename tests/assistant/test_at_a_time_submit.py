"""A submit's "N at a time": never part of the command; a sweep's `max_running` when the command's brace
lists make a sweep ("--lr {1e-3,1e-4}"); for a single task, a question back (one task has nothing to limit)."""

from __future__ import annotations

from datetime import datetime

import pytest
from langchain_core.messages import AIMessage

from assistant.parsing.commands import find_command
from assistant.parsing.intents import understand
from assistant.parsing.sweeps import brace_grid
from scheduler.spec import MAX_SWEEP_VALUES
from tests.assistant.conftest import ScriptedChatModel, tool_call, tool_result

NOW = datetime.fromisoformat("2026-03-02T15:00:00+08:00")


pytestmark = pytest.mark.usefixtures("four_gpu_node")


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("run python train.py 2 at a time", "python train.py"),
        ("python sweep.py --lr {1e-3,1e-4} two at a time", "python sweep.py --lr {1e-3,1e-4}"),
        ("run python t.py --bs {32, 64, 128}, 2 at a time", "python t.py --bs {32, 64, 128}"),
        ("run python train.py 3 runs at once", "python train.py"),
    ],
)
def test_n_at_a_time_ends_the_command(text, command):
    found = find_command(text)

    assert found is not None and found.command == command


@pytest.mark.parametrize(
    ("command", "template", "grid"),
    [
        ("python sweep.py --lr {1e-3,1e-4}", "python sweep.py --lr {lr}", {"lr": ["1e-3", "1e-4"]}),
        (
            "python t.py --lr={0.1,0.01} --batch-size {32, 64}",
            "python t.py --lr={lr} --batch-size {batch_size}",
            {"lr": [0.1, 0.01], "batch_size": [32, 64]},
        ),
        ("python t.py {a,b} x={1,2}", "python t.py {p1} x={x}", {"p1": ["a", "b"], "x": [1, 2]}),
        (
            "python t.py --seed {1,2} --seed {3,4}",
            "python t.py --seed {seed} --seed {seed_2}",
            {"seed": [1, 2], "seed_2": [3, 4]},
        ),
        # a shell's sequence: from, to, by a step, either way
        ("python t.py --seed {1..5}", "python t.py --seed {seed}", {"seed": [1, 2, 3, 4, 5]}),
        ("python t.py --epochs={10..1..3}", "python t.py --epochs={epochs}", {"epochs": [10, 7, 4, 1]}),
        ("python t.py --shift {-2..2..-2}", "python t.py --shift {shift}", {"shift": [-2, 0, 2]}),
    ],
)
def test_brace_lists_in_a_command_make_a_grid_named_by_their_flags(command, template, grid):
    found = brace_grid(command)

    assert found is not None and (found.command, found.grid) == (template, grid)


@pytest.mark.parametrize(
    "command",
    [
        'python -c "print({1,2})"',
        "echo ${HOME} {lr}",
        'python t.py --cfg \'{"a":1,"b":2}\'',
        "python t.py --lr {0.1}",
        "python t.py --range {1..}",
        "python t.py {1..2}x",
    ],
)
def test_braces_in_quotes_shell_variables_and_placeholders_make_no_grid(command):
    assert brace_grid(command) is None


@pytest.mark.parametrize(
    ("text", "args"),
    [
        (
            "python sweep.py --lr {1e-3,1e-4} two at a time",
            {"command": "python sweep.py --lr {lr}", "sweep": {"lr": ["1e-3", "1e-4"]}, "max_running": 2},
        ),
        (
            "run `python train.py --bs {32,64,128}` tonight, at most 2 at once",
            {
                "command": "python train.py --bs {bs}",
                "sweep": {"bs": [32, 64, 128]},
                "max_running": 2,
                "offpeak": True,
            },
        ),
        (
            "跑 train.py --lr {0.1,0.01}，同时最多跑2个",
            {"command": "python train.py --lr {lr}", "sweep": {"lr": [0.1, 0.01]}, "max_running": 2},
        ),
        (
            "run python sweep.py --lr {1e-3,1e-4} on 2 GPUs",
            {"command": "python sweep.py --lr {lr}", "sweep": {"lr": ["1e-3", "1e-4"]}, "gpus": 2},
        ),
    ],
)
def test_a_submit_of_a_sweep_takes_n_at_a_time_as_its_max_running(text, args):
    reading = understand(text, NOW)

    assert (reading.kind, reading.tool, reading.args) == ("tool", "submit_task", args)


@pytest.mark.parametrize(
    "text",
    [
        "run python train.py 2 at a time",
        "今晚跑 python train.py，一次跑两个",
        "run `python train.py` one at a time",
    ],
)
def test_a_single_task_n_at_a_time_is_a_question_not_a_card(text):
    reading = understand(text, NOW)

    assert (reading.kind, reading.reason) == ("question", "at_a_time_single")


def test_a_sweep_n_at_a_time_is_one_card_that_submits_the_sweep_with_its_limit(make_assistant, cluster):
    assistant = make_assistant()

    turn = assistant.ask("run python sweep.py --lr {1e-3,1e-4,1e-5} two at a time")

    [card] = turn.cards
    assert card["spec"]["command"] == "python sweep.py --lr {lr}"
    assert card["sweep"]["tasks"] == 3 and card["sweep"]["max_running"] == 2
    assert card["sweep"]["examples"] == [
        "python sweep.py --lr 1e-3",
        "python sweep.py --lr 1e-4",
        "python sweep.py --lr 1e-5",
    ]
    assert "• sweep: 3 tasks over lr, at most 2 at a time" in turn.reply
    assert cluster.tasks.count_by_status() == {}

    result = assistant.confirm(card["action_id"])

    assert result["ok"], result
    sweep = assistant.client.sweep(result["task"]["id"])
    assert (sweep["max_running"], sweep["tasks_count"], sweep["waiting"]) == (2, 3, 1)
    commands = sorted(
        task.spec["command"] for task in map(cluster.tasks.get_any, [t["id"] for t in sweep["tasks"]])
    )
    assert commands == ["python sweep.py --lr 1e-3", "python sweep.py --lr 1e-4", "python sweep.py --lr 1e-5"]


def test_a_chinese_sweep_n_at_a_time_gets_a_chinese_card_with_its_limit(make_assistant):
    assistant = make_assistant()

    turn = assistant.ask("跑 train.py --lr {0.1,0.01}，同时最多跑2个")

    [card] = turn.cards
    assert card["sweep"]["max_running"] == 2 and card["spec"]["command"] == "python train.py --lr {lr}"
    assert "• 扫参: 2 个任务，参数 lr，同时最多运行 2 个" in turn.reply


@pytest.mark.parametrize(
    ("text", "start"),
    [
        ("run python train.py 2 at a time", '"N at a time" limits how many tasks of a sweep run at once'),
        ("今晚跑 python train.py，一次跑两个", "“同时跑 N 个”限制的是一个扫参里同时运行的任务数"),
    ],
)
def test_a_single_task_n_at_a_time_says_there_is_nothing_to_limit_and_submits_nothing(
    make_assistant, cluster, text, start
):
    assistant = make_assistant()

    turn = assistant.ask(text)

    assert turn.tool_calls == [] and turn.cards == []
    assert turn.reply.startswith(start) and "{1e-3,1e-4}" in turn.reply
    assert cluster.tasks.count_by_status() == {}


def test_a_model_giving_a_single_task_max_running_gets_no_card_but_the_reason(make_assistant, cluster):
    call = tool_call("submit_task", {"command": "python train.py", "max_running": 2})
    assistant = make_assistant(model=ScriptedChatModel(messages=iter([call, AIMessage("-")])))

    turn = assistant.ask("run python train.py 2 at a time")

    assert turn.cards == [] and assistant.actions.pending() == []
    assert tool_result(assistant.history, "submit_task")["error"] == (
        "max_running limits how many tasks of a sweep run at once, and this is a single task (no sweep): "
        "leave it out, or give the sweep's values"
    )
    assert cluster.tasks.count_by_status() == {}


def test_a_sequence_longer_than_a_sweep_may_be_is_refused_without_being_built(make_assistant):
    found = brace_grid("python t.py --seed {0..100000000}")
    turn = make_assistant().ask("run python t.py --seed {0..100000000}")

    assert found is not None and len(found.grid["seed"]) == MAX_SWEEP_VALUES + 1  # not a billion
    assert (
        turn.cards == [] and "at most 1000 values of one parameter, and that sequence has more" in turn.reply
    )


@pytest.mark.parametrize(
    "text",
    [
        "run python train.py 3 times",
        "queue up 3 runs of python train.py with seeds 1 2 3",
        "run python train.py twice",
        "跑三遍 train.py",
        "train.py 跑3次",
    ],
)
def test_the_same_command_several_times_gets_a_question_not_one_card_or_a_command_with_times_in_it(
    text, make_assistant
):
    turn = make_assistant().ask(text)

    assert understand(text, NOW).reason == "repeat_runs"
    assert turn.cards == [] and "{1..3}" in turn.reply


@pytest.mark.parametrize(
    ("text", "retries"),
    [
        ("run python train.py and retry 3 times", 3),
        ("run python train.py, retry twice", 2),
        ("失败重试两次，跑 train.py", 2),
    ],
)
def test_retries_said_in_times_are_retries(text, retries):
    reading = understand(text, NOW)

    assert reading.tool == "submit_task" and reading.args == {
        "command": "python train.py",
        "retries": retries,
    }
