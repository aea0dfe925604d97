"""The words after `--` keep their boundaries in the task's command, `$VAR` is left to the job's shell, and
the command a card shows pastes back after `--` into the same command."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from api.cli.command_line import command_from_words, words_to_paste

WORDS = [
    ["python3", "-c", "print('hello')"],
    ["echo", "a  b", "*.txt", 'say "hi"', "back`tick`", "", "semi;colon", "(paren)", "a\\b"],
    ["python", "train.py", "--lr", "3e-4", "--tag", "run #1"],
]


@pytest.mark.parametrize("words", WORDS)
def test_the_jobs_shell_gets_the_words_that_were_typed(words: list[str]) -> None:
    command = command_from_words(["printf", "%s|", *words])

    ran = subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=True)

    assert ran.stdout == "".join(f"{word}|" for word in words)


def test_a_variable_is_expanded_by_the_jobs_shell_and_one_word_is_a_shell_command() -> None:
    command = command_from_words(["printf", "%s", "$NIGHTSHIFT_OUTPUT_DIR/metrics.json"])
    ran = subprocess.run(
        ["sh", "-c", command], capture_output=True, text=True, env={"NIGHTSHIFT_OUTPUT_DIR": "/out"}
    )

    assert ran.stdout == "/out/metrics.json"
    assert command_from_words(["cd exp && python train.py"]) == "cd exp && python train.py"
    assert command_from_words(["python", "train.py", "--lr", "3e-4"]) == "python train.py --lr 3e-4"


@pytest.mark.parametrize(
    ("words", "printed"),
    [
        (["awk", "{print $2}", "-"], "b\n"),  # awk's field, not the shell's second argument
        (["echo", "costs $5 or $ 6"], "costs $5 or $ 6\n"),
        (["sh", "-c", "for i in 1 2; do printf $i; done"], "12"),  # the inner shell's variable
        (["printf", "%s", "${OUT}-$OUT-$Out-$out"], "/out-/out-$Out-$out"),
    ],
)
def test_only_a_variable_in_capitals_is_left_to_the_jobs_shell(words: list[str], printed: str) -> None:
    command = command_from_words(words)
    ran = subprocess.run(
        ["sh", "-c", command], input="a b c\n", capture_output=True, text=True, env={"OUT": "/out"}
    )

    assert ran.stdout == printed, command


@pytest.mark.parametrize(
    "command",
    [
        "python train.py --lr 3e-4",
        "python3 -c \"print('hi')\"",
        "cd exp && python train.py > log.txt",
        "python train.py --out $NIGHTSHIFT_OUTPUT_DIR",
        "echo a  b",
    ],
)
def test_a_cards_command_pastes_back_after_the_double_dash_into_the_same_command(command: str) -> None:
    pasted = words_to_paste(command)

    assert command_from_words(shlex.split(pasted)) == command
    assert words_to_paste("python train.py --lr 3e-4") == "python train.py --lr 3e-4"  # plain stays plain
