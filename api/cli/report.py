"""`nightshift report`: GPU-hours, energy, cost, off-peak share, CPU-hours, waits and quotas; or last
night's summary."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

import typer
from rich.console import Group
from rich.markup import escape
from rich.table import Table

from api.cli.render import console, duration_words, gpu_hours_text, print_error, print_json, short_time
from api.client import ClientError, NightshiftClient
from scheduler.settings import get_settings

SUMMARY_MAX_DAYS = 31  # GET /reports/summary takes up to 31 days of hours


def _num(value: Any, digits: int = 2) -> str:
    """`digits` decimals (`-` for none); what would read as 0.00 but is not gets two significant digits
    (a short task's 0.0038 kWh), so a row that used something never shows 0 beside a total that is not."""
    if value is None:
        return "-"
    number = float(value)
    if number == 0 or abs(number) >= 0.5 * 10**-digits:
        return f"{number:.{digits}f}"
    return f"{number:.{1 - math.floor(math.log10(abs(number)))}f}"


def _pct(value: Any) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def utilization_tables(report: dict[str, Any]) -> Group:
    """The report as rich tables: one row per key, then per day and team, then quota use."""
    currency = report.get("currency", "")
    days_text = f"{report['days']:g} day" + ("" if report["days"] == 1 else "s")
    main = Table(title=f"usage over the last {days_text}, by {report['by']}")
    for column in (
        "key",
        "GPU-h",
        "tasks",
        "ok",
        "failed",
        "mean wait",
        "kWh",
        f"cost {currency}",
        "off-peak",
        "CPU-h",
    ):
        main.add_column(column, justify="left" if column == "key" else "right")
    for row in report["rows"]:
        main.add_row(
            row["key"], _num(row["gpu_hours"]), str(row["tasks"]), str(row["succeeded"]), str(row["failed"]),
            duration_words(row["mean_wait_s"]),
            _num(row["energy_kwh"]), _num(row["cost"]), _pct(row.get("offpeak_share")),
            _num(row.get("cpu_hours")),
        )  # fmt: skip
    main.caption = (
        f"total {_num(report['total_gpu_hours'])} GPU-h of {_num(report['capacity_gpu_hours'], 0)} "
        f"({_pct(report.get('utilization'))}); {_num(report.get('total_energy_kwh'))} kWh, "
        f"{_num(report.get('total_cost'))} {currency}; off-peak {_pct(report.get('offpeak_share'))}"
    )
    if report.get("total_cpu_hours") is not None:
        main.caption += f"; {_num(report['total_cpu_hours'])} CPU-h where jobs ran in a cgroup"
    days = Table(title="by day")
    for column in ("day", "team", "GPU-h", "tasks", "kWh", "cost", "wait p50", "wait p90"):
        days.add_column(column, justify="left" if column in ("day", "team") else "right")
    for row in report.get("by_day", []):
        days.add_row(
            row["day"], row["team"], _num(row["gpu_hours"]), str(row["tasks"]), _num(row["energy_kwh"]),
            _num(row["cost"]), duration_words(row["p50_wait_s"]), duration_words(row["p90_wait_s"]),
        )  # fmt: skip
    quota = Table(title="quota use (rolling)")
    for column in ("team", "24 h GPU-h", "day budget", "7 d GPU-h", "week budget"):
        quota.add_column(column, justify="left" if column == "team" else "right")
    for row in report.get("quota", []) + report.get("member_quota", []):  # people's own budgets after
        quota.add_row(
            row["team"] if row.get("user") is None else f"{row['team']} / {row['user']}",
            f"{gpu_hours_text(row['day_used_gpu_h'])} ({_pct(row['day_share'])})",
            gpu_hours_text(row["day_budget_gpu_h"]),
            f"{gpu_hours_text(row['week_used_gpu_h'])} ({_pct(row['week_share'])})",
            gpu_hours_text(row["week_budget_gpu_h"]),
        )
    if not report.get("reservations"):
        return Group(main, days, quota)
    held = Table(title="reservations for teams")
    for column in ("node", "team", "from", "until", "reserved GPU-h", "used GPU-h", "use"):
        held.add_column(column, justify="right" if "GPU-h" in column or column == "use" else "left")
    for row in report["reservations"]:
        until = short_time(row["end"]) + (" (called off)" if row["called_off"] else "")
        until += f" ({row['repeat']})" if row.get("repeat") else ""
        held.add_row(
            row["node"], row["team"], short_time(row["start"]), until, _num(row["reserved_gpu_hours"]),
            _num(row["used_gpu_hours"]), _pct(row["use"]),
        )  # fmt: skip
    return Group(main, days, quota, held)


def summary_table(summary: dict[str, Any]) -> Table:
    """Last night's tasks: failures first with their reason, then the successes."""
    table = Table(title=f"tasks ended {summary['since'][:16]} → {summary['until'][:16]}")
    for column in ("id", "status", "name", "user", "why", "cost"):
        table.add_column(column)
    for task in summary["failed"]:
        why = escape(task.get("message") or task.get("reason") or "")
        if task.get("last_line"):  # what it printed last: the error, mostly
            why += f"\n[dim]{escape(task['last_line'])}[/]"
        if task.get("replaced_by"):  # its sweep ran it again (`nightshift rerun`)
            why += f"\n[dim]run again as {task['replaced_by']}[/]"
        name, user = escape(task["name"]), escape(task["user"])
        table.add_row(str(task["id"]), "[red]failed[/]", name, user, why, _num(task["cost"]))
    for task in summary["succeeded"]:
        name, user = escape(task["name"]), escape(task["user"])
        table.add_row(str(task["id"]), "[green]succeeded[/]", name, user, "", _num(task["cost"]))
    table.caption = (
        f"{len(summary['succeeded'])} succeeded, {len(summary['failed'])} failed, "
        f"{len(summary['cancelled'])} cancelled; {_num(summary['gpu_hours'])} GPU-h, "
        f"{_num(summary['energy_kwh'])} kWh, {_num(summary['cost'])} {summary['currency']}"
    )
    return table


def report_command(
    days: Annotated[
        float | None, typer.Option(help="look back this many days [default: 7; --summary: last night]")
    ] = None,
    by: Annotated[
        Literal["team", "user", "gpu"] | None, typer.Option(help="group by team, user or gpu [default: team]")
    ] = None,
    team: Annotated[str | None, typer.Option(help="one team's usage (admins: any team)")] = None,
    summary: Annotated[bool, typer.Option("--summary", help="last night's tasks instead")] = False,
    hours: Annotated[float | None, typer.Option(help="with --summary: look back this many hours")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON for scripts")] = False,
) -> None:
    """GPU-hours, energy, cost, off-peak share, waits and quota use; `--summary`: last night's tasks."""
    problem = _options_problem(days, by, summary, hours) or (
        "--team goes with the usage report (without --summary)" if summary and team else None
    )
    if problem:
        print_error(problem)
        raise typer.Exit(2)
    if summary and days is not None:  # `--summary --days 3`: the tasks that ended in the last 3 days
        hours = days * 24
    client = NightshiftClient.from_settings(get_settings())
    try:
        if summary:
            data = client.get("/reports/summary", hours=hours)
        else:
            data = client.get(
                "/reports/utilization", days=7 if days is None else days, by=by or "team", team=team
            )
    except ClientError as exc:
        print_error(exc.message, exc.errors)
        raise typer.Exit(1) from None
    finally:
        client.close()
    if as_json:
        print_json(data)
    elif summary:
        console.print(summary_table(data))
    else:
        console.print(utilization_tables(data))


def _options_problem(days: float | None, by: str | None, summary: bool, hours: float | None) -> str | None:
    """What is wrong with this mix of `report` options (one that would be silently ignored), or None."""
    if not summary and hours is not None:
        return "--hours goes with --summary; the usage report looks back --days DAYS"
    if summary and by is not None:
        return "--summary lists tasks, not grouped: --by goes with the usage report (without --summary)"
    if summary and days is not None and hours is not None:
        return "give --days or --hours, not both"
    if summary and days is not None and days > SUMMARY_MAX_DAYS:
        return f"--summary looks back at most {SUMMARY_MAX_DAYS} days; the usage report (without it) further"
    return None
