"""`nightshift cancel --mine [--status S] [--name N] [--tag T]` (Slurm's `scancel -u $USER -t PENDING
--name=train`): one's own live tasks chosen by filters, shown, and confirmed before each is cancelled."""

from __future__ import annotations

import sys
from collections.abc import Callable

import typer

from api.cli.render import console, print_error
from api.cli.sweeps import id_ranges
from api.client import NightshiftClient

LIVE = ("queued", "running")
PAGE = 1000


def own_live_tasks(
    client: NightshiftClient, status: str | None, name: str | None, tag: str | None
) -> list[int]:
    """The ids of the caller's queued and running tasks (or those of `status`) matching `name` (exact, or
    `train*`) and `tag`, oldest first."""
    me = client.me()["user"]
    found: list[int] = []
    for wanted in [status] if status else LIVE:
        offset = 0
        while True:
            page = client.task_page({"user": me, "status": wanted, "name": name, "tag": tag}, PAGE, offset)
            found += [int(task["id"]) for task in page["tasks"]]
            offset += int(page["count"])
            if not page["count"] or offset >= int(page["total"]):
                break
    return sorted(set(found))


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
