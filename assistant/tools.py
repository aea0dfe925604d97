"""The assistant's tools (the brief's nine, change, hold and release of a queued task, and what ended last
night): thin calls to the HTTP API with the chatting person's own client.

Identity is never an argument: each tool closes over the person's client (their token), so the API decides
what they may see and do. `submit_task`, `cancel_task` and `change_task` do not act; they return a
pending-action card that the person confirms (see `assistant.agent.Assistant.confirm`); `hold_task` and
`release_task` act at once, as the Tasks tab's buttons do (each undoes the other). Text that users or
jobs wrote (names, commands, messages, log lines) reaches the model wrapped in <data>…</data> and
truncated.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field, ValidationError

from api.client import ClientError
from assistant.cards import (
    ActionStore,
    CardError,
    deadline_warnings,
    summarize,
    sweep_preview,
    validated_spec,
)
from assistant.client import AssistantClient, Unavailable
from scheduler.edits import changed_spec, spec_differences
from scheduler.errors import SpecError
from scheduler.resubmit import spec_again, with_command
from scheduler.spec import Priority, SweepGrid, SweepList

DATA_CHARS = 300
LOG_CHARS = 1500
LOG_LINES = 20
Status = Literal["queued", "running", "succeeded", "failed", "cancelled"]


def as_data(value: Any, limit: int = DATA_CHARS) -> str:
    """Untrusted text for the model: marked as data, truncated, and unable to close its own marker."""
    text = str(value).replace("<data>", "&lt;data&gt;").replace("</data>", "&lt;/data&gt;")
    if len(text) > limit:
        text = text[:limit] + "…[truncated]"
    return f"<data>{text}</data>"


@dataclass
class ToolContext:
    """What the tools of one chat session share: the person's client, their pending actions, the clock."""

    client: AssistantClient | None
    actions: ActionStore
    now: Callable[[], datetime]
    offpeak: str = "23:00-07:00"
    default_workdir: str = "/tmp"
    max_task_gpus: int = 8
    dry_run: bool = False  # `nightshift ask --dry-run`: tools that act at once (hold, release) only look


def _result(**data: Any) -> str:
    return json.dumps({"ok": True, **data}, ensure_ascii=False, default=str)


def _error(message: str, errors: list[dict[str, Any]] | None = None, **extra: Any) -> str:
    body: dict[str, Any] = {"ok": False, "error": message, **extra}
    if errors:
        body["errors"] = errors
    return json.dumps(body, ensure_ascii=False, default=str)


def task_view(task: dict[str, Any]) -> dict[str, Any]:
    """A task as the model sees it: facts plus user-written text wrapped as data."""
    view = {
        key: task.get(key)
        for key in (
            "id",
            "status",
            "priority",
            "gpus",
            "gpu_memory_gb",
            "submitted_at",
            "started_at",
            "finished_at",
            "exit_code",
            "attempts",
            "node",
        )
    }
    if task.get("held_by"):
        view["held_by"] = as_data(task["held_by"], 64)
    view["name"] = as_data(task.get("name", ""), 120)
    view["command"] = as_data(task.get("command", ""), 200)
    for key in ("reason", "message"):
        if task.get(key):
            view[key] = as_data(task[key])
    return {key: value for key, value in view.items() if value is not None}


def _need_client(ctx: ToolContext) -> AssistantClient:
    if ctx.client is None:
        raise ClientError(0, "the nightshift API is not reachable from here (dry run without a server)")
    return ctx.client


# --- argument schemas (identity is deliberately absent) -------------------------------------------------


class SubmitArgs(BaseModel):
    """A task spec: only `command` is required (unless `like_task`); times are ISO 8601 with offset."""

    command: str | None = Field(default=None, description="shell command, run by /bin/sh -c")
    like_task: int | None = Field(
        default=None,
        description="run this earlier task of yours again: its spec, changed by the other fields given",
    )
    replaces_card: str | None = Field(
        default=None,
        description="the action_id of the card this one changes (the person asked for a change): that card "
        "can no longer be confirmed",
    )
    name: str | None = None
    workdir: str | None = Field(default=None, description="absolute folder")
    gpus: int | None = Field(default=None, description="GPUs (0 = CPU only), default 1")
    gpu_memory_gb: float | None = Field(default=None, description="min free memory per GPU, GB")
    priority: Literal["low", "normal", "high", "urgent"] | None = None
    not_before: str | None = Field(default=None, description="ISO 8601 with offset: do not start before")
    offpeak: bool | None = Field(default=None, description="start only in the off-peak (cheap power) window")
    deadline: str | None = Field(default=None, description="ISO 8601 with offset: should finish by")
    time_limit_minutes: float | None = None
    estimated_minutes: float | None = None
    retries: int | None = None
    conda_env: str | None = None
    docker_image: str | None = None
    env: dict[str, str] | None = None
    depends_on: list[int] | None = Field(default=None, description="start after these task ids succeed")
    tags: list[str] | None = None
    node: str | None = Field(default=None, description="run only on this node")
    gpu_model: str | None = Field(default=None, description="only GPUs whose model contains this, e.g. A100")
    sweep: SweepGrid | SweepList | None = Field(
        default=None,
        description="one task per parameter set: a grid {name: [values]} (every combination) or a list "
        "of {name: value}; the command names each as {name}, e.g. python train.py --lr {lr}",
    )
    metrics_file: str | None = Field(default=None, description="results file in NIGHTSHIFT_OUTPUT_DIR")


class ChangeArgs(BaseModel):
    """A queued task of yours and what to change in it: only what the person asked for."""

    task_id: int
    priority: Priority | None = None
    not_before: str | None = Field(default=None, description="ISO 8601 with offset: do not start before")
    start_now: bool = Field(default=False, description="drop its not-before time and off-peak wait")
    offpeak: bool | None = Field(default=None, description="start only in the off-peak (cheap power) window")
    deadline: str | None = Field(default=None, description="ISO 8601 with offset: should finish by")
    time_limit_minutes: float | None = None
    estimated_minutes: float | None = None
    retries: int | None = None
    name: str | None = None


class TaskIdArgs(BaseModel):
    """One task id."""

    task_id: int


class OptionalTaskArgs(BaseModel):
    """An optional task id (default: your queued tasks)."""

    task_id: int | None = None


class EstimateArgs(BaseModel):
    """A task id, or the size of a hypothetical task."""

    task_id: int | None = None
    gpus: int | None = None
    gpu_memory_gb: float | None = None
    estimated_minutes: float | None = None


class ListArgs(BaseModel):
    """An optional status filter."""

    status: Status | None = None


class NoArgs(BaseModel):
    """No arguments."""


class UtilizationArgs(BaseModel):
    """Days to look back and how to group."""

    days: int = Field(default=7, ge=1, le=366)
    by: Literal["team", "user", "gpu"] | None = None


class NightArgs(BaseModel):
    """How far back to look (default: since 18:00 yesterday, i.e. last night)."""

    hours: float | None = Field(default=None, gt=0, le=24 * 31)


class QuotaArgs(BaseModel):
    """Optional team (admins may ask about any team; others get their own)."""

    team: str | None = None


# --- the tools ----------------------------------------------------------------------------------------


def _guard(fn: Callable[..., str]) -> Callable[..., str]:
    def run(**kwargs: Any) -> str:
        try:
            return fn(**kwargs)
        except Unavailable as exc:
            return _error(exc.message, unavailable=True)
        except ClientError as exc:
            return _error(exc.message, exc.errors, status=exc.status_code)

    run.__name__ = fn.__name__
    run.__doc__ = fn.__doc__
    return run


def _add_warnings(card: dict[str, Any], warnings: list[str]) -> None:
    """Put on a card what the API will warn of once it is confirmed (a deadline it cannot meet), so the
    person may fix it first; a card with nothing to warn of has no `warnings`."""
    if warnings:
        card["warnings"] = warnings


def submit_task(ctx: ToolContext, **args: Any) -> str:
    """Prepare a task for submission: validates it and returns a card the person must confirm."""
    now = ctx.now()
    gpus_view = None
    if ctx.client is not None:
        try:
            gpus_view = ctx.client.gpus()
        except ClientError:
            gpus_view = None
    like = args.pop("like_task", None)
    replaces = args.pop("replaces_card", None)
    passed: dict[str, str] = {}
    if like is not None:  # "run 12 again": task 12's spec, changed by what else was asked
        again = spec_again(_need_client(ctx).get_task(like)["spec"], now)
        given = {key: value for key, value in args.items() if value is not None}
        command = given.pop("command", None)
        args, passed = (
            {**(with_command(again.spec, command) if command else again.spec), **given},
            again.passed,
        )
    try:
        spec = validated_spec(args, now, ctx.default_workdir, ctx.max_task_gpus, gpus_view)
        summary = summarize(spec, now, ctx.offpeak, ctx.client, gpus_view)
    except CardError as exc:
        return _error(exc.message, exc.errors)
    if like is not None:
        summary["like_task"] = {"task_id": like, "passed": passed}
    card: dict[str, Any] = {"kind": "submit", "spec": spec, "summary": summary}
    _add_warnings(card, deadline_warnings(spec, now, ctx.offpeak))
    preview = sweep_preview(spec)
    if preview is not None:  # one card for the whole sweep
        card["sweep"] = preview
        summary["cli"] = "nightshift submit SPEC.yaml  (a spec file with this sweep)"
    ctx.actions.add("submit", card, {"spec": spec})
    if replaces is not None:  # the changed card stands in for it: only one of the two may be confirmed
        ctx.actions.take(str(replaces))
    return _result(pending_action=card, note="Nothing has been submitted: the person must confirm the card.")


def cancel_task(ctx: ToolContext, task_id: int) -> str:
    """Prepare a cancellation of one of your tasks: returns a card the person must confirm."""
    task: dict[str, Any] | None = None
    if ctx.client is not None:
        task = ctx.client.get_task(task_id)
        if task.get("status") in ("succeeded", "failed", "cancelled"):
            return _error(f"task {task_id} already {task['status']}; nothing to cancel")
    card = {"kind": "cancel", "task_id": task_id, "task": task_view(task) if task else None}
    ctx.actions.add("cancel", card, {"task_id": task_id})
    return _result(pending_action=card, note="Nothing has been cancelled: the person must confirm the card.")


def change_task(ctx: ToolContext, task_id: int, start_now: bool = False, **fields: Any) -> str:
    """Prepare a change to one of your queued tasks (priority, start time, off-peak, deadline, limits,
    retries, name): returns a card the person must confirm. The task keeps its place in time; GPUs, memory
    and the command cannot change (run it again with submit_task like_task instead)."""
    changes = {key: value for key, value in fields.items() if value is not None}
    if start_now:
        if changes.get("not_before") or changes.get("offpeak"):
            return _error("start now, or later: not both")
        changes.update(not_before=None, offpeak=False)
    if not changes:
        return _error("nothing to change: say what (priority, start time, off-peak, deadline, time limit)")
    task = _need_client(ctx).get_task(task_id)
    if task.get("status") != "queued":
        return _error(f"task {task_id} already {task.get('status')}; only a queued task can be changed")
    try:
        diff = {
            key: list(values)
            for key, values in spec_differences(task_id, task.get("spec") or {}, changes).items()
        }
    except SpecError as exc:
        return _error(exc.message, exc.errors)
    if not diff:
        return _error(f"task {task_id} already has {', '.join(f'{k}: {v}' for k, v in changes.items())}")
    card = {"kind": "change", "task_id": task_id, "task": task_view(task), "changes": diff}
    after = changed_spec(task_id, task.get("spec") or {}, changes).model_dump(mode="json")
    _add_warnings(card, deadline_warnings(after, ctx.now(), ctx.offpeak))
    ctx.actions.add("change", card, {"task_id": task_id, "changes": {key: changes[key] for key in diff}})
    return _result(pending_action=card, note="Nothing has been changed: the person must confirm the card.")


def hold_task(ctx: ToolContext, task_id: int) -> str:
    """Hold one of your queued tasks back: it stays queued, keeps its age and starts only once released.
    Acts at once (release_task undoes it), as the Hold button does."""
    client = _need_client(ctx)
    if ctx.dry_run:
        return _result(would_hold=task_view(client.get_task(task_id)), note="dry run: nothing was changed")
    return _result(held=task_view(client.hold(task_id)))


def release_task(ctx: ToolContext, task_id: int) -> str:
    """Let one of your held tasks start again, with the priority and age it had. Acts at once."""
    client = _need_client(ctx)
    if ctx.dry_run:
        return _result(would_release=task_view(client.get_task(task_id)), note="dry run: nothing was changed")
    return _result(released=task_view(client.release(task_id)))


def queue_position(ctx: ToolContext, task_id: int | None = None) -> str:
    """Where your task (or your queued tasks) stand in the queue."""
    client = _need_client(ctx)
    if task_id is not None:
        task = client.get_task(task_id)
        if task["status"] != "queued":
            return _result(
                entries=[], task=task_view(task), note=f"task {task_id} is {task['status']}, not queued"
            )
    queue = client.queue()
    entries = [
        {"task_id": e["task"]["id"], "name": as_data(e["task"]["name"], 120), "position": e["position"]}
        for e in queue.get("entries", [])
        if task_id is None or e["task"]["id"] == task_id
    ]
    return _result(entries=entries[:10], length=queue.get("length"))


def estimate_wait(
    ctx: ToolContext,
    task_id: int | None = None,
    gpus: int | None = None,
    gpu_memory_gb: float | None = None,
    estimated_minutes: float | None = None,
) -> str:
    """Estimated start (with its range and reason) for a task, or for a task of the given size."""
    client = _need_client(ctx)
    if task_id is None and gpus is None and gpu_memory_gb is None:
        queued = client.list_tasks(status="queued", limit=1)
        task_id = queued[0]["id"] if queued else None
        gpus = None if queued else 1
    estimate = client.estimate(task_id, gpus, gpu_memory_gb, estimated_minutes)
    estimate["reason"] = as_data(estimate.get("reason", ""))
    if task_id is not None:
        return _result(task_id=task_id, estimate=estimate)
    asked = {"gpus": 1 if gpus is None else gpus, "gpu_memory_gb": gpu_memory_gb}  # the task it priced
    return _result(task_id=None, asked=asked, estimate=estimate)


LIST_LIMIT = 20  # tasks one list_tasks answer holds, newest first


def list_tasks(ctx: ToolContext, status: str | None = None) -> str:
    """Your team's tasks, newest first, optionally only one status."""
    tasks = _need_client(ctx).list_tasks(status=status, limit=LIST_LIMIT + 1)  # one more: are there more?
    shown = tasks[:LIST_LIMIT]
    return _result(tasks=[task_view(t) for t in shown], count=len(shown), more=len(tasks) > LIST_LIMIT)


def explain_task(ctx: ToolContext, task_id: int) -> str:
    """Why a task is where it is: status, position, reason, estimated start (log tail if failed)."""
    client = _need_client(ctx)
    try:
        info = client.explain(task_id)
    except Unavailable:
        task = client.get_task(task_id)
        info = {
            "task_id": task_id,
            "status": task["status"],
            "reason": task.get("reason") or "waiting in the queue",
        }
    info["reason"] = as_data(info.get("reason", ""))
    if info.get("last_output"):  # a failed task's last lines, as its job printed them
        info["last_output"] = as_data("\n".join(info["last_output"]))
    result: dict[str, Any] = {"explain": info}
    if info.get("status") == "failed":
        try:
            text = client.logs(task_id, tail=LOG_LINES)
            if len(text) > LOG_CHARS:
                text = "[truncated]…" + text[-LOG_CHARS:]
            result["log_tail"] = as_data(text, LOG_CHARS + 20)
        except ClientError:
            pass
    return _result(**result)


def cluster_status(ctx: ToolContext) -> str:
    """Every GPU: memory free/total, utilization, which tasks hold it; plus the queue length."""
    client = _need_client(ctx)
    view = client.gpus()
    gpus = view.get("gpus", [])
    busy = sum(1 for g in gpus if g.get("tasks"))
    free_gb = sum(g.get("memory_free_mib", 0) for g in gpus if not g.get("tasks")) / 1024
    rows = [
        {
            "node": g["node"],
            "index": g["index"],
            "name": g.get("name"),
            "free_gb": round(g["memory_free_mib"] / 1024, 1),
            "total_gb": round(g["memory_total_mib"] / 1024, 1),
            "util_pct": g.get("utilization_pct"),
            "tasks": g.get("tasks", []),
        }
        for g in gpus
    ]
    queued = client.queue(limit=1).get("length", 0)
    summary = {
        "gpus": len(gpus),
        "busy": busy,
        "free_memory_gb": round(free_gb, 1),
        "queued": queued,
        "nodes": len(view.get("nodes", [])),
    }
    return _result(summary=summary, gpus=rows[:32])


def utilization_report(ctx: ToolContext, days: int = 7, by: str | None = None) -> str:
    """GPU-hours, tasks, successes and waits over the last `days`, grouped by team, user or GPU."""
    report = _need_client(ctx).utilization(days, by)
    for row in report.get("rows", []):
        row["key"] = as_data(row.get("key", ""), 80)
    return _result(report=report)


def night_summary(ctx: ToolContext, hours: float | None = None) -> str:
    """What ended last night (since 18:00 yesterday) or in the last `hours`: how many of your team's tasks
    succeeded, failed (and why) or were cancelled, and the GPU-hours and energy cost."""
    summary = _need_client(ctx).night_summary(hours)
    for group in ("succeeded", "failed", "cancelled"):
        for task in summary.get(group, []):
            for field in ("name", "message", "last_line"):
                if task.get(field):
                    task[field] = as_data(task[field], 200)
    return _result(summary=summary)


def quota_status(ctx: ToolContext, team: str | None = None) -> str:
    """Your team's GPU cap and GPU-hour budgets (day and week) with what is used."""
    return _result(quota=_need_client(ctx).quota(team))


def _bind(ctx: ToolContext, fn: Callable[..., str]) -> Callable[..., str]:
    def run(**kwargs: Any) -> str:
        return fn(ctx, **kwargs)

    run.__name__ = fn.__name__
    run.__doc__ = fn.__doc__
    return _guard(run)


def make_tools(ctx: ToolContext) -> list[BaseTool]:
    """The tools bound to one person's session: the brief's nine, change/hold/release of a queued task, and
    `night_summary`."""
    specs: list[tuple[Callable[..., str], type[BaseModel]]] = [
        (submit_task, SubmitArgs),
        (queue_position, OptionalTaskArgs),
        (estimate_wait, EstimateArgs),
        (list_tasks, ListArgs),
        (cancel_task, TaskIdArgs),
        (change_task, ChangeArgs),
        (hold_task, TaskIdArgs),
        (release_task, TaskIdArgs),
        (explain_task, TaskIdArgs),
        (cluster_status, NoArgs),
        (utilization_report, UtilizationArgs),
        (night_summary, NightArgs),
        (quota_status, QuotaArgs),
    ]
    return [
        StructuredTool.from_function(
            func=_bind(ctx, fn),
            name=fn.__name__.lstrip("_"),
            description=fn.__doc__ or fn.__name__,
            args_schema=schema,
            handle_validation_error=_validation_message,
        )
        for fn, schema in specs
    ]


def _validation_message(error: ValidationError | Exception) -> str:
    if isinstance(error, ValidationError):
        items = [
            {"field": ".".join(str(p) for p in e.get("loc", ())), "message": e.get("msg", "")}
            for e in error.errors()
        ]
        return _error("; ".join(f"{i['field']}: {i['message']}" for i in items), items)
    return _error(str(error))


TOOL_NAMES = (
    "submit_task",
    "queue_position",
    "estimate_wait",
    "list_tasks",
    "cancel_task",
    "change_task",
    "hold_task",
    "release_task",
    "explain_task",
    "cluster_status",
    "utilization_report",
    "night_summary",
    "quota_status",
)
# the tools that make a card to confirm: a call of one is a new request for an action
CARD_TOOLS = frozenset({"submit_task", "cancel_task", "change_task"})
