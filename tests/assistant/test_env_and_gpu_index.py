"""Environment variables said in a request become the spec's `env`; a GPU named by its index gets a question
back (nightshift picks GPUs) rather than a card that silently drops it."""

from __future__ import annotations

import pytest

from assistant.cards import cli_equivalent
from assistant.parsing.intents import understand
from tests.assistant.conftest import NOW

pytestmark = pytest.mark.usefixtures("four_gpu_node")


@pytest.mark.parametrize(
    ("text", "command", "env"),
    [
        ("WANDB_MODE=offline python train.py", "python train.py", {"WANDB_MODE": "offline"}),
        ("run python train.py with WANDB_MODE=offline", "python train.py", {"WANDB_MODE": "offline"}),
        ("set WANDB_MODE=offline and run python train.py", "python train.py", {"WANDB_MODE": "offline"}),
        (
            "run python train.py with env HF_HOME='/data/hf cache' OMP_NUM_THREADS=4",
            "python train.py",
            {"HF_HOME": "/data/hf cache", "OMP_NUM_THREADS": "4"},
        ),
        ("用两张卡跑 train.py，环境变量 WANDB_MODE=offline", "python train.py", {"WANDB_MODE": "offline"}),
    ],
)
def test_variables_set_outside_the_command_become_its_env(text, command, env):
    reading = understand(text, NOW)

    assert reading.tool == "submit_task"
    assert reading.args["command"] == command and reading.args["env"] == env


@pytest.mark.parametrize(
    "text",
    [
        "run python train.py --lr=0.1 on 2 gpus",  # a flag's value stays the command's
        "run `WANDB_MODE=offline python train.py`",  # in backticks: the command as typed, for the shell
        "run python train.py LR=0.1",  # after the command: its argument (hydra overrides look like this)
    ],
)
def test_assignments_inside_the_command_stay_in_it(text):
    reading = understand(text, NOW)

    assert reading.tool == "submit_task" and "env" not in reading.args
    assert "=" in reading.args["command"]


@pytest.mark.parametrize(
    "text",
    [
        "run python train.py on gpu 3",
        "run python train.py on GPUs 0 and 1",
        "run python train.py on gpu0",
        "CUDA_VISIBLE_DEVICES=2 python train.py",
        "用3号卡跑 train.py",
        "用第二张卡跑 train.py",
    ],
)
def test_a_gpu_named_by_its_index_gets_a_question_not_a_card(text):
    reading = understand(text, NOW)

    assert (reading.kind, reading.reason) == ("question", "gpu_index")


@pytest.mark.parametrize(
    ("text", "gpus"),
    [
        ("run python train.py on 3 gpus", 3),
        ("用3张卡跑 train.py", 3),
        ("run python train.py on 1 gpu with 40gb", 1),
        ("run python train.py with GPUS=2", 2),  # the spec's own field, not a variable
    ],
)
def test_a_count_of_gpus_is_no_index_nor_a_variable(text, gpus):
    args = understand(text, NOW).args

    assert args["gpus"] == gpus and "env" not in args


def test_an_env_card_shows_the_variables_and_submits_them(make_assistant, cluster):
    assistant = make_assistant()

    turn = assistant.ask("HF_HOME='/data/hf cache' python train.py on 1 GPU")
    more = assistant.ask("also set WANDB_MODE=offline")

    assert turn.cards[0]["spec"]["env"] == {"HF_HOME": "/data/hf cache"}
    assert "env HF_HOME='/data/hf cache'" in turn.reply
    assert more.cards[0]["spec"]["env"] == {"HF_HOME": "/data/hf cache", "WANDB_MODE": "offline"}
    assert "--env 'HF_HOME=/data/hf cache' --env WANDB_MODE=offline" in cli_equivalent(more.cards[0]["spec"])
    result = assistant.confirm(more.cards[0]["action_id"])
    assert result["ok"], result
    assert assistant.client.get_task(result["task"]["id"])["spec"]["env"] == {
        "HF_HOME": "/data/hf cache",
        "WANDB_MODE": "offline",
    }


def test_running_a_task_again_with_a_variable_adds_it_to_the_earlier_env(make_assistant, cluster):
    assistant = make_assistant()
    first = assistant.client.submit({"command": "python train.py", "gpus": 1, "env": {"SEED": "1"}})

    turn = assistant.ask(f"rerun {first['id']} with WANDB_MODE=offline")

    assert turn.cards[0]["spec"]["env"] == {"SEED": "1", "WANDB_MODE": "offline"}


def test_a_gpu_index_question_says_why_in_the_persons_language(make_assistant):
    assistant = make_assistant()

    english = assistant.ask("run python train.py on gpu 3")
    chinese = assistant.ask("用3号卡跑 train.py")

    assert english.cards == [] and "cannot ask for GPU 3 by its number" in english.reply
    assert chinese.cards == [] and "不能按编号指定某张卡" in chinese.reply


@pytest.mark.parametrize(
    "text",
    [
        "run python train.py with 16 cpus and 64gb ram",
        "run python train.py with 8 cpu cores",
        "run python train.py, it needs 200GB of disk",
        "用64G内存跑 train.py",
    ],
)
def test_cpus_ram_or_disk_get_a_question_and_are_never_read_as_gpu_memory(text, make_assistant):
    turn = make_assistant().ask(text)

    assert understand(text, NOW).reason == "host_resources"
    assert turn.cards == [] and (
        "GPUs and GPU memory only" in turn.reply or "只分配 GPU 和显存" in turn.reply
    )


@pytest.mark.parametrize(
    ("text", "gb"), [("run python train.py with 40gb of memory", 40), ("跑 train.py，要40G以上显存", 40)]
)
def test_memory_said_plainly_is_still_gpu_memory(text, gb):
    assert understand(text, NOW).args["gpu_memory_gb"] == gb


@pytest.mark.parametrize(
    "text",
    [
        "run python train.py on the biggest GPU",
        "run `python train.py` on the fastest card",
        "run python train.py on the largest node",
        "用最大的卡跑 python train.py",
        "用最快的显卡跑 train.py",
    ],
)
def test_a_gpu_asked_for_by_rank_gets_a_question_not_a_card_for_any_gpu(text):
    reading = understand(text, NOW)

    assert (reading.kind, reading.reason) == ("question", "biggest_gpu")


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("run python train.py with the best settings", "python train.py"),
        ("run python eval.py --top 5", "python eval.py --top 5"),
    ],
)
def test_best_or_top_said_of_something_else_is_no_gpu_rank(text, command):
    reading = understand(text, NOW)

    assert (reading.tool, reading.args["command"]) == ("submit_task", command)


def test_the_biggest_gpu_question_says_what_to_say_instead(make_assistant):
    assistant = make_assistant()

    english = assistant.ask("run python train.py on the biggest GPU")
    chinese = assistant.ask("用最大的卡跑 python train.py")

    assert english.cards == [] and 'say how much free memory each GPU needs ("with 80GB")' in english.reply
    assert chinese.cards == [] and "请说每张卡至少要多少空闲显存" in chinese.reply
