"""The assistant's tools (the brief's nine, change, hold and release of a queued task, what ended last
night, and a whole sweep's status, results, cancel, rerun, change, hold and release): thin calls to the
HTTP API with the chatting person's own client.

Identity is never an argument: each tool closes over the person's client (their token), so the API decides
what they may see and do. `submit_task`, `cancel_task`, `cancel_tasks` (several named tasks on one card),
`requeue_task`, `change_task`, `cancel_sweep`, `rerun_sweep` and `change_sweep` do not act; they return a
pending-action card that the person confirms (see `assistant.agent.Assistant.confirm`);
`hold_task`/`release_task` and `hold_sweep`/`release_sweep` act at once, as the Tasks tab's buttons do (each
undoes the other). Text that users or jobs wrote (names, commands, messages, log lines, parameters and
metrics) reaches the model wrapped in <data>…</data> and truncated.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, tzinfo
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
from assistant.parsing.history import resolve_since, resolve_until
from assistant.parsing.intents import MAX_CANCELLED_AT_ONCE
from scheduler.dependencies import PARENT_FIELDS, refuse_dependency_loop, refuse_parent, waited_for
from scheduler.edits import (
    CLEARABLE_FIELDS,
    changed_spec,
    check_clearable,
    check_running_changes,
    retagged,
    spec_differences,
)
from scheduler.errors import ConflictError, SpecError
from scheduler.resubmit import spec_again, with_command
from scheduler.spec import Priority, SweepGrid, SweepList, TaskSpec
from scheduler.store.tables import FINAL_STATUSES

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
    zone: tzinfo | None = None  # the cluster's, where times without an offset are read (else `now`'s)

    def local_now(self) -> tuple[datetime, tzinfo]:
        """The time now and the cluster's zone, for reading times people wrote."""
        now = self.now()
        zone = self.zone or now.tzinfo or now.astimezone().tzinfo
        assert zone is not None
        return now.astimezone(zone), zone


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
    for key in ("user", "held_by"):
        if task.get(key):
            view[key] = as_data(task[key], 64)
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
    gpu_fraction: float | None = Field(
        default=None, description='part of one GPU to share ("half a GPU" → 0.5, with gpus 1), default whole'
    )
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
    secrets: list[str] | None = Field(
        default=None,
        description="names of the person's own secrets (`nightshift secret set NAME`) the job gets as "
        'environment variables ("with my WANDB_API_KEY"); never a value',
    )
    depends_on: list[int] | None = Field(default=None, description="start after these task ids succeed")
    depends_on_any: list[int] | None = Field(
        default=None, description="start after these task ids end: succeeded, failed or cancelled"
    )
    tags: list[str] | None = None
    node: str | None = Field(default=None, description="run only on this node")
    gpu_model: str | None = Field(default=None, description="only GPUs whose model contains this, e.g. A100")
    sweep: SweepGrid | SweepList | None = Field(
        default=None,
        description="one task per parameter set: a grid {name: [values]} (every combination) or a list "
        "of {name: value}; the command names each as {name}, e.g. python train.py --lr {lr}",
    )
    max_running: int | None = Field(
        default=None, description='with a sweep: run at most this many of its tasks at once ("2 at a time")'
    )
    clear: list[str] | None = Field(
        default=None,
        description="with like_task: fields of the earlier task to leave out, back to their defaults "
        '("run 12 again without its time limit" → ["time_limit_minutes"]): any of '
        f"{', '.join(CLEARABLE_FIELDS)}",
    )
    metrics_file: str | None = Field(default=None, description="results file in NIGHTSHIFT_OUTPUT_DIR")


# what a change may put back to its default ("remove the time limit", "no deadline", "取消时间限制")
CLEARABLE_OF_SWEEP = (*CLEARABLE_FIELDS, "max_running")
CLEAR_NEEDS_LIKE_TASK = (
    "clear leaves fields of an earlier task out when it runs again (with like_task), and a new task has only "
    "the fields given: leave clear out"
)


class ChangeFields(BaseModel):
    """What may change in a queued task (of its own or of a sweep): only what the person asked for."""

    priority: Priority | None = None
    not_before: str | None = Field(default=None, description="ISO 8601 with offset: do not start before")
    start_now: bool = Field(default=False, description="drop its not-before time and off-peak wait")
    offpeak: bool | None = Field(default=None, description="start only in the off-peak (cheap power) window")
    deadline: str | None = Field(default=None, description="ISO 8601 with offset: should finish by")
    time_limit_minutes: float | None = None
    estimated_minutes: float | None = None
    retries: int | None = None
    depends_on: list[int] | None = Field(
        default=None, description="wait for these task ids to succeed, instead of what it waited for"
    )
    depends_on_any: list[int] | None = Field(
        default=None, description="wait for these task ids to end however they end, instead"
    )
    clear: list[str] | None = Field(
        default=None,
        description='fields to put back to their defaults, the limit or time taken away ("remove the time '
        'limit", "no deadline", "取消时间限制" → ["time_limit_minutes"]): any of '
        f"{', '.join(CLEARABLE_FIELDS)}",
    )


class ChangeArgs(ChangeFields):
    """A task of yours and what to change in it: only what the person asked for (a running one: its time
    limit, estimate, retries and name only)."""

    task_id: int
    name: str | None = None
    more_minutes: float | None = Field(
        default=None,
        gt=0,
        description='add this much to its time limit ("give task 5 4 more hours", "给5号多加4小时" → 240)',
    )
    also_wait_for: list[int] | None = Field(
        default=None,
        description='wait for these task ids to succeed too, beside what it waits for ("make 12 also wait '
        'for 14")',
    )
    stop_waiting_for: list[int] | None = Field(
        default=None,
        description='no longer wait for these task ids ("12 no longer needs to wait for 13", '
        '"不用让12号等13号")',
    )
    add_tags: list[str] | None = Field(
        default=None,
        description='labels to add, its other tags kept ("tag 12 with exp7", "给12号加标签exp7" → ["exp7"])',
    )
    remove_tags: list[str] | None = Field(
        default=None, description='labels to take away ("remove the tag exp7 from 12" → ["exp7"])'
    )


class ChangeSweepArgs(ChangeFields):
    """One of your sweeps and what to change in every queued task of it (and how many run at once)."""

    sweep_id: int = Field(ge=1, description="the sweep's id (not a task id)")
    max_running: int | None = Field(default=None, ge=1, description="run at most this many of it at once")
    lift_max_running: bool = Field(
        default=False,
        description='remove its limit on how many run at once ("no limit", "不限制同时运行数量"): all of it '
        "may then run at once",
    )
    clear: list[str] | None = Field(
        default=None,
        description="fields to put back to their defaults in every queued task, the limit or time taken "
        f'away ("remove the time limit of sweep 3" → ["time_limit_minutes"]): any of '
        f"{', '.join(CLEARABLE_OF_SWEEP)}",
    )


class TaskIdArgs(BaseModel):
    """One task id."""

    task_id: int


class CancelTasksArgs(BaseModel):
    """Several task ids, each named by the person ("cancel 12, 13 and 15", "cancel 12-15"), or `mine`: all of
    the person's own live tasks ("cancel all my queued jobs": `status` queued), never a teammate's."""

    task_ids: list[int] | None = Field(default=None, min_length=2, max_length=MAX_CANCELLED_AT_ONCE)
    mine: bool = False
    status: Literal["queued", "running"] | None = None


class OptionalTaskArgs(BaseModel):
    """An optional task id (default: your queued tasks)."""

    task_id: int | None = None


class EstimateArgs(BaseModel):
    """A task id, or the size of a hypothetical task."""

    task_id: int | None = None
    gpus: int | None = None
    gpu_memory_gb: float | None = None
    estimated_minutes: float | None = None
    offpeak: bool = Field(default=False, description='only in the off-peak window ("tonight", "今晚")')
    gpu_model: str | None = Field(default=None, description='only GPUs of this model ("2 A100s", "用A100")')
    node: str | None = Field(default=None, description="only this node")


_PAST_WORDS = "ISO 8601, or words: yesterday, monday, last week, this month, last 3 days, 9am, 昨天, 上周"


class ListArgs(BaseModel):
    """Optional filters: status, when it was submitted, name, tag, node (all optional; none: the newest)."""

    status: Status | None = None
    since: str | None = Field(default=None, description=f"submitted at or after: {_PAST_WORDS}")
    until: str | None = Field(
        default=None, description=f"submitted at or before ({_PAST_WORDS}; a day: until its end)"
    )
    name: str | None = Field(
        default=None,
        max_length=121,
        description="task name, exact; a trailing * matches every name starting so (train.py* = the runs "
        "of train.py, its sweeps' tasks too)",
    )
    tag: str | None = Field(default=None, max_length=64, description="tasks carrying this tag")
    node: str | None = Field(default=None, max_length=128, description="tasks with an attempt on this node")
    submitted_by: str | None = Field(
        default=None, max_length=64, description="one teammate's tasks (\"bob's tasks\"): their user name"
    )
    held: bool | None = Field(
        default=None, description='true: only tasks held back ("show my held tasks", "暂停的任务")'
    )
    sweep_id: int | None = Field(
        default=None, ge=1, description='one sweep\'s tasks ("the failed runs of sweep 4", "扫参4失败的任务")'
    )
    mine: bool = Field(
        default=False,
        description='only your own tasks, not your team\'s ("my last job": the first of mine, newest first)',
    )


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


class SweepIdArgs(BaseModel):
    """One sweep id: the number its confirmation gave ("Submitted sweep #4")."""

    sweep_id: int = Field(ge=1, description="the sweep's id (not a task id)")


class RerunSweepArgs(BaseModel):
    """One of your sweeps, and which of its ended tasks to run again."""

    sweep_id: int = Field(ge=1, description="the sweep's id (not a task id)")
    status: list[Literal["failed", "cancelled", "succeeded"]] = Field(
        default=["failed"],
        min_length=1,
        description='run again its tasks that ended so: failed (the default, "rerun the failed runs"), '
        "cancelled, succeeded",
    )


class SweepStatusArgs(BaseModel):
    """A sweep id, or none for the person's most recent sweep ("how is my sweep doing?")."""

    sweep_id: int | None = Field(
        default=None,
        ge=1,
        description="the sweep's id (not a task id); omit it for the person's latest sweep",
    )


class CompareArgs(BaseModel):
    """Whose runs to compare (a sweep or a tag: one of the two) and by which metric."""

    sweep_id: int | None = Field(default=None, ge=1, description="the sweep's id")
    tag: str | None = Field(default=None, min_length=1, max_length=64, description="the runs with this tag")
    metric: str | None = Field(
        default=None, min_length=1, max_length=64, description="sort by this metric (default: the first one)"
    )
    maximize: bool | None = Field(
        default=None,
        description="true: larger is better; false: smaller is better; default: smaller for names like "
        "loss/error/time, larger otherwise",
    )


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


def _still_live_warning(task_id: int, status: str) -> list[str]:
    """What a card running task `task_id` again warns of while that task is still queued or running ("restart
    9"): confirming adds a second task beside it, and the first goes on until it is cancelled."""
    if status not in ("queued", "running"):
        return []
    undo = "stop" if status == "running" else "drop"
    beside = f"this is another task beside it (cancel {task_id} to {undo} the first)"
    return [f"task {task_id} is still {status}: {beside}"]


def _outside_its_sweep(task: Mapping[str, Any]) -> list[str]:
    """What a card running a sweep's failed task again as a task of its own says: the new task is outside the
    sweep, and how to run it again in its place instead (`nightshift rerun`, the sweep's rerun card)."""
    sweep_id = task.get("sweep_id")
    if sweep_id is None or task.get("status") != "failed":
        return []
    task_id = task["id"]
    return [
        f"task {task_id} is a run of sweep {sweep_id}: this new task is outside it (`nightshift rerun "
        f'{task_id}`, or "rerun the failed runs of sweep {sweep_id}" here, runs it again in its place)'
    ]


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
    clear = args.pop("clear", None) or []
    passed: dict[str, str] = {}
    cleared: dict[str, Any] = {}
    beside: list[str] = []
    if clear and like is None:
        return _error(CLEAR_NEEDS_LIKE_TASK)
    if like is not None:  # "run 12 again": task 12's spec, changed by what else was asked
        given = {key: value for key, value in args.items() if value is not None}
        refused = _cleared(clear, given, CLEARABLE_FIELDS)
        if isinstance(refused, str):
            return refused
        earlier = _need_client(ctx).get_task(like)
        again = spec_again(earlier["spec"], now, clear)
        status = str(earlier.get("status"))
        beside = _still_live_warning(like, status) + _outside_its_sweep(earlier)
        command = given.pop("command", None)
        if given.get("env") and again.spec.get("env"):  # as `submit --like --env`: adds to the earlier env
            given["env"] = {**again.spec["env"], **given["env"]}
        args, passed, cleared = (
            {**(with_command(again.spec, command) if command else again.spec), **given},
            again.passed,
            again.cleared,
        )
    if args.get("max_running") is not None and args.get("sweep") is None:
        return _error(
            "max_running limits how many tasks of a sweep run at once, and this is a single task (no sweep): "
            "leave it out, or give the sweep's values"
        )
    try:
        spec = validated_spec(args, now, ctx.default_workdir, ctx.max_task_gpus, gpus_view)
        preview = sweep_preview(spec)
        tasks = preview["tasks"] if preview is not None else 1
        summary = summarize(spec, now, ctx.offpeak, ctx.client, gpus_view, tasks)
    except CardError as exc:
        return _error(exc.message, exc.errors)
    refused = _refused_by_the_api(ctx, spec)
    if refused is not None:
        return refused
    if like is not None:
        summary["like_task"] = {"task_id": like, "passed": passed, "cleared": cleared}
    card: dict[str, Any] = {"kind": "submit", "spec": spec, "summary": summary}
    # its windows and run time alone say it here; what the queue ahead of it does, only the server knows
    behind_queue = summary.pop("deadline_warning", None)
    deadline = deadline_warnings(spec, now, ctx.offpeak) or ([behind_queue] if behind_queue else [])
    _add_warnings(card, beside + deadline)
    if preview is not None:  # one card for the whole sweep
        card["sweep"] = preview
        summary["cli"] = "nightshift submit SPEC.yaml  (a spec file with this sweep)"
    ctx.actions.add("submit", card, {"spec": spec})
    if replaces is not None:  # the changed card stands in for it: only one of the two may be confirmed
        ctx.actions.take(str(replaces))
    return _result(pending_action=card, note="Nothing has been submitted: the person must confirm the card.")


def _refused_by_the_api(ctx: ToolContext, spec: dict[str, Any]) -> str | None:
    """The error the API would answer this spec's submission with, asked of it without submitting
    (`POST /tasks/check`): what only the server knows, the person's secrets and priority limits, their
    team's queued cap, is checked before a card is shown. Its times are left out: the card checked them
    against the conversation's clock. None when it would be accepted (or no API)."""
    client = ctx.client
    if client is None:
        return None
    return _refused_by_a_dry_run(lambda timeless: client.check(timeless, estimate=False), spec)


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


def requeue_task(ctx: ToolContext, task_id: int) -> str:
    """Prepare putting one of your running tasks back in the queue ("requeue 12"): a card the person must
    confirm; confirmed, it is stopped (its stop signal, its grace period) and waits again with its age,
    resuming from its checkpoint, not counted against its retries. An ended task is run again instead (a
    submit card, as submit_task with like_task); a queued one is already waiting."""
    task = _need_client(ctx).get_task(task_id)
    status = str(task.get("status"))
    if status in ("succeeded", "failed", "cancelled"):
        return submit_task(ctx, like_task=task_id)
    if status != "running":
        return _error(f"task {task_id} is {status}: it is already waiting in the queue")
    card = {"kind": "requeue", "task_id": task_id, "task": task_view(task)}
    ctx.actions.add("requeue", card, {"task_id": task_id})
    return _result(pending_action=card, note="Nothing has been stopped: the person must confirm the card.")


def cancel_tasks(
    ctx: ToolContext, task_ids: list[int] | None = None, mine: bool = False, status: str | None = None
) -> str:
    """Prepare one cancellation of several of your tasks, each named by its number, or (`mine`) all your own
    queued and running ones (`status`: only queued, or only running), up to 20: returns one card the person
    must confirm; tasks that already ended are left out and said so."""
    if (task_ids is None) == (not mine):
        return _error("name the tasks (task_ids) or ask for all your own (mine): one of the two")
    if mine:
        own = _need_client(ctx).own_live_task_ids(status)
        if not own:
            return _error(f"none of your tasks is {status or 'queued or running'}: nothing to cancel")
        if len(own) > MAX_CANCELLED_AT_ONCE:
            command = "nightshift cancel --mine" + (f" --status {status}" if status else "")
            return _error(
                f"you have {len(own)} {status or 'live'} tasks; the chat cancels up to "
                f"{MAX_CANCELLED_AT_ONCE} on one card: `{command}` shows them all and asks before cancelling"
            )
        if len(own) == 1:
            return cancel_task(ctx, own[0])
        task_ids = own
    wanted = list(dict.fromkeys(task_ids or []))
    if len(wanted) < 2 and not mine:
        return _error("one task: use cancel_task")
    tasks: dict[int, dict[str, Any] | None] = dict.fromkeys(wanted)
    if ctx.client is not None:
        tasks = {task_id: ctx.client.get_task(task_id) for task_id in wanted}
    ended = {
        task_id: str(task["status"])
        for task_id, task in tasks.items()
        if task is not None and task.get("status") in ("succeeded", "failed", "cancelled")
    }
    live = [task_id for task_id in wanted if task_id not in ended]
    if not live:
        return _error(
            "tasks " + ", ".join(f"{i} already {s}" for i, s in ended.items()) + "; nothing to cancel"
        )
    card: dict[str, Any] = {
        "kind": "cancel_tasks",
        "task_ids": live,
        "tasks": [
            task_view(task) if task else {"id": task_id} for task_id, task in tasks.items() if task_id in live
        ],
        "left_out": [{"id": task_id, "status": ended_as} for task_id, ended_as in ended.items()],
    }
    ctx.actions.add("cancel_tasks", card, {"task_ids": live})
    return _result(pending_action=card, note="Nothing has been cancelled: the person must confirm the card.")


def _asked_changes(
    fields: Mapping[str, Any],
    start_now: bool,
    lift_max_running: bool = False,
    clear: list[str] | None = None,
    clearable: tuple[str, ...] = CLEARABLE_FIELDS,
) -> dict[str, Any] | str:
    """The fields asked to change (`start_now`: no not-before time, no off-peak wait; `lift_max_running`: a
    sweep's `max_running` None, no limit on how many run at once; each field of `clear` None, back to its
    default as PATCH takes it), or the error."""
    changes = {key: value for key, value in fields.items() if value is not None}
    cleared = _cleared(clear or [], changes, clearable)
    if isinstance(cleared, str):
        return cleared
    if start_now:
        if changes.get("not_before") or changes.get("offpeak"):
            return _error("start now, or later: not both")
        changes.update(not_before=None, offpeak=False)
    if lift_max_running:
        if "max_running" in changes:
            return _error(f"no limit on how many run at once, or at most {changes['max_running']}: not both")
        changes["max_running"] = None
    changes.update(cleared)
    if not changes:
        return _error(
            "nothing to change: say what (priority, start time, off-peak, deadline, time limit), or what to "
            "put back to its default (clear)"
        )
    return changes


def _cleared(
    clear: list[str], changes: Mapping[str, Any], clearable: tuple[str, ...]
) -> dict[str, None] | str:
    """The fields `clear` puts back to their defaults, each None, or the error: a field that cannot go back
    to its default here, or one also given a new value."""
    try:
        check_clearable(clear, clearable)
    except SpecError as exc:
        return _error(exc.message, exc.errors)
    both = next((name for name in clear if name in changes), None)
    if both is not None:
        return _error(f"{both}: {changes[both]}, or back to its default: not both")
    return dict.fromkeys(clear)


def _changes_words(changes: Mapping[str, Any]) -> str:
    """`priority: high, max_running: 2`: what a change asks; a field put back to its default as
    `time_limit_minutes at its default (none)`, a sweep's `max_running` as `no limit on how many run at
    once`."""

    def words(key: str, value: Any) -> str:
        if isinstance(value, list):  # "depends_on: 12, 13"
            return f"{key}: {', '.join(map(str, value))}"
        if value is not None:
            return f"{key}: {value}"
        if key == "max_running":
            return "no limit on how many run at once"
        default = TaskSpec.model_fields[key].get_default(call_default_factory=True)
        if default in (None, []):
            return f"{key} at its default (none)"
        shown = str(default).lower() if isinstance(default, bool) else default
        return f"{key} at its default ({shown})"

    return ", ".join(words(key, value) for key, value in changes.items())


def change_task(
    ctx: ToolContext,
    task_id: int,
    start_now: bool = False,
    clear: list[str] | None = None,
    more_minutes: float | None = None,
    also_wait_for: list[int] | None = None,
    stop_waiting_for: list[int] | None = None,
    add_tags: list[str] | None = None,
    remove_tags: list[str] | None = None,
    **fields: Any,
) -> str:
    """Prepare a change to one of your queued tasks (priority, start time, off-peak, deadline, limits,
    retries, name; `clear` puts fields back to their defaults: "remove the time limit" is
    clear=["time_limit_minutes"], a change, not a cancel), or to the time limit of a running one
    (`more_minutes` adds to it): returns a card the person must confirm. The task keeps its place in time;
    GPUs, memory and the command cannot change (run it again with submit_task like_task instead). Which
    tasks it waits for can change: `depends_on` replaces them, `also_wait_for` adds, `stop_waiting_for`
    takes some away; so can its tags (`add_tags`, `remove_tags`), running or queued."""
    task = _need_client(ctx).get_task(task_id)
    relative = _relative_changes(
        task, fields, clear, more_minutes, (also_wait_for, stop_waiting_for), (add_tags, remove_tags)
    )
    if isinstance(relative, str):
        return relative
    fields, clear = relative
    changes = _asked_changes(fields, start_now, clear=clear)
    if isinstance(changes, str):
        return changes
    if task.get("status") == "running":
        try:
            check_running_changes(task_id, changes)
        except ConflictError as exc:
            return _error(str(exc))
    elif task.get("status") != "queued":
        return _error(
            f"task {task_id} already {task.get('status')}; only a queued or running task can be changed"
        )
    try:
        diff = {
            key: list(values)
            for key, values in spec_differences(task_id, task.get("spec") or {}, changes).items()
        }
    except SpecError as exc:
        return _error(exc.message, exc.errors)
    if not diff:
        return _error(f"task {task_id} already has {_changes_words(changes)}")
    refused = _parents_refused(_need_client(ctx), task_id, {key: changes[key] for key in diff}) or (
        _change_refused_by_the_api(_need_client(ctx), task_id, {key: changes[key] for key in diff})
    )
    if refused is not None:
        return refused
    card = {"kind": "change", "task_id": task_id, "task": task_view(task), "changes": diff}
    after = changed_spec(task_id, task.get("spec") or {}, changes).model_dump(mode="json")
    _add_warnings(card, deadline_warnings(after, ctx.now(), ctx.offpeak))
    ctx.actions.add("change", card, {"task_id": task_id, "changes": {key: changes[key] for key in diff}})
    return _result(pending_action=card, note="Nothing has been changed: the person must confirm the card.")


def _relative_changes(
    task: Mapping[str, Any],
    fields: dict[str, Any],
    clear: list[str] | None,
    more_minutes: float | None,
    waits: tuple[list[int] | None, list[int] | None],
    tags: tuple[list[str] | None, list[str] | None],
) -> tuple[dict[str, Any], list[str] | None] | str:
    """The fields and `clear` asked relative to what the task has now: tasks added to or taken from what it
    waits for, tags added or taken away, minutes added to its time limit; or the error."""
    more, fewer = waits
    if more or fewer:
        changed = _waits_changed(task, more or [], fewer or [], fields)
        if isinstance(changed, str):
            return changed
        fields, clear = {**fields, **changed[0]}, [*(clear or []), *changed[1]]
    added, removed = tags
    if added or removed:
        try:
            current = (task.get("spec") or {}).get("tags") or []
            fields = {**fields, "tags": retagged(int(task["id"]), current, added or [], removed or [])}
        except SpecError as exc:
            return _error(exc.message)
    if more_minutes is not None:
        limit = _more_time(task, more_minutes, fields)
        if isinstance(limit, str):
            return limit
        fields = {**fields, "time_limit_minutes": limit}
    return fields, clear


def _waits_changed(
    task: Mapping[str, Any], more: list[int], fewer: list[int], fields: Mapping[str, Any]
) -> tuple[dict[str, list[int]], list[str]] | str:
    """The task's `depends_on` with `more` added and its parent lists without `fewer`: the lists that
    change, and those left empty (to clear); or the error: a parent it does not wait for, or a list also
    given outright."""
    given = next((name for name in PARENT_FIELDS if fields.get(name) is not None), None)
    if given is not None:
        return _error(
            f"{given} lists every task it waits for: give it, or tasks to add or take away, not both"
        )
    spec = task.get("spec") or {}
    before = {name: list(spec.get(name) or []) for name in PARENT_FIELDS}
    waited = [parent for name in PARENT_FIELDS for parent in before[name]]
    unknown = [str(parent) for parent in fewer if parent not in waited]
    if unknown:
        now = ", ".join(f"task {parent}" for parent in waited) or "no task"
        return _error(
            f"task {task.get('id')} does not wait for task {', '.join(unknown)}: it waits for {now}"
        )
    after = {
        "depends_on": [*before["depends_on"], *(p for p in more if p not in before["depends_on"])],
        "depends_on_any": list(before["depends_on_any"]),
    }
    after = {name: [parent for parent in parents if parent not in fewer] for name, parents in after.items()}
    changed = {name: parents for name, parents in after.items() if parents and parents != before[name]}
    if more and not changed.get("depends_on"):  # "also wait for 13" when it already does: nothing new
        changed["depends_on"] = after["depends_on"]
    return changed, [name for name in PARENT_FIELDS if before[name] and not after[name]]


def _change_refused_by_the_api(
    client: AssistantClient, task_id: int, changes: Mapping[str, Any]
) -> str | None:
    """The error the API would answer this change with, asked without changing anything (`PATCH
    ?dry_run=true`): what only the server knows, the owner's priority limits, before a card is shown. Its
    times are left out: the card checked them against the conversation's clock."""
    return _refused_by_a_dry_run(lambda timeless: client.change(task_id, timeless, dry_run=True), changes)


def _sweep_change_refused_by_the_api(
    client: AssistantClient, sweep_id: int, changes: Mapping[str, Any]
) -> str | None:
    """As `_change_refused_by_the_api`, for the same change to every queued task of a sweep (`PATCH
    /sweeps/{id}?dry_run=true`): the owner's priority limit counted over the whole sweep, say."""
    return _refused_by_a_dry_run(
        lambda timeless: client.change_sweep(sweep_id, timeless, dry_run=True), changes
    )


def _refused_by_a_dry_run(ask: Callable[[dict[str, Any]], object], changes: Mapping[str, Any]) -> str | None:
    """The error a dry run of `changes` (less their times) is answered with; None when accepted, when only
    times change, or when the API cannot say (confirming will)."""
    timeless = {key: value for key, value in changes.items() if key not in ("not_before", "deadline")}
    if not timeless:
        return None
    try:
        ask(timeless)
    except ClientError as exc:
        if exc.status_code == 0 or exc.status_code >= 500:
            return None  # confirming will say; the card is still worth showing
        return _error(exc.message, exc.errors)
    return None


def _parents_refused(client: AssistantClient, task_id: int, changes: Mapping[str, Any]) -> str | None:
    """The error the cluster would give a change of what task `task_id` waits for (a parent missing or
    failed, or a loop of tasks waiting for each other), found before the card is shown; None when fine."""
    parents = {name: changes[name] for name in PARENT_FIELDS if changes.get(name)}
    if not parents:
        return None

    @functools.cache  # each parent is read once: its status, then what it waits for
    def looked_up(parent: int) -> dict[str, Any] | None:
        try:
            return client.get_task(parent)
        except ClientError:
            return None

    def waits_of(parent: int) -> list[int]:
        row = looked_up(parent)
        return [] if row is None else waited_for(str(row.get("status")), row.get("spec"))

    try:
        for name, ids in parents.items():
            for parent in ids:
                row = looked_up(parent)
                refuse_parent(name, parent, None if row is None else str(row.get("status")))
        refuse_dependency_loop(task_id, parents, waits_of)
    except SpecError as exc:
        return _error(exc.message, exc.errors)
    return None


def _more_time(task: Mapping[str, Any], more_minutes: float, fields: Mapping[str, Any]) -> float | str:
    """The time limit `more_minutes` past the task's own, or the error (it has none; a limit given too)."""
    if fields.get("time_limit_minutes") is not None:
        return _error("a time limit of its own, or more time on the one it has: not both")
    current = (task.get("spec") or {}).get("time_limit_minutes")
    if current is None:
        return _error(
            f"task {task.get('id')} has no time limit, so it needs no more time: it runs until it ends"
        )
    return float(current) + more_minutes


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
    """Where your task (or your team's queued tasks) stand in the queue: each one's place, why it waits and
    when it should start."""
    client = _need_client(ctx)
    if task_id is not None:
        task = client.get_task(task_id)
        if task["status"] != "queued":
            return _result(
                entries=[], task=task_view(task), note=f"task {task_id} is {task['status']}, not queued"
            )
    queue = client.queue()
    shown = [e for e in queue.get("entries", []) if task_id is None or e["task"]["id"] == task_id]
    # an admin sees every team's tasks: which are the asker's own ("where is my job"; one named is asked for)
    me = client.me() if shown and task_id is None else {}
    entries = [
        {
            "task_id": e["task"]["id"],
            "name": as_data(e["task"]["name"], 120),
            "user": as_data(e["task"].get("user") or "", 64),
            "yours": not me
            or (e["task"].get("user"), e["task"].get("team")) == (me.get("user"), me.get("team")),
            "position": e["position"],
            "reason": as_data(e["reason"]) if e.get("reason") else None,
            "estimated_start": e.get("estimated_start"),
        }
        for e in shown
    ]
    return _result(entries=entries[:10], length=queue.get("length"))


def estimate_wait(
    ctx: ToolContext,
    task_id: int | None = None,
    gpus: int | None = None,
    gpu_memory_gb: float | None = None,
    estimated_minutes: float | None = None,
    offpeak: bool = False,
    gpu_model: str | None = None,
    node: str | None = None,
) -> str:
    """Estimated start (with its range and reason) for a task, or for a task of the given size (run time,
    GPU model or node, and only in the off-peak window with `offpeak`: "tonight"); with its expected energy
    and cost at the tariff's rates from that start."""
    client = _need_client(ctx)
    sized = (gpus, gpu_memory_gb, estimated_minutes, gpu_model, node)
    if task_id is None and all(value is None for value in sized):
        queued = client.list_tasks(status="queued", limit=1)
        task_id = queued[0]["id"] if queued else None
        gpus = None if queued else 1
    estimate = client.estimate(
        task_id, gpus, gpu_memory_gb, estimated_minutes, offpeak=offpeak, gpu_model=gpu_model, node=node
    )
    estimate["reason"] = as_data(estimate.get("reason", ""))
    if task_id is not None:
        return _result(task_id=task_id, estimate=estimate)
    asked = {  # the task it priced
        "gpus": 1 if gpus is None else gpus,
        "gpu_memory_gb": gpu_memory_gb,
        **({"gpu_model": as_data(gpu_model, 64)} if gpu_model else {}),
        **({"node": as_data(node, 64)} if node else {}),
    }
    return _result(task_id=None, asked=asked, estimate=estimate)


LIST_LIMIT = 20  # tasks one list_tasks answer holds, newest first


def _search_window(ctx: ToolContext, since: str | None, until: str | None) -> dict[str, str | None]:
    """`since` and `until` as ISO 8601 with offset: words ("yesterday", "last week", "上周") read against
    the assistant's clock in the cluster's zone, a day as until its last moment; `SpecError` when unread."""
    now, zone = ctx.local_now()
    window: dict[str, str | None] = {"since": None, "until": None}
    for key, text, read in (("since", since, resolve_since), ("until", until, resolve_until)):
        if text is not None and text.strip():
            try:
                window[key] = read(text, now, zone).isoformat()
            except SpecError as exc:
                raise SpecError(f"{key}: {exc.message}", [{"field": key, "message": exc.message}]) from None
    return window


_TYPED = ("name", "tag", "node", "user")  # what the person typed: data for the model


def list_tasks(
    ctx: ToolContext,
    status: str | None = None,
    mine: bool = False,
    held: bool | None = None,
    sweep_id: int | None = None,
    **search: str | None,
) -> str:
    """Your team's tasks (`mine`: your own), newest first: optionally one status, submitted `since`/`until`
    (ISO 8601 or words like yesterday, last week, 上周), a `name` (train.py* for every name starting so), a
    `tag`, a `node` one of its attempts ran on, one sweep's (`sweep_id`). `total` says how many match in
    all; `searched` what was asked, times resolved."""
    client = _need_client(ctx)
    try:
        window = _search_window(ctx, search.pop("since", None), search.pop("until", None))
    except SpecError as exc:
        return _error(exc.message, exc.errors)
    teammate = search.pop("submitted_by", None)
    filters = {"status": status, **window, **search, "user": teammate}
    if held is not None:
        filters["held"] = "true" if held else "false"
    if sweep_id is not None:
        filters["sweep_id"] = str(sweep_id)
    if mine:  # "my last job": the person's own (the token's, as GET /me says), not the team's
        filters["user"] = str(client.me()["user"])
    page = client.task_page(filters, limit=LIST_LIMIT)
    tasks = page.get("tasks", [])
    total = int(page.get("total", len(tasks)))
    searched = {key: value for key, value in filters.items() if value is not None}
    return _result(
        tasks=[task_view(t) for t in tasks],
        count=len(tasks),
        total=total,
        more=total > len(tasks),
        searched={key: as_data(v, 130) if key in _TYPED else v for key, v in searched.items()},
    )


_USAGE_FIELDS = (
    "attempts", "gpu_hours", "energy_kwh", "energy_source", "offpeak_share", "cost", "currency",
    "peak_gpu_memory_mib", "requested_gpu_memory_mib", "mean_utilization_pct", "cpu_hours",
)  # fmt: skip


def usage_view(usage: Mapping[str, Any]) -> dict[str, Any]:
    """What an ended task used (GPU-hours, energy, cost, peak memory), as the model sees it: numbers only."""
    return {key: usage[key] for key in _USAGE_FIELDS if usage.get(key) is not None}


def explain_task(ctx: ToolContext, task_id: int) -> str:
    """Why a task is where it is: status, position, reason, estimated start (log tail if failed); once it
    has ended, when it ran ("how long did 12 take") and what it used: GPU-hours, energy, cost and peak GPU
    memory ("what did task 9 cost")."""
    client = _need_client(ctx)
    task: dict[str, Any] | None = None
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
    if info.get("command"):  # the person's own text: data, not instructions
        info["command"] = as_data(info["command"], 200)
    if info.get("tags"):
        info["tags"] = [as_data(str(tag), 64) for tag in info["tags"]]
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
    if info.get("status") in FINAL_STATUSES:
        row = task or client.get_task(task_id)
        if row.get("usage"):
            result["usage"] = usage_view(row["usage"])
        if row.get("started_at") and row.get("finished_at"):  # "how long did 12 take", "... wait"
            result["ran"] = {
                key: row[key]
                for key in ("submitted_at", "started_at", "finished_at", "attempts")
                if row.get(key)
            }
    return _result(**result)


def _outside_view(process: dict[str, Any]) -> dict[str, Any]:
    """A process outside nightshift as the model sees it: its owner and command are data, not orders."""
    used = process.get("used_mib")
    return {
        "pid": process.get("pid"),
        "user": as_data(process["user"], 40) if process.get("user") else None,
        "command": as_data(process["command"], 120) if process.get("command") else None,
        "used_gb": None if used is None else round(used / 1024, 1),
    }


def _room_to_share(gpu: dict[str, Any]) -> dict[str, Any] | None:
    """A GPU that only sharing tasks hold, with part of it left for another sharer: where, and how much is
    taken (so "is there a free GPU?" is not answered 'none' while half of one waits for a half-GPU task)."""
    tasks, shares = gpu.get("tasks") or [], gpu.get("shares") or {}
    if not tasks or len(shares) < len(tasks):  # idle, or a task holds it whole
        return None
    taken = round(sum(float(part) for part in shares.values()), 2)
    return {"node": gpu["node"], "index": gpu["index"], "taken": taken} if taken < 1 else None


def _out_of_service(gpu: dict[str, Any], nodes: dict[str, dict[str, Any]]) -> str | None:
    """Why a GPU takes no new tasks: its node drained or down, or its own reason (too hot, memory left
    behind, unreadable), in the words `explain` uses; None when it is in service."""
    node = nodes.get(gpu["node"], {})
    if node.get("drained"):
        return f"node {gpu['node']} is drained"
    if not node.get("alive", True):
        silent_s = float(node.get("heartbeat_age_s") or 0)
        return f"node {gpu['node']} is down (no heartbeat for {silent_s:.0f} s)"
    why = gpu.get("out_of_service")
    return str(why) if why else None


def _grouped_reasons(out: Mapping[str, str]) -> list[dict[str, Any]]:
    """Each reason once, with the GPUs (`node:index`) it holds out: a drained node's GPUs share one."""
    grouped: dict[str, list[str]] = {}
    for where, why in out.items():
        grouped.setdefault(why, []).append(where)
    return [{"why": why, "gpus": where} for why, where in grouped.items()]


def _free_where(free: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The free GPUs by node and free memory: `[{"node": "gpu-box", "gpus": [0, 1], "free_gb": 80.0}]`."""
    groups: dict[tuple[str, float], list[int]] = {}
    for g in free:
        groups.setdefault((g["node"], round(g.get("memory_free_mib", 0) / 1024, 1)), []).append(g["index"])
    return [{"node": node, "gpus": sorted(indices), "free_gb": gb} for (node, gb), indices in groups.items()]


def cluster_status(ctx: ToolContext) -> str:
    """Every GPU: memory free/total, utilization, which tasks hold it, why it is out of service if it is;
    plus the queue length. A GPU out of service is not counted free."""
    client = _need_client(ctx)
    view = client.gpus()
    gpus = view.get("gpus", [])
    nodes = {node["name"]: node for node in view.get("nodes", [])}
    out = [(g, _out_of_service(g, nodes)) for g in gpus]
    busy = sum(1 for g in gpus if g.get("tasks"))
    idle_out = {f"{g['node']}:{g['index']}": why for g, why in out if why and not g.get("tasks")}
    free = [g for g, why in out if why is None and not g.get("tasks")]
    free_gb = sum(g.get("memory_free_mib", 0) for g in free) / 1024
    rows = [
        {
            "node": g["node"],
            "index": g["index"],
            "name": g.get("name"),
            "free_gb": round(g["memory_free_mib"] / 1024, 1),
            "total_gb": round(g["memory_total_mib"] / 1024, 1),
            "util_pct": g.get("utilization_pct"),
            "tasks": g.get("tasks", []),
            # the part of the GPU each sharing task holds (gpu_fraction < 1), by task id
            "shares": g.get("shares") or {},
            # processes that are no task of the queue (a notebook): their memory is not free
            "outside": [_outside_view(process) for process in (g.get("outside") or [])[:3]],
            "out_of_service": why,
        }
        for g, why in out
    ]
    queued = client.queue(limit=1).get("length", 0)
    summary = {
        "gpus": len(gpus),
        "busy": busy,
        "free": len(free),
        "out_of_service": _grouped_reasons(idle_out),
        "shared_with_room": [room for room in map(_room_to_share, gpus) if room is not None],
        "free_memory_gb": round(free_gb, 1),
        "free_where": _free_where(free),  # which GPUs are free: "which GPUs are free?"
        "queued": queued,
        "nodes": len(view.get("nodes", [])),
        # nodes kept for one team for a while, and maintenance set (their GPUs take no other work then)
        "reserved_for_teams": [
            {
                "node": n["name"],
                "team": held["team"],
                "from": held["start"],
                "until": held["end"],
                # daily, weekdays, weekends, weekly: from..until is its next time
                "repeat": held.get("repeat"),
                "gpus": held.get("gpus"),  # the GPUs it holds; None: all of the node's
            }
            for n in nodes.values()
            for held in n.get("reservations") or []
        ],
        "maintenance": [
            {
                "node": n["name"],
                "at": n["drain_at"],
                "until": n.get("drain_until"),
                "begun": n["drained"],
                "repeat": n.get("drain_repeat"),  # comes round again: at..until is its current or next time
            }
            for n in nodes.values()
            if n.get("drain_at")
        ],
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


# --- a whole sweep ------------------------------------------------------------------------------------

SWEEP_ROWS = 10  # runs one comparison answer holds, best first (and failed task ids one status names)
LEFT_STATUSES = ("queued", "running")


@contextmanager
def _sweep_named(sweep_id: int) -> Iterator[None]:
    """A 404 about the sweep (missing, or another team's: the API answers both alike) as `no sweep N`."""
    try:
        yield
    except Unavailable:
        raise
    except ClientError as exc:
        if exc.status_code == 404:
            raise ClientError(404, f"no sweep {sweep_id}") from None
        raise


def _left(counts: Mapping[str, int]) -> int:
    """How many of a sweep's tasks have not ended (queued or running)."""
    return sum(int(counts.get(status, 0)) for status in LEFT_STATUSES)


def _counts_text(counts: Mapping[str, int]) -> str:
    """`1 failed, 3 succeeded`: a sweep's tasks by status, as the API's messages say them."""
    return ", ".join(f"{count} {status}" for status, count in sorted(counts.items()) if count)


def sweep_view(sweep: dict[str, Any]) -> dict[str, Any]:
    """A sweep as the model sees it: its tasks by status, how many are left and held, which failed; its
    name and parameter names (users wrote them) as data."""
    counts = {str(status): int(count) for status, count in (sweep.get("counts") or {}).items() if count}
    view: dict[str, Any] = {
        "id": sweep.get("id"),
        "kind": sweep.get("kind"),
        "name": as_data(sweep.get("name", ""), 120),
        "status": sweep.get("status"),
        "tasks": sweep.get("tasks_count"),
        "counts": counts,
        "left": _left(counts),
        "held": sweep.get("held", 0),
        "waiting": sweep.get("waiting", 0),
        "max_running": sweep.get("max_running"),
        "params": as_data(", ".join(map(str, sweep.get("params") or [])), 200),
    }
    failed = [task.get("id") for task in sweep.get("tasks") or [] if task.get("status") == "failed"]
    if failed:
        view["failed_tasks"] = failed[:SWEEP_ROWS]
    return {key: value for key, value in view.items() if value is not None}


def _pairs(mapping: Mapping[str, Any] | None) -> str:
    """`lr=0.001, seed=1`: a run's parameters or metrics as one line of data (users and jobs wrote them)."""
    return as_data(", ".join(f"{key}={value}" for key, value in (mapping or {}).items()), 200)


def _number(value: Any) -> float | int | None:
    """A metric's value when it is a number (a metric may also be text or a flag)."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def result_row(row: dict[str, Any], sort: str | None) -> dict[str, Any]:
    """One run of a comparison: its task, status, whether it is the best, its value of the sorted metric,
    and its parameters and metrics as data."""
    return {
        "task_id": row.get("task_id"),
        "status": row.get("status"),
        "best": bool(row.get("best")),
        "value": _number((row.get("metrics") or {}).get(sort)) if sort else None,
        "params": _pairs(row.get("params")),
        "metrics": _pairs(row.get("metrics")),
    }


def comparison_view(table: dict[str, Any]) -> dict[str, Any]:
    """The API's comparison as the model sees it, in the API's order with its best row (smaller- or
    larger-is-better is the server's rule, never decided here): the first rows, how many runs there are
    and how many reported the sorted metric."""
    sort = table.get("sort")
    rows = [result_row(row, sort) for row in table.get("rows") or []]
    return {
        "sort": as_data(sort, 64) if sort else None,
        "goal": table.get("goal"),
        "metrics": as_data(", ".join(map(str, table.get("metrics") or [])), 300),
        "rows": rows[:SWEEP_ROWS],
        "runs": len(rows),
        "reported": sum(1 for row in rows if row["value"] is not None),
        "best": next((row for row in rows if row["best"]), None),
    }


def sweep_status(ctx: ToolContext, sweep_id: int | None = None) -> str:
    """How one of your sweeps is doing: its tasks by status, how many are left (queued or running) or
    held, which failed, and the best run so far (by its first metric) when runs reported metrics. Without
    `sweep_id`: your most recent sweep (`latest` says so; tell the person which one it is)."""
    client = _need_client(ctx)
    latest = sweep_id is None
    if sweep_id is None:
        sweep_id = _latest_sweep_id(client)
        if sweep_id is None:
            return _error("you have no sweeps yet: a spec with a `sweep` grid submits one")
    with _sweep_named(sweep_id):
        sweep = client.sweep(sweep_id)
        reported = any(task.get("metrics") for task in sweep.get("tasks") or [])
        table = comparison_view(client.results(sweep_id=sweep_id)) if reported else None
    best = None
    if table is not None and table["best"] is not None:
        best = {**table["best"], "metric": table["sort"], "goal": table["goal"]}
    return _result(sweep=sweep_view(sweep), best=best, **({"latest": True} if latest else {}))


def _latest_sweep_id(client: AssistantClient) -> int | None:
    """The id of the person's own most recent sweep (`GET /sweeps?user=<them>&limit=1`), or None."""
    sweeps = client.sweeps(limit=1, user=client.me()["user"])
    return int(sweeps[0]["id"]) if sweeps else None


def compare_results(
    ctx: ToolContext,
    sweep_id: int | None = None,
    tag: str | None = None,
    metric: str | None = None,
    maximize: bool | None = None,
) -> str:
    """Compare the runs of one of your sweeps, or of your team's tasks with a tag: parameters against
    metrics, sorted by `metric` (default: the first one reported; smaller is better for names like
    loss/error/time, larger otherwise, unless `maximize` says), best first; `best` is the best run that
    succeeded. Neither a sweep nor a tag: your latest sweep's runs ("which lr was best?")."""
    if sweep_id is not None and tag is not None:
        return _error("say which runs to compare: a sweep (its number) or a tag, one of the two")
    goal = None if maximize is None else ("max" if maximize else "min")
    client = _need_client(ctx)
    if sweep_id is None and tag is None:
        sweep_id = _latest_sweep_id(client)
        if sweep_id is None:
            return _error("you have no sweep yet: say which runs to compare (a tag), or submit a sweep")
    if sweep_id is None:
        return _result(
            tag=as_data(tag, 70), **comparison_view(client.results(tag=tag, sort=metric, goal=goal))
        )
    with _sweep_named(sweep_id):
        table = client.results(sweep_id=sweep_id, sort=metric, goal=goal)
    return _result(sweep_id=sweep_id, **comparison_view(table))


def cancel_sweep(ctx: ToolContext, sweep_id: int) -> str:
    """Prepare the cancellation of one of your sweeps (its queued tasks cancelled, its running ones
    stopped, those that ended kept): returns a card the person must confirm. A sweep whose tasks have all
    ended gets no card."""
    sweep: dict[str, Any] | None = None
    if ctx.client is not None:
        with _sweep_named(sweep_id):
            sweep = ctx.client.sweep(sweep_id)
        counts = sweep.get("counts") or {}
        if not _left(counts):
            return _error(f"sweep {sweep_id} has ended: nothing to cancel ({_counts_text(counts)})")
    card = {"kind": "cancel_sweep", "sweep_id": sweep_id, "sweep": sweep_view(sweep) if sweep else None}
    ctx.actions.add("cancel_sweep", card, {"sweep_id": sweep_id})
    return _result(pending_action=card, note="Nothing has been cancelled: the person must confirm the card.")


def rerun_sweep(ctx: ToolContext, sweep_id: int, status: list[str] | None = None) -> str:
    """Prepare running again the tasks of one of your sweeps that failed (or ended as `status` lists): each
    gets a new task with its parameters, in its place in the sweep; returns a card the person must
    confirm. A sweep with no such task gets no card."""
    statuses = list(dict.fromkeys(status or ["failed"]))
    sweep: dict[str, Any] | None = None
    chosen: list[dict[str, Any]] = []
    if ctx.client is not None:
        with _sweep_named(sweep_id):
            sweep = ctx.client.sweep(sweep_id)
        chosen = [task for task in sweep.get("tasks") or [] if task.get("status") in statuses]
        if not chosen:
            counts = _counts_text(sweep.get("counts") or {})
            return _error(f"sweep {sweep_id} has no {' or '.join(statuses)} task to run again ({counts})")
    card = {
        "kind": "rerun_sweep",
        "sweep_id": sweep_id,
        "status": statuses,
        "count": len(chosen) or None,
        "tasks": [{"id": task["id"], "params": _pairs(task.get("params"))} for task in chosen[:SWEEP_ROWS]],
        "sweep": sweep_view(sweep) if sweep else None,
    }
    ctx.actions.add("rerun_sweep", card, {"sweep_id": sweep_id, "status": statuses})
    return _result(pending_action=card, note="Nothing has been run again: the person must confirm the card.")


def change_sweep(
    ctx: ToolContext,
    sweep_id: int,
    start_now: bool = False,
    lift_max_running: bool = False,
    clear: list[str] | None = None,
    **fields: Any,
) -> str:
    """Prepare the same change to every queued task of one of your sweeps (priority, start time, off-peak,
    deadline, limits, retries; `clear` puts fields back to their defaults: "remove the time limit of sweep
    3" is clear=["time_limit_minutes"], a change, not a cancel) and/or how many of it run at once
    (`max_running`; `lift_max_running` removes that limit): returns a card the person must confirm. Running
    and ended tasks stay as they are; a sweep with no queued task left gets no card."""
    changes = _asked_changes(fields, start_now, lift_max_running, clear, CLEARABLE_OF_SWEEP)
    if isinstance(changes, str):
        return changes
    with _sweep_named(sweep_id):
        sweep = _need_client(ctx).sweep(sweep_id)
    queued = [task for task in sweep.get("tasks") or [] if task.get("status") == "queued"]
    if not queued:
        counts = _counts_text(sweep.get("counts") or {})
        return _error(f"sweep {sweep_id} has no queued task left: nothing to change ({counts})")
    try:
        diff = _sweep_differences(sweep, queued, changes)
    except SpecError as exc:
        return _error(exc.message, exc.errors)
    if not diff:
        return _error(f"sweep {sweep_id} already has {_changes_words(changes)}")
    refused = _sweep_change_refused_by_the_api(
        _need_client(ctx), sweep_id, {key: changes[key] for key in diff}
    )
    if refused is not None:
        return refused
    card = {
        "kind": "change_sweep",
        "sweep_id": sweep_id,
        "sweep": sweep_view(sweep),
        "queued": len(queued),
        "changes": diff,
    }
    task_changes = {key: value for key, value in changes.items() if key != "max_running"}
    if task_changes:  # a change of how many run at once alone changes no task's spec
        spec = changed_spec(queued[0]["id"], queued[0].get("spec") or {}, task_changes)
        _add_warnings(card, deadline_warnings(spec.model_dump(mode="json"), ctx.now(), ctx.offpeak))
    ctx.actions.add(
        "change_sweep", card, {"sweep_id": sweep_id, "changes": {key: changes[key] for key in diff}}
    )
    return _result(pending_action=card, note="Nothing has been changed: the person must confirm the card.")


def _sweep_differences(
    sweep: Mapping[str, Any], queued: list[dict[str, Any]], changes: Mapping[str, Any]
) -> dict[str, list[Any]]:
    """Each field the change alters in some queued task (checked in each: `SpecError`), as [before, after]
    in the first task it alters; `max_running` as the sweep's [before, after] when it differs."""
    task_changes = {key: value for key, value in changes.items() if key != "max_running"}
    diff: dict[str, list[Any]] = {}
    for task in queued:
        found = (
            spec_differences(int(task["id"]), task.get("spec") or {}, task_changes) if task_changes else {}
        )
        for key, values in found.items():
            diff.setdefault(key, list(values))
    if "max_running" in changes and changes["max_running"] != sweep.get("max_running"):
        diff["max_running"] = [sweep.get("max_running"), changes["max_running"]]
    return diff


def hold_sweep(ctx: ToolContext, sweep_id: int) -> str:
    """Hold back every queued task of one of your sweeps: they stay queued, keep their age and start only
    once released (running and ended ones go on). Acts at once (release_sweep undoes it)."""
    client = _need_client(ctx)
    with _sweep_named(sweep_id):
        if ctx.dry_run:
            return _result(would_hold=sweep_view(client.sweep(sweep_id)), note="dry run: nothing was changed")
        return _result(held=sweep_view(client.hold_sweep(sweep_id)))


def release_sweep(ctx: ToolContext, sweep_id: int) -> str:
    """Let every held task of one of your sweeps start again, each with the priority and age it had. Acts
    at once."""
    client = _need_client(ctx)
    with _sweep_named(sweep_id):
        if ctx.dry_run:
            view = sweep_view(client.sweep(sweep_id))
            return _result(would_release=view, note="dry run: nothing was changed")
        return _result(released=sweep_view(client.release_sweep(sweep_id)))


def _bind(ctx: ToolContext, fn: Callable[..., str]) -> Callable[..., str]:
    def run(**kwargs: Any) -> str:
        return fn(ctx, **kwargs)

    run.__name__ = fn.__name__
    run.__doc__ = fn.__doc__
    return _guard(run)


def make_tools(ctx: ToolContext) -> list[BaseTool]:
    """The tools bound to one person's session: the brief's nine, change/hold/release of a queued task,
    `night_summary`, and a whole sweep's status, results, cancel, rerun, change, hold and release."""
    specs: list[tuple[Callable[..., str], type[BaseModel]]] = [
        (submit_task, SubmitArgs),
        (queue_position, OptionalTaskArgs),
        (estimate_wait, EstimateArgs),
        (list_tasks, ListArgs),
        (cancel_task, TaskIdArgs),
        (cancel_tasks, CancelTasksArgs),
        (requeue_task, TaskIdArgs),
        (change_task, ChangeArgs),
        (hold_task, TaskIdArgs),
        (release_task, TaskIdArgs),
        (explain_task, TaskIdArgs),
        (cluster_status, NoArgs),
        (utilization_report, UtilizationArgs),
        (night_summary, NightArgs),
        (quota_status, QuotaArgs),
        (sweep_status, SweepStatusArgs),
        (compare_results, CompareArgs),
        (cancel_sweep, SweepIdArgs),
        (rerun_sweep, RerunSweepArgs),
        (change_sweep, ChangeSweepArgs),
        (hold_sweep, SweepIdArgs),
        (release_sweep, SweepIdArgs),
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
    "cancel_tasks",
    "requeue_task",
    "change_task",
    "hold_task",
    "release_task",
    "explain_task",
    "cluster_status",
    "utilization_report",
    "night_summary",
    "quota_status",
    "sweep_status",
    "compare_results",
    "cancel_sweep",
    "rerun_sweep",
    "change_sweep",
    "hold_sweep",
    "release_sweep",
)
# the tools that make a card to confirm: a call of one is a new request for an action
CARD_TOOLS = frozenset(
    {
        "submit_task",
        "cancel_task",
        "cancel_tasks",
        "requeue_task",
        "change_task",
        "cancel_sweep",
        "rerun_sweep",
        "change_sweep",
    }
)
