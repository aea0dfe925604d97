"""What the UI shows, computed from the API's JSON: tables, chart data and the confirm card (pure functions).

Nothing here talks to the API or to Gradio, so each view can be tested on plain dictionaries.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from datetime import datetime, tzinfo
from typing import Any

import pandas as pd

from assistant.reasons_zh import reason_zh
from assistant.replies import (
    change_rows,
    counts_words,
    ended_words,
    energy_words,
    in_parentheses,
    like_task_words,
    priority_words,
    quota_words,
    rerun_tasks_words,
    resources_words,
    run_estimate_words,
    running_limit_lifted_words,
    start_label_words,
    status_zh,
    sweep_examples_words,
    sweep_words,
    unwrap,
    warning_words,
)
from scheduler.policy.reasons import energy_cost_words
from scheduler.spec import gpus_label

MIB_PER_GB = 1024
HOURS_PER_DAY = 24.0

TASK_COLUMNS = ["id", "name", "status", "user", "gpus", "submitted", "started", "finished", "reason"]
QUEUE_COLUMNS = ["position", "id", "name", "user", "team", "gpus", "estimated start", "reason"]
GPU_COLUMNS = [
    "gpu", "model", "used GB", "total GB", "free GB", "util %", "temp °C", "tasks", "out of service",
]  # fmt: skip


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
            gpus_label(task),
            short_time(task.get("submitted_at"), zone),
            # a task queued again after an attempt has not started this time
            short_time(task.get("started_at") if task.get("status") != "queued" else None, zone),
            short_time(task.get("finished_at"), zone),
            _reason_cell(task),
        ]
        for task in tasks
    ]
    return pd.DataFrame(rows, columns=TASK_COLUMNS)


def _reason_cell(task: dict[str, Any]) -> str:
    """The "reason" column: who holds a queued task, or why it ended (and the task its sweep ran in its
    place: `nonzero_exit; run again as 17`)."""
    if task.get("held_by"):
        return f"held by {task['held_by']}"
    reason = str(task.get("reason") or task.get("message") or "")
    if task.get("replaced_by"):
        return (
            f"{reason}; run again as {task['replaced_by']}"
            if reason
            else f"run again as {task['replaced_by']}"
        )
    return reason


def queue_frame(queue: dict[str, Any], zone: tzinfo | None = None) -> pd.DataFrame:
    """The queue table: position (counting every team's tasks), the task, its expected start and reason."""
    rows = [
        [
            entry["position"],
            entry["task"]["id"],
            entry["task"].get("name", ""),
            entry["task"].get("user", ""),
            entry["task"].get("team", ""),
            gpus_label(entry["task"]),
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
        shares = {str(task_id): float(part) for task_id, part in (gpu.get("shares") or {}).items()}
        rows.append(
            [
                gpu_label(gpu),
                gpu.get("name", ""),
                round(total_gb - free_gb, 1),
                round(total_gb, 1),
                round(free_gb, 1),
                "" if util is None else round(float(util)),
                "" if temp is None else round(float(temp)),
                ", ".join(
                    f"#{task_id}" + (f" ({shares[str(task_id)]:g})" if str(task_id) in shares else "")
                    for task_id in gpu.get("tasks", [])
                ),
                gpu.get("out_of_service") or "",  # too hot, memory left behind, unreadable: takes no tasks
            ]
        )
    return pd.DataFrame(rows, columns=GPU_COLUMNS)


def gpu_usage_frame(view: dict[str, Any]) -> pd.DataFrame:
    """Long form for the GPU chart: per GPU, the memory used (% of total) and the utilization (%)."""
    rows = []
    for gpu in view.get("gpus", []):
        total = gpu["memory_total_mib"]
        used_pct = 100.0 * (total - gpu["memory_free_mib"]) / total if total else 0.0  # 0: unreadable
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
    """One line over the charts: GPU-hours used of the capacity, the utilization, energy, cost, off-peak."""
    utilization = report.get("utilization")
    share = "—" if utilization is None else f"{100 * float(utilization):.1f} %"
    used = float(report.get("total_gpu_hours", 0))
    capacity = float(report.get("capacity_gpu_hours", 0))
    days = float(report.get("days") or 0)
    line = f"**{used:.1f} GPU-h** used of {capacity:.0f} over the last {days:g} days (utilization {share})"
    if report.get("total_energy_kwh") is not None:
        currency = html.escape(str(report.get("currency") or ""))
        energy, cost = amount(float(report["total_energy_kwh"])), amount(float(report.get("total_cost") or 0))
        line += f"; {energy} kWh, cost {cost} {currency}".rstrip()
    if report.get("offpeak_share") is not None:
        line += f"; {100 * float(report['offpeak_share']):.0f} % off-peak"
    points = (report.get("waits_over_time") or {}).get("points", [])
    if points:
        last = points[-1]
        line += (
            f"; latest waits: p50 {last['p50_wait_s'] / 60:.1f} min, p90 {last['p90_wait_s'] / 60:.1f} min"
            f" ({last['tasks']} start{'s' if last['tasks'] != 1 else ''})"
        )
    return line


def amount(value: float) -> str:
    """A quantity for people: two decimals, or three significant digits below 0.01 (`0.00042`)."""
    if value == 0 or abs(value) >= 0.01:
        return f"{value:.2f}"
    return f"{value:.3g}"


def estimate_text(estimate: dict[str, Any], zone: tzinfo | None = None) -> str:
    """A what-if estimate in one line: expected start, range, the reason, the run time assumed and what its
    energy would cost at the tariff's rates from that start."""
    if not estimate.get("start"):
        return f"No estimate right now: {estimate.get('reason') or 'no GPU can take it'}"
    return _start_text(estimate, zone) + _energy_text(estimate)


def _energy_text(estimate: dict[str, Any]) -> str:
    """`; energy ~1.8 kWh, ~0.27 EUR` (nothing where the answer has no energy)."""
    if estimate.get("energy_kwh") is None:
        return ""
    cost = estimate.get("energy_cost")
    words = energy_cost_words(float(estimate["energy_kwh"]), cost, str(estimate.get("currency") or ""))
    return f"; energy {words}"


def _start_text(estimate: dict[str, Any], zone: tzinfo | None) -> str:
    low, high = short_time(estimate.get("low"), zone), short_time(estimate.get("high"), zone)
    span = f" (range {low} – {high})" if low and high else ""
    wait = f", a wait of about {estimate['wait']}" if estimate.get("wait") not in (None, "", "none") else ""
    reason = f" — {estimate['reason']}" if estimate.get("reason") else ""
    run = ""
    if estimate.get("estimated_run_s") and estimate.get("estimate_source"):
        assumed = {"minutes": float(estimate["estimated_run_s"]) / 60, "source": estimate["estimate_source"]}
        run = f"; run time {run_estimate_words(assumed, 'en')}"
    return f"Expected start **{short_time(estimate['start'], zone)}**{span}{wait}{reason}{run}"


def _row(label: str, value: Any) -> str:
    return f"<tr><th>{html.escape(label)}</th><td>{html.escape(str(value))}</td></tr>"


def _lines_row(label: str, lines: list[str]) -> str:
    """A row whose value is several lines (each escaped)."""
    value = "<br>".join(html.escape(line) for line in lines)
    return f"<tr><th>{html.escape(label)}</th><td>{value}</td></tr>"


# The confirm card's words in Chinese (labels, titles, notes); values stay as the spec has them.
# the spec fields a submit card shows as rows of their own, in this order
CARD_SPEC_ROWS = (
    "time_limit_minutes",
    "retries",
    "conda_env",
    "docker_image",
    "env",
    "depends_on",
    "depends_on_any",
    "deadline",
)

_CARD_ZH = {
    "task": "任务",
    "based on": "基于",
    "name": "名称",
    "status": "状态",
    "command": "命令",
    "workdir": "工作目录",
    "resources": "资源",
    "priority": "优先级",
    "may start": "最早开始",
    "estimated start": "预计开始",
    "estimated finish": "预计完成",
    "time limit minutes": "时间限制（分钟）",
    "retries": "重试次数",
    "conda env": "conda 环境",
    "docker image": "docker 镜像",
    "env": "环境变量",
    "depends on": "依赖任务",
    "depends on any": "等其结束的任务",
    "deadline": "截止时间",
    "energy": "能耗",
    "energy cost": "电费",
    "quota": "配额",
    "cli": "命令行",
    "Cancel this task?": "取消这个任务？",
    "Cancel this sweep?": "取消这个扫参？",
    "tasks": "任务数",
    "by status": "各状态",
    "what happens": "会怎样",
    "Nothing is cancelled until you confirm.": "确认之前不会取消。",
    "Submit this task?": "提交这个任务？",
    "sweep": "扫参",
    "first tasks": "前几个任务",
    "Change this task?": "修改这个任务？",
    "Change this sweep?": "修改这个扫参？",
    "Run these tasks again?": "重新运行这些任务？",
    "run again": "重新运行",
    "Nothing runs until you confirm.": "确认之前不会运行。",
    "queued tasks changed": "要修改的排队任务",
    "Nothing is changed until you confirm.": "确认之前不会修改。",
    "Nothing is submitted until you confirm.": "确认之前不会提交。",
}


def card_html(
    card: dict[str, Any], zone: tzinfo | None = None, lang: str = "en", waiting_after: int = 0
) -> str:
    """The confirm card as HTML (every value escaped) in the language of the conversation (`en`, `zh`):
    what would happen; nothing happens before Confirm. `waiting_after`: cards shown once this one is
    confirmed or dropped ("make 12 and 13 urgent" makes one per task)."""

    def words(text: str) -> str:
        return _CARD_ZH.get(text, text) if lang == "zh" else text

    if card.get("kind") == "cancel":
        rows = _cancel_rows(card, words, lang)
        title, note = words("Cancel this task?"), words("Nothing is cancelled until you confirm.")
    elif card.get("kind") == "cancel_tasks":
        rows = _cancel_tasks_rows(card, words, lang)
        count = len(card.get("task_ids") or [])
        title = f"取消这 {count} 个任务？" if lang == "zh" else f"Cancel these {count} tasks?"
        note = words("Nothing is cancelled until you confirm.")
    elif card.get("kind") == "requeue":
        rows = _cancel_rows(card, words, lang)
        if (card.get("task") or {}).get("node"):
            rows.append(_row("节点" if lang == "zh" else "node", card["task"]["node"]))
        what = (
            "停止后保留原来的排队时间重新等待；有检查点时从检查点继续；不占用重试次数"
            if lang == "zh"
            else "stopped, then waits again with its age; resumes from its checkpoint if it saves one; "
            "uses none of its retries"
        )
        rows.append(_row(words("what happens"), what))
        title = "把这个任务放回队列？" if lang == "zh" else "Put this task back in the queue?"
        note = "确认之前不会停止。" if lang == "zh" else "Nothing is stopped until you confirm."
    elif card.get("kind") == "cancel_sweep":
        rows = _cancel_sweep_rows(card, words, lang)
        title, note = words("Cancel this sweep?"), words("Nothing is cancelled until you confirm.")
    elif card.get("kind") == "rerun_sweep":
        rows = _rerun_sweep_rows(card, words, lang)
        title, note = words("Run these tasks again?"), words("Nothing runs until you confirm.")
    elif card.get("kind") == "change_sweep":
        rows = _change_sweep_rows(card, words, lang, zone)
        title, note = words("Change this sweep?"), words("Nothing is changed until you confirm.")
    elif card.get("kind") == "change":
        rows = [_row(words("task"), f"#{card.get('task_id')}")]
        rows += [
            _row(label, f"{old} → {new}") for label, old, new in change_rows(card, lang, datetime.now(zone))
        ]
        title, note = words("Change this task?"), words("Nothing is changed until you confirm.")
    else:
        rows = _submit_rows(card, zone, lang, words)
        title, note = _submit_title(card, lang, words), words("Nothing is submitted until you confirm.")
    return (
        f'<div class="ns-card"><h3>{html.escape(title)}</h3>'
        f'<table class="ns-card-table">{"".join(rows)}</table>'
        f"{_warnings_html(card, lang)}"
        f'<p class="ns-card-note">{html.escape(note)}</p>{_waiting_after_html(waiting_after, lang)}</div>'
    )


def _waiting_after_html(count: int, lang: str) -> str:
    """`1 more card after this one.`: what is left to confirm or drop once this card is answered."""
    if count <= 0:
        return ""
    plural = "s" if count > 1 else ""
    words = f"之后还有 {count} 张卡片。" if lang == "zh" else f"{count} more card{plural} after this one."
    return f'<p class="ns-card-queue">{words}</p>'


def _submit_title(card: dict[str, Any], lang: str, words: Callable[[str], str]) -> str:
    """`Submit this task?`; for a sweep `Submit this sweep of 6 tasks?` (the count is what is confirmed)."""
    sweep = card.get("sweep")
    if not sweep:
        return words("Submit this task?")
    count = int(sweep.get("tasks") or 0)
    return f"提交这个扫参（{count} 个任务）？" if lang == "zh" else f"Submit this sweep of {count} tasks?"


def _warnings_html(card: dict[str, Any], lang: str) -> str:
    """What the API will warn of once the card is confirmed (a deadline it cannot meet), one line each, so
    the person may change the card first ("" when there is nothing to warn of)."""
    return "".join(
        f'<p class="ns-card-warning">{html.escape(warning_words(warning, lang))}</p>'
        for warning in card.get("warnings") or []
    )


def _cancel_rows(card: dict[str, Any], words: Callable[[str], str], lang: str) -> list[str]:
    """A cancel card's rows: the task, its name and its status (in the conversation's language)."""
    task = card.get("task") or {}
    rows = [_row(words("task"), f"#{card.get('task_id')}")]
    if task.get("name"):
        rows.append(_row(words("name"), unwrap(task["name"])))
    if task.get("status"):
        status = str(task["status"])
        rows.append(_row(words("status"), status_zh(status) if lang == "zh" else status))
    return rows


def _cancel_tasks_rows(card: dict[str, Any], words: Callable[[str], str], lang: str) -> list[str]:
    """A card cancelling several tasks: a row per task (its name and status), then those left out because
    they already ended, and what the cancel does."""
    rows = []
    for task in card.get("tasks") or []:
        status = str(task.get("status") or "")
        said = [unwrap(task.get("name") or ""), status_zh(status) if lang == "zh" else status]
        rows.append(
            _row(f"#{task.get('id')}", ("，" if lang == "zh" else ", ").join(part for part in said if part))
        )
    left_out = card.get("left_out") or []
    if left_out:
        rows.append(
            _row(
                "已结束，不在其中" if lang == "zh" else "left out, already ended", ended_words(left_out, lang)
            )
        )
    what = (
        "排队中的会被取消，运行中的会被停止"
        if lang == "zh"
        else "queued ones are cancelled, running ones stopped"
    )
    return [*rows, _row(words("what happens"), what)]


def _sweep_rows(card: dict[str, Any], words: Callable[[str], str]) -> list[str]:
    """A sweep card's first rows: the sweep's number, and its name when it has one."""
    name = (card.get("sweep") or {}).get("name")
    rows = [_row(words("sweep"), f"#{card.get('sweep_id')}")]
    return rows + ([_row(words("name"), unwrap(name))] if name else [])


def _cancel_sweep_rows(card: dict[str, Any], words: Callable[[str], str], lang: str) -> list[str]:
    """A sweep cancel card's rows: the sweep, its name, its tasks by status and what the cancel does to
    them (queued ones cancelled, running ones stopped, ended ones kept)."""
    sweep = card.get("sweep") or {}
    rows = _sweep_rows(card, words)
    counts = sweep.get("counts") or {}
    if counts:
        rows.append(_row(words("tasks"), str(sweep.get("tasks") or sum(counts.values()))))
        rows.append(_row(words("by status"), counts_words(counts, lang)))
        what = (
            "排队中的任务会被取消，运行中的会被停止，已结束的保持不变"
            if lang == "zh"
            else "queued tasks are cancelled, running ones stopped, ended ones kept"
        )
        rows.append(_row(words("what happens"), what))
    return rows


def _rerun_sweep_rows(card: dict[str, Any], words: Callable[[str], str], lang: str) -> list[str]:
    """A sweep rerun card's rows: the sweep, its name, the tasks that run again and what happens to them."""
    rows = _sweep_rows(card, words)
    rows.append(_row(words("run again"), rerun_tasks_words(card, lang)))
    what = (
        "每个任务以原来的参数重新提交，在扫参的统计和结果里替代原任务；原任务的记录保留"
        if lang == "zh"
        else "each runs again as a new task with its parameters, in the old one's place in the sweep's "
        "counts and results; the old tasks keep their record"
    )
    return [*rows, _row(words("what happens"), what)]


def _change_sweep_rows(
    card: dict[str, Any], words: Callable[[str], str], lang: str, zone: tzinfo | None
) -> list[str]:
    """A sweep change card's rows: the sweep, its name, how many queued tasks change, each field before and
    after (running and ended tasks stay as they are), and what removing its limit on how many run at once
    does."""
    rows = _sweep_rows(card, words)
    rows.append(_row(words("queued tasks changed"), str(card.get("queued"))))
    changes = change_rows(card, lang, datetime.now(zone))
    rows += [_row(label, f"{old} → {new}") for label, old, new in changes]
    lifted = running_limit_lifted_words(card, lang)
    return rows + ([_row(words("what happens"), lifted)] if lifted else [])


def _submit_rows(
    card: dict[str, Any], zone: tzinfo | None, lang: str, words: Callable[[str], str]
) -> list[str]:
    spec, summary = card.get("spec") or {}, card.get("summary") or {}
    resources = resources_words(spec, lang, free=" free")
    rows = (
        [_row(words("based on"), like_task_words(summary["like_task"], lang, datetime.now(zone)))]
        if summary.get("like_task")
        else []
    )
    rows.append(_row(words("command"), unwrap(spec.get("command", ""))))
    if card.get("sweep"):  # one card for many tasks: how many, and the first ones
        rows.append(_row(words("sweep"), sweep_words(card["sweep"], lang)))
        rows.append(_lines_row(words("first tasks"), sweep_examples_words(card["sweep"], lang)))
    rows += [
        _row(words("name"), spec.get("name", "")),
        _row(words("workdir"), spec.get("workdir", "")),
        _row(words("resources"), resources),
        _row(words("priority"), priority_words(str(spec.get("priority", "normal")), lang)),
    ]
    if summary.get("start_label"):
        rows.append(_row(words("may start"), start_label_words(summary["start_label"], lang)))
    if summary.get("estimated_start"):
        rows.append(_row(words("estimated start"), short_time(summary["estimated_start"], zone)))
    elif summary.get("wait_reason"):
        reason = unwrap(summary["wait_reason"])
        none_yet = f"none yet: {reason}" if lang != "zh" else f"暂无：{reason_zh(reason)}"
        rows.append(_row(words("estimated start"), none_yet))
    if summary.get("estimated_end"):
        finish = short_time(summary["estimated_end"], zone)
        if summary.get("run_estimate"):  # the person gave no run time: say what was assumed
            finish += in_parentheses(run_estimate_words(summary["run_estimate"], lang), lang)
        rows.append(_row(words("estimated finish"), finish))
    for key in CARD_SPEC_ROWS:
        if key == "env" and spec.get("env"):  # each variable as the shell would set it, one per line
            pairs = [f"{name}={value}" for name, value in spec["env"].items()]
            rows.append(_lines_row(words("env"), pairs))
        elif spec.get(key) not in (None, [], 0, "", {}):  # a deadline in the cluster's time, as the estimates
            value = short_time(spec[key], zone) if key == "deadline" else spec[key]
            rows.append(_row(words(key.replace("_", " ")), value))
    for key in ("energy", "energy_cost", "quota", "cli"):
        if summary.get(key) is not None:
            say = {"quota": quota_words, "energy": energy_words}.get(key)
            value = say(summary[key], lang) if say is not None else summary[key]
            rows.append(_row(words(key.replace("_", " ")), value))
    return rows


# --- admin: energy, cost, off-peak share, quota use -------------------------------------------------

ALL_TEAMS = "(all teams)"
DEFAULT_WARN_FRACTION = 0.8


def energy_cost_frame(report: dict[str, Any]) -> pd.DataFrame:
    """Energy (kWh) and cost per local day and team, from the report's `by_day` rows (day order)."""
    rows = [
        [
            str(row["day"]),
            str(row["team"]),
            float(row.get("energy_kwh") or 0.0),
            float(row.get("cost") or 0.0),
        ]
        for row in report.get("by_day") or []
    ]
    return pd.DataFrame(rows, columns=["day", "team", "energy_kwh", "cost"])


def offpeak_frame(report: dict[str, Any]) -> pd.DataFrame:
    """Off-peak and peak share (% of GPU-hours) of all teams together, then of each team with use."""
    shares: list[tuple[str, float]] = []
    if report.get("offpeak_share") is not None:
        shares.append((ALL_TEAMS, float(report["offpeak_share"])))
    shares += [
        (str(row["key"]), float(row["offpeak_share"]))
        for row in report.get("rows", [])
        if row.get("offpeak_share") is not None
    ]
    rows = []
    for name, share in shares:
        offpeak = round(100 * min(1.0, max(0.0, share)), 2)
        rows.append([name, "off-peak", offpeak])
        rows.append([name, "peak", round(100 - offpeak, 2)])
    return pd.DataFrame(rows, columns=["team", "when", "percent"])


def quota_bars(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One bar per team and budget (day, week): GPU-hours used, the budget and the share of it used; then
    one per person with a budget of their own ("vision / alice")."""
    bars = []
    for row in (report.get("quota") or []) + (report.get("member_quota") or []):
        name = str(row["team"]) if row.get("user") is None else f"{row['team']} / {row['user']}"
        for window in ("day", "week"):
            budget = row.get(f"{window}_budget_gpu_h")
            if not budget:
                continue
            used = float(row.get(f"{window}_used_gpu_h") or 0.0)
            bars.append(
                {"team": name, "window": window, "used": used, "budget": float(budget),
                 "share": used / float(budget)}
            )  # fmt: skip
    return bars


QUOTA_COLORS = {"ok": "#5cb85c", "warn": "#f0ad4e", "over": "#d9534f"}
_LABEL_W, _BAR_W, _ROW_H, _TOP = 190, 380, 30, 34


def quota_html(report: dict[str, Any]) -> str:
    """Quota use vs budget as an SVG bar chart: one bar per team and window, a dashed line at the warning
    share (80 %) and a solid one at the budget; teams without a budget are named below it (all escaped)."""
    warn = float(report.get("quota_warn_fraction") or DEFAULT_WARN_FRACTION)
    bars = quota_bars(report)
    unbudgeted = [
        str(row["team"])
        for row in report.get("quota") or []
        if not row.get("day_budget_gpu_h") and not row.get("week_budget_gpu_h")
    ]
    title = '<p class="ns-chart-title"><b>quota use vs budget</b> (rolling day and week)</p>'
    note = (
        f'<p class="ns-chart-note">no budget: {html.escape(", ".join(unbudgeted))}</p>' if unbudgeted else ""
    )
    if not bars:
        empty = "No team has a GPU-hour budget (day_budget_gpu_h / week_budget_gpu_h in the settings)."
        return f'<div class="ns-quota">{title}<p class="ns-chart-note">{empty}</p>{note}</div>'
    top = max(1.0, *(float(bar["share"]) for bar in bars))
    scale = min(top, 2.0) * 1.05  # the right edge of the axis, as a share of the budget

    def x_of(share: float) -> float:
        return _LABEL_W + _BAR_W * min(share, scale) / scale

    height = _TOP + _ROW_H * len(bars) + 8
    width = _LABEL_W + _BAR_W + 190
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="quota use vs budget" '
        'font-family="sans-serif" font-size="12" fill="currentColor">'
    ]
    parts.append(
        f'<line x1="{_LABEL_W}" y1="10" x2="{_LABEL_W + 24}" y2="10" stroke="#d9534f" stroke-width="2" '
        f'stroke-dasharray="5,3"/><text x="{_LABEL_W + 30}" y="14">warning at {100 * warn:.0f} %</text>'
        f'<line x1="{_LABEL_W + 170}" y1="10" x2="{_LABEL_W + 194}" y2="10" stroke="currentColor" '
        f'stroke-width="2"/><text x="{_LABEL_W + 200}" y="14">budget (100 %)</text>'
    )
    for number, bar in enumerate(bars):
        y = _TOP + number * _ROW_H
        level = "over" if bar["share"] >= 1 else "warn" if bar["share"] >= warn else "ok"
        label = f"{bar['team']} · {bar['window']}"
        detail = f"{amount(bar['used'])} / {bar['budget']:g} GPU-h ({100 * bar['share']:.0f} %)"
        parts.append(
            f'<g class="ns-quota-bar" data-level="{level}"><title>{html.escape(f"{label}: {detail}")}</title>'
            f'<text x="{_LABEL_W - 8}" y="{y + 16}" text-anchor="end">{html.escape(label)}</text>'
            f'<rect x="{_LABEL_W}" y="{y + 4}" width="{_BAR_W}" height="{_ROW_H - 10}" fill="#8883"/>'
            f'<rect x="{_LABEL_W}" y="{y + 4}" width="{x_of(bar["share"]) - _LABEL_W:.1f}" '
            f'height="{_ROW_H - 10}" fill="{QUOTA_COLORS[level]}"/>'
            f'<text x="{_LABEL_W + _BAR_W + 8}" y="{y + 16}">{html.escape(detail)}</text></g>'
        )
    bottom = _TOP + _ROW_H * len(bars)
    parts.append(
        f'<line class="ns-quota-warn" x1="{x_of(warn):.1f}" y1="{_TOP}" x2="{x_of(warn):.1f}" y2="{bottom}" '
        'stroke="#d9534f" stroke-width="2" stroke-dasharray="5,3"/>'
        f'<line class="ns-quota-budget" x1="{x_of(1.0):.1f}" y1="{_TOP}" x2="{x_of(1.0):.1f}" y2="{bottom}" '
        'stroke="currentColor" stroke-width="2"/></svg>'
    )
    return f'<div class="ns-quota">{title}{"".join(parts)}{note}</div>'


# --- results: parameters vs metrics of a sweep or a tag ---------------------------------------------

BEST_MARK = "★ best"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _cell(value: Any) -> Any:
    """A table cell: numbers as they are (floats to 6 significant digits, as `nightshift compare` shows
    them: 0.936, not 0.9359999999999999), anything else as text, a missing value as ``""``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, int):
        return value
    return str(value)


def result_columns(table: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Column names of the parameters and of the metrics (a metric named like a parameter gets a suffix)."""
    params = [str(name) for name in table.get("params", [])]
    taken = {"best", "task", "name", "status", "note", *params}
    metrics = [f"{name} (metric)" if name in taken else str(name) for name in table.get("metrics", [])]
    return params, metrics


def results_frame(table: dict[str, Any]) -> pd.DataFrame:
    """The results table: best mark, task, its parameters, its metrics, status and note, in the API's order
    (best first by the sort metric)."""
    params, metric_columns = result_columns(table)
    metric_names = [str(name) for name in table.get("metrics", [])]
    rows = []
    for row in table.get("rows", []):
        rows.append(
            [
                BEST_MARK if row.get("best") else "",
                f"#{row['task_id']}",
                *(_cell((row.get("params") or {}).get(name)) for name in params),
                *(_cell((row.get("metrics") or {}).get(name)) for name in metric_names),
                row.get("status", ""),
                row.get("note") or "",
            ]
        )
    return pd.DataFrame(rows, columns=["best", "task", *params, *metric_columns, "status", "note"])


def numeric_metrics(table: dict[str, Any]) -> list[str]:
    """Metrics with a number in at least one row (those can be sorted by and charted)."""
    rows = table.get("rows", [])
    return [
        str(name)
        for name in table.get("metrics", [])
        if any(_number((row.get("metrics") or {}).get(name)) is not None for row in rows)
    ]


def run_label(row: dict[str, Any]) -> str:
    """A row's x-axis label: its parameter values (`lr=0.1 bs=32`), else its task id and name."""
    params = row.get("params") or {}
    if params:
        return " ".join(f"{name}={_cell(value)}" for name, value in params.items())
    return f"#{row['task_id']} {row.get('name', '')}".strip()


def results_chart_frame(table: dict[str, Any], metric: str | None) -> pd.DataFrame:
    """One bar per row with a number for `metric`: x = the parameter values, colored best vs other.

    Labels shared by several rows (the same parameters run twice) get the task id appended.
    """
    rows = [
        row
        for row in table.get("rows", [])
        if metric and _number((row.get("metrics") or {}).get(metric)) is not None
    ]
    labels = [run_label(row) for row in rows]
    data = []
    for row, label in zip(rows, labels, strict=True):
        if labels.count(label) > 1:
            label = f"{label} (#{row['task_id']})"
        kind = "best" if row.get("best") else "other"
        data.append([label, float((row.get("metrics") or {})[metric]), kind])
    return pd.DataFrame(data, columns=["run", "value", "row"])


def results_note(table: dict[str, Any], chart_metric: str | None = None) -> str:
    """HTML over the table: what it shows, how it is sorted, which task is best, what the chart shows and,
    for a sweep with failed runs, how to run them again (every value escaped)."""
    return f"<p>{_results_words(table, chart_metric)}{_failed_runs_words(table)}</p>"


def _results_words(table: dict[str, Any], chart_metric: str | None) -> str:
    """`results_note`'s first lines, as escaped HTML."""
    what = f"sweep #{table['sweep_id']}" if table.get("sweep_id") is not None else f"tag {table.get('tag')!s}"
    count = len(table.get("rows", []))
    text = f"{what}: {count} task{'s' if count != 1 else ''}"
    if not count:
        return f"{html.escape(text)}."
    sort, goal = table.get("sort"), table.get("goal")
    if sort is None:
        return f"{html.escape(text)}; no task reported a number to compare yet."
    better = "smaller" if goal == "min" else "larger"
    text += f", sorted by {sort} ({better} is better)"
    best = next((row for row in table.get("rows", []) if row.get("best")), None)
    if best is None:
        return f"{html.escape(text)}; no task reported {html.escape(str(sort))} yet."
    value = (best.get("metrics") or {}).get(sort)
    best_text = f"best: task #{best['task_id']} ({run_label(best)}) with {sort} = {_cell(value)}"
    chart = f"<br>The chart shows {html.escape(chart_metric)} per run." if chart_metric else ""
    return f"{html.escape(text)}.<br><b>{html.escape(best_text)}</b>{chart}"


def _failed_runs_words(table: dict[str, Any]) -> str:
    """For a sweep with failed runs: `<br>2 runs failed: ...` saying how to run them again in their place
    (the chat's card, or `nightshift rerun --sweep ID`); "" otherwise."""
    failed = sum(1 for row in table.get("rows", []) if row.get("status") == "failed")
    sweep_id = table.get("sweep_id")
    if not failed or sweep_id is None:
        return ""
    runs = "1 run" if failed == 1 else f"{failed} runs"
    hint = (
        f'{runs} failed: say "rerun the failed runs of sweep {sweep_id}" in the chat, or run '
        f"`nightshift rerun --sweep {sweep_id}`, to run them again in their place."
    )
    return "<br>" + html.escape(hint)


def recent_sweeps(tasks: list[dict[str, Any]], limit: int = 10) -> list[int]:
    """The sweep ids of these tasks, newest first (tasks come newest first), at most `limit`."""
    ids = [int(task["sweep_id"]) for task in tasks if task.get("sweep_id") is not None]
    return list(dict.fromkeys(ids))[:limit]
