"""Short, concrete replies in the person's language, written from tool results (used by the offline model)."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Sequence
from datetime import date, datetime, time
from typing import Any

from assistant.reasons_zh import PRIORITY_ZH, reason_zh
from scheduler.dependencies import PARENT_FIELDS
from scheduler.policy.reasons import amount
from scheduler.queue_wait import queue_wait_s
from scheduler.spec import MAX_SWEEP_VALUES, spec_gpu_fraction

_DATA = re.compile(r"</?data>")
CJK = re.compile(r"[\u3400-\u9fff]")


def language_of(text: str) -> str:
    """`zh` when the text holds Chinese characters, else `en`."""
    return "zh" if CJK.search(text or "") else "en"


def unwrap(value: Any) -> str:
    """Text shown to a person: the <data> markers the model sees are removed."""
    return _DATA.sub("", str(value))


def when(iso: str | None, now: datetime | None, lang: str) -> str:
    """`today 23:00` / `明天 09:00` / `昨天 18:00` / `03-05 09:00` for an ISO time, read on the clock of `now`
    (the cluster's zone: the API answers in UTC, and off-peak hours and "tonight" are the cluster's)."""
    if not iso:
        return "—"
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        return iso
    if moment.tzinfo is not None:
        moment = moment.astimezone(now.tzinfo if now is not None else None)
    if now is not None and moment.tzinfo is not None:
        delta = (moment.date() - now.date()).days
        names = {-1: ("yesterday", "昨天"), 0: ("today", "今天"), 1: ("tomorrow", "明天")}
        if delta in names:
            return f"{names[delta][0 if lang == 'en' else 1]} {moment:%H:%M}"
    return f"{moment:%m-%d %H:%M}"


def duration(seconds: float | None, lang: str) -> str:
    """`2 h 10 min` / `2小时10分钟`; under a minute, `40 s` / `40秒` (not "0 min")."""
    if seconds is None:
        return "?"
    if seconds < 59.5:
        return f"{max(0, round(seconds))}秒" if lang == "zh" else f"{max(0, round(seconds))} s"
    minutes = max(0, round(seconds / 60))
    hours, rest = divmod(minutes, 60)
    if lang == "zh":
        return f"{hours}小时{rest}分钟" if hours else f"{rest}分钟"
    return f"{hours} h {rest} min" if hours else f"{rest} min"


def _t(lang: str, en: str, zh: str) -> str:
    return zh if lang == "zh" else en


# the shell's way to let a held task go, in a reason or refusal, and its Chinese (`reasons_zh`)
_RELEASE_EN = re.compile(r"nightshift release (\d+)( lets it start)?")
_RELEASE_ZH = re.compile(r"运行 nightshift release (\d+) (后才会开始|可放行)")


def chat_words(text: str, lang: str) -> str:
    """A scheduler reason or refusal in the person's language, as the chat says it: the shell's `nightshift
    release 12` becomes what to say here ('say "release 12" to let it start', '说“放行12号”后才会开始')."""
    if lang == "zh":
        return _RELEASE_ZH.sub(
            lambda m: f"说“放行{m[1]}号”" + ("后才会开始" if m[2] == "后才会开始" else "即可放行"),
            reason_zh(text),
        )
    return _RELEASE_EN.sub(lambda m: f'say "release {m[1]}"' + (" to let it start" if m[2] else ""), text)


_LABEL_ZH = {
    "as soon as GPUs are free": "有空闲 GPU 即开始",
    "right away (CPU only)": "立即开始（只用 CPU）",
    "tonight": "今晚",
    "today": "今天",
    "tomorrow": "明天",
    ", off-peak": "（谷时电价）",
}


_WEEKDAY = re.compile(r"\b(Mon|Tue|Wed|Thu|Fri|Sat|Sun)\b")
_WEEKDAY_ZH = {
    "Mon": "周一",
    "Tue": "周二",
    "Wed": "周三",
    "Thu": "周四",
    "Fri": "周五",
    "Sat": "周六",
    "Sun": "周日",
}


def start_label_words(label: str, lang: str) -> str:
    """A card's "may start" label (`cards.start_label`, English) in the language of the conversation
    (`Sat 12-05 09:00` is `周六 12-05 09:00`)."""
    if lang != "zh":
        return label
    for en, zh in _LABEL_ZH.items():
        label = label.replace(en, zh)
    return _WEEKDAY.sub(lambda m: _WEEKDAY_ZH[m[1]], label)


_CHANGE_FIELDS = {
    "priority": ("priority", "优先级"),
    "not_before": ("not before", "最早开始"),
    "offpeak": ("off-peak only", "只在谷时运行"),
    "deadline": ("deadline", "截止时间"),
    "time_limit_minutes": ("time limit (min)", "时间限制（分钟）"),
    "estimated_minutes": ("estimate (min)", "预计时长（分钟）"),
    "retries": ("retries", "重试次数"),
    "name": ("name", "名称"),
    "tags": ("tags", "标签"),
    "max_running": ("at most at once", "最多同时运行"),
    "depends_on": ("waits for (to succeed)", "等待成功的任务"),
    "depends_on_any": ("waits for (to end)", "等待结束的任务"),
}


def sweep_words(preview: dict[str, Any], lang: str) -> str:
    """What a sweep card submits (`cards.sweep_preview`): `6 tasks over lr, bs, at most 2 at a time`."""
    count, params = int(preview.get("tasks") or 0), ", ".join(str(p) for p in preview.get("params") or [])
    at_once = preview.get("max_running")
    en = f"{count} task{'s' if count != 1 else ''} over {params}"
    zh = f"{count} 个任务，参数 {params}"
    if at_once:
        en += f", at most {at_once} at a time"
        zh += f"，同时最多运行 {at_once} 个"
    return _t(lang, en, zh)


def sweep_examples_words(preview: dict[str, Any], lang: str) -> list[str]:
    """The sweep's first commands, then `+3 more` (`+3 个`) when there are more."""
    lines = [str(command) for command in preview.get("examples") or []]
    if preview.get("more"):
        lines.append(_t(lang, f"+{preview['more']} more", f"另外 {preview['more']} 个"))
    return lines


def resources_words(spec: dict[str, Any], lang: str, free: str = "") -> str:
    """What a task asks for: `2 GPUs (A100), ≥40 GB each, on node box-1`, `CPU only (no GPU)`, `2 张卡`;
    `free` words the memory (" free": `≥40 GB free each`)."""
    gpus = spec.get("gpus", 1)
    if gpus == 0:
        text = _t(lang, "CPU only (no GPU)", "只用 CPU（不占 GPU）")
    elif spec_gpu_fraction(spec) < 1.0:  # "0.5 of a GPU (shared)"
        part = f"{spec_gpu_fraction(spec):g}"
        text = _t(lang, f"{part} of a GPU (shared)", f"{part} 张卡（共享）")
    else:
        text = _t(lang, f"{gpus} GPU{'s' if gpus != 1 else ''}", f"{gpus} 张卡")
    if gpus != 0:
        if spec.get("gpu_model"):
            text += _t(lang, f" ({spec['gpu_model']})", f"（{spec['gpu_model']}）")
        if spec.get("gpu_memory_gb"):
            memory = f"{spec['gpu_memory_gb']:g}"
            text += _t(lang, f", ≥{memory} GB{free} each", f"，每张 ≥{memory} GB{' 空闲' if free else ''}")
    if spec.get("node"):
        text += _t(lang, f", on node {spec['node']}", f"，在节点 {spec['node']} 上")
    return text


def field_label(key: str, lang: str) -> str:
    """A spec field as a card names it: `not before` / `最早开始` for `not_before` (else the key)."""
    en, zh = _CHANGE_FIELDS.get(key, (key, key))
    return _t(lang, en, zh)


def priority_words(priority: str, lang: str) -> str:
    """A priority class in the language of the conversation (`high`, `高`)."""
    return _t(lang, priority, PRIORITY_ZH.get(priority, priority))


def field_value_words(
    key: str, item: Any, lang: str, now: datetime | None, right_away: str = "as soon as GPUs are free"
) -> str:
    """A spec field's value as a card shows it: 120 (not 120.0) minutes, a time in the cluster's zone, a
    priority or yes/no in the language of the conversation, `none` (or `right_away`) for no value."""
    if item is None and key == "max_running":  # a sweep without a limit on how many run at once
        return _t(lang, "no limit", "不限")
    if item is None:  # no start time: at once; no deadline, limit or estimate: none
        return start_label_words(right_away, lang) if key == "not_before" else _t(lang, "none", "无")
    if isinstance(item, bool):
        return _t(lang, "yes" if item else "no", "是" if item else "否")
    if isinstance(item, list):  # tasks waited for as "#12, #13"; tags as they are
        shown = [f"#{value}" if key in PARENT_FIELDS else unwrap(str(value)) for value in item]
        return ", ".join(shown) or _t(lang, "none", "无")
    if isinstance(item, float):  # minutes as the person said them: 120, not 120.0
        return f"{item:g}"
    if key in ("not_before", "deadline"):
        return when(str(item), now, lang)
    if key == "priority":
        return priority_words(str(item), lang)
    return unwrap(str(item)) if isinstance(item, str) else str(item)


def change_rows(card: dict[str, Any], lang: str, now: datetime | None = None) -> list[tuple[str, str, str]]:
    """A change card's (field label, value before, value after), in the language of the conversation."""
    cpu_only = (card.get("task") or {}).get("gpus") == 0
    right_away = "right away (CPU only)" if cpu_only else "as soon as GPUs are free"

    def value(key: str, item: Any) -> str:
        return field_value_words(key, item, lang, now, right_away)

    return [
        (field_label(key, lang), value(key, old), value(key, new))
        for key, (old, new) in (card.get("changes") or {}).items()
    ]


def _change_text(card: dict[str, Any], lang: str, now: datetime | None) -> str:
    """A change card as text: each field's value before and after, and its warnings."""
    lines = [
        _t(
            lang,
            f"Change task #{card.get('task_id')} (please confirm):",
            f"修改任务 #{card.get('task_id')}（请确认）：",
        )
    ]
    lines += [f"• {label}: {old} → {new}" for label, old, new in change_rows(card, lang, now)]
    lines += [f"• {warning_words(warning, lang)}" for warning in card.get("warnings") or []]
    lines.append(
        _t(
            lang,
            "It keeps its place in time. Nothing changes until you confirm.",
            "它保留原来的排队时间。确认之前不会有任何改动。",
        )
    )
    return "\n".join(lines)


def card_text(card: dict[str, Any], lang: str, now: datetime | None = None) -> str:
    """The confirm card as text: what would happen, and that nothing happens before the person confirms."""
    if card.get("kind") == "change":
        return _change_text(card, lang, now)
    if card.get("kind") == "change_sweep":
        return _change_sweep_text(card, lang, now)
    if card.get("kind") == "cancel":
        return _cancel_text(card, lang)
    if card.get("kind") == "cancel_tasks":
        return _cancel_tasks_text(card, lang)
    if card.get("kind") == "requeue":
        return _requeue_text(card, lang)
    if card.get("kind") == "cancel_sweep":
        return _cancel_sweep_text(card, lang)
    if card.get("kind") == "rerun_sweep":
        return _rerun_sweep_text(card, lang)
    return _submit_text(card, lang, now)


def _submit_text(card: dict[str, Any], lang: str, now: datetime | None) -> str:
    """A submit card as text: the command, where it runs, the sweep, resources, start, estimate, cost."""
    spec = card.get("spec") or {}
    summary = card.get("summary") or {}
    sweep = card.get("sweep")
    lines = [_t(lang, "Ready to submit (please confirm):", "准备提交（请确认）：")]
    if summary.get("like_task"):
        lines.append(f"• {_t(lang, 'based on', '基于')}: {like_task_words(summary['like_task'], lang, now)}")
    lines.append(f"• {_t(lang, 'command', '命令')}: `{unwrap(spec.get('command', ''))}`")
    if spec.get("workdir"):  # where it runs: "in /data/exp1", else the chat's default folder
        lines.append(f"• {_t(lang, 'in folder', '工作目录')}: {unwrap(spec['workdir'])}")
    if sweep:  # one card for many tasks: say how many, and show the first ones
        lines.append(f"• {_t(lang, 'sweep', '扫参')}: {sweep_words(sweep, lang)}")
        examples = sweep.get("examples") or []
        shown = [f"`{line}`" if line in examples else line for line in sweep_examples_words(sweep, lang)]
        lines.append(f"• {_t(lang, 'first tasks', '前几个任务')}: " + _t(lang, "; ", "；").join(shown))
    lines.append(f"• {_t(lang, 'resources', '资源')}: {resources_words(spec, lang)}")
    if summary.get("start_label"):
        label = start_label_words(summary["start_label"], lang)
        lines.append(f"• {_t(lang, 'may start', '最早开始')}: {label}")
    estimate = _estimate_line(summary, lang, now)
    if estimate:
        lines.append(estimate)
    extras = _spec_extras(spec, lang, now)
    if extras:
        lines.append("• " + _t(lang, ", ", "，").join(extras))
    if summary.get("energy"):
        line = f"• {_t(lang, 'energy', '能耗')}: {energy_words(summary['energy'], lang)}"
        if summary.get("energy_cost"):
            cost = str(summary["energy_cost"])
            line += _t(lang, f", {cost} at the tariff's rates", f"，按电价约 {cost.lstrip('~')}")
        lines.append(line)
    if summary.get("quota"):
        lines.append(f"• {_t(lang, 'quota', '配额')}: {quota_words(summary['quota'], lang)}")
    lines += [f"• {warning_words(warning, lang)}" for warning in card.get("warnings") or []]
    lines.append(_t(lang, "Nothing is submitted until you confirm.", "确认之前不会提交。"))
    return "\n".join(lines)


def warning_words(warning: str, lang: str) -> str:
    """A warning the API answers a submit or change with, or one a card foresees (`cards.deadline_warnings`),
    as a sentence in the person's language: `⚠ It cannot finish by its deadline 12:30: the earliest it may
    start is 23:00 (off-peak window).`, `⚠ 它赶不上截止时间 12:30：最早 23:00 才能开始（谷时窗口）。`"""
    text = chat_words(unwrap(warning), lang)
    return "⚠ " + _t(lang, f"{text[:1].upper()}{text[1:]}.", f"{text}。")


def _cancel_text(card: dict[str, Any], lang: str) -> str:
    """A cancel card as text, in English or Chinese: "要取消任务 #3（train.py，排队中）吗？..."."""
    task = card.get("task") or {}
    name, status = unwrap(task.get("name") or ""), str(task.get("status") or "")
    en = zh = f"#{card.get('task_id')}"
    if name:
        en, zh = f"{en} ({name}, {status})", f"{zh}（{name}，{status_zh(status)}）"
    return _t(
        lang,
        f"Cancel task {en}? Nothing happens until you confirm.",
        f"要取消任务 {zh}吗？确认之前不会有任何操作。",
    )


def _cancel_tasks_text(card: dict[str, Any], lang: str) -> str:
    """A card cancelling several tasks as text: each task, and those left out because they ended."""
    tasks = card.get("tasks") or []
    named = [_task_named(task, lang) for task in tasks]
    lines = [_t(lang, f"Cancel these {len(named)} tasks?", f"要取消这 {len(named)} 个任务吗？")]
    lines += [f"• {line}" for line in named]
    left_out = card.get("left_out") or []
    if left_out:
        lines.append(
            "• " + _t(lang, "left out, already ended: ", "已结束，不在其中：") + ended_words(left_out, lang)
        )
    lines.append(
        _t(
            lang,
            "Queued ones are cancelled, running ones stopped. Nothing happens until you confirm.",
            "排队中的会被取消，运行中的会被停止。确认之前不会有任何操作。",
        )
    )
    return "\n".join(lines)


def _requeue_text(card: dict[str, Any], lang: str) -> str:
    """A requeue card as text: which task, what happens to it, and that nothing happens before the confirm."""
    task = {"id": card.get("task_id"), **(card.get("task") or {})}
    node = str(task.get("node") or "")
    where = _t(lang, f" on {node}", f"（在 {node} 上）") if node else ""
    return _t(
        lang,
        f"Put running task {_task_named(task, lang)}{where} back in the queue? It is stopped (its stop "
        "signal, then its grace period) and waits again with its age; its next attempt resumes from its "
        "checkpoint if it saves one, and it uses none of its retries. Nothing happens until you confirm.",
        f"要把运行中的任务 {_task_named(task, lang)}{where}放回队列吗？"
        "它会被停止（先发停止信号，再等宽限时间），"
        "然后保留原来的排队时间重新等待；如果它保存了检查点，下一次会从检查点继续，不占用重试次数。"
        "确认之前不会有任何操作。",
    )


def _task_named(task: dict[str, Any], lang: str) -> str:
    """`#3 (train.py, queued)` / `#3（train.py，排队中）`: a task by number, name and status."""
    name, status = unwrap(task.get("name") or ""), str(task.get("status") or "")
    if not name:
        return f"#{task.get('id')}"
    return _t(
        lang, f"#{task.get('id')} ({name}, {status})", f"#{task.get('id')}（{name}，{status_zh(status)}）"
    )


def ended_words(tasks: list[dict[str, Any]], lang: str) -> str:
    """`#40 (succeeded), #41 (cancelled)` / `#40（已成功）、#41（已取消）`."""
    if lang == "zh":
        return "、".join(f"#{task['id']}（{status_zh(str(task['status']))}）" for task in tasks)
    return ", ".join(f"#{task['id']} ({task['status']})" for task in tasks)


def tasks_cancelled_words(outcomes: list[dict[str, Any]], lang: str) -> str:
    """What a confirmed card cancelling several tasks did: `Cancelled #31, #32. Stopping (their stop signal
    is sent): #33. Not cancelled: #40: task 40 already succeeded; nothing to cancel.`"""
    cancelled = [f"#{o['id']}" for o in outcomes if o["status"] and o["status"] != "running"]
    stopping = [f"#{o['id']}" for o in outcomes if o["status"] == "running"]
    refused = [o for o in outcomes if not o["status"]]
    comma = _t(lang, ", ", "、")
    parts = []
    if cancelled:
        parts.append(_t(lang, f"Cancelled {comma.join(cancelled)}.", f"已取消 {comma.join(cancelled)}。"))
    if stopping:
        parts.append(
            _t(
                lang,
                f"Stopping (the stop signal is sent): {comma.join(stopping)}.",
                f"正在停止（已发出停止信号）：{comma.join(stopping)}。",
            )
        )
    if refused:
        said = _t(lang, "; ", "；").join(f"#{o['id']}: {chat_words(str(o['error']), lang)}" for o in refused)
        parts.append(_t(lang, f"Not cancelled: {said}.", f"未取消：{said}。"))
    return _t(lang, " ", "").join(parts)


def _sweep_named(card: dict[str, Any], lang: str) -> str:
    """`#4 (lr-seeds)` / `#4（lr-seeds）`: a sweep card's sweep, by number and name."""
    name = unwrap((card.get("sweep") or {}).get("name") or "")
    return f"#{card.get('sweep_id')}" + (in_parentheses(name, lang) if name else "")


def _cancel_sweep_text(card: dict[str, Any], lang: str) -> str:
    """A sweep's cancel card as text: what it cancels, stops and keeps; nothing happens before the confirm."""
    sweep = card.get("sweep") or {}
    which = _sweep_named(card, lang)
    counts = {status: int(count) for status, count in (sweep.get("counts") or {}).items()}
    queued, running = counts.get("queued", 0), counts.get("running", 0)
    ended = sum(counts.values()) - queued - running
    what = _t(
        lang,
        f" It cancels its queued tasks ({queued}) and stops its running ones ({running}); the ones that "
        f"ended ({ended}) stay as they are.",
        f"排队中的任务（{queued} 个）会被取消，运行中的（{running} 个）会被停止，"
        f"已结束的（{ended} 个）保持不变。",
    )
    return (
        _t(lang, f"Cancel sweep {which}?", f"要取消扫参 {which}吗？")
        + (what if counts else "")  # without an API to ask (a dry run without a server): the sweep alone
        + _t(lang, " Nothing happens until you confirm.", "确认之前不会有任何操作。")
    )


def rerun_tasks_words(card: dict[str, Any], lang: str) -> str:
    """What a sweep's rerun card runs again: `the 2 failed tasks: #1 (lr=0.1), #4 (lr=0.5)`, `2 个失败的任务：
    #1（lr=0.1）、#4（lr=0.5）`; `its failed tasks` without an API to ask (a dry run without a server)."""
    statuses = [str(status) for status in card.get("status") or ["failed"]]
    which_en = " or ".join(statuses)
    which_zh = "或".join(status_zh(status) for status in statuses)
    count, tasks = card.get("count"), card.get("tasks") or []
    if not count:
        return _t(lang, f"its {which_en} tasks", f"它{which_zh}的任务")
    listed = [(task["id"], unwrap(str(task.get("params") or ""))) for task in tasks]
    en = ", ".join(f"#{task_id}" + (f" ({params})" if params else "") for task_id, params in listed)
    zh = "、".join(f"#{task_id}" + (f"（{params}）" if params else "") for task_id, params in listed)
    more_en = f" and {count - len(tasks)} more" if count > len(tasks) else ""
    more_zh = f" 等 {count} 个" if count > len(tasks) else ""
    noun = "task" if count == 1 else "tasks"
    return _t(
        lang, f"the {count} {which_en} {noun}: {en}{more_en}", f"{count} 个{which_zh}的任务：{zh}{more_zh}"
    )


def _rerun_sweep_text(card: dict[str, Any], lang: str) -> str:
    """A sweep's rerun card as text: which tasks run again, that each new task takes its old one's place
    with its parameters; nothing happens before the confirm."""
    which = _sweep_named(card, lang)
    return "\n".join(
        [
            _t(
                lang,
                f"Run again in sweep {which} (please confirm):",
                f"重新运行扫参 {which}里的任务（请确认）：",
            ),
            f"• {rerun_tasks_words(card, lang)}",
            "• "
            + _t(
                lang,
                "each new task keeps its parameters and takes the old one's place in the sweep's counts and "
                "results; the old ones keep their record",
                "新任务沿用原来的参数，在扫参的统计和结果里替代原任务；原任务的记录保留",
            ),
            _t(lang, "Nothing happens until you confirm.", "确认之前不会有任何操作。"),
        ]
    )


def _change_sweep_text(card: dict[str, Any], lang: str, now: datetime | None) -> str:
    """A sweep's change card as text: which sweep, how many queued tasks change, each field before and after;
    nothing happens before the confirm."""
    which = _sweep_named(card, lang)
    queued = card.get("queued")
    lines = [
        _t(
            lang,
            f"Change sweep {which}, its {queued} queued tasks (please confirm):",
            f"修改扫参 {which}里排队中的 {queued} 个任务（请确认）：",
        )
    ]
    lines += [f"• {label}: {old} → {new}" for label, old, new in change_rows(card, lang, now)]
    lifted = running_limit_lifted_words(card, lang)
    if lifted:
        lines.append(f"• {lifted}")
    lines += [f"• {warning_words(warning, lang)}" for warning in card.get("warnings") or []]
    lines.append(
        _t(
            lang,
            "Its running and ended tasks stay as they are. Nothing changes until you confirm.",
            "运行中和已结束的任务保持不变。确认之前不会有任何改动。",
        )
    )
    return "\n".join(lines)


def running_limit_lifted_words(card: dict[str, Any], lang: str) -> str:
    """What a sweep change card that removes the sweep's `max_running` does, said before the confirm: `The
    limit of 2 at a time goes away: all its queued tasks may start as GPUs allow.` ("" for any other card)."""
    before, after = (card.get("changes") or {}).get("max_running") or [None, None]
    if before is None or after is not None:
        return ""
    return _t(
        lang,
        f"The limit of {before} at a time goes away: all its queued tasks may start as GPUs allow.",
        f"同时最多运行 {before} 个的限制将被取消：它排队中的任务都可以在有空闲 GPU 时开始。",
    )


# what a dropped card leaves undone, by its kind (English, Chinese)
DROPPED_WORDS = {
    "submit": ("submitted", "提交"),
    "cancel": ("cancelled", "取消"),
    "cancel_tasks": ("cancelled", "取消"),
    "requeue": ("stopped", "停止"),
    "change": ("changed", "修改"),
    "cancel_sweep": ("cancelled", "取消"),
    "rerun_sweep": ("run again", "重新运行"),
    "change_sweep": ("changed", "修改"),
}


def dropped_words(kind: str, lang: str) -> str:
    """What dropping a card of `kind` says: `Dropped: nothing was submitted.`, `已放弃：没有提交任何任务。`"""
    en, zh = DROPPED_WORDS.get(kind, DROPPED_WORDS["submit"])
    return _t(lang, f"Dropped: nothing was {en}.", f"已放弃：没有{zh}任何任务。")


def _card_subject(card: dict[str, Any], lang: str) -> str:
    """What a card would do, in a few words: `submit `python a.py``, `cancel task #3` / `取消任务 #3`."""
    kind = str(card.get("kind"))
    if kind == "submit":
        command = unwrap((card.get("spec") or {}).get("command", ""))
        return _t(lang, f"submit `{command}`", f"提交 `{command}`")
    if kind == "cancel_sweep":
        return _t(lang, f"cancel sweep #{card.get('sweep_id')}", f"取消扫参 #{card.get('sweep_id')}")
    if kind == "cancel_tasks":
        ids = ", ".join(f"#{task_id}" for task_id in card.get("task_ids") or [])
        return _t(lang, f"cancel tasks {ids}", f"取消任务 {ids}")
    if kind == "requeue":
        return _t(
            lang,
            f"put task #{card.get('task_id')} back in the queue",
            f"把任务 #{card.get('task_id')} 放回队列",
        )
    if kind == "change_sweep":
        return _t(lang, f"change sweep #{card.get('sweep_id')}", f"修改扫参 #{card.get('sweep_id')}")
    if kind == "rerun_sweep":
        sweep_id = card.get("sweep_id")
        return _t(lang, f"run sweep #{sweep_id}'s tasks again", f"重新运行扫参 #{sweep_id} 的任务")
    verb_en, verb_zh = ("cancel", "取消") if kind == "cancel" else ("change", "修改")
    return _t(lang, f"{verb_en} task #{card.get('task_id')}", f"{verb_zh}任务 #{card.get('task_id')}")


def retired_cards_words(cards: list[dict[str, Any]], lang: str) -> str:
    """What a new request says of the cards still waiting from before it, which it dropped: `The earlier card
    (submit `python a.py`) is dropped, since you asked for something new: nothing was submitted.`"""
    what = _t(lang, "; ", "；").join(_card_subject(card, lang) for card in cards)
    kinds = {str(card.get("kind")) for card in cards}
    kind = next(iter(kinds)) if len(kinds) == 1 else ""
    en, zh = DROPPED_WORDS.get(kind, ("done", "执行"))
    head = _t(lang, f"The earlier card ({what}) is", f"之前的卡片（{what}）已作废")
    if len(cards) > 1:
        head = _t(lang, f"The earlier cards ({what}) are", head)
    return head + _t(
        lang,
        f" dropped, since you asked for something new: nothing was {en}.",
        f"，因为你提了新的请求：没有{zh}任何任务。",
    )


def like_task_words(like: dict[str, Any], lang: str, now: datetime | None = None) -> str:
    """`task #12 (its not_before, 03-01 09:00, has passed: left out; without its time limit (min), 120)`:
    the earlier task a card runs again, and what of it is left out."""
    text = _t(lang, f"task #{like.get('task_id')}", f"任务 #{like.get('task_id')}")
    notes = [
        _t(
            lang,
            f"its {key}, {when(value, now, lang)}, has passed: left out",
            f"原来的{field_label(key, lang)}（{when(value, now, lang)}）已过，不再沿用",
        )
        for key, value in (like.get("passed") or {}).items()
    ] + [
        _t(
            lang,
            f"without its {field_label(key, lang)}, {field_value_words(key, value, lang, now)}",
            f"去掉原来的{field_label(key, lang)}（{field_value_words(key, value, lang, now)}）",
        )
        for key, value in (like.get("cleared") or {}).items()
    ]
    return text + in_parentheses(_t(lang, "; ", "；").join(notes), lang) if notes else text


def _estimate_line(summary: dict[str, Any], lang: str, now: datetime | None) -> str | None:
    """A submit card's estimate line: expected start and finish (with the run time assumed when the person
    gave none), or why there is no estimate yet."""
    if summary.get("estimated_start"):
        start = when(summary["estimated_start"], now, lang)
        text = _t(lang, f"start {start}", f"{start} 开始")
        if summary.get("estimated_end"):
            end = when(summary["estimated_end"], now, lang)
            text += _t(lang, f", finish ~{end}", f"，{end} 完成")
            if summary.get("run_estimate"):
                text += in_parentheses(run_estimate_words(summary["run_estimate"], lang), lang)
        return f"• {_t(lang, 'estimate', '预计')}: {text}"
    if summary.get("wait_reason"):
        reason = unwrap(summary["wait_reason"])
        why = _t(lang, reason, reason_zh(reason))
        return f"• {_t(lang, 'estimate', '预计')}: {_t(lang, 'none yet', '暂无')} — {why}"
    return None


def _spec_extras(spec: dict[str, Any], lang: str, now: datetime | None) -> list[str]:
    """The spec's other settings as words: `priority high`, `time limit 180 min`, `after task 5`."""
    extras = []
    if spec.get("priority") not in (None, "normal"):
        extras.append(
            _t(lang, f"priority {spec['priority']}", f"优先级 {priority_words(spec['priority'], lang)}")
        )
    if spec.get("time_limit_minutes"):
        minutes = f"{float(spec['time_limit_minutes']):g}"
        extras.append(_t(lang, f"time limit {minutes} min", f"时间限制 {minutes} 分钟"))
    if spec.get("retries"):
        extras.append(_t(lang, f"retries {spec['retries']}", f"失败重试 {spec['retries']} 次"))
    if spec.get("conda_env"):
        extras.append(_t(lang, f"conda env {spec['conda_env']}", f"conda 环境 {spec['conda_env']}"))
    if spec.get("docker_image"):
        extras.append(_t(lang, f"docker image {spec['docker_image']}", f"docker 镜像 {spec['docker_image']}"))
    if spec.get("env"):
        pairs = " ".join(f"{name}={shlex.quote(str(value))}" for name, value in spec["env"].items())
        extras.append(_t(lang, f"env {pairs}", f"环境变量 {pairs}"))
    if spec.get("secrets"):  # names only: a value never reaches the chat
        names = ", ".join(spec["secrets"])
        extras.append(_t(lang, f"your secret {names}", f"你的密钥 {names}"))
    if spec.get("depends_on"):
        ids = ", ".join(f"#{task_id}" for task_id in spec["depends_on"])
        extras.append(_t(lang, f"after task {ids} succeeds", f"等任务 {ids} 成功后"))
    if spec.get("depends_on_any"):
        ids = ", ".join(f"#{task_id}" for task_id in spec["depends_on_any"])
        extras.append(_t(lang, f"after task {ids} ends, however it ends", f"等任务 {ids} 结束后（不论成败）"))
    if spec.get("deadline"):
        deadline = when(spec["deadline"], now, lang)
        extras.append(_t(lang, f"deadline {deadline}", f"截止 {deadline}"))
    return extras


def run_estimate_words(run: dict[str, Any], lang: str) -> str:
    """Where the run time a card assumes comes from, when the person gave none: `by the median of your 3
    recent runs`, `by its time limit`, or that it is a guess (facts from `cards.summarize`)."""
    span, source = minutes_words(float(run["minutes"]), lang), str(run["source"])
    runs = re.match(r"median of (\d+) recent run", source)
    if runs:
        return _t(
            lang,
            f"{span}, the median of your {runs.group(1)} recent runs like it",
            f"{span}，按你最近 {runs.group(1)} 次同类运行的中位数",
        )
    if source == "spec estimate":
        return _t(lang, f"{span}, your estimate", f"{span}，按你给的估计")
    if source == "time limit":
        return _t(lang, f"{span}, its time limit", f"{span}，按时间限制")
    if source == "default":
        return _t(
            lang,
            f"a guess of {span}: say how long it runs for a better estimate",
            f"按默认 {span}估计；告诉我大概要跑多久可以估得更准",
        )
    return _t(lang, f"{span}, {source}", f"{span}，{source}")


def in_parentheses(text: str, lang: str) -> str:
    """` (text)` after English words, `（text）` after Chinese ones."""
    return _t(lang, f" ({text})", f"（{text}）")


def minutes_words(minutes: float, lang: str) -> str:
    """A run time for people: `40 s` under two minutes, else whole minutes (`90 min`, `90 分钟`)."""
    if minutes < 2:
        return _t(lang, f"{minutes * 60:.0f} s", f"{minutes * 60:.0f} 秒")
    return _t(lang, f"{minutes:.0f} min", f"{minutes:.0f} 分钟")


def energy_words(energy: dict[str, Any], lang: str) -> str:
    """A submit card's energy line: `~1.2 kWh (2 × 300 W for 120 min)` (facts from `cards`)."""
    kwh, gpus, power = energy["kwh"], energy["gpus"], energy["power_w"]
    span, tasks = minutes_words(float(energy["minutes"]), lang), int(energy.get("tasks") or 1)
    each = _t(lang, f"{tasks} tasks × ", f"{tasks} 个任务 × ") if tasks > 1 else ""
    return _t(
        lang,
        f"~{amount(kwh, 1)} kWh ({each}{gpus} × {power:.0f} W for {span})",
        f"约 {amount(kwh, 1)} kWh（{each}{gpus} × {power:.0f} W，{span}）",
    )


def quota_words(quota: dict[str, Any], lang: str) -> str:
    """A submit card's quota line: what the task does to its team's day budget, then to the person's own
    where they have one (facts from `cards`)."""
    own = quota.get("own")
    team_words = _team_day_words(quota, lang)
    if not own:
        return team_words
    return team_words + _t(lang, "; ", "；") + _own_day_words(own, quota.get("uses_gpu_h"), lang)


def _own_day_words(own: dict[str, Any], uses: float | None, lang: str) -> str:
    """What the task does to the person's own day budget: used up (it waits), what is left, or over it."""
    budget, used = float(own["budget_gpu_h"]), float(own.get("used_gpu_h") or 0)
    left = budget - used
    if own.get("state") == "exhausted" or left <= 0:
        return _t(
            lang,
            f"your own day budget is used up ({used:.2g} of {budget:g} GPU-h): "
            "it waits until your usage falls",
            f"你个人的日预算已用完（{used:.2g} / {budget:g} GPU小时）：它会等到你的用量回落",
        )
    if uses is None:
        return _t(
            lang,
            f"your own day budget: {amount(left)} of {budget:g} GPU-h left",
            f"你个人的日预算还剩 {amount(left)} / {budget:g} GPU小时",
        )
    if left - uses < 0:  # it starts (never killed), and the person's next tasks wait
        return _t(
            lang,
            "it would take you over your own day budget: it runs, and your later tasks wait",
            "会超出你个人的日预算：它照常运行，你之后的任务要等",
        )
    after = left - uses
    return _t(
        lang,
        f"{amount(after)} GPU-h of your own day budget left after it",
        f"运行后你个人的日预算还剩 {amount(after)} GPU小时",
    )


def _team_day_words(quota: dict[str, Any], lang: str) -> str:
    """What the task does to its team's day budget."""
    team, budget, used = quota.get("team"), quota.get("budget_gpu_h"), float(quota.get("used_gpu_h") or 0)
    uses = quota.get("uses_gpu_h")
    if budget is None:
        return _t(lang, f"team {team}: no daily budget", f"团队 {team}：没有每日预算") + (
            _t(lang, f"; uses ~{amount(uses)} GPU-h", f"；约用 {amount(uses)} GPU小时") if uses else ""
        )
    left = float(budget) - used
    if quota.get("state") == "exhausted" or left <= 0:  # the hard limit: no new starts until usage falls
        return _t(
            lang,
            f"team {team}'s day budget is used up ({used:.2g} of {float(budget):g} GPU-h): "
            "it waits until the team's usage falls",
            f"团队 {team} 日预算已用完（{used:.2g} / {float(budget):g} GPU小时）：它会等到团队用量回落",
        )
    if uses is None:
        state = quota.get("state")
        return _t(
            lang,
            f"team {team}: {amount(left)} of {float(budget):g} GPU-h left in its day budget ({state})",
            f"团队 {team}：日预算还剩 {amount(left)} / {float(budget):g} GPU小时"
            + ("（已用过 80%）" if state == "warning" else ""),
        )
    after = left - uses
    head = _t(
        lang,
        f"uses ~{amount(uses)} of the {amount(left)} GPU-h left in the team's day budget; ",
        f"约用 {amount(uses)} GPU小时，团队日预算还剩 {amount(left)}；",
    )
    if after < 0:  # it starts (never killed), and the team's next tasks wait
        return head + _t(
            lang,
            "it would take the team over its day budget: it runs, and later tasks wait",
            "会超出每日预算：它照常运行，之后的任务要等",
        )
    return head + _t(lang, f"{amount(after)} GPU-h left after it", f"运行后还剩 {amount(after)} GPU小时")


def _day_words(day: date, now: datetime | None, lang: str) -> str:
    """`yesterday` / `今天` for a date near `now`, else `03-01`."""
    names = {-1: ("yesterday", "昨天"), 0: ("today", "今天")}
    delta = (day - now.date()).days if now is not None else None
    if delta in names:
        return names[delta][0 if lang == "en" else 1]
    return f"{day:%m-%d}"


def _moment(iso: Any, now: datetime | None) -> datetime | None:
    """An ISO time from a tool result, on the clock of `now` (None when there is none)."""
    try:
        moment = datetime.fromisoformat(unwrap(iso)) if iso else None
    except ValueError:
        return None
    if moment is not None and moment.tzinfo is not None and now is not None:
        moment = moment.astimezone(now.tzinfo)
    return moment


def window_words(since: Any, until: Any, now: datetime | None, lang: str) -> str:
    """When the tasks searched for were submitted: `submitted yesterday`, `submitted 02-23 – 03-01`,
    `submitted since today 09:00` / `昨天提交`, `02-23 至 03-01 提交`, `今天 09:00 以来提交` (whole days by
    their dates; "" when neither end is given)."""
    start, end = _moment(since, now), _moment(until, now)
    whole = (start is None or start.time() == time(0)) and (end is None or end.time() == time.max)
    if whole and start is not None and end is not None:
        if start.date() == end.date():
            day = _day_words(start.date(), now, lang)
            return _t(lang, f"submitted {day}", f"{day}提交")
        first, last = f"{start:%m-%d}", f"{end:%m-%d}"
        return _t(lang, f"submitted {first} – {last}", f"{first} 至 {last} 提交")

    def words(moment: datetime) -> str:
        return _day_words(moment.date(), now, lang) if whole else when(moment.isoformat(), now, lang)

    if start is not None and end is not None:
        return _t(lang, f"submitted {words(start)} – {words(end)}", f"{words(start)} 至 {words(end)} 提交")
    if start is not None:
        return _t(lang, f"submitted since {words(start)}", f"{words(start)} 以来提交")
    if end is not None:
        return _t(lang, f"submitted until {words(end)}", f"截至 {words(end)} 提交")
    return ""


def search_words(searched: dict[str, Any], now: datetime | None, lang: str) -> str:
    """What a task search asked for: `failed, submitted yesterday, named train.py*, tagged exp7, ran on box-a`
    / `失败、昨天提交、名称 train.py*、标签 exp7、在 box-a 上运行过` ("" for no filter)."""
    parts = []
    if searched.get("status"):
        status = unwrap(searched["status"])
        parts.append(status_zh(status) if lang == "zh" else status)
    parts.append(window_words(searched.get("since"), searched.get("until"), now, lang))
    labels = {"name": ("named", "名称 "), "tag": ("tagged", "标签 "), "node": ("ran on", "在 ")}
    for key, (en, zh) in labels.items():
        if searched.get(key):
            value = unwrap(searched[key])
            parts.append(_t(lang, f"{en} {value}", f"{zh}{value}{' 上运行过' if key == 'node' else ''}"))
    if searched.get("sweep_id"):
        parts.append(_t(lang, f"of sweep #{searched['sweep_id']}", f"扫参 #{searched['sweep_id']}"))
    return _t(lang, ", ", "、").join(part for part in parts if part)


def _tasks(data: dict[str, Any], lang: str, now: datetime | None = None) -> str:
    tasks = data.get("tasks", [])
    words = search_words(data.get("searched") or {}, now, lang)
    where = (f" ({words})" if lang == "en" else f"（{words}）") if words else ""
    if not tasks:
        if words:
            return _t(lang, f"No task matches{where}.", f"没有符合条件的任务{where}。")
        return _t(lang, "You have no matching tasks.", "没有符合条件的任务。")
    shown = [f"#{t['id']} {_name_and_owner(t, tasks, lang)} — {_task_status(t, lang)}" for t in tasks[:8]]
    more = len(tasks) - len(shown)
    total = data.get("total")
    if total is not None and int(total) > len(tasks):  # the answer holds the newest: say how many in all
        head = _t(
            lang,
            f"Showing {len(tasks)} of {total} tasks{where}, newest first (`nightshift ls` lists them all):",
            f"共 {total} 个任务{where}，这里是最新的 {len(tasks)} 个（`nightshift ls` 可以全部列出）：",
        )
    elif data.get("more"):  # an answer without a total: say there are more, not how many
        head = _t(
            lang,
            f"Your {len(tasks)} newest tasks (there are more: `nightshift ls` lists them all):",
            f"你最近的 {len(tasks)} 个任务（还有更多：`nightshift ls` 可以全部列出）：",
        )
    else:
        head = _t(lang, f"{len(tasks)} task(s){where}:", f"共 {len(tasks)} 个任务{where}：")
    tail = _t(lang, f"\n… and {more} more", f"\n……另有 {more} 个") if more > 0 else ""
    return head + "\n" + "\n".join(shown) + tail


def _name_and_owner(task: dict[str, Any], tasks: list[dict[str, Any]], lang: str) -> str:
    """A listed task's name, and whose it is when the list holds several people's (a team's tasks)."""
    name = unwrap(task.get("name", ""))
    if len({unwrap(t.get("user") or "") for t in tasks}) < 2 or not task.get("user"):
        return name
    return _t(lang, f"{name} ({unwrap(task['user'])})", f"{name}（{unwrap(task['user'])}）")


_STATUS_ZH = {
    "queued": "排队中",
    "running": "运行中",
    "succeeded": "已完成",
    "failed": "失败",
    "cancelled": "已取消",
}


def status_zh(status: str) -> str:
    """A task status in Chinese (`queued` → `排队中`); an unknown one as it is."""
    return _STATUS_ZH.get(status, status)


def _task_status(task: dict[str, Any], lang: str) -> str:
    """'failed (exit code 3)': the status, and why it ended only where that says more (its message in plain
    words where there is one, else its reason code, as `ls` shows)."""
    status = str(task.get("status") or "")
    reason = unwrap(task.get("reason") or "")
    message = unwrap(task.get("message") or "")
    word = status_zh(status) if lang == "zh" else status
    if status == "queued" and task.get("held_by"):
        return _t(
            lang,
            f'{word} (held: say "release {task.get("id")}")',
            f"{word}（已暂停：说“放行{task.get('id')}号”）",
        )
    if status == "failed" and message:
        return _t(lang, f"{word} ({message})", f"{word}（{reason_zh(message)}）")
    if not reason or reason == status or status not in ("failed", "cancelled"):
        return word
    return _t(lang, f"{word} ({reason})", f"{word}（{reason}）")


def _position(data: dict[str, Any], lang: str, now: datetime | None = None) -> str:
    """Each queued task's place in the queue, why it waits and when it should start, one line each:
    `#18 later is number 1 of 3 in the queue: waiting until 09:35 (not before); expected to start today
    09:35.`"""
    entries = data.get("entries", [])
    if not entries:
        return _t(lang, "None of your tasks is waiting in the queue.", "你没有在排队的任务。")
    shown = entries[:5]
    theirs = not any(entry.get("yours", True) for entry in entries)  # an admin's view of others' tasks
    several = theirs or len({unwrap(entry.get("user") or "") for entry in shown}) > 1  # say whose each is
    lines = [_place_words(entry, several, data.get("length"), lang, now) for entry in shown]
    if theirs:
        lines.insert(
            0,
            _t(
                lang, "None of your own tasks is waiting; in the queue:", "你自己没有在排队的任务；队列里有："
            ),
        )
    return "\n".join(lines)


def _place_words(entry: dict[str, Any], several: bool, length: Any, lang: str, now: datetime | None) -> str:
    """One queued task's line of `_position` (whose it is, when the lines are `several` people's)."""
    name = unwrap(entry.get("name", ""))
    owner = unwrap(entry.get("user") or "") if several else ""
    text = _t(
        lang,
        f"#{entry['task_id']} {name}{f' ({owner})' if owner else ''} is number {entry['position']} of "
        f"{length} in the queue",
        f"任务 #{entry['task_id']}（{name}{f'，{owner}' if owner else ''}）"
        f"排在第 {entry['position']} 位（共 {length} 个）",
    )
    reason = unwrap(entry.get("reason") or "")
    if reason:
        text += _t(lang, ": ", "：") + chat_words(reason, lang)
    if entry.get("estimated_start"):
        start = when(entry["estimated_start"], now, lang)
        text += _t(lang, f"; expected to start {start}", f"；预计 {start} 开始")
    return text + _t(lang, ".", "。")


def _estimate(data: dict[str, Any], lang: str, now: datetime | None, about_cost: bool = False) -> str:
    est = data.get("estimate") or {}
    cost = expected_cost_words(est, lang) if about_cost and est.get("energy_cost") is not None else ""
    return _estimated_start(data, est, lang, now) + cost


def _estimated_start(data: dict[str, Any], est: dict[str, Any], lang: str, now: datetime | None) -> str:
    if est.get("status") not in (None, "queued") and data.get("task_id"):
        # "when will task 5 finish?": it is not waiting, so say what it is doing (and when it should end)
        info = {**est, "task_id": data["task_id"], "estimated_end": est.get("end"), "estimated_start": None}
        return _explain({"explain": info}, lang, now)
    if not est.get("start"):
        reason = unwrap(est.get("reason") or "")
        if not reason:
            return _t(lang, "I have no estimate right now.", "暂时没有估计。")
        return _t(
            lang,
            f"I have no estimate of when it would start: {chat_words(reason, lang)}.",
            f"暂时估计不出什么时候开始：{chat_words(reason, lang)}。",
        )
    asked = _asked_task(data.get("asked"), lang)
    label = f"#{data['task_id']} " if data.get("task_id") else (asked + _t(lang, ": ", "：") if asked else "")
    wait_s = est.get("wait_s")
    late = _deadline_words(unwrap(est["deadline_warning"]), lang) if est.get("deadline_warning") else ""
    if wait_s is not None and wait_s < 60:
        if data.get("task_id"):
            return _t(lang, f"Task #{data['task_id']} would start now.", f"{label}现在就能开始。") + late
        return _t(lang, f"{asked or 'It'} would start now.", f"{asked}现在就能开始。")
    low, high = when(est.get("low"), now, lang), when(est.get("high"), now, lang)
    rng_en = f" (range {low}–{high})" if low != high else ""
    rng_zh = f"（范围 {low}–{high}）" if low != high else ""
    wait = duration(wait_s, lang)
    reason = unwrap(est.get("reason") or "")
    return (
        _t(
            lang,
            f"{label}Estimated start {when(est['start'], now, lang)}{rng_en}, a wait of about {wait}"
            + (f" — {chat_words(reason, lang)}." if reason else "."),
            f"{label}预计 {when(est['start'], now, lang)} 开始{rng_zh}，大约要等 {wait}"
            + (f"（{chat_words(reason, lang)}）。" if reason else "。"),
        )
        + late
    )


def _asked_task(asked: dict[str, Any] | None, lang: str) -> str:
    """ "A 2-GPU task (40 GB each)" / "2 张卡（每张 40 GB）的任务": the size a wait was asked for, of a task
    not yet sent ("" when the wait was for a task of the queue)."""
    if not asked:
        return ""
    gpus, memory = int(asked.get("gpus") or 1), asked.get("gpu_memory_gb")
    model, node = unwrap(asked.get("gpu_model") or ""), unwrap(asked.get("node") or "")
    each_en = f" ({float(memory):g} GB each)" if memory else ""
    each_zh = f"（每张 {float(memory):g} GB）" if memory else ""
    on_en = (f" on {model}" if model else "") + (f" on node {node}" if node else "")
    on_zh = (f" {model} " if model else "") + (f"（节点 {node}）" if node else "")
    article = "An" if str(gpus).startswith("8") or gpus in (11, 18) else "A"  # "an 8-GPU", "an 11-GPU"
    return _t(lang, f"{article} {gpus}-GPU task{on_en}{each_en}", f"{gpus} 张{on_zh}卡{each_zh}的任务")


# How a task's status reads: "Task #2 failed", "任务 #2 失败了".
_STATUS_WORDS: dict[str, tuple[str, str]] = {
    "queued": ("is queued", "在排队"),
    "running": ("is running", "正在运行"),
    "succeeded": ("succeeded", "已成功完成"),
    "failed": ("failed", "失败了"),
    "cancelled": ("was cancelled", "已取消"),
}


def _explain(
    data: dict[str, Any],
    lang: str,
    now: datetime | None,
    about_cost: bool = False,
    asked: Sequence[str] = (),
) -> str:
    info = data.get("explain") or {}
    tid = info.get("task_id")
    status = str(info.get("status") or "")
    reason = unwrap(info.get("reason") or "")
    en, zh = _STATUS_WORDS.get(status, (f"is {status}", f"当前状态：{status}"))
    text = _t(lang, f"Task #{tid} {en}", f"任务 #{tid} {zh}")
    if info.get("position"):
        text += _t(lang, f", number {info['position']} in the queue", f"，排第 {info['position']} 位")
    if status == "succeeded":
        reason = ""  # "finished successfully" says it again
    elif status in ("running", "cancelled") and reason.startswith(status):
        # "running on n0 GPUs 1 since ...", "cancelled by alice": the status word is already said
        rest = reason[len(status) :].strip()
        text += _t(lang, f" {rest}" if rest else "", f"（{reason_zh(rest.strip('()'))}）" if rest else "")
        reason = ""
    if reason:
        text += _t(lang, ": ", "：") + chat_words(reason, lang)
    text += _t(lang, ".", "。")
    last_lines = unwrap(info.get("last_output") or "").splitlines()
    if last_lines:  # a failed task's last words, most often the error itself
        last = last_lines[-1]
        text += _t(lang, f" Its last output: `{last}`", f"最后的输出：`{last}`")
        text += _t(
            lang, f" (all of it: `nightshift logs {tid}`).", f"（全部输出：`nightshift logs {tid}`）。"
        )
    if info.get("estimated_start"):
        text += _t(
            lang,
            f" Estimated start {when(info['estimated_start'], now, lang)}.",
            f"预计 {when(info['estimated_start'], now, lang)} 开始。",
        )
    if status == "running" and info.get("estimated_end"):
        text += _running_end(info["estimated_end"], lang, now)
    text += waited_words(info, lang, now)
    if info.get("deadline_warning"):
        text += _deadline_words(unwrap(info["deadline_warning"]), lang)
    if about_cost and status in ("queued", "running") and info.get("energy_cost") is not None:
        text += expected_cost_words(info, lang)
    if data.get("ran"):
        text += ran_words(data["ran"], lang, now)
    if data.get("usage"):
        text += usage_words(data["usage"], lang)
    text += "".join(_field_said(name, info, lang, now) for name in asked)
    return text


def waited_words(info: dict[str, Any], lang: str, now: datetime | None) -> str:
    """How long a queued task has waited so far (" It has been queued for 25 min."), or a running one waited
    before it started (" It waited 12 min before it started."); "" when its times are not known, or a running
    one was retried (its start is its last attempt's)."""
    status = info.get("status")
    waited_s = queue_wait_s(info, now) if status in ("queued", "running") else None
    if waited_s is None:
        return ""
    waited = duration(waited_s, lang)
    if status == "queued":
        return _t(lang, f" It has been queued for {waited}.", f"已排队 {waited}。")
    return _t(lang, f" It waited {waited} before it started.", f"开始前排队了 {waited}。")


def _field_said(name: str, info: dict[str, Any], lang: str, now: datetime | None) -> str:
    """One setting of an explained task, as a sentence: " Its command: `python train.py`.", " Its time
    limit (min): 180." ("" when the answer does not hold it)."""
    if name not in info:
        return ""
    value = info[name]
    if name == "command":
        command = unwrap(str(value))
        return _t(lang, f" Its command: `{command}`.", f"它的命令：`{command}`。")
    field = "priority" if name == "priority_class" else name  # ("priority" holds its parts)
    words = field_value_words(field, value, lang, now)
    label = field_label(field, lang)
    return _t(lang, f" Its {label}: {words}.", f"它的{label}：{words}。")


def ran_words(ran_at: dict[str, Any], lang: str, now: datetime | None) -> str:
    """When an ended task ran, as a sentence of the reply: " It waited 12 min, then ran 1 h 5 min (12-07 09:00
    to 10:05)." (its start and end as the task holds them; the wait of a task run once)."""
    try:
        start, end = (datetime.fromisoformat(str(ran_at[key])) for key in ("started_at", "finished_at"))
    except (KeyError, ValueError):
        return ""
    took = duration((end - start).total_seconds(), lang)
    since, until = when(start.isoformat(), now, lang), when(end.isoformat(), now, lang)
    zone = now.tzinfo if now is not None else None
    if start.astimezone(zone).date() == end.astimezone(zone).date():  # "yesterday 09:00 to 10:05"
        until = end.astimezone(zone).strftime("%H:%M")
    ran = _t(lang, f" It ran {took} ({since} to {until}).", f"运行了 {took}（{since} 至 {until}）。")
    waited_s = queue_wait_s(ran_at, now)  # None for a retried one: its start is its last attempt's
    if waited_s is None:
        return ran
    waited = duration(waited_s, lang)
    return _t(lang, f" It waited {waited}, then ran {took} ({since} to {until}).", f"排队 {waited} 后{ran}")


def expected_cost_words(info: dict[str, Any], lang: str) -> str:
    """What a queued task should cost, run as estimated from its expected start, as a sentence of the
    reply: " Run as estimated (120 min), it should use ~1.4 kWh and cost ~0.17 USD." A running one's, from
    its start to its expected end: " Run to its expected end, it should use ~1.4 kWh and cost ~0.17 USD in
    all." """
    kwh = amount(float(info.get("energy_kwh") or 0), 1)
    cost = f"{amount(float(info['energy_cost']), 2)} {info.get('currency') or ''}".rstrip()
    if info.get("status") == "running":
        return _t(
            lang,
            f" Run to its expected end, it should use ~{kwh} kWh and cost ~{cost} in all.",
            f"按预计时间跑完，预计共耗电约 {kwh} kWh，费用约 {cost}。",
        )
    run_s = info.get("estimated_run_s")
    span = minutes_words(float(run_s) / 60, lang) if run_s else ""
    return _t(
        lang,
        f" Run as estimated{f' ({span})' if span else ''}, it should use ~{kwh} kWh and cost ~{cost}.",
        f"按预估运行{f'（{span}）' if span else ''}，预计耗电约 {kwh} kWh，费用约 {cost}。",
    )


def usage_words(usage: dict[str, Any], lang: str) -> str:
    """What an ended task used, as a sentence of the reply: " It used 2.0 GPU-hours and 0.60 kWh
    (measured), costing 0.12 USD; peak GPU memory 18.2 GB of the 24 GB asked." """
    hours, kwh = float(usage.get("gpu_hours") or 0), float(usage.get("energy_kwh") or 0)
    source = str(usage.get("energy_source") or "")
    source_en = {"measured": " (measured)", "estimated": " (estimated from the GPU model)"}.get(source, "")
    source_zh = {"measured": "（实测）", "estimated": "（按 GPU 型号估算）"}.get(source, "")
    cost = f"{amount(float(usage.get('cost') or 0), 2)} {usage.get('currency') or ''}".rstrip()
    text = _t(
        lang,
        f" It used {amount(hours, 2)} GPU-hours and {amount(kwh, 2)} kWh{source_en}, costing {cost}",
        f"共用 {amount(hours, 2)} GPU小时、{amount(kwh, 2)} kWh{source_zh}，费用 {cost}",
    )
    attempts = int(usage.get("attempts") or 1)
    if attempts > 1:
        text += _t(lang, f" over {attempts} attempts", f"（{attempts} 次尝试）")
    peak = usage.get("peak_gpu_memory_mib")
    if peak is not None:
        asked = usage.get("requested_gpu_memory_mib")
        asked_gb = f"{float(asked) / 1024:.0f} GB" if asked else ""
        text += _t(
            lang,
            f"; peak GPU memory {float(peak) / 1024:.1f} GB" + (f" of the {asked_gb} asked" if asked else ""),
            f"；显存峰值 {float(peak) / 1024:.1f} GB" + (f"（申请 {asked_gb}）" if asked else ""),
        )
    return text + _t(lang, ".", "。")


def _deadline_words(warning: str, lang: str) -> str:
    """The explain answer's `deadline_warning` ("expected to end around tomorrow 01:40, after its deadline
    23:30") as a sentence of the reply: the deadline is a goal, so it is said, and the task runs all the
    same."""
    return _t(lang, f" It is {warning}.", f"{reason_zh(warning)}。")


def _held_or_released(data: dict[str, Any], lang: str) -> str:
    """ "Task #12 is held: ...", "Task #12 is released: ...", or what a dry run would have done."""
    if "would_hold" in data or "would_release" in data:
        hold = "would_hold" in data
        tid = (data.get("would_hold") or data.get("would_release") or {}).get("id")
        what = _t(lang, "held" if hold else "released", "暂停" if hold else "放行")
        return _t(
            lang,
            f"Dry run: task #{tid} would be {what}; nothing was changed.",
            f"试运行：任务 #{tid} 会被{what}，没有做任何改动。",
        )
    if "held" in data:
        tid = data["held"].get("id")
        return _t(
            lang,
            f"Task #{tid} is held: it stays queued, keeps its place, and starts only once you release it "
            f'("release {tid}").',
            f"任务 #{tid} 已暂停：仍在排队并保留排队时间，放行后才会开始（说“放行{tid}号”）。",
        )
    tid = (data.get("released") or {}).get("id")
    return _t(
        lang,
        f"Task #{tid} is released: it is queued again with the priority and age it had.",
        f"任务 #{tid} 已放行：按原来的优先级和排队时间重新排队。",
    )


def _running_end(end_iso: str, lang: str, now: datetime | None) -> str:
    """When a running task should end by its estimate or time limit, or that it has run past it."""
    end, moment = datetime.fromisoformat(end_iso), now or datetime.now().astimezone()
    if end <= moment:
        return _t(lang, " It has run past its estimate.", "它已经超过了预计的运行时间。")
    return _t(
        lang,
        f" Expected to finish around {when(end_iso, now, lang)} (by its estimate or time limit).",
        f"按预计或时间限制，大约 {when(end_iso, now, lang)} 完成。",
    )


def _cluster(data: dict[str, Any], lang: str, now: datetime | None = None) -> str:
    summary = data.get("summary") or {}
    total, busy = summary.get("gpus", 0), summary.get("busy", 0)
    free, free_gb = summary.get("free", total - busy), summary.get("free_memory_gb", 0)
    out = total - busy - free
    text = _t(
        lang,
        f"{busy} of {total} GPUs are busy; {free} free"
        + (f", {out} out of service" if out else "")
        + f", {free_gb:g} GB of GPU memory free; {summary.get('queued', 0)} task(s) queued.",
        f"{total} 张卡中 {busy} 张在用，{free} 张空闲"
        + (f"，{out} 张停用" if out else "")
        + f"，空闲显存 {free_gb:g} GB；队列中 {summary.get('queued', 0)} 个任务。",
    )
    where = summary.get("free_where") or []
    if where:  # which ones: "Free: gpu-box GPUs 0, 1 (80 GB each); box-2 GPU 1 (24 GB)."
        text += (
            "\n"
            + _t(lang, "Free: ", "空闲：")
            + _t(lang, "; ", "；").join(_free_group_words(group, lang) for group in where[:6])
            + (_t(lang, "; ...", "；……") if len(where) > 6 else "")
            + _t(lang, ".", "。")
        )
    for group in (summary.get("out_of_service") or [])[:4]:
        text += _out_of_service_line(str(group["why"]), [str(where) for where in group["gpus"]], lang)
    for room in summary.get("shared_with_room") or []:
        taken, left = float(room["taken"]), round(1 - float(room["taken"]), 2)
        text += "\n" + _t(
            lang,
            f"GPU {room['index']} of {room['node']} is shared: {taken:g} taken, room for {left:g} more.",
            f"{room['node']} 的 {room['index']} 号卡为共享使用：已占 {taken:g}，还能再放 {left:g}。",
        )
    for gpu in data.get("gpus") or []:
        for process in gpu.get("outside") or []:
            text += "\n" + _outside_line(gpu, process, lang)
    for held in summary.get("reserved_for_teams") or []:
        node, team = held["node"], held["team"]
        start, end = when(held["from"], now, lang), when(held["until"], now, lang)
        every = _REPEAT_WORDS.get(held.get("repeat") or "")
        gpus = held.get("gpus") or []
        which = _t(lang, f"Node {node} is", f"节点 {node} ")
        if gpus:  # some of its GPUs
            which = _t(
                lang,
                f"GPU{'s' if len(gpus) > 1 else ''} {', '.join(map(str, gpus))} of node {node} "
                + ("are" if len(gpus) > 1 else "is"),
                f"节点 {node} 的 {'、'.join(map(str, gpus))} 号卡",
            )
        text += "\n" + _t(
            lang,
            f"{which} reserved for team {team} from {start} until {end}"
            + (f", and again {every[0]}" if every else "")
            + ": only its tasks start there then.",
            f"{which}在 {start} 至 {end} 预留给团队 {team}"
            + (f"，之后{every[1]}同一时段也是" if every else "")
            + "：这段时间只运行该团队的任务。",
        )
    for down in summary.get("maintenance") or []:
        text += "\n" + _maintenance_line(down, lang, now)
    return text


# how a repeating reservation comes round (`nightshift node reserve --repeat`), in English and Chinese
_REPEAT_WORDS = {
    "daily": ("every day", "每天"),
    "weekdays": ("every working day", "每个工作日"),
    "weekends": ("every weekend day", "每个周末"),
    "weekly": ("every week", "每周"),
}


def _free_group_words(group: dict[str, Any], lang: str) -> str:
    """`gpu-box GPUs 0, 1 (80 GB free each)`, `box-2 GPU 1 (24 GB free)`; in Chinese alike."""
    gpus, gb = [str(index) for index in group["gpus"]], f"{float(group['free_gb']):g}"
    if len(gpus) == 1:
        return _t(
            lang,
            f"{group['node']} GPU {gpus[0]} ({gb} GB free)",
            f"{group['node']} 的 {gpus[0]} 号卡（{gb} GB 空闲）",
        )
    return _t(
        lang,
        f"{group['node']} GPUs {', '.join(gpus)} ({gb} GB free each)",
        f"{group['node']} 的 {'、'.join(gpus)} 号卡（每张 {gb} GB 空闲）",
    )


def _maintenance_line(down: dict[str, Any], lang: str, now: datetime | None) -> str:
    """`Node gpu-box goes down for maintenance at today 09:00 (until today 11:00).`, or, begun, until when."""
    node, end = down["node"], when(down.get("until"), now, lang) if down.get("until") else None
    every = _REPEAT_WORDS.get(down.get("repeat") or "")
    again = (
        _t(lang, f" It comes round again {every[0]}.", f"之后{every[1]}同一时段都会维护。") if every else ""
    )
    if down.get("begun"):
        if end is None:
            return _t(lang, f"Node {node} is down for maintenance.", f"节点 {node} 正在停机维护。")
        return (
            _t(
                lang,
                f"Node {node} is down for maintenance until {end}.",
                f"节点 {node} 正在停机维护，{end} 恢复。",
            )
            + again
        )
    start = when(down["at"], now, lang)
    return (
        _t(
            lang,
            f"Node {node} goes down for maintenance at {start}" + (f" (until {end})." if end else "."),
            f"节点 {node} 将于 {start} 停机维护" + (f"（至 {end}）。" if end else "。"),
        )
        + again
    )


def _out_of_service_line(why: str, where: list[str], lang: str) -> str:
    """`Out of service: GPU 1 of node-a: too hot: 91 °C (...).`, or a node's reason once for its GPUs
    (`Out of service: node n0 is drained (4 GPUs).`), in the words `explain` uses."""
    if why.startswith("node "):
        count = len(where)
        return "\n" + _t(
            lang,
            f"Out of service: {why} ({count} GPU{'s' if count != 1 else ''}).",
            f"停用：{reason_zh(why)}（{count} 张卡）。",
        )
    text = ""
    for place in where:
        node, _, index = place.rpartition(":")
        reason = f"GPU {index} of {node}: {why}"
        text += "\n" + _t(lang, f"Out of service: {reason}.", f"停用：{reason_zh(reason)}。")
    return text


def _outside_line(gpu: dict[str, Any], process: dict[str, Any], lang: str) -> str:
    """`GPU 0 of gpu-box: 100 GB held outside the queue by pid 4242 of alice (`jupyter-lab`).`"""
    user = unwrap(process["user"]) if process.get("user") else None
    command = unwrap(process["command"]).replace("`", "'") if process.get("command") else None
    memory = "" if process.get("used_gb") is None else f"{process['used_gb']:g} GB "
    by_en = f"pid {process['pid']}" + (f" of {user}" if user else "") + (f" (`{command}`)" if command else "")
    by_zh = (f"{user} 的" if user else "") + f"进程 {process['pid']}" + (f"：`{command}`" if command else "")
    return _t(
        lang,
        f"GPU {gpu['index']} of {gpu['node']}: {memory}held outside the queue by {by_en}.",
        f"{gpu['node']} 的 {gpu['index']} 号卡：{memory}被队列以外的进程占用（{by_zh}）。",
    )


def _night(data: dict[str, Any], lang: str, now: datetime | None) -> str:
    """What ended since last night: counts, GPU-hours and cost, then each failure and why."""
    summary = data.get("summary") or {}
    done, failed, cancelled = (summary.get(group) or [] for group in ("succeeded", "failed", "cancelled"))
    since = when(summary.get("since"), now, lang)
    gpu_h, cost, currency = (
        float(summary.get("gpu_hours") or 0),
        float(summary.get("cost") or 0),
        summary.get("currency", ""),
    )
    if not (done or failed or cancelled):
        return _t(lang, f"No task of your team ended since {since}.", f"从 {since} 到现在，没有任务结束。")
    text = _t(
        lang,
        f"Since {since}: {len(done)} succeeded, {len(failed)} failed, {len(cancelled)} cancelled; "
        f"{amount(gpu_h, 2)} GPU-hours, {amount(cost, 2)} {currency}.",
        f"从 {since} 到现在：成功 {len(done)} 个，失败 {len(failed)} 个，取消 {len(cancelled)} 个；"
        f"共 {amount(gpu_h, 2)} GPU小时，{amount(cost, 2)} {currency}。",
    )
    for task in failed[:6]:
        why = unwrap(task.get("message") or task.get("reason") or "")
        name = unwrap(task.get("name") or "")
        said = f" — `{unwrap(task['last_line'])}`" if task.get("last_line") else ""
        again = task.get("replaced_by")
        text += _t(
            lang,
            f"\n✗ #{task['id']} {name}: {why}{said}" + (f" (run again as #{again})" if again else ""),
            f"\n✗ #{task['id']} {name}：{reason_zh(why)}{said}"
            + (f"（已重新运行为 #{again}）" if again else ""),
        )
    if len(failed) > 6:
        text += _t(lang, f"\n… and {len(failed) - 6} more failed", f"\n……另有 {len(failed) - 6} 个失败")
    if failed:
        text += _t(
            lang,
            f'\nWhy one failed, in its own words: "why did {failed[0]["id"]} fail?"',
            f"\n想看某个任务失败时的输出：问“{failed[0]['id']}号为什么失败”",
        )
    return text


def _utilization(data: dict[str, Any], lang: str) -> str:
    report = data.get("report") or {}
    rows = sorted(report.get("rows", []), key=lambda r: -float(r.get("gpu_hours", 0)))
    pct = float(report.get("utilization") or 0) * 100
    days = f"{float(report.get('days') or 0):g}"
    head = _t(
        lang,
        f"Last {days} day(s): {amount(float(report.get('total_gpu_hours', 0)))} GPU-hours used, "
        f"utilization {pct:.0f}%.",
        f"过去 {days} 天共用 {amount(float(report.get('total_gpu_hours', 0)))} GPU小时，利用率 {pct:.0f}%。",
    )
    if report.get("total_cost") is not None:  # "how much has my team spent"
        kwh = amount(float(report.get("total_energy_kwh") or 0), 1)
        cost = f"{amount(float(report['total_cost']), 2)} {report.get('currency') or ''}".rstrip()
        head += _t(lang, f" Energy {kwh} kWh, cost {cost}.", f"耗电 {kwh} kWh，费用 {cost}。")
    shown = [
        _t(
            lang,
            f"{unwrap(r['key'])}: {amount(float(r.get('gpu_hours', 0)))} h, {r.get('tasks', 0)} task(s)"
            + ("" if r.get("cpu_hours") is None else f", {amount(float(r['cpu_hours']))} CPU-h")
            + ("" if r.get("mean_wait_s") is None else f", mean wait {duration(r['mean_wait_s'], lang)}"),
            f"{unwrap(r['key'])}：{amount(float(r.get('gpu_hours', 0)))} GPU小时，{r.get('tasks', 0)} 个任务"
            + ("" if r.get("cpu_hours") is None else f"，CPU {amount(float(r['cpu_hours']))} 小时")
            + ("" if r.get("mean_wait_s") is None else f"，平均等待 {duration(r['mean_wait_s'], lang)}"),
        )
        for r in rows[:6]
    ]
    return head + ("\n" + "\n".join(shown) if shown else "")


_BUDGET_STATE_ZH = {"ok": "正常", "warning": "已用过 80%", "exhausted": "已用完，新任务要等"}


def _quota(data: dict[str, Any], lang: str, now: datetime | None = None) -> str:
    quota = data.get("quota") or {}
    day, week = quota.get("day") or {}, quota.get("week") or {}

    def part(period: dict[str, Any], en: str, zh: str) -> str:
        used, budget = float(period.get("used_gpu_h", 0)), period.get("budget_gpu_h")
        if budget is None:
            return _t(
                lang,
                f"{en}: {amount(used)} GPU-h used, no budget",
                f"{zh}：已用 {amount(used)} GPU小时，无预算限制",
            )
        left = max(0.0, float(budget) - used)
        of = f"{amount(used)} of {float(budget):g}"  # a small budget is not "0.0 of 0"
        return _t(
            lang,
            f"{en}: {of} GPU-h used, {amount(left)} left ({period.get('state')})",
            f"{zh}：已用 {amount(used)}/{float(budget):g} GPU小时，剩余 {amount(left)}"
            f"（{_BUDGET_STATE_ZH.get(str(period.get('state')), period.get('state'))}）",
        )

    cap = quota.get("gpu_cap")
    head = _t(
        lang,
        f"Team {quota.get('team')}: {quota.get('gpus_in_use', 0)} GPU(s) in use"
        + (f" of a cap of {cap}" if cap else ""),
        f"团队 {quota.get('team')}：正在使用 {quota.get('gpus_in_use', 0)} 张卡"
        + (f"（上限 {cap}）" if cap else ""),
    )
    own_cap = quota.get("user_gpu_cap")
    if own_cap is not None:  # a cap per person, beside the team's
        mine = quota.get("user_gpus_in_use", 0)
        head += _t(lang, f"; you: {mine} of your cap of {own_cap}", f"；你本人：{mine} 张（上限 {own_cap}）")
    again = ""
    if quota.get("new_starts_at"):
        at = when(quota["new_starts_at"], now, lang)
        again = _t(lang, f"; new starts again {at}", f"；{at} 起可以再启动新任务")
    # the budgets are rolling windows, not a calendar day and week
    day_part, week_part = part(day, "last 24 h", "过去 24 小时"), part(week, "last 7 days", "过去 7 天")
    own = _own_budget_words(quota.get("user_budget") or {}, part, lang, now)
    fair = _fair_share_words(quota.get("fair_share") or {}, lang)
    if lang == "zh":
        return f"{head}；{day_part}；{week_part}{again}。{own}{fair}"
    return f"{head}; {day_part}; {week_part}{again}.{own}{fair}"


def _own_budget_words(
    own: dict[str, Any], part: Callable[[dict[str, Any], str, str], str], lang: str, now: datetime | None
) -> str:
    """ " Your own budget: last 24 h: 8.5 of 10 GPU-h used, 1.5 left (warning); ..." (nothing without one)."""
    periods = [
        (own.get(p) or {}, en, zh)
        for p, en, zh in (("day", "last 24 h", "过去 24 小时"), ("week", "last 7 days", "过去 7 天"))
    ]
    words = [part(period, en, zh) for period, en, zh in periods if period.get("budget_gpu_h") is not None]
    if not words:
        return ""
    again = ""
    if own.get("new_starts_at"):
        at = when(own["new_starts_at"], now, lang)
        again = _t(lang, f"; your new starts again {at}", f"；你的新任务 {at} 起可以再启动")
    if lang == "zh":
        return f"你个人的预算：{'；'.join(words)}{again}。"
    return f" Your own budget: {'; '.join(words)}{again}."


def _fair_share_words(fair: dict[str, Any], lang: str) -> str:
    """ " Fair share: 40% of recent use against an equal share of 33%, so its waiting tasks get 2.6 of 6 h
    of priority credit." (nothing where the policy gives no such credit)"""
    if not fair.get("max_credit_h"):
        return ""
    part, equal = float(fair["part_of_use"]), float(fair["equal_share"])
    credit, most = float(fair["credit_h"]), float(fair["max_credit_h"])
    words = _t(
        lang,
        f" Fair share: {part:.0%} of recent use against an equal share of {equal:.0%}, so its waiting tasks "
        f"get {credit:g} of {most:g} h of priority credit.",
        f"公平份额：近期用量占 {part:.0%}（平均份额 {equal:.0%}），"
        f"排队任务获得 {credit:g}/{most:g} 小时的优先级加分。",
    )
    member = fair.get("member")
    if not member or int(member["members"]) < 2:  # alone in the team: its credit is theirs
        return words
    mine, people, own = float(member["part_of_team"]), int(member["members"]), float(member["credit_h"])
    return words + _t(
        lang,
        f" Within the team you ran {mine:.0%} of its recent use among {people} people, so your waiting tasks "
        f"get {own:g} h.",
        f"在组内，你的近期用量占 {mine:.0%}（共 {people} 人），你的排队任务获得 {own:g} 小时加分。",
    )


# --- a whole sweep -----------------------------------------------------------------------------------

_COUNT_ORDER = ("queued", "running", "succeeded", "failed", "cancelled")


def counts_words(counts: dict[str, Any], lang: str) -> str:
    """A sweep's tasks by status: `4 queued, 2 running, 3 succeeded` / `排队中 4 个、运行中 2 个`."""
    order = [*_COUNT_ORDER, *sorted(set(counts) - set(_COUNT_ORDER))]
    items = [(status, int(counts[status])) for status in order if counts.get(status)]
    if lang == "zh":
        return "、".join(f"{status_zh(status)} {count} 个" for status, count in items)
    return ", ".join(f"{count} {status}" for status, count in items)


def _value_words(value: Any) -> str:
    """A metric's value as the CLI prints it (`0.31`, `1.23457e-05`); `—` when the run has none."""
    if value is None:
        return "—"
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _goal_words(goal: Any, lang: str) -> str:
    """The API's goal in words: `min` is `smaller is better` (`越小越好`), `max` `larger is better`."""
    if goal == "min":
        return _t(lang, "smaller is better", "越小越好")
    return _t(lang, "larger is better", "越大越好")


def _sweep_title(sweep: dict[str, Any], lang: str, lower: bool = False) -> str:
    """`Sweep #4 (train.py)` / `扫参 #4（train.py）` (`lower`: `sweep #4`, inside a sentence)."""
    name = unwrap(sweep.get("name") or "")
    word = "sweep" if lower else "Sweep"
    return _t(lang, f"{word} #{sweep.get('id')}", f"扫参 #{sweep.get('id')}") + (
        in_parentheses(name, lang) if name else ""
    )


def _best_words(best: dict[str, Any], lang: str) -> str:
    """`task #12 (lr=0.001, seed=1), val_loss 0.31 (smaller is better)`: the best run and its value."""
    params = unwrap(best.get("params") or "")
    run = _t(lang, f"task #{best.get('task_id')}", f"任务 #{best.get('task_id')}")
    run += in_parentheses(params, lang) if params else ""
    metric = unwrap(best.get("metric") or "")
    value = f"{metric} {_value_words(best.get('value'))}"
    return run + _t(lang, ", ", "，") + value + in_parentheses(_goal_words(best.get("goal"), lang), lang)


def _failed_words(sweep: dict[str, Any], lang: str) -> str:
    """` Failed: #13, #15 (ask "why did 13 fail?").`: the failed tasks and how to hear why ("" for none)."""
    failed = sweep.get("failed_tasks") or []
    if not failed:
        return ""
    ids = ", ".join(f"#{task_id}" for task_id in failed)
    return _t(
        lang,
        f' Failed: {ids} (ask "why did {failed[0]} fail?").',
        f"失败的任务：{ids}（可以问“{failed[0]}号为什么失败”）。",
    )


def _sweep_status(data: dict[str, Any], lang: str) -> str:
    """How a sweep is doing: its tasks by status, how many are left (and held), the best run so far; which
    sweep it is when none was named (`latest`: the person's most recent)."""
    sweep = data.get("sweep") or {}
    counts, left, held = sweep.get("counts") or {}, int(sweep.get("left") or 0), int(sweep.get("held") or 0)
    head, total = _sweep_title(sweep, lang), sweep.get("tasks")
    if data.get("latest"):  # no number was given: say which sweep this is
        head = _t(lang, "Your most recent sweep is ", "你最近的扫参是") + _sweep_title(
            sweep, lang, lower=True
        )
    if left:
        held_en, held_zh = (f" ({held} held)", f"（其中暂停 {held} 个）") if held else ("", "")
        text = _t(
            lang,
            f"{head}: {total} tasks — {counts_words(counts, 'en')}; {left} left{held_en}.",
            f"{head}：共 {total} 个任务——{counts_words(counts, 'zh')}；还剩 {left} 个{held_zh}。",
        )
    else:
        text = _t(
            lang,
            f"{head}: all {total} tasks have ended — {counts_words(counts, 'en')}.",
            f"{head}：{total} 个任务都已结束——{counts_words(counts, 'zh')}。",
        )
    text += _failed_words(sweep, lang)
    best = data.get("best")
    if best:
        text += _t(
            lang, f" Best so far: {_best_words(best, 'en')}.", f"目前最好的是{_best_words(best, 'zh')}。"
        )
    elif counts.get("succeeded"):
        text += _t(lang, " No run has reported metrics yet.", "还没有运行报告指标。")
    return text


def _comparison_head(data: dict[str, Any], lang: str) -> str:
    """Whose runs a comparison holds: `Sweep #4` (`扫参 #4`) or `The runs tagged exp7`."""
    if data.get("sweep_id") is not None:
        return _t(lang, f"Sweep #{data['sweep_id']}", f"扫参 #{data['sweep_id']}")
    tag = unwrap(data.get("tag") or "")
    return _t(lang, f"The runs tagged {tag}", f"标签 {tag} 的运行")


def _result_line(row: dict[str, Any], lang: str) -> str:
    """`★ #12 lr=0.001, seed=1: 0.31 (succeeded)`: one run of a comparison, the best one starred."""
    mark = "★" if row.get("best") else " "
    status = str(row.get("status") or "")
    status = status_zh(status) if lang == "zh" else status
    params = unwrap(row.get("params") or "")
    value = _value_words(row.get("value"))
    return _t(
        lang,
        f"{mark} #{row.get('task_id')} {params}: {value} ({status})",
        f"{mark} #{row.get('task_id')} {params}：{value}（{status}）",
    )


def _comparison(data: dict[str, Any], lang: str) -> str:
    """A comparison in the API's order (best first) with the best run named, or why it has no best."""
    head, runs = _comparison_head(data, lang), int(data.get("runs") or 0)
    metric = unwrap(data.get("sort") or "")
    if not metric:
        return _t(
            lang,
            f"{head}: none of its {runs} runs has reported metrics yet (a job writes them to metrics.json in "
            "$NIGHTSHIFT_OUTPUT_DIR).",
            f"{head}：{runs} 次运行都还没有报告指标"
            "（任务把指标写到 $NIGHTSHIFT_OUTPUT_DIR 下的 metrics.json）。",
        )
    if not data.get("reported"):
        reported = unwrap(data.get("metrics") or "") or "—"
        return _t(
            lang,
            f"{head}: none of its {runs} runs reported {metric} (metrics reported: {reported}).",
            f"{head}：{runs} 次运行都没有报告 {metric}（报告了的指标：{reported}）。",
        )
    goal = _goal_words(data.get("goal"), lang)
    lines = [
        _t(
            lang,
            f"{head}: {runs} runs, sorted by {metric} ({goal}):",
            f"{head}：{runs} 次运行，按 {metric} 排序（{goal}）：",
        )
    ]
    rows = data.get("rows") or []
    lines += [_result_line(row, lang) for row in rows]
    if runs > len(rows):
        lines.append(_t(lang, f"… and {runs - len(rows)} more", f"……另有 {runs - len(rows)} 次"))
    best = data.get("best")
    if best:
        best_words = _best_words({**best, "metric": metric, "goal": data.get("goal")}, lang)
        lines.append(_t(lang, f"Best: {best_words}.", f"最好的是{best_words}。"))
    else:
        lines.append(
            _t(
                lang,
                "No run that succeeded has a value yet, so none is best.",
                "还没有成功完成且有该指标的运行，所以没有最好的一次。",
            )
        )
    return "\n".join(lines)


def _sweep_held_or_released(data: dict[str, Any], lang: str) -> str:
    """What holding or releasing a whole sweep did, or what a dry run would have done."""
    for key, hold in (("would_hold", True), ("would_release", False)):
        if key in data:
            sweep = data[key]
            what = _t(lang, "held" if hold else "released", "暂停" if hold else "放行")
            return _t(
                lang,
                f"Dry run: sweep #{sweep.get('id')}'s queued tasks would be {what}; nothing was changed.",
                f"试运行：扫参 #{sweep.get('id')} 的排队任务会被{what}，没有做任何改动。",
            )
    if "held" in data:
        sweep = data["held"]
        sid, held = sweep.get("id"), sweep.get("held")
        return _t(
            lang,
            f"Sweep #{sid}: {held} queued tasks are held: they stay queued, keep their place, and start only "
            f'once you release them ("release sweep {sid}").',
            f"扫参 #{sid} 的 {held} 个排队任务已暂停：仍在排队并保留排队时间，"
            f"放行后才会开始（说“放行扫参{sid}”）。",
        )
    sweep = data.get("released") or {}
    queued = (sweep.get("counts") or {}).get("queued", 0)
    return _t(
        lang,
        f"Sweep #{sweep.get('id')} is released: its held tasks are queued again with the priority and age "
        f"they had ({queued} queued now).",
        f"扫参 #{sweep.get('id')} 已放行：暂停的任务按原来的优先级和排队时间重新排队"
        f"（现在排队中 {queued} 个）。",
    )


def sweep_cancelled_words(sweep: dict[str, Any], lang: str) -> str:
    """What a confirmed sweep cancel says (`POST /sweeps/{id}/cancel`'s answer): its tasks by status now,
    and that the running ones are stopping."""
    counts = sweep.get("counts") or {}
    stopping = _t(
        lang,
        "; its running tasks are stopping (their stop signal is sent)",
        "；运行中的任务正在停止（已发出停止信号）",
    )
    return (
        _t(
            lang,
            f"Sweep #{sweep.get('id')} is cancelled: {counts_words(counts, 'en')}",
            f"扫参 #{sweep.get('id')} 已取消：{counts_words(counts, 'zh')}",
        )
        + (stopping if counts.get("running") else "")
        + _t(lang, ".", "。")
    )


def sweep_rerun_words(sweep: dict[str, Any], lang: str) -> str:
    """What a confirmed sweep rerun says (`POST /sweeps/{id}/rerun`'s answer): which new task took which
    one's place, and its tasks by status now."""
    reruns = sweep.get("reruns") or []
    en = ", ".join(f"#{rerun['replaced']} as #{rerun['task_id']}" for rerun in reruns)
    zh = "、".join(f"#{rerun['replaced']} → #{rerun['task_id']}" for rerun in reruns)
    counts = sweep.get("counts") or {}
    return _t(
        lang,
        f"Sweep #{sweep.get('id')}: ran again {en}; its tasks now: {counts_words(counts, 'en')}.",
        f"扫参 #{sweep.get('id')}：已重新运行 {zh}；现在它的任务：{counts_words(counts, 'zh')}。",
    )


def sweep_changed_words(sweep: dict[str, Any], fields: list[str], lang: str) -> str:
    """What a confirmed sweep change says (`PATCH /sweeps/{id}`'s answer): which fields changed (how many run
    at once with its new value: `at most at once: no limit`) and its tasks by status now."""

    def label(key: str) -> str:
        if key != "max_running":
            return field_label(key, lang)
        limit = sweep.get("max_running")
        value = _t(lang, "no limit", "不限") if limit is None else str(limit)
        return f"{field_label(key, lang)}{_t(lang, ': ', '：')}{value}"

    labels = _t(lang, ", ", "、").join(label(key) for key in fields)
    counts = counts_words(sweep.get("counts") or {}, lang)
    return _t(
        lang,
        f"Changed sweep #{sweep.get('id')} ({labels}): {counts}.",
        f"已修改扫参 #{sweep.get('id')}（{labels}）：{counts}。",
    )


def reply_for(
    tool: str,
    content: str,
    lang: str,
    now: datetime | None = None,
    *,
    about_cost: bool = False,
    asked: Sequence[str] = (),
) -> str:
    """One tool result as a short reply (`about_cost`: the person asked what something costs; `asked`:
    the task's settings they asked about, `asked_fields`)."""
    try:
        data = json.loads(content)
    except (TypeError, ValueError):
        return unwrap(content)[:500]
    if not isinstance(data, dict):
        return unwrap(content)[:500]
    if not data.get("ok", True):
        error = unwrap(data.get("error", "error"))
        if tool == "submit_task":
            return _t(
                lang,
                f"I can't submit that: {error}. Tell me what to change.",
                f"无法提交：{reason_zh(error)}。请告诉我要怎么改。",
            )
        return _t(lang, "Sorry, that didn't work: ", "抱歉，没能完成：") + chat_words(error, lang)
    if "pending_action" in data:
        return card_text(data["pending_action"], lang, now)
    writers = {
        "list_tasks": lambda: _tasks(data, lang, now),
        "queue_position": lambda: _position(data, lang, now),
        "estimate_wait": lambda: _estimate(data, lang, now, about_cost),
        "explain_task": lambda: _explain(data, lang, now, about_cost, asked),
        "hold_task": lambda: _held_or_released(data, lang),
        "release_task": lambda: _held_or_released(data, lang),
        "cluster_status": lambda: _cluster(data, lang, now),
        "utilization_report": lambda: _utilization(data, lang),
        "night_summary": lambda: _night(data, lang, now),
        "quota_status": lambda: _quota(data, lang, now),
        "sweep_status": lambda: _sweep_status(data, lang),
        "compare_results": lambda: _comparison(data, lang),
        "hold_sweep": lambda: _sweep_held_or_released(data, lang),
        "release_sweep": lambda: _sweep_held_or_released(data, lang),
    }
    writer = writers.get(tool)
    return writer() if writer else unwrap(json.dumps(data, ensure_ascii=False))[:500]


QUESTIONS = {
    "one_command": (
        "I prepare one task per message, each with its own card: send the commands one at a time (for one "
        "script with different settings, a sweep in a spec file makes them all: `nightshift submit "
        "sweep.yaml`).",
        "我每条消息只准备一个任务（各自确认）：请一条一条地发这些命令"
        "（同一个脚本不同参数的话，可以用 spec 文件里的 sweep 一次提交：`nightshift submit sweep.yaml`）。",
    ),
    "one_request": (
        "I do one thing per message, each with its own card to confirm: this message asks for two (a task "
        "to run, and another task to cancel, hold or release). Please send them one at a time.",
        "我每条消息只做一件事（每件都要你确认）：这条消息里有两件（运行一个任务，以及取消、暂停或放行另一个任务）。"
        "请分开一条一条地发。",
    ),
    "at_a_time_single": (
        '"N at a time" limits how many tasks of a sweep run at once, and this is a single task: there is '
        "nothing to limit. Send it without that; or, to run it with several values, put them in braces and "
        "each value becomes a task: `python train.py --lr {1e-3,1e-4}` 2 at a time.",
        "“同时跑 N 个”限制的是一个扫参里同时运行的任务数，而这是单个任务，没有可限制的。请去掉这句再发；"
        "或者把要试的参数值写在花括号里，每个值一个任务：`python train.py --lr {1e-3,1e-4}`，同时最多跑2个。",
    ),
    "gpu_count_choice": (
        'A task runs on one number of GPUs: which should it be? Say it with one ("on 4 GPUs"); to try '
        "both, send two requests, one for each count.",
        "一个任务用固定数量的卡：要用几张？请只说一个数（“用 4 张卡”）；"
        "两种都想试，就分两次提交，每次一个数量。",
    ),
    "gpu_index": (
        "nightshift picks the GPUs a task runs on and sets CUDA_VISIBLE_DEVICES to them, so a task cannot "
        'ask for GPU 3 by its number. Say how many GPUs and how much free memory each needs ("on 1 GPU with '
        '40GB"), or pin a node or a model ("on node gpu-box-2", "on an A100"); `nightshift gpus` shows them.',
        "GPU 由 nightshift 分配，并把 CUDA_VISIBLE_DEVICES 设为分到的卡，"
        "所以任务不能按编号指定某张卡（比如 3 号卡）。"
        "请说要几张卡、每张至少多少空闲显存（“用 1 张卡，40G 显存”），或者指定节点或型号"
        "（“在 gpu-box-2 节点上”，“用 A100”）；`nightshift gpus` 可以查看。",
    ),
    "biggest_gpu": (
        "nightshift places a task by what it needs, not by rank: say how much free memory each GPU needs "
        '("with 80GB"), or a model ("on an H100") or a node ("on node gpu-box-2"); `nightshift gpus` shows '
        "each node's GPUs and their memory.",
        "nightshift 按任务的需要分配 GPU，而不是按“最大”“最快”："
        "请说每张卡至少要多少空闲显存（“80G 显存”），"
        "或者指定型号（“用 H100”）或节点（“在 gpu-box-2 节点上”）；"
        "`nightshift gpus` 可以看各节点的卡和显存。",
    ),
    "host_resources": (
        "nightshift reserves GPUs and GPU memory only: a job uses its node's CPUs, RAM and disk as they are, "
        "so I cannot promise CPU cores, RAM or disk. Send it without them, or, if you meant GPU memory, say "
        '"with 40GB of GPU memory" (`nightshift gpus` shows each node).',
        "nightshift 只分配 GPU 和显存：任务直接使用所在节点的 CPU、内存和磁盘，"
        "所以没法保证 CPU 核数、内存或磁盘。"
        "请去掉这些再发；如果指的是显存，请说“40G 显存”（`nightshift gpus` 可以看各节点）。",
    ),
    "repeat_runs": (
        "A task runs its command once. For several runs, say what differs between them and each value "
        "becomes a task: `python train.py --seed {1..3}` makes 3. To run it again only if it fails, say "
        '"retry 2 times".',
        "一个任务只运行一次命令。要跑多次，请说明每次有什么不同，每个取值一个任务："
        "`python train.py --seed {1..3}` 会生成 3 个任务。如果只是失败后再跑，请说“失败重试 2 次”。",
    ),
    "sweep_too_long": (
        f"A sweep tries at most {MAX_SWEEP_VALUES} values of one parameter, and that sequence has more. "
        "Narrow it or give it a step: `--seed {1..100}`, `--steps {0..10000..1000}`.",
        f"一个扫参的每个参数最多 {MAX_SWEEP_VALUES} 个取值，这个序列超过了。请缩小范围或加上步长："
        "`--seed {1..100}`、`--steps {0..10000..1000}`。",
    ),
    "sweep_values": (
        "Which values should each run get? Put them in braces in the command and each value becomes a task: "
        "`python train.py --lr {1e-3,1e-4}` (or name the placeholder's values: `python train.py --lr {lr}` "
        "for lr in 1e-3 1e-4).",
        "每次运行用哪些参数值？把它们写在命令里的花括号中，每个值一个任务：`python train.py --lr {1e-3,1e-4}`"
        "（或者给占位符列出取值：`python train.py --lr {lr}`，lr 取 1e-3 和 1e-4）。",
    ),
    "recurring": (
        "nightshift runs a task once: it has no repeating schedule. Ask for it tonight (off-peak) and I'll "
        "prepare it now; to submit it every night, cron can do it: `0 22 * * * nightshift submit --tonight "
        "-- COMMAND`.",
        "nightshift 的任务只运行一次，没有定期重复的安排。可以说“今晚跑”，我现在就准备；要每晚都提交，"
        "可以用 cron：`0 22 * * * nightshift submit --tonight -- 命令`。",
    ),
    "need_command": (
        "What command should I run? For example: run `python train.py` tonight on 2 GPUs.",
        "要运行什么命令？例如：今晚用两张卡跑 `python train.py`。",
    ),
    "need_task_id": (
        "Which task? Please give its number (e.g. task 31); `list my tasks` shows them.",
        "是哪个任务？请告诉我任务编号（例如 31 号），可以说“列出我的任务”查看。",
    ),
    "part_of_a_sweep": (
        "A sweep is cancelled whole: its queued tasks and its running ones (those that ended stay as they "
        'are). Say "cancel sweep" and its number for that, or cancel its tasks one at a time ("cancel 12"); '
        "`nightshift ls --sweep ID --status queued` lists them.",
        "扫参只能整个取消：排队中和正在运行的任务都会取消（已结束的保持不变）。要这样做就说“取消扫参”加编号，"
        "或者一个一个取消它的任务（“取消12号”）；`nightshift ls --sweep 编号 --status queued` 可以列出它们。",
    ),
    "rerun_as_it_was": (
        'A sweep\'s tasks run again as they were. Say "rerun the failed runs of sweep 4" for that (a card), '
        'then change its queued tasks: "run sweep 4 tonight", "make sweep 4 high priority" (a card each). '
        "What runs and on how many GPUs cannot change: submit a new sweep for that.",
        "扫参的任务会按原样重新运行。请先说“重跑扫参4失败的任务”（一张确认卡片），再修改它排队中的任务："
        "“扫参4改到今晚跑”、“把扫参4的优先级改成高”（各一张卡片）。"
        "运行的命令和 GPU 数量不能改：那需要提交新的扫参。",
    ),
    "rerun_ended_only": (
        "Only a sweep's tasks that ended can run again: its failed ones (say \"rerun the failed runs of "
        'sweep 4"), cancelled or succeeded ones. Its queued and running tasks are still on their way; '
        "`nightshift ls --sweep ID` lists them.",
        "扫参里只有已结束的任务可以重新运行：失败的（说“重跑扫参4失败的任务”）、取消的或成功的。"
        "排队中和运行中的任务还没结束；`nightshift ls --sweep 编号` 可以列出它们。",
    ),
    "bulk_own": (
        'I cancel the tasks you name by number ("cancel 12, 13 and 14", "cancel 12-15") or all your own '
        'queued or running ones ("cancel all my queued jobs"), up to 20 on one card, or a whole sweep '
        '("cancel sweep 4"); a teammate\'s I leave to them, and ended ones have nothing to cancel. Which '
        "ones? (`nightshift cancel --mine --status queued` takes any number, after showing them.)",
        "我可以取消你按编号指明的任务（“取消12、13和14号”“取消12到15号”）"
        "或你自己所有排队中、运行中的任务（“取消我所有排队的任务”），一张确认卡片最多 20 个，"
        "或整个扫参（“取消扫参4”）；队友的任务留给他们自己处理，已结束的任务无需取消。要取消哪些？"
        "（`nightshift cancel --mine --status queued` 不限个数，会先列出再取消。）",
    ),
    "one_change": (
        'I change up to 10 tasks you name at once, each on its own card ("make 12 and 13 urgent"): which '
        'ones? (Say "make sweep 4 urgent" for all the queued tasks of a sweep; `nightshift change` takes any '
        "number.)",
        "我一次最多修改你指明的 10 个任务，每个都有自己的确认卡片（“把12号和13号改成紧急”）：要改哪些？"
        "（整个扫参可以说“把扫参4改成紧急”；`nightshift change` 不限个数。）",
    ),
    "too_many_explained": (
        "I explain up to 5 tasks at once: which ones first? (`nightshift queue` shows why each queued task "
        "waits.)",
        "我一次最多解释5个任务：先看哪几个？（`nightshift queue` 会列出每个排队任务在等什么。）",
    ),
    "one_rerun": (
        'I run up to 10 earlier tasks again at once, as they were or with the same change ("rerun 12 and 13 '
        'on 2 GPUs"), each on its own card: which ones? (A sweep\'s failed runs: "rerun the failed runs of '
        'sweep 4".)',
        "我一次最多重跑 10 个之前的任务，按原样或做同样的修改（“12号和13号用2张卡再跑一遍”），"
        "每个都有自己的确认卡片：要重跑哪些？（扫参里失败的：说“重跑扫参4失败的任务”。）",
    ),
    "one_hold": (
        'I hold or release the tasks you name by number, up to 20 at once ("hold 12, 13 and 14"), or a '
        'whole sweep ("hold sweep 4"): which ones? (`nightshift hold 12 13 14` takes any number.)',
        "我可以暂停或放行你按编号指明的任务，一次最多 20 个（“暂停12、13和14号”），"
        "或整个扫参（“暂停扫参4”）：要处理哪些？（`nightshift hold 12 13 14` 不限个数。）",
    ),
    "need_sweep_id": (
        'Which sweep? Please give its number (its confirmation said "Submitted sweep #N").',
        "是哪个扫参？请告诉我扫参编号（提交确认时说的“已提交扫参 #N”）。",
    ),
    "unclear": (
        "I'm not sure what you need. I can submit tasks, show your queue position, wait estimates, "
        "your tasks, GPU status, quota and utilization. What would you like?",
        "我不太确定你的意思。我可以提交任务、查询排队位置、等待时间、你的任务、"
        "GPU 状态、配额和利用率。需要什么？",
    ),
}
REFUSALS = {
    "cross_team": (
        "Sorry, I can't do that: I can only act on your own tasks, one at a time and with your "
        "confirmation. Other teams' jobs are theirs to manage.",
        "抱歉，这个我不能做：我只能操作你自己的任务，每次一个，并且需要你确认。其他团队的任务由他们自己管理。",
    ),
    "injection": (
        "Sorry, I can't follow that. I only act on your own tasks, and every submit or cancel needs "
        "your confirmation.",
        "抱歉，我不能照做。我只操作你自己的任务，任何提交或取消都需要你确认。",
    ),
    "privilege": (
        "Sorry, I can't change permissions, quotas, tokens or the servers. An admin can help with that.",
        "抱歉，我不能修改权限、配额、令牌或服务器，这需要管理员处理。",
    ),
    "out_of_scope": (
        "Sorry, I can only help with nightshift: GPU tasks, the queue, quotas and utilization.",
        "抱歉，我只能帮忙处理 nightshift 相关的事：GPU 任务、队列、配额和利用率。",
    ),
}
HELP_TEXT = (
    "Hi! Tell me what to run, e.g. run `python train.py` tonight on 2 GPUs with 40GB. I can also tell you "
    "where your task is in the queue, how long you'll wait, why a task isn't running, GPU status, quota and "
    "utilization.",
    "你好！告诉我要运行什么，例如：今晚用两张卡跑 `python train.py`，40G 显存。"
    "我也能查排队位置、等待时间、任务为什么没开始、"
    "GPU 状态、配额和利用率。",
)


# Pointers for what the chat does not do itself (help of kind "help" with this reason).
POINTERS = {
    "logs": (
        "I can't show logs in the chat: run `nightshift logs ID` (`-f` follows it as it runs), or open the "
        "task in the My tasks tab.",
        "聊天里看不了日志：运行 `nightshift logs 任务编号`（加 `-f` 可以边跑边看），"
        "或在 “My tasks” 页打开这个任务。",
    ),
    "gpus_in_all": (
        'How many GPUs in all should the new task get? Say, for example, "run 12 again on 4 GPUs" '
        "(`nightshift show 12` says how many it had).",
        "新任务一共要几张卡？例如说“12号再跑一遍，用4张卡”（`nightshift show 12` 可以看它原来用几张）。",
    ),
    "change_fixed": (
        'GPUs, memory, the node and the command cannot change once a task is queued: say "run 12 again '
        'on 4 GPUs" for a new task like it (then cancel the first). Its priority, start time, off-peak, '
        "deadline and limits can change.",
        "任务排队后，卡数、显存、节点和命令都不能改：可以说“12号再跑一遍，用4张卡”新建一个同样的任务"
        "（再取消原来的）。优先级、开始时间、谷时、截止时间和时间限制可以改。",
    ),
    "node_admin": (
        "Draining a node is an admin's command, not the chat's: `nightshift node drain NAME` (its running "
        "tasks finish, no new ones start there) and `nightshift node undrain NAME`; `--at WHEN --until WHEN` "
        "plans a maintenance, and `nightshift node reserve NAME --team T --until WHEN` keeps a node for one "
        "team for a while; `--repeat daily|weekdays|weekends|weekly` makes either come round at that time "
        "(a weekly patch night, a class every Tuesday); `nightshift nodes` lists them. A single GPU goes out "
        "of service by itself while "
        "it is too hot, holds a finished task's memory or is lost to its driver (`nightshift gpus` says "
        "which and why).",
        "排空节点是管理员的命令，聊天里不做：`nightshift node drain 节点名`（正在跑的任务会跑完，"
        "不再分配新任务），恢复用 `nightshift node undrain 节点名`；"
        "加 `--at 时间 --until 时间` 是安排停机维护，"
        "`nightshift node reserve 节点名 --team 团队 --until 时间` 把节点预留给一个团队一段时间；"
        "再加 `--repeat daily|weekdays|weekends|weekly` 可以每天、每个工作日、每个周末或每周同一时段重复；"
        "`nightshift nodes` 可以查看节点。"
        "单张卡在过热、仍占着已结束任务的显存或驱动读不到时会自动停用"
        "（`nightshift gpus` 会说明是哪张、为什么）。",
    ),
    "no_cancel": (
        "OK: nothing is cancelled. A cancel happens only when you ask for one and confirm its card.",
        "好的，什么都不取消。只有你要求取消并确认卡片后才会取消。",
    ),
    "confirm_card": (
        "Press Confirm on the card to do it: nothing happens until you do (or tell me what to change).",
        "请点卡片上的 “Confirm” 按钮：点之前不会有任何操作（也可以告诉我要改什么）。",
    ),
    "drop_card": (
        "Press Drop on the card and nothing happens; or tell me what to change.",
        "点卡片上的 “Drop” 按钮就什么都不会发生；或者告诉我要改什么。",
    ),
    "notices": (
        "nightshift sends notices (start, success, failure) to the webhooks and e-mail addresses an admin "
        "set for you or your team in nightshift.toml (`[[notify]]` with `user` or `team`), for all your "
        "tasks: there is no notice for one task alone. To wait for one, `nightshift wait ID` returns when it "
        "ends (its exit status is the task's). Send the request again without the notice to get its card.",
        "nightshift 的通知（开始、成功、失败）会发到管理员在 nightshift.toml 里为你或你的团队设置的 "
        "webhook 和邮箱（`[[notify]]`，按 `user` 或 `team`），对你所有任务都生效，"
        "不能只为某一个任务单独设置。"
        "想等某个任务结束，可以用 `nightshift wait ID`，它结束时返回（退出码就是任务的）。"
        "去掉通知的要求再发一次，就能看到提交卡片。",
    ),
    "interactive": (
        "For a shell on a GPU, run `nightshift shell --gpus 1 --time-limit 120` in a terminal on the GPU "
        "box: it waits in the queue like any task, then opens your shell there with the GPU "
        "(`CUDA_VISIBLE_DEVICES` set). Exit the shell to give it back; at the time limit it is stopped. "
        "`nightshift shell -- python debug.py` runs one command that way. For a notebook, I can queue "
        "`jupyter lab --no-browser --ip=0.0.0.0 --port=8888` on 1 GPU with a time limit: once it starts, "
        "its log (`nightshift logs ID`) shows the address and token to open on its node.",
        "要在 GPU 上开交互式 shell，在 GPU 服务器的终端里运行 "
        "`nightshift shell --gpus 1 --time-limit 120`："
        "它像其他任务一样排队，轮到后就在那里打开你的 shell，并设好 GPU（`CUDA_VISIBLE_DEVICES`）。"
        "退出 shell 就归还 GPU；到时限会被停止。"
        "`nightshift shell -- python debug.py` 用同样方式只跑一条命令。"
        "想用 notebook，我可以帮你用 1 张卡、带时限地排队运行 "
        "`jupyter lab --no-browser --ip=0.0.0.0 --port=8888`；开始后它的日志"
        "（`nightshift logs 任务编号`）会显示在该节点上打开的地址和 token。",
    ),
    "secrets": (
        "Keep an API key or token as a secret of yours: in a terminal, `nightshift secret set WANDB_API_KEY` "
        "(typed unseen, piped in, or `--from-env`; never paste it here). Then ask me to run the command "
        '"with my WANDB_API_KEY", or `nightshift submit --secret WANDB_API_KEY -- python train.py`: the job '
        "gets it as $WANDB_API_KEY as it starts. Nobody sees its value, teammates included, and neither do "
        "I; `nightshift secret ls` lists your secrets by name. Not in `env`: a task's env is shown to your "
        "team.",
        "把 API key 或 token 存成你自己的密钥：在终端运行 `nightshift secret set WANDB_API_KEY`"
        "（输入时不显示，也可以用管道或 `--from-env`；不要贴到聊天里）。"
        "然后让我“用我的 WANDB_API_KEY 跑”这个命令，或者 "
        "`nightshift submit --secret WANDB_API_KEY -- python train.py`：任务启动时会拿到 $WANDB_API_KEY。"
        "谁都看不到它的值，队友和我都看不到；`nightshift secret ls` 按名字列出你的密钥。"
        "别放进 `env`：任务的 env 团队成员都能看到。",
    ),
    "scheduling": (
        "How the queue is ordered: by priority class and the time each task has waited (a higher class "
        "counts as hours of waiting more), moved ahead by credits for short jobs (estimated run time × "
        "GPUs), for teams that used little lately and, within a team, for the people who did (fair "
        "share), and for a task nearing its deadline. Every "
        "task has a bound on its wait: past it, it goes first. Smaller tasks start in gaps (backfill) only "
        "when, by their estimates, they do not delay the first waiting one. Team GPU caps and budgets stop "
        "new starts, never running jobs; off-peak tasks wait for their window. `nightshift explain ID` shows "
        "a task's priority in parts and why it waits, `nightshift queue` the order, `nightshift quota` your "
        "team's fair share and yours within it.",
        "排队顺序：按优先级和每个任务已经等待的时间排（优先级越高，相当于多等了几个小时）；"
        "短任务（预计运行时间 × 卡数）、最近用得少的团队和团队里最近用得少的人（公平份额）、"
        "快到截止时间的任务还会再往前提。"
        "每个任务的等待都有上限：超过上限就排到最前面。小任务只有在按预计时间不会推迟排在最前面的任务时，"
        "才能插空先跑（backfill）。团队的卡数上限和预算只会挡住新任务开始，不会停掉正在跑的；"
        "谷时任务等谷时窗口。`nightshift explain 任务编号` 显示一个任务的优先级构成和它在等什么，"
        "`nightshift queue` 显示顺序，`nightshift quota` 显示团队的公平份额和你在组内的份额。",
    ),
    "results": (
        'Which runs should I compare? Name a sweep or a tag: "compare sweep 4 by val_loss", "compare the '
        'runs tagged exp7". (`nightshift compare SWEEP_ID --sort METRIC` does it in a shell; the Results tab '
        "charts them.)",
        "要比较哪些运行？请说扫参编号或标签，例如“按 val_loss 比较扫参4”“比较标签 exp7 的运行”。"
        "（命令行里用 `nightshift compare 扫参编号 --sort 指标`；“Results” 页可以看图。）",
    ),
}


def logs_words(task_id: int, lang: str) -> str:
    """Where a named task's logs are: its own `nightshift logs 12` line, or the My tasks tab."""
    return _t(
        lang,
        f"I can't show logs in the chat: run `nightshift logs {task_id}` (`-f` follows it as it runs), "
        f"or open task #{task_id} in the My tasks tab.",
        f"聊天里看不了日志：运行 `nightshift logs {task_id}`（加 `-f` 可以边跑边看），"
        f"或在 “My tasks” 页打开任务 #{task_id}。",
    )


def outputs_words(task_id: int | None, lang: str) -> str:
    """Where a task's files are: what its command writes lands where it says (relative paths: in its
    workdir, on the node it ran on); nightshift gives each task a folder of its own too."""
    which = f"task #{task_id}" if task_id is not None else "a task"
    which_zh = f"任务 #{task_id} " if task_id is not None else "任务"
    show = f"`nightshift show {task_id}`" if task_id is not None else "`nightshift show ID`"
    return _t(
        lang,
        f"Files {which} writes (checkpoints, outputs) are where its command puts them: a relative path is "
        f"in its workdir, on the node it ran on ({show} says both). Each task also gets a folder of its own, "
        "`$NIGHTSHIFT_OUTPUT_DIR` (`<home>/outputs/<task id>` on its node); a `metrics.json` written there "
        "shows in `nightshift compare` and the Results tab.",
        f"{which_zh}写的文件（检查点、输出）在它的命令指定的位置："
        f"相对路径在它的工作目录下，位于它运行的节点上（{show} 会显示这两项）。每个任务还有自己的目录 "
        "`$NIGHTSHIFT_OUTPUT_DIR`（节点上的 `<home>/outputs/<任务编号>`）；写在那里的 `metrics.json` "
        "会出现在 `nightshift compare` 和 “Results” 页。",
    )


def no_latest_task_words(lang: str) -> str:
    """The answer to "cancel my last job" when one has no such task."""
    return _t(
        lang,
        "You have no such task yet: `nightshift ls` lists your team's tasks.",
        "你还没有这样的任务：`nightshift ls` 可以列出你团队的任务。",
    )


def parent_or_hour_words(number: int, lang: str) -> str:
    """The question back for "start 12 after 13": task 13, or 13:00?"""
    if lang == "zh":
        return (
            f"是在{number}号任务结束之后开始，还是在{number}点之后？"
            f"请说“等任务{number}跑完”或“{number}点之后”。"
        )
    return (
        f'Start it after task {number} ends, or after {number}:00? Say "after task {number}" (it waits '
        f'for that task to succeed) or "after {number}:00".'
    )


def canned(kind: str, reason: str, lang: str, task_id: int | None = None) -> str:
    """A question, refusal, help or pointer text for `reason` (about task `task_id` when the request named
    one and the text can say it)."""
    if kind == "help" and reason == "logs" and task_id is not None:
        return logs_words(task_id, lang)
    if kind == "question" and reason == "parent_or_hour" and task_id is not None:
        return parent_or_hour_words(task_id, lang)
    if kind == "help" and reason == "outputs":
        return outputs_words(task_id, lang)
    if kind == "help":
        en, zh = POINTERS.get(reason, HELP_TEXT)
    else:
        texts = REFUSALS if kind == "refusal" else QUESTIONS
        en, zh = texts.get(reason) or POINTERS.get(reason) or QUESTIONS["unclear"]  # "notices": both kinds
    return zh if lang == "zh" else en
