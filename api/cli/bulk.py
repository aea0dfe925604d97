"""`nightshift cancel --mine [--status S] [--name N] [--tag T]` (Slurm's `scancel -u $USER -t PENDING
--name=train`): one's own live tasks chosen by filters, shown, and confirmed before each is cancelled."""

from __future__ import annotations

import sys
from collections.abc import Callable

import typer

from api.cli.render import console, print_error
from api.cli.sweeps import id_ranges


def confirmed(ids: list[int], yes: bool, ask: Callable[[str], bool] = typer.confirm) -> bool:
    """Whether to cancel `ids`: `--yes`, or the person's answer at a prompt; exit 2 where nobody can
    answer one (no terminal), so a script says `--yes` on purpose."""
    if yes:
        return True
    if not sys.stdin.isatty():
        print_error(f"this would cancel {_tasks(ids)} ({id_ranges(ids)}): add --yes to do it without asking")
        raise typer.Exit(2)
    console.print(f"{_tasks(ids)}: {id_ranges(ids)}")
    return ask(f"cancel {'it' if len(ids) == 1 else 'them'}?")


def _tasks(ids: list[int]) -> str:
    return f"{len(ids)} task{'' if len(ids) == 1 else 's'}"
