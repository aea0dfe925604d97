"""`nightshift compare SWEEP|TAG`: parameters vs metrics of a sweep's (or a tag's) tasks, best row marked;
`nightshift sweeps`: the team's sweeps, newest first, each with its tasks by status, narrowed and paged as
`nightshift ls` is (`--team`, `--status`, `--offset`; "showing 21-40 of 57" on stderr)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.table import Table

from api.cli.listing import page_footer
from api.cli.render import STATUS_STYLE, console, err_console, plain, print_error, print_json, short_time

BEST_MARK = "★"


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}"
    return plain(value)  # a job's metrics.json may hold any short string


def results_table(data: dict[str, Any], title: str) -> Table:
    """One row per task: id, status, each parameter, each metric; the best row starred and bold."""
    table = Table(title=title, title_justify="left")
    table.add_column("", no_wrap=True)
    table.add_column("task", no_wrap=True)
    table.add_column("status", no_wrap=True)
    codes = {row.get("code") for row in data["rows"]}
    with_code = len(codes) > 1  # runs of different code: which made which row
    if with_code:
        table.add_column("code", no_wrap=True, style="dim")
    for name in data["params"]:
        table.add_column(plain(name), style="cyan")
    for name in data["metrics"]:
        arrow = (" ↓" if data["goal"] == "min" else " ↑") if name == data.get("sort") else ""
        table.add_column(f"{plain(name)}{arrow}", justify="right")
    for row in data["rows"]:
        status = str(row["status"])
        cells = [
            BEST_MARK if row["best"] else "",
            str(row["task_id"]),
            f"[{STATUS_STYLE.get(status, 'white')}]{status}[/]",
            *([plain(row.get("code") or "-")] if with_code else []),
            *(_cell(row["params"].get(name)) for name in data["params"]),
            *(_cell(row["metrics"].get(name)) for name in data["metrics"]),
        ]
        table.add_row(*cells, style="bold" if row["best"] else None)
    return table


def sweep_line(sweep: dict[str, Any]) -> str:
    """`submitted sweep 3 (train): 6 tasks, 11-16`, and `, at most 2 at a time` with `max_running`."""
    line = f"submitted {sweep['kind']} [bold]{sweep['id']}[/] ({sweep['name']}): {task_span(sweep)}"
    return line + _limit_words(sweep)


def task_span(sweep: dict[str, Any]) -> str:
    """`6 tasks, 11-16`: how many tasks and their ids, from a sweep's tasks (`4 tasks, 11-12, 17-18` once
    some were run again) or (a listed sweep's) the span `first_task`-`last_task` (`4 tasks, 11 to 18`
    when it holds more ids than tasks)."""
    ids = [task["id"] for task in sweep.get("tasks") or []]
    if ids:
        return f"{_tasks(len(ids))}, {id_ranges(ids)}"
    first, last, count = sweep.get("first_task"), sweep.get("last_task"), sweep.get("tasks_count", 0)
    if first is None or last is None or first == last:
        return f"{_tasks(count)}, {first}"
    span = f"{first}-{last}" if last - first + 1 == count else f"{first} to {last}"
    return f"{_tasks(count)}, {span}"


def _tasks(count: int) -> str:
    """`1 task`, `6 tasks`."""
    return f"{count} task{'' if count == 1 else 's'}"


def id_ranges(ids: list[int]) -> str:
    """`11-12, 17-18`: sorted task ids with each run of consecutive ones as one range."""
    ranges: list[list[int]] = []
    for task_id in sorted(ids):
        if ranges and task_id == ranges[-1][1] + 1:
            ranges[-1][1] = task_id
        else:
            ranges.append([task_id, task_id])
    return ", ".join(str(low) if low == high else f"{low}-{high}" for low, high in ranges)


def rerun_line(sweep: dict[str, Any]) -> str:
    """`sweep 3: ran again 1 (lr:0.1) as 7, 4 (lr:0.5) as 8`: which task took which one's place."""
    params = {task["id"]: task.get("params") or {} for task in sweep.get("tasks") or []}
    parts = []
    for rerun in sweep.get("reruns") or []:
        words = " ".join(f"{key}:{value}" for key, value in params.get(rerun["task_id"], {}).items())
        parts.append(f"{rerun['replaced']}{f' ({words})' if words else ''} as {rerun['task_id']}")
    return f"sweep {sweep['id']}: ran again {', '.join(parts)}"


def _limit_words(sweep: dict[str, Any]) -> str:
    """`, at most 2 at a time` for a sweep with `max_running`, else nothing."""
    limit = sweep.get("max_running")
    return f", at most {limit} at a time" if limit is not None else ""


def sweep_counts_line(sweep: dict[str, Any], running: str = "running") -> str:
    """`sweep 3: 4 held, 2 running`: its tasks by status, held ones and those waiting for a slot apart
    from the other queued ones (`; at most 2 at a time` with `max_running`); `running` words the running
    ones (`stopping` after a cancel)."""
    return f"sweep {sweep['id']}: {counts_words(sweep, running)}"


def counts_words(sweep: dict[str, Any], running: str = "running") -> str:
    """`4 held, 2 running`: `sweep_counts_line` without the sweep's id (a column of `nightshift sweeps`)."""
    counts = dict(sweep["counts"])
    for apart in ("held", "waiting"):
        number = sweep.get(apart, 0)
        if number:
            counts["queued"] = counts.get("queued", 0) - number
            counts[apart] = number
    words = {"running": running, "waiting": "waiting for a slot"}
    parts = [f"{count} {words.get(status, status)}" for status, count in sorted(counts.items()) if count]
    limit = sweep.get("max_running")
    at_most = f"; at most {limit} at a time" if limit is not None else ""
    return f"{', '.join(parts)}{at_most}"


def sweeps_table(sweeps: list[dict[str, Any]]) -> Table:
    """One row per sweep, newest first: id, kind, name, who, when, its tasks and how they stand."""
    table = Table(title="sweeps", title_justify="left")
    for column in ("id", "kind", "name", "team/user", "submitted", "tasks", "status", "counts"):
        table.add_column(column, overflow="fold", no_wrap=column in ("id", "status"))
    for sweep in sweeps:
        status = str(sweep["status"])
        table.add_row(
            str(sweep["id"]),
            sweep["kind"],
            plain(sweep["name"]),
            f"{sweep['team']}/{sweep['user']}",
            short_time(sweep.get("created_at")),
            task_span(sweep),
            f"[{STATUS_STYLE.get(status, 'white')}]{status}[/]",
            counts_words(sweep),
        )
    return table


def sweeps_command(
    mine: Annotated[bool, typer.Option("--mine", help="only your own sweeps")] = False,
    team: Annotated[str | None, typer.Option(help="(admins) one team's sweeps")] = None,
    status: Annotated[str | None, typer.Option(help="queued | running | done | cancelled")] = None,
    limit: Annotated[int, typer.Option(help="at most this many")] = 20,
    offset: Annotated[int, typer.Option(help="skip this many newest ones (the next page)")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON for scripts")] = False,
) -> None:
    """List sweeps and batches, newest first: your team's (an admin's: every team's), each with its tasks
    by status (`nightshift compare ID` compares one's runs); `--offset` pages on."""
    from api.cli.app import _with_client

    data: dict[str, Any] = _with_client(
        lambda client: client.list_sweeps(
            limit=limit,
            user=client.get("/me")["user"] if mine else None,
            team=team,
            status=status,
            offset=offset,
        )
    )
    if as_json:
        print_json(data["sweeps"])  # the shape scripts already read: the list of sweeps
    elif data["sweeps"]:
        console.print(sweeps_table(data["sweeps"]))
    footer = page_footer(data, offset)
    if not data["sweeps"] and not offset:  # an empty table alone reads like an error
        searched = mine or team is not None or status is not None
        footer = (
            "no sweep matches these filters"
            if searched
            else "no sweeps yet: nightshift submit SPEC.yaml (a spec with a sweep)"
        )
    if footer:  # on stderr: a script reading --json still gets JSON alone on stdout
        err_console.print(footer, markup=False, highlight=False)


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
