"""What the UI shows, computed from the API's JSON: tables, chart data and the confirm card (pure functions).

Nothing here talks to the API or to Gradio, so each view can be tested on plain dictionaries.
"""

from __future__ import annotations

import html
from datetime import datetime, tzinfo
from typing import Any

import pandas as pd

from assistant.replies import unwrap

MIB_PER_GB = 1024
HOURS_PER_DAY = 24.0

TASK_COLUMNS = ["id", "name", "status", "user", "gpus", "submitted", "started", "finished", "reason"]
QUEUE_COLUMNS = ["position", "id", "name", "user", "team", "gpus", "estimated start", "reason"]
GPU_COLUMNS = ["gpu", "model", "used GB", "total GB", "free GB", "util %", "temp °C", "tasks"]


def short_time(value: str | None, zone: tzinfo | None = None) -> str:
    """`2026-03-02 23:00` for an ISO time (in `zone` when given), `""` for none, the text if unparsable."""
    if not value:
        return ""
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return str(value)
    if zone is not None and moment.tzinfo is not None:
        moment = moment.astimezone(zone)
    return f"{moment:%Y-%m-%d %H:%M}"


def tasks_frame(tasks: list[dict[str, Any]], zone: tzinfo | None = None) -> pd.DataFrame:
    """The "My tasks" table: one row per task, newest first as the API sends them."""
    rows = [
        [
            task["id"],
            task.get("name", ""),
            task.get("status", ""),
            task.get("user", ""),
            task.get("gpus", 0),
            short_time(task.get("submitted_at"), zone),
            short_time(task.get("started_at"), zone),
            short_time(task.get("finished_at"), zone),
            task.get("reason") or task.get("message") or "",
        ]
        for task in tasks
    ]
    return pd.DataFrame(rows, columns=TASK_COLUMNS)


def queue_frame(queue: dict[str, Any], zone: tzinfo | None = None) -> pd.DataFrame:
    """The queue table: position (counting every team's tasks), the task, its expected start and reason."""
    rows = [
        [
            entry["position"],
            entry["task"]["id"],
            entry["task"].get("name", ""),
            entry["task"].get("user", ""),
            entry["task"].get("team", ""),
            entry["task"].get("gpus", 0),
            short_time(entry.get("estimated_start"), zone) or "unknown",
            entry.get("reason") or "",
        ]
        for entry in queue.get("entries", [])
    ]
    return pd.DataFrame(rows, columns=QUEUE_COLUMNS)


def gpu_label(gpu: dict[str, Any]) -> str:
    """`node-a:0`."""
    return f"{gpu['node']}:{gpu['index']}"


def gpus_frame(view: dict[str, Any]) -> pd.DataFrame:
    """The GPU table: memory (GB) and utilization of every GPU, and which tasks hold it."""
    rows = []
    for gpu in view.get("gpus", []):
        total_gb = gpu["memory_total_mib"] / MIB_PER_GB
        free_gb = gpu["memory_free_mib"] / MIB_PER_GB
        util = gpu.get("utilization_pct")
        temp = gpu.get("temperature_c")
        rows.append(
            [
                gpu_label(gpu),
                gpu.get("name", ""),
                round(total_gb - free_gb, 1),
                round(total_gb, 1),
                round(free_gb, 1),
                "" if util is None else round(float(util)),
                "" if temp is None else round(float(temp)),
                ", ".join(f"#{task_id}" for task_id in gpu.get("tasks", [])),
            ]
        )
    return pd.DataFrame(rows, columns=GPU_COLUMNS)


def gpu_usage_frame(view: dict[str, Any]) -> pd.DataFrame:
    """Long form for the GPU chart: per GPU, the memory used (% of total) and the utilization (%)."""
    rows = []
    for gpu in view.get("gpus", []):
        total = gpu["memory_total_mib"] or 1
        used_pct = 100.0 * (total - gpu["memory_free_mib"]) / total
        rows.append([gpu_label(gpu), "memory used %", round(used_pct, 1)])
        rows.append([gpu_label(gpu), "utilization %", float(gpu.get("utilization_pct") or 0.0)])
    return pd.DataFrame(rows, columns=["gpu", "measure", "percent"])


def gpu_hours_frame(report: dict[str, Any]) -> pd.DataFrame:
    """GPU-hours per team (or whatever the report was grouped by), largest first."""
    rows = [[str(row["key"]), float(row["gpu_hours"])] for row in report.get("rows", [])]
    return pd.DataFrame(rows, columns=["team", "gpu_hours"])


def gpu_share_frame(report_by_gpu: dict[str, Any], gpus_view: dict[str, Any]) -> pd.DataFrame:
    """Busy and idle share of each GPU over the report's window (GPUs never used count as all idle)."""
    window_h = float(report_by_gpu.get("days") or 1) * HOURS_PER_DAY
    busy_h = {str(row["key"]): float(row["gpu_hours"]) for row in report_by_gpu.get("rows", [])}
    names = [gpu_label(gpu) for gpu in gpus_view.get("gpus", [])]
    names += [name for name in busy_h if name not in names]
    rows = []
    for name in names:
        busy = min(1.0, busy_h.get(name, 0.0) / window_h) if window_h else 0.0
        rows.append([name, "busy", round(100 * busy, 2)])
        rows.append([name, "idle", round(100 * (1 - busy), 2)])
    return pd.DataFrame(rows, columns=["gpu", "state", "percent"])


def waits_frame(report: dict[str, Any], zone: tzinfo | None = None) -> pd.DataFrame:
    """Waits over time: p50 and p90 (minutes) per bucket of the report's `waits_over_time`.

    Times are text (`2026-03-02 14:00`, sorting in time order), so the chart needs no datetime column.
    """
    points = (report.get("waits_over_time") or {}).get("points", [])
    rows = []
    for point in points:
        when = short_time(point["start"], zone)
        rows.append([when, "p50", round(point["p50_wait_s"] / 60, 2)])
        rows.append([when, "p90", round(point["p90_wait_s"] / 60, 2)])
    return pd.DataFrame(rows, columns=["time", "percentile", "wait_min"])


def report_summary(report: dict[str, Any]) -> str:
    """One line over the charts: GPU-hours used of the capacity, and the utilization."""
    utilization = report.get("utilization")
    share = "—" if utilization is None else f"{100 * float(utilization):.1f} %"
    used = float(report.get("total_gpu_hours", 0))
    capacity = float(report.get("capacity_gpu_hours", 0))
    days = float(report.get("days") or 0)
    line = f"**{used:.1f} GPU-h** used of {capacity:.0f} over the last {days:g} days (utilization {share})"
    points = (report.get("waits_over_time") or {}).get("points", [])
    if points:
        last = points[-1]
        line += (
            f"; latest waits: p50 {last['p50_wait_s'] / 60:.1f} min, p90 {last['p90_wait_s'] / 60:.1f} min"
            f" ({last['tasks']} start{'s' if last['tasks'] != 1 else ''})"
        )
    return line


def estimate_text(estimate: dict[str, Any], zone: tzinfo | None = None) -> str:
    """A what-if estimate in one line: expected start, range and the reason."""
    if not estimate.get("start"):
        return f"No estimate right now: {estimate.get('reason') or 'no GPU can take it'}"
    low, high = short_time(estimate.get("low"), zone), short_time(estimate.get("high"), zone)
    span = f" (range {low} – {high})" if low and high else ""
    wait = f", a wait of about {estimate['wait']}" if estimate.get("wait") else ""
    reason = f" — {estimate['reason']}" if estimate.get("reason") else ""
    return f"Expected start **{short_time(estimate['start'], zone)}**{span}{wait}{reason}"


def _row(label: str, value: Any) -> str:
    return f"<tr><th>{html.escape(label)}</th><td>{html.escape(str(value))}</td></tr>"


def card_html(card: dict[str, Any], zone: tzinfo | None = None) -> str:
    """The confirm card as HTML (every value escaped): what would happen; nothing happens before Confirm."""
    if card.get("kind") == "cancel":
        task = card.get("task") or {}
        rows = [_row("task", f"#{card.get('task_id')}")]
        if task.get("name"):
            rows.append(_row("name", unwrap(task["name"])))
        if task.get("status"):
            rows.append(_row("status", task["status"]))
        title, note = "Cancel this task?", "Nothing is cancelled until you confirm."
    else:
        spec, summary = card.get("spec") or {}, card.get("summary") or {}
        gpus = spec.get("gpus", 1)
        resources = f"{gpus} GPU{'s' if gpus != 1 else ''}"
        if spec.get("gpu_memory_gb"):
            resources += f", ≥ {spec['gpu_memory_gb']:g} GB free each"
        rows = [
            _row("command", unwrap(spec.get("command", ""))),
            _row("name", spec.get("name", "")),
            _row("workdir", spec.get("workdir", "")),
            _row("resources", resources),
            _row("priority", spec.get("priority", "normal")),
        ]
        if summary.get("start_label"):
            rows.append(_row("may start", summary["start_label"]))
        if summary.get("estimated_start"):
            rows.append(_row("estimated start", short_time(summary["estimated_start"], zone)))
        if summary.get("estimated_end"):
            rows.append(_row("estimated finish", short_time(summary["estimated_end"], zone)))
        for key in ("time_limit_minutes", "retries", "conda_env", "docker_image", "depends_on", "deadline"):
            if spec.get(key) not in (None, [], 0, ""):
                rows.append(_row(key.replace("_", " "), spec[key]))
        for key in ("energy", "energy_cost", "quota", "cli"):
            if summary.get(key) is not None:
                rows.append(_row(key.replace("_", " "), summary[key]))
        title, note = "Submit this task?", "Nothing is submitted until you confirm."
    return (
        f'<div class="ns-card"><h3>{html.escape(title)}</h3>'
        f'<table class="ns-card-table">{"".join(rows)}</table>'
        f'<p class="ns-card-note">{html.escape(note)}</p></div>'
    )
