"""The morning summary: last night's tasks (done, failed and why), their GPU-hours, energy and cost.

"Last night" is from `EVENING_HOUR` (18:00 local) of the day before the summary to the summary's time;
`since_s` overrides it. Costs and energy come from the attempts' stored usage (`task_usage`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from scheduler.clock import from_epoch_s, to_epoch_s
from scheduler.notify.events import Event
from scheduler.policy.reasons import amount
from scheduler.policy.windows import zone
from scheduler.store.tables import FINAL_STATUSES, Task, Team
from scheduler.telemetry.store import TelemetryStore

EVENING_HOUR = 18
MAX_LISTED = 20


def last_night_since(now_s: float, tz_name: str) -> float:
    """The start of "last night" for a summary at `now_s`: 18:00 local on the day before."""
    local = datetime.fromtimestamp(now_s, zone(tz_name))
    day = local.date() - timedelta(days=1)
    start = datetime.combine(day, datetime.min.time(), zone(tz_name)) + timedelta(hours=EVENING_HOUR)
    return start.timestamp()


def morning_summary(
    factory: sessionmaker[Session],
    now_s: float,
    tz_name: str,
    currency: str,
    since_s: float | None = None,
    team: str | None = None,
    printed: Callable[[Task, int], list[str]] | None = None,
) -> dict[str, Any]:
    """Tasks that ended between `since_s` (default: last night's start) and `now_s`, with totals; with
    `printed` (a task's last N lines of output, `task_logs.failure_lines`), each failure with the last
    line its last attempt printed."""
    since = last_night_since(now_s, tz_name) if since_s is None else since_s
    query = (
        select(Task)
        .where(Task.finished_at >= from_epoch_s(since), Task.finished_at <= from_epoch_s(now_s))
        .where(Task.status.in_(FINAL_STATUSES))
        .order_by(Task.finished_at)
    )
    if team is not None:
        query = query.join(Team, Task.team_id == Team.id).where(Team.name == team)
    with factory() as session:
        tasks = list(session.scalars(query).unique())
    usage = TelemetryStore(factory).usage_rows(task.id for task in tasks)
    done, failed, cancelled = [], [], []
    gpu_hours = energy_kwh = cost = 0.0
    for task in tasks:
        rows = usage.get(task.id, [])
        task_cost = sum(row.cost for row in rows)
        gpu_hours += sum(row.gpu_hours for row in rows)
        energy_kwh += sum(row.energy_kwh for row in rows)
        cost += task_cost
        entry = {
            "id": task.id,
            "name": task.name,
            "user": task.user.name,
            "team": task.team.name,
            "runtime_s": round(to_epoch_s(task.finished_at) - to_epoch_s(task.started_at), 1)
            if task.finished_at and task.started_at
            else None,
            "cost": round(task_cost, 4),
        }
        if task.status == "succeeded":
            done.append(entry)
        elif task.status == "failed":
            last = printed(task, 1) if printed is not None else []
            failed.append(
                {**entry, "reason": task.reason, "exit_code": task.exit_code, "message": task.message,
                 "last_line": last[0] if last else None, "replaced_by": task.replaced_by}
            )  # fmt: skip
        else:
            cancelled.append(entry)
    return {
        "since": from_epoch_s(since).isoformat(),
        "until": from_epoch_s(now_s).isoformat(),
        "team": team,
        "succeeded": done,
        "failed": failed,
        "cancelled": cancelled,
        "gpu_hours": round(gpu_hours, 4),
        "energy_kwh": round(energy_kwh, 4),
        "cost": round(cost, 4),
        "currency": currency,
    }


def summary_event(summary: dict[str, Any], team: str | None = None) -> Event:
    """The summary as a notification: counts and totals, then each failure with its reason."""
    done, failed = summary["succeeded"], summary["failed"]
    text = (
        f"{len(done)} succeeded, {len(failed)} failed, {len(summary['cancelled'])} cancelled; "
        f"{amount(summary['gpu_hours'], 2)} GPU-hours, {amount(summary['energy_kwh'], 2)} kWh, "
        f"{amount(summary['cost'], 2)} {summary['currency']}"
    )
    lines = [text]
    for task in failed[:MAX_LISTED]:
        why = task.get("message") or task.get("reason") or "failed"
        said = f" — {task['last_line']}" if task.get("last_line") else ""
        again = f" (run again as #{task['replaced_by']})" if task.get("replaced_by") else ""
        lines.append(f"✗ #{task['id']} {task['name']} ({task['user']}): {why}{said}{again}")
    for task in done[:MAX_LISTED]:
        lines.append(f"✓ #{task['id']} {task['name']} ({task['user']})")
    hidden = max(0, len(failed) - MAX_LISTED) + max(0, len(done) - MAX_LISTED)
    if hidden:
        lines.append(f"... and {hidden} more")
    return Event("summary", "Last night on the GPUs", "\n".join(lines), team=team)
