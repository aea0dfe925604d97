"""`nightshift compare SWEEP|TAG`: parameters vs metrics of a sweep's (or a tag's) tasks, best row marked."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.table import Table

from api.cli.render import STATUS_STYLE, console, err_console, print_error

BEST_MARK = "★"


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def results_table(data: dict[str, Any], title: str) -> Table:
    """One row per task: id, status, each parameter, each metric; the best row starred and bold."""
    table = Table(title=title, title_justify="left")
    table.add_column("", no_wrap=True)
    table.add_column("task", no_wrap=True)
    table.add_column("status", no_wrap=True)
    for name in data["params"]:
        table.add_column(name, style="cyan")
    for name in data["metrics"]:
        arrow = (" ↓" if data["goal"] == "min" else " ↑") if name == data.get("sort") else ""
        table.add_column(f"{name}{arrow}", justify="right")
    for row in data["rows"]:
        status = str(row["status"])
        cells = [
            BEST_MARK if row["best"] else "",
            str(row["task_id"]),
            f"[{STATUS_STYLE.get(status, 'white')}]{status}[/]",
            *(_cell(row["params"].get(name)) for name in data["params"]),
            *(_cell(row["metrics"].get(name)) for name in data["metrics"]),
        ]
        table.add_row(*cells, style="bold" if row["best"] else None)
    return table


def sweep_line(sweep: dict[str, Any]) -> str:
    """`submitted sweep 3 (train): 6 tasks, 11-16`."""
    ids = [task["id"] for task in sweep["tasks"]]
    span = f"{ids[0]}-{ids[-1]}" if len(ids) > 1 else str(ids[0])
    return f"submitted {sweep['kind']} [bold]{sweep['id']}[/] ({sweep['name']}): {len(ids)} tasks, {span}"


def sweep_counts_line(sweep: dict[str, Any], running: str = "running") -> str:
    """`sweep 3: 4 held, 2 running`: its tasks by status, held ones apart from the other queued ones;
    `running` words the running ones (`stopping` after a cancel)."""
    counts = dict(sweep["counts"])
    held = sweep.get("held", 0)
    if held:
        counts["queued"] = counts.get("queued", 0) - held
        counts["held"] = held
    words = {"running": running}
    parts = [f"{count} {words.get(status, status)}" for status, count in sorted(counts.items()) if count]
    return f"sweep {sweep['id']}: {', '.join(parts)}"


def compare_command(
    target: Annotated[str, typer.Argument(help="a sweep id, or a tag")],
    sort: Annotated[
        str | None, typer.Option("--sort", help="the metric to sort by (default: the first)")
    ] = None,
    maximize: Annotated[bool, typer.Option("--maximize", help="larger is better for --sort")] = False,
    minimize: Annotated[bool, typer.Option("--minimize", help="smaller is better for --sort")] = False,
    tag: Annotated[
        bool, typer.Option("--tag", help="TARGET is a tag even if it looks like a number")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON for scripts")] = False,
) -> None:
    """Compare the tasks of a sweep (or carrying a tag): parameters vs metrics, best row marked.

    Best means smallest for metrics named like loss, error or time, largest otherwise; --maximize or
    --minimize says otherwise.
    """
    from api.cli.app import _with_client

    if maximize and minimize:
        print_error("choose --maximize or --minimize, not both")
        raise typer.Exit(2)
    goal = "max" if maximize else "min" if minimize else None
    by_tag = tag or not target.isdigit()
    data: dict[str, Any] = _with_client(
        lambda client: client.results(
            sweep_id=None if by_tag else int(target), tag=target if by_tag else None, sort=sort, goal=goal
        )
    )
    if as_json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return
    title = f"tag {target}" if by_tag else f"sweep {target}"
    if not data["rows"]:
        console.print(f"{title}: no tasks")
        return
    console.print(results_table(data, title))
    reported = data.get("metrics") or []
    if data.get("sort") is None or not reported:
        console.print(
            "no task has reported a numeric metric yet (write metrics.json in $NIGHTSHIFT_OUTPUT_DIR)"
        )
    else:
        best = data.get("best_task_id")
        if data["sort"] not in reported:  # --sort names a metric no task reported: a typo, most likely
            console.print(
                f"no task has reported a metric named {data['sort']!r} (reported: {', '.join(reported)})"
            )
        elif best is None:  # only failed or unfinished runs reported it
            console.print(f"no run that succeeded has reported {data['sort']} yet")
        else:
            console.print(
                f"{BEST_MARK} best by {data['sort']} ({data['goal']}) of the runs that succeeded: task {best}"
            )
    for row in data["rows"]:
        if row.get("note"):
            err_console.print(f"task {row['task_id']}: {row['note']}", markup=False)
