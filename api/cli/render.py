"""How the CLI shows things: rich tables for people, JSON for scripts."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from api.cli.provenance import git_words
from api.cli.zone import cli_zone
from scheduler.policy.reasons import amount, energy_cost_words, human_duration
from scheduler.queue_wait import queue_wait_s
from scheduler.settings import get_settings
from scheduler.spec import gpus_label

if TYPE_CHECKING:  # the CLI starts without SQLAlchemy; only `token ls` reads the database
    from scheduler.store.identity import TokenRecord

# Piped output (scripts, CI logs) gets wide lines instead of columns squeezed to 80 characters.
console = Console(width=None if sys.stdout.isatty() else 200)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 200)

# C0/C1 control characters but tab and newline (escape sequences: a window title, a cleared screen, the
# clipboard through OSC 52), and the bidi overrides that show text in another order than it runs.
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def plain(value: object) -> str:
    """Text a person or a job wrote (names, commands, tags, messages, metrics, job output), ready for a rich
    table: control characters shown as `?` instead of reaching the terminal, `[markup]` shown as typed."""
    return escape(_UNPRINTABLE.sub("?", str(value)))


STATUS_STYLE = {
    "queued": "yellow",
    "running": "cyan",
    "succeeded": "green",
    "failed": "red",
    "cancelled": "dim",
}


def print_json(data: Any) -> None:
    """One JSON document on stdout."""
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def error_lines(message: str, errors: Sequence[Mapping[str, Any]] = ()) -> list[str]:
    """What a refused request prints: the API's message first, then each detail it does not already say;
    several problems (the message is then their list) one per line."""
    messages = [str(m) for item in errors if (m := item.get("message"))]
    if len(messages) > 1 and message == "; ".join(messages):
        return [f"error: {len(messages)} problems:", *(f"  - {m}" for m in messages)]
    said = set(_words(message))
    details = [m for m in messages if not set(_words(m)) <= said]  # not a rewording of the message
    return [f"error: {message}", *(f"  - {d}" for d in details)]


def _words(text: str) -> list[str]:
    return re.findall(r"[\w.']+", text.casefold())


def print_error(message: str, errors: Sequence[Mapping[str, Any]] = ()) -> None:
    """`error_lines` on stderr, the first word in red; the text is printed as is, never read as markup."""
    headline, *details = error_lines(message, errors)
    err_console.print(f"[red]error:[/]{escape(headline.removeprefix('error:'))}", highlight=False)
    for line in details:
        err_console.print(line, markup=False, highlight=False)


def change_line(task_id: int, diff: Mapping[str, tuple[Any, Any]]) -> str:
    """`nightshift change`'s answer: each field that changed, before -> after (or that nothing did)."""
    if not diff:
        return f"task {task_id}: nothing to change, it already is so"
    parts = [
        f"{field} {plain(_spec_value(field, old))} -> {plain(_spec_value(field, new))}"
        for field, (old, new) in diff.items()
    ]
    return f"task {task_id} changed: {', '.join(parts)}"


def _spec_value(field: str, value: Any) -> str:
    if value is None or value == []:
        return "none"
    if field in ("not_before", "deadline"):
        return short_time(str(value))
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    return str(value).lower() if isinstance(value, bool) else str(value)


TIME_FIELDS = frozenset({"submitted_at", "started_at", "finished_at"})


def _long_time(value: str) -> str:
    """`2026-12-03 18:40:32 CST`: an API time in the cluster's zone, as `show` prints it."""
    zone = cli_zone(get_settings())
    return datetime.fromisoformat(value).astimezone(zone).strftime("%Y-%m-%d %H:%M:%S %Z").strip()


def short_time(value: str | None) -> str:
    """A time as the CLI's tables show it (month-day and clock, in the CLI's zone); "-" for none."""
    if not value:
        return "-"
    zone = cli_zone(get_settings())
    return datetime.fromisoformat(value).astimezone(zone).strftime("%m-%d %H:%M:%S")


def reservation_words(held: dict[str, Any]) -> str:
    """A reservation of a node for a team as the CLI says it: "vision from 12-08 14:00:00 until 12-08
    17:00:00", and for a repeating one when it comes round: "vision every Tuesday 14:00-17:00 (next from
    ...)"."""
    start, end = short_time(held["start"]), short_time(held["end"])
    repeat = held.get("repeat")
    gpus = held.get("gpus")
    team = held["team"] + (f" (GPU{'s' if len(gpus) > 1 else ''} {','.join(map(str, gpus))})" if gpus else "")
    if not repeat:
        return f"{team} from {start} until {end}"
    zone = cli_zone(get_settings())
    first = datetime.fromisoformat(held["start"]).astimezone(zone)
    last = datetime.fromisoformat(held["end"]).astimezone(zone)
    days = {"daily": "day", "weekdays": "working day", "weekends": "weekend day"}.get(repeat, f"{first:%A}")
    return f"{team} every {days} {first:%H:%M}-{last:%H:%M} (next from {start} until {end})"


def _status(task: dict[str, Any]) -> str:
    status = str(task["status"])
    text = f"[{STATUS_STYLE.get(status, 'white')}]{status}[/]"
    if task.get("reason") and task["reason"] != status and status in {"failed", "cancelled"}:
        text += f" [dim]({task['reason']})[/]"
    if task.get("replaced_by"):  # its sweep ran it again (`nightshift rerun`): that task took its place
        text += f" [dim](run again as {task['replaced_by']})[/]"
    if status == "queued" and task.get("held_by"):
        text += f" [dim](held by {escape(str(task['held_by']))})[/]"
    elif status == "queued" and task.get("waits_for_slot"):  # its sweep's `max_running`
        text += f" [dim](waiting for a slot in sweep {task.get('sweep_id')})[/]"
    return text


def tasks_table(tasks: list[dict[str, Any]], title: str = "tasks") -> Table:
    """A table of tasks, one row each."""
    table = Table(title=title, title_justify="left")
    table.add_column("id", no_wrap=True, min_width=3)
    table.add_column("name", overflow="fold", max_width=40)
    table.add_column("status", no_wrap=True, min_width=9)
    for column in ("gpus", "team/user", "node:gpus", "submitted", "started", "finished"):
        table.add_column(column, overflow="fold")
    for task in tasks:
        indices = ",".join(map(str, task.get("gpu_indices") or []))
        where = "-" if not task.get("node") else f"{task['node']}:{indices}" if indices else str(task["node"])
        if task.get("status") == "queued":  # queued again after an attempt: that attempt's is in `show`
            where, task = "-", {**task, "started_at": None}
        table.add_row(
            str(task["id"]),
            plain(task["name"]),
            _status(task),
            gpus_label(task),
            f"{task['team']}/{task['user']}",
            where,
            short_time(task.get("submitted_at")),
            short_time(task.get("started_at")),
            short_time(task.get("finished_at")),
        )
    return table


def task_detail(task: dict[str, Any]) -> Table:
    """Every field of one task, as a two-column table."""
    table = Table(show_header=False, title=f"task {task['id']}", title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value")
    for key in (
        "name",
        "command",
        "status",
        "reason",
        "message",
        "exit_code",
        "priority",
        "gpus",
        "gpu_memory_gb",
        "team",
        "user",
        "node",
        "gpu_indices",
        "attempts",
        "submitted_at",
        "started_at",
        "finished_at",
        "sweep_id",
        "params",
        "metrics",
        "metrics_note",
    ):
        value = task.get(key)
        if value is None or value == "":
            continue
        text = json.dumps(value) if isinstance(value, dict) else str(value)
        if key in TIME_FIELDS:  # as ls shows them: in the cluster's zone, to the second
            text = _long_time(str(value))
        table.add_row(key, _status(task) if key == "status" else plain(text))
    spec = task.get("spec") or {}
    extras = {k: v for k, v in spec.items() if v not in (None, [], {}, False) and k not in task}
    for key, value in extras.items():
        if key == "git" and isinstance(value, dict):
            table.add_row(key, plain(git_words(value)))
            continue
        table.add_row(key, plain(json.dumps(value) if isinstance(value, dict | list) else value))
    rows = usage_rows(task.get("usage"))
    running = running_attempt_row(task, datetime.now().astimezone())
    if running is not None:  # what ended attempts used, then the one that runs now
        rows = [("used before" if key == "used" else key, text) for key, text in rows] + [running]
    for key, text in rows:
        table.add_row(key, text)
    return table


def running_attempt_row(task: Mapping[str, Any], now: datetime) -> tuple[str, str] | None:
    """`("running now", "~25 min on 2 GPUs so far: 0.83 GPU-h")` for a running task (the usage of its
    attempts is recorded as each ends, so without this a running task's figures look like nothing)."""
    started = task.get("started_at")
    if task.get("status") != "running" or not started:
        return None
    elapsed_s = max(0.0, (now - datetime.fromisoformat(str(started))).total_seconds())
    gpus = int(task.get("gpus") or 0)
    if gpus == 0:
        return ("running now", f"{human_duration(elapsed_s)} on CPU only so far")
    return (
        "running now",
        f"{human_duration(elapsed_s)} on {gpus} GPU{'s' if gpus > 1 else ''} so far: "
        f"{_amount(gpus * elapsed_s / 3600)} GPU-h",
    )


def _amount(value: float) -> str:
    """Two decimals, or two significant digits for what would read as 0.00 (a short task's 0.00038 GPU-h)."""
    if value == 0 or abs(value) >= 0.1:
        return f"{value:.2f}"
    return f"{value:.{1 - math.floor(math.log10(abs(value)))}f}"


def gpu_hours_text(value: float | None) -> str:
    """GPU-hours used or budgeted, to two decimals (`-` for none): a 0.02 GPU-h budget reads 0.02, never 0
    or 0.0; what would read as 0.00 but is not gets two significant digits (0.0038)."""
    return "-" if value is None else amount(float(value), decimals=2)


def usage_rows(usage: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """What a task used over its ended attempts, in words: GPU-hours and energy, GPU memory against what
    it asked, how busy its GPUs were, its CPU time ([] before an attempt ended)."""
    if not usage:
        return []
    attempts = usage["attempts"]
    energy = f"{_amount(usage['energy_kwh'])} kWh ({usage['energy_source']})"
    used = f"{_amount(usage['gpu_hours'])} GPU-h, {energy}, {_amount(usage['cost'])} {usage['currency']}"
    if usage.get("offpeak_share") is not None:
        used += f", {usage['offpeak_share'] * 100:.0f} % off-peak"
    if attempts > 1:
        used += f" ({attempts} attempts)"
    rows = [("used", used)]
    peak, asked = usage.get("peak_gpu_memory_mib"), usage.get("requested_gpu_memory_mib")
    if peak is not None:
        memory = f"peak {peak / 1024:.1f} GB"
        rows.append(("gpu memory", memory + (f" (asked {asked / 1024:.0f} GB per GPU)" if asked else "")))
    if usage.get("mean_utilization_pct") is not None:
        rows.append(("gpu busy", f"{usage['mean_utilization_pct']:.0f} % on average"))
    if usage.get("cpu_hours") is not None:
        cpu_s = usage["cpu_hours"] * 3600
        rows.append(("cpu time", f"{cpu_s:.2g} s" if cpu_s < 10 else duration_words(cpu_s)))  # not "0 s"
    return rows


def queue_table(queue: dict[str, Any]) -> Table:
    """The queue with positions and expected starts (as `squeue --start`)."""
    table = Table(title=f"queue ({queue['length']} waiting)", title_justify="left")
    columns = (
        "pos",
        "id",
        "name",
        "priority",
        "gpus",
        "team/user",
        "submitted",
        "expected start",
        "why waiting",
    )
    for column in columns:
        table.add_column(column)
    for entry in queue["entries"]:
        task = entry["task"]
        table.add_row(
            str(entry["position"]),
            str(task["id"]),
            plain(task["name"]),
            task["priority"],
            gpus_label(task),
            f"{task['team']}/{task['user']}",
            short_time(task["submitted_at"]),
            short_time(entry.get("estimated_start")) if entry.get("estimated_start") else "-",
            plain(entry.get("reason") or ""),
        )
    hidden = queue["length"] - len(queue["entries"])
    caption = Text()
    if hidden > 0:  # positions count them: say why the numbers skip
        caption.append(f"{hidden} more not shown (other teams' tasks, or past the end of the list)")
    if queue.get("scheduler_warning"):  # the reasons above assume a scheduler runs
        caption.append(("\n" if caption else "") + str(queue["scheduler_warning"]), style="yellow")
    table.caption = caption if caption else None
    return table


def gpus_table(data: dict[str, Any]) -> Table:
    """GPUs of every node."""
    alive = {node["name"]: node for node in data["nodes"]}
    table = Table(title="gpus", title_justify="left")
    columns = ["node", "gpu", "name", "memory free / total", "util", "temp", "power", "tasks"]
    shared = any(gpu.get("outside") for gpu in data["gpus"])
    out = any(gpu.get("out_of_service") for gpu in data["gpus"])
    for column in columns + (["outside nightshift"] if shared else []) + (["out of service"] if out else []):
        table.add_column(column)
    for gpu in data["gpus"]:
        node = alive.get(gpu["node"], {})
        node_text = gpu["node"] + ("" if node.get("alive", True) else " [red](down)[/]")
        node_text += " [yellow](drained)[/]" if node.get("drained") else ""
        row = [
            node_text,
            str(gpu["index"]),
            gpu["name"],
            f"{gpu['memory_free_mib'] / 1024:.1f} / {gpu['memory_total_mib'] / 1024:.1f} GB",
            "-" if gpu["utilization_pct"] is None else f"{gpu['utilization_pct']:.0f}%",
            "-" if gpu["temperature_c"] is None else f"{gpu['temperature_c']:.0f}°C",
            "-" if gpu["power_w"] is None else f"{gpu['power_w']:.0f} W",
            _holders(gpu),
        ]
        if shared:
            row.append("\n".join(_outside_process(process) for process in gpu.get("outside") or []) or "-")
        if out:
            row.append(plain(gpu["out_of_service"]) if gpu.get("out_of_service") else "-")
        table.add_row(*row)
    return table


def _holders(gpu: dict[str, Any]) -> str:
    """The tasks on a GPU: `3,4`, or `3 (0.5),4 (0.25)` for tasks sharing it; `-` for none."""
    shares = {int(task_id): float(part) for task_id, part in (gpu.get("shares") or {}).items()}
    return (
        ",".join(
            f"{task_id} ({shares[task_id]:g})" if task_id in shares else str(task_id)
            for task_id in gpu["tasks"]
        )
        or "-"
    )


def _outside_process(process: dict[str, Any]) -> str:
    """`pid 4242 alice: jupyter-lab, 40.0 GB` (escaped: a command is no markup)."""
    who = ": ".join(part for part in (process.get("user"), process.get("command")) if part)
    memory = "" if process.get("used_mib") is None else f", {process['used_mib'] / 1024:.1f} GB"
    return escape(f"pid {process['pid']}" + (f" {who}" if who else "") + memory)


def _when(value: str | None) -> str:
    return short_time(value) if value else "unknown"


def waited_row(data: Mapping[str, Any], now: datetime) -> tuple[str, str] | None:
    """`("waiting", "85 min so far, since 11:35")` for a queued task; `("waited", "40 min, then started
    12:40")` for one that started once (a retried one's start is its last attempt's: no row)."""
    waited_s = queue_wait_s(data, now)
    if waited_s is None:
        return None
    if data.get("status") == "queued":
        return (
            "waiting",
            f"{duration_words(waited_s)} so far, since {short_time(str(data['submitted_at']))}",
        )
    return ("waited", f"{duration_words(waited_s)}, then started {short_time(str(data['started_at']))}")


def explain_panel(data: dict[str, Any], now: datetime | None = None) -> Table:
    """Why a task waits, since when, when it should start, and its priority parts."""
    table = Table(show_header=False, title=f"task {data['task_id']}: {data['status']}", title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value")
    table.add_row("why", plain(data.get("reason")))
    if data.get("position"):
        table.add_row("position", f"{data['position']} of {data.get('queued_total', '?')}")
    waited = waited_row(data, now or datetime.now(UTC))
    if waited is not None:
        table.add_row(*waited)
    if data.get("command"):
        table.add_row("command", plain(data["command"]))
    if data.get("estimated_start"):
        window = _range(data.get("estimated_start_low"), data.get("estimated_start_high"))
        start = _when(data["estimated_start"])
        table.add_row("expected start", f"{start} (range {window})" if window else start)
        table.add_row("expected end", _when(data.get("estimated_end")))
    elif data.get("status") == "running" and data.get("estimated_end"):  # by its estimate or time limit
        table.add_row("expected end", _when(data["estimated_end"]))
    if data.get("energy_kwh") is not None:  # a queued task's from its expected start, a running one's in all
        table.add_row("expected energy", _energy_words(data))
    if data.get("scheduler_warning"):  # the expected start assumes a scheduler runs
        table.add_row("scheduler", Text(str(data["scheduler_warning"]), style="yellow"))
    if data.get("deadline_warning"):  # the deadline is a soft goal: said, never enforced
        table.add_row("deadline", Text(str(data["deadline_warning"]), style="yellow"))
    if data.get("last_output"):  # a failed task's last lines: the error, mostly
        table.add_row("last output", plain("\n".join(data["last_output"])))
    if data.get("status") in ("failed", "running") and not data.get("could_not_start"):  # where to look next
        table.add_row(
            "output", f"nightshift logs {data['task_id']}" + (" -f" if data["status"] == "running" else "")
        )
    priority = data.get("priority")
    if priority:
        parts = ", ".join(
            f"{name} {priority[key] / 3600:.1f} h"
            for name, key in (
                ("class", "class_part_s"),
                ("age", "age_part_s"),
                ("short job", "short_job_part_s"),
                ("fair share", "fairshare_part_s"),
                ("deadline", "deadline_part_s"),
            )
            if priority.get(key)
        )
        table.add_row(
            "priority", f"{priority['class']}: {parts} (total {priority['effective_s'] / 3600:.1f} h)"
        )
    return table


def estimate_line(data: dict[str, Any]) -> str:
    """One sentence: when it should start and why (and, for a new task, what its energy would cost)."""
    if not data.get("start"):
        return f"no estimate yet: {data.get('reason')}"
    wait = data.get("wait") or (f"~{data['wait_s'] / 60:.0f} min" if data.get("wait_s") is not None else "?")
    window = _range(data.get("low"), data.get("high"))
    line = (
        f"expected start {_when(data['start'])} (wait {wait}"
        + (f"; range {window}" if window else "")
        + f"): {data.get('reason')}"
    )
    if data.get("estimated_run_s") is not None and data.get("estimate_source"):  # a new task's run time
        line += f"; assumed run {duration_words(float(data['estimated_run_s']))} ({data['estimate_source']})"
    if data.get("energy_cost") is not None:  # priced at the tariff's rates from that start
        line += f"; energy {_energy_words(data)}"
    return line


def _energy_words(data: dict[str, Any]) -> str:
    """ "~1.2 kWh, ~0.15 USD" from an answer's `energy_kwh`, `energy_cost` and `currency`."""
    return energy_cost_words(data["energy_kwh"], data.get("energy_cost"), data.get("currency") or "")


def _range(low: str | None, high: str | None) -> str | None:
    """ "12-02 08:40:00 – 12-02 10:15:00", or None when both ends read the same (a fixed start time)."""
    first, last = _when(low), _when(high)
    return None if first == last else f"{first} – {last}"


def stopping_line(task: dict[str, Any]) -> str:
    """What a cancel of a running task does, from its spec: its stop signal, then SIGKILL after its grace."""
    spec = task.get("spec") or {}
    signal = str(spec.get("stop_signal") or "TERM").upper().removeprefix("SIG")
    grace = spec.get("grace_seconds")
    after = "the grace period" if grace is None else f"{float(grace):g} s"
    return f"task {task['id']} is stopping (SIG{signal}, then SIGKILL after {after})"


def quota_table(data: dict[str, Any]) -> Table:
    """A team's cap and budgets."""
    table = Table(title=f"quota of team {data['team']}: {data['state']}", title_justify="left")
    for column in ("what", "used", "limit", "state"):
        table.add_column(column)
    cap, in_use = data.get("gpu_cap"), data["gpus_in_use"]
    cap_state = ""
    if cap is not None and in_use > cap:
        cap_state = "borrowing idle GPUs (no new starts above the cap while others wait)"
    elif cap is not None and in_use == cap:
        cap_state = "at its cap"
    table.add_row("GPUs now", f"{in_use:g}", "-" if cap is None else str(cap), cap_state)
    if data.get("user_gpu_cap") is not None:  # a cap per person, beside the team's
        mine, own_cap = data["user_gpus_in_use"], data["user_gpu_cap"]
        own_state = "at your cap" if mine == own_cap else "borrowing idle GPUs" if mine > own_cap else ""
        table.add_row(f"GPUs now, {data['user']}", f"{mine:g}", str(own_cap), own_state)
    own = data.get("user_budget")
    for period, window in (("day", "last 24 h"), ("week", "last 7 days")):  # rolling, not calendar
        item = data[period]
        budget = item["budget_gpu_h"]
        table.add_row(
            f"GPU-hours ({window})",
            gpu_hours_text(item["used_gpu_h"]),
            gpu_hours_text(budget),
            item["state"],
        )
        if own:  # the person's own budget, by their use in this team
            mine = own[period]
            table.add_row(
                f"  yours, {data['user']}",
                gpu_hours_text(mine["used_gpu_h"]),
                gpu_hours_text(mine["budget_gpu_h"]),
                mine["state"],
            )
    fair = data.get("fair_share")
    if fair:  # as Slurm's sshare: decayed use against an equal share, and the credit it gives
        credit = (
            f"priority credit {fair['credit_h']:g} of {fair['max_credit_h']:g} h"
            if fair.get("max_credit_h")
            else "no fair-share credit under this policy"
        )
        table.add_row(
            f"fair share (half-life {fair['half_life_days']:g} d)",
            f"{gpu_hours_text(fair['decayed_gpu_h'])} ({fair['part_of_use']:.0%} of all use)",
            f"equal share {fair['equal_share']:.0%}",
            credit,
        )
        member = fair.get("member")
        if member:  # within the team: the person's part of its use, and the credit that gives their tasks
            table.add_row(
                f"  yours in team {data['team']}",
                f"{gpu_hours_text(member['decayed_gpu_h'])} ({member['part_of_team']:.0%} of the team's)",
                f"among {member['members']} {'person' if member['members'] == 1 else 'people'}",
                f"priority credit {member['credit_h']:g} of {fair['max_credit_h']:g} h"
                if fair.get("max_credit_h")
                else "",
            )
    said = [data["message"]] if data.get("state") != "ok" and data.get("message") else []  # the warning
    if data.get("new_starts_at"):
        said.append(f"new starts again at {short_time(data['new_starts_at'])}, as its use ages out")
    elif own and own.get("new_starts_at"):
        said.append(f"your new starts again at {short_time(own['new_starts_at'])}, as your use ages out")
    table.caption = "; ".join(said) or None
    table.caption_justify = "left"
    return table


def simulation_table(result: dict[str, Any]) -> Table:
    """The simulator's metrics."""
    left_out = (result.get("left_out") or {}).get("count")
    table = Table(
        title=f"simulation: {result['policy']}, {result['jobs']} jobs on {result['gpus']} GPUs"
        + (f" ({left_out} left out)" if left_out else ""),
        title_justify="left",
        min_width=60,
    )
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("")
    for key, value in result.items():
        if key in ("policy", "jobs", "gpus", "per_team", "left_out"):
            continue
        if key.endswith("_s") and isinstance(value, int | float) and key != "wall_s":
            table.add_row(key, f"{value:,.0f}", duration_words(value))
        elif isinstance(value, float):
            table.add_row(key, f"{value:,.3f}", "")
        else:
            table.add_row(key, str(value), "")
    return table


def duration_words(seconds: float | None) -> str:
    """`42 s`, `90 min`, `22.8 h`, `6.4 d` (`-` for none): a number of seconds in the unit a person reads."""
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def tokens_table(records: Sequence[TokenRecord], show_revoked: bool) -> Table:
    """Who has access (`nightshift token ls`): a row per token, by team and user; revoked ones dimmed."""
    table = Table(title="tokens" if show_revoked else "active tokens", title_justify="left")
    for column in ("team", "user", "admin", "prefix", "created", *(["revoked"] if show_revoked else [])):
        table.add_column(column)
    for record in records:
        revoked = [short_time(_as_utc(record.revoked_at))] if show_revoked else []
        table.add_row(
            escape(record.team),
            escape(record.user),
            "admin" if record.is_admin else "",
            record.prefix,
            short_time(_as_utc(record.created_at)),
            *revoked,
            style="dim" if record.revoked_at else None,
        )
    if not records:
        table.caption = "none: `nightshift token create --user NAME --team TEAM` makes one"
    return table


def _as_utc(moment: datetime | None) -> str | None:
    """A database time (UTC; SQLite hands it back without its zone) as ISO text with the zone."""
    if moment is None:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).isoformat()


def nodes_table(nodes: list[dict[str, Any]]) -> Table:
    """Worker nodes."""
    table = Table(title="nodes", title_justify="left")
    for column in ("name", "state", "gpus", "source", "jobs in", "heartbeat", "labels"):
        table.add_column(column)
    for node in nodes:
        state = (
            f"[red]stopped[/] (its worker, at {short_time(node['stopped_at'])})"
            if node.get("stopped_at")
            else "[red]down[/]"
            if not node["alive"]
            else "[yellow]drained[/]"
            if node["drained"]
            else "[green]up[/]"
        )
        until = f" until {short_time(node['drain_until'])}" if node.get("drain_until") else ""
        until += f", repeating {node['drain_repeat']}" if node.get("drain_repeat") else ""
        if node.get("drain_at") and not node["drained"]:  # maintenance set for later
            state += f", maintenance at {short_time(node['drain_at'])}{until}"
        elif node["drained"] and until:
            state += f" (maintenance{until})"
        for held in node.get("reservations") or []:
            state += f", reserved for {reservation_words(held)}"
        labels = ", ".join(f"{k}={v}" for k, v in (node.get("labels") or {}).items()) or "-"
        table.add_row(
            node["name"],
            state,
            str(node["gpus"]),
            node["source"],
            node.get("job_isolation", "process group"),
            f"{node['heartbeat_age_s']:.0f} s ago",
            labels,
        )
    return table
