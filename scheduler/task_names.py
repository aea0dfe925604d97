"""A task's default name, made from its command (`python train.py --lr 0.1` is `train.py`): what a list
shows when the person gave none, and what learned run times are keyed by. Pure text work, so that the
CLI, the assistant and the service name a task the same way without loading what the service needs."""

from __future__ import annotations

import itertools
import re

_LAUNCHERS = frozenset(
    {"python", "python3", "bash", "sh", "torchrun", "accelerate", "deepspeed", "srun", "env", "uv", "run",
     "launch", "nohup", "time", "exec", "conda", "poetry", "pipenv", "mpirun", "horovodrun"}
)  # fmt: skip
# shell words that start a command without naming a program: dropped from its front
_SHELL_PREFIXES = frozenset({"do", "then", "else", "{", "(", "!", "while", "until", "if", "elif"})
# a simple command starting with one of these names no program to call the task by
_SHELL_HEADERS = frozenset(
    {"for", "select", "case", "done", "fi", "esac", "}", ")", "cd", "export", "source", ".", "set", "ulimit",
     "umask", "trap", "unset", "shift", "wait", "true", ":"}
)  # fmt: skip
_SCRIPT = re.compile(r"[\w.\-/]*\.(?:py|sh|bash|ipynb|jl|R|lua|js|ts|rb|pl)$")


def default_name(command: str) -> str:
    """A readable name from the command, which is also what learned run times are keyed by: the script it
    runs (`train.py`, wherever it sits in the command), else the module of `python -m`, else its first
    word that is not a launcher, a flag, a flag's number or a VAR=value; `python -c` code is `python -c`."""
    words = [w.strip("'\"") for w in command.split()]
    for word in words:
        if _SCRIPT.fullmatch(word):
            return word.split("/")[-1][:120]
    for flag, value in itertools.pairwise(words):
        if flag == "-m" and not value.startswith("-"):
            return value[:120]
    first = words[0].split("/")[-1] if words else ""
    if "-c" in words and first in _LAUNCHERS:
        return f"{first} -c"
    for segment in _simple_commands(command):
        for word in segment:
            base = word.split("/")[-1]
            flag_or_number = word.startswith("-") or "=" in word or base.replace(".", "", 1).isdigit()
            if base and base not in _LAUNCHERS and not flag_or_number:
                return base[:120]
    return (first or "task")[:120]


def _simple_commands(command: str) -> list[list[str]]:
    """The words of each simple command of a shell line, without shell syntax: `cd exp && make train` ->
    [["make", "train"]], `for i in 1 2; do echo $i; done` -> [["echo", "$i"]]; loop headers and builtins that
    name no program (`cd`, `export`, ...) left out."""
    segments = []
    for part in re.split(r"&&|\|\||[;&|\n]", command):
        words = [w.strip("'\"") for w in part.split()]
        while words and words[0] in _SHELL_PREFIXES:
            words = words[1:]
        if words and words[0] not in _SHELL_HEADERS:
            segments.append(words)
    return segments
