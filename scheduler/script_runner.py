"""A script named as a command ("train.py --lr 0.1", "run.sh"): `/bin/sh -c` looks for a command on PATH,
not in the folder, so it would exit 127; it runs with its interpreter instead, as `sbatch run.sh` runs a
script. Shared by the chat and the CLI, so both read `train.py` the same way."""

from __future__ import annotations

INTERPRETERS = {".py": "python", ".sh": "bash"}


def with_interpreter(command: str) -> str:
    """`train.py args` -> `python train.py args`, `scripts/run.sh` -> `bash scripts/run.sh`; a path the
    shell runs itself (`./train.py`, `/opt/run.sh`) and any other command as it is."""
    first = command.split(" ", 1)[0]
    if first.startswith(("./", "/", "../")):
        return command
    for suffix, interpreter in INTERPRETERS.items():
        if first.endswith(suffix) and len(first) > len(suffix):
            return f"{interpreter} {command}"
    return command
