"""`--watch SECONDS`: a table redrawn in place until Ctrl-C, as `watch nvidia-smi` or `squeue -i 2` do, so
one can watch a task start or a GPU free without typing the command again."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Annotated

import typer
from rich.console import Group, RenderableType
from rich.live import Live
from rich.text import Text

from api.cli.render import console, print_error
from api.client import ClientError

WatchOpt = Annotated[
    float | None, typer.Option("--watch", min=0.5, help="redraw every SECONDS until Ctrl-C (not with --json)")
]


def refuse_watch_with_json(every_s: float | None, as_json: bool) -> None:
    """Exit 2 when both are asked for: a script reads one JSON document, not a redrawn screen."""
    if every_s is not None and as_json:
        print_error("--watch redraws a table for people; --json is for scripts: give one")
        raise typer.Exit(2)


def watched(render: Callable[[], RenderableType], every_s: float) -> RenderableType:
    """What one redraw shows: the table, or why the API did not answer (asked again at the next one), under
    a line saying when and how often."""
    try:
        body: RenderableType = render()
    except ClientError as exc:
        body = Text(f"error: {exc.message}", style="red")
    stamp = datetime.now().astimezone().strftime("%H:%M:%S")
    return Group(body, Text(f"{stamp}, every {every_s:g} s; Ctrl-C stops", style="dim"))


pause_between_draws: Callable[[float], None] = time.sleep


def watch(
    render: Callable[[], RenderableType], every_s: float, sleep: Callable[[float], None] | None = None
) -> None:
    """Redraw `render()` in place every `every_s` seconds until Ctrl-C, which ends it quietly."""
    pause = sleep or pause_between_draws
    try:
        with Live(watched(render, every_s), console=console, auto_refresh=False) as live:
            while True:
                pause(every_s)
                live.update(watched(render, every_s), refresh=True)
    except KeyboardInterrupt:
        return
