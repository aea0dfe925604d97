"""Pending actions: what a submit, cancel (of a task or a sweep) or change *would* do, shown as a card that
the person confirms.

Nothing here changes the cluster. `build_submit_card` validates the spec locally (`parse_spec`, the
cluster's limits) and, where the server has them, asks the estimate and quota endpoints; `ActionStore`
keeps the cards of one chat session until the person confirms or drops them.
"""

from __future__ import annotations

import secrets
import shlex
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from api.cli.command_line import words_to_paste
from api.client import ClientError
from assistant.client import AssistantClient
from scheduler.errors import SpecError
from scheduler.nodes import NodeGpu, NodeState
from scheduler.policy.config import PolicyConfig
from scheduler.policy.quotas import gpu_weight
from scheduler.policy.reasons import amount
from scheduler.policy.types import QueuedTask
from scheduler.policy.windows import offpeak_start_s, parse_windows, zone
from scheduler.spec import TaskSpec, parse_spec, spec_gpu_fraction
from scheduler.submission import check_against_cluster, check_times_ahead, deadline_out_of_reach, resolve
from scheduler.sweeps import expand

SWEEP_EXAMPLES = 3
PARENT_FIELDS = frozenset({"depends_on", "depends_on_any"})  # a 422 on these: no such parent (or not yours)

FALLBACK_GPU_POWER_W = 300.0
ActionKind = Literal[
    "submit", "cancel", "cancel_tasks", "requeue", "change", "cancel_sweep", "rerun_sweep", "change_sweep"
]


@dataclass
class PendingAction:
    """A submit, cancel, change, sweep cancel or sweep change waiting for the person's click; `payload` is
    exactly what will be sent."""

    action_id: str
    kind: ActionKind
    card: dict[str, Any]
    payload: dict[str, Any] = field(default_factory=dict)


class ActionStore:
    """The pending actions of one chat session (thread-safe); an action can be confirmed only once."""

    def __init__(self) -> None:
        self._actions: dict[str, PendingAction] = {}
        self._lock = threading.Lock()

    def add(self, kind: ActionKind, card: dict[str, Any], payload: dict[str, Any]) -> PendingAction:
        """Store a new pending action with an unguessable id."""
        action = PendingAction(f"act_{secrets.token_hex(8)}", kind, card, payload)
        action.card["action_id"] = action.action_id
        with self._lock:
            self._actions[action.action_id] = action
        return action

    def take(self, action_id: str) -> PendingAction | None:
        """Remove and return an action (None if unknown or already used)."""
        with self._lock:
            return self._actions.pop(action_id, None)

    def pending(self) -> list[PendingAction]:
        """Actions still waiting, oldest first."""
        with self._lock:
            return list(self._actions.values())


class CardError(Exception):
    """Raised when a spec cannot be accepted; `errors` lists `{field, message}` items."""

    def __init__(self, message: str, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.errors = errors or []


def earliest_start(
    now: datetime, not_before: datetime | None, offpeak: bool, offpeak_windows: str, run_minutes: float
) -> tuple[datetime, str | None]:
    """When the spec allows a start: not before `not_before`, and with `offpeak` inside an off-peak window
    with room left for its run (the scheduler's own rule, `offpeak_start_s`)."""
    start = max(now, not_before.astimezone(now.tzinfo)) if not_before else now
    if not offpeak:
        return start, None
    tz = start.tzinfo or UTC
    start_s = offpeak_start_s(parse_windows(offpeak_windows), start.timestamp(), tz, run_minutes * 60)
    if start_s is not None and start_s > start.timestamp():
        start = datetime.fromtimestamp(start_s, tz)
    return start, "off-peak"


def start_label(
    start: datetime, now: datetime, why: str | None, immediate: bool, cpu_only: bool = False
) -> str:
    """`tonight 23:00, off-peak` / `tomorrow 09:00` / `as soon as GPUs are free` (`right away (CPU only)` for
    a task with no GPU to wait for)."""
    if immediate and why is None:
        return "right away (CPU only)" if cpu_only else "as soon as GPUs are free"
    days = (start.date() - now.date()).days
    day = {0: "tonight" if start.hour >= 18 else "today", 1: "tomorrow"}.get(days, f"{start:%a %m-%d}")
    if days == 1 and start.hour < 7 and why:
        day = "tonight"
    return f"{day} {start:%H:%M}" + (f", {why}" if why else "")


def zone_name(moment: datetime) -> str:
    """The IANA name of `moment`'s zone, as the policy reads one: its own (`Asia/Shanghai`), else `Etc/GMT-8`
    for a fixed UTC+08:00; `UTC` for an offset no such name holds (part of an hour)."""
    key = getattr(moment.tzinfo, "key", None)
    if key:
        return str(key)
    hours, rest = divmod((moment.utcoffset() or timedelta(0)).total_seconds(), 3600)
    name = f"Etc/GMT{-int(hours):+d}" if hours and not rest else "UTC"
    try:
        zone(name)
    except ValueError:
        return "UTC"
    return name


def _epoch_s(value: Any, now: datetime) -> float | None:
    """A spec time (ISO 8601 text or datetime) in epoch seconds; one without an offset is read on the clock
    of `now` (the cluster's zone), as the API reads it."""
    if not value:
        return None
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return (moment if moment.tzinfo else moment.replace(tzinfo=now.tzinfo)).timestamp()


def _minutes_s(value: Any) -> float | None:
    """Minutes of a spec (`estimated_minutes`, `time_limit_minutes`) in seconds; None when not given."""
    return float(value) * 60 if value else None


def deadline_warnings(spec: Mapping[str, Any], now: datetime, offpeak_windows: str) -> list[str]:
    """What the API will answer in `warnings` when this spec is submitted (or a queued task changed to it):
    `submission.deadline_out_of_reach`'s note when it cannot finish by its deadline even if it started as
    early as it may; [] when it can, or has no deadline (a deadline is a goal: the card may still be
    confirmed)."""
    deadline_s = _epoch_s(spec.get("deadline"), now)
    if deadline_s is None:
        return []
    task = QueuedTask(
        task_id=0,
        team="",
        user="",
        gpus=int(spec.get("gpus", 1)),
        enqueued_at_s=now.timestamp(),
        estimated_s=_minutes_s(spec.get("estimated_minutes")),
        time_limit_s=_minutes_s(spec.get("time_limit_minutes")),
        not_before_s=_epoch_s(spec.get("not_before"), now),
        deadline_s=deadline_s,
        offpeak=bool(spec.get("offpeak")),
    )
    config = PolicyConfig(offpeak=offpeak_windows, timezone=zone_name(now))
    note = deadline_out_of_reach(task, config, now.timestamp())
    return [note] if note else []


def cli_equivalent(spec: dict[str, Any]) -> str:
    """The `nightshift submit` line that would submit the same spec (for shells and scripts)."""
    flags = {
        "gpus": "--gpus",
        "gpu_memory_gb": "--gpu-mem",
        "priority": "--priority",
        "time_limit_minutes": "--time-limit",
        "estimated_minutes": "--estimate",
        "conda_env": "--conda",
        "docker_image": "--docker",
        "retries": "--retries",
        "name": "--name",
        "gpu_model": "--gpu-model",
        "node": "--node",
    }
    parts = ["nightshift", "submit"]
    for key, flag in flags.items():
        value = spec.get(key)
        if value not in (None, "normal", 0) or (key == "gpus" and value == 0):
            parts += [flag, shlex.quote(f"{value:g}" if isinstance(value, float) else str(value))]
    if spec.get("offpeak"):
        parts.append("--tonight")
    if spec.get("not_before"):
        parts += ["--after", shlex.quote(str(spec["not_before"]))]
    if spec.get("deadline"):
        parts += ["--deadline", shlex.quote(str(spec["deadline"]))]
    for name, value in (spec.get("env") or {}).items():
        parts += ["--env", shlex.quote(f"{name}={value}")]
    for name in spec.get("secrets") or []:
        parts += ["--secret", name]
    for parent in spec.get("depends_on") or []:
        parts += ["--depends-on", str(parent)]
    for parent in spec.get("depends_on_any") or []:
        parts += ["--after-any", str(parent)]
    return " ".join([*parts, "--", words_to_paste(spec.get("command", ""))])


def _node_gpu(gpu: dict[str, Any]) -> NodeGpu:
    """A GPU of GET /gpus as the submission checks read it (its model and total memory)."""
    memory_mib = int(gpu.get("memory_total_mib") or 0)
    return NodeGpu(int(gpu.get("index", 0)), str(gpu.get("name", "")), memory_mib, memory_mib)


def check_limits(spec: TaskSpec, gpus_view: dict[str, Any] | None, max_task_gpus: int) -> None:
    """Refuse what no node could run, as the API will on submit (`submission.check_against_cluster`, on the
    nodes and GPUs of GET /gpus): too many GPUs, too much memory, no such node or GPU model."""
    view = gpus_view or {}
    nodes = [
        NodeState(
            str(node.get("name", "")),
            tuple(_node_gpu(g) for g in view.get("gpus", []) if g.get("node") == node.get("name")),
            0,
        )
        for node in view.get("nodes", [])
    ]
    try:
        check_against_cluster(spec, nodes, max_task_gpus)
    except SpecError as exc:
        raise CardError(exc.message, exc.errors) from None


def validated_spec(
    args: dict[str, Any],
    now: datetime,
    default_workdir: str,
    max_task_gpus: int,
    gpus_view: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The fully resolved spec (name, workdir, times with offset) or CardError with the reasons."""
    raw = {key: value for key, value in args.items() if value is not None}
    try:
        spec = parse_spec(raw)
    except SpecError as exc:
        raise CardError(exc.message, exc.errors) from None
    check_limits(spec, gpus_view, max_task_gpus)
    if spec.sweep is not None:
        try:
            expand(spec)
        except SpecError as exc:
            raise CardError(exc.message, exc.errors) from None
    tz = now.tzinfo
    assert tz is not None, "now must be timezone-aware"
    try:
        check_times_ahead(spec, tz, now)
    except SpecError as exc:
        raise CardError(exc.message, exc.errors) from None
    resolved = dict(resolve(spec, tz, default_workdir).spec)
    if spec.max_running is not None:  # the sweep's, which a task's row leaves out: the card submits it
        resolved["max_running"] = spec.max_running
    return resolved


def _energy(
    spec: dict[str, Any], gpus_view: dict[str, Any] | None, minutes: float | None, tasks: int = 1
) -> dict[str, Any] | None:
    """The energy of the spec's `tasks` (a sweep's) by the estimate, as facts (`replies.energy_words`)."""
    if not minutes or not spec.get("gpus"):
        return None
    try:
        from scheduler.policy.tariff import gpu_power_w

        names = [str(g.get("name", "")) for g in (gpus_view or {}).get("gpus", [])]
        power = gpu_power_w(names[0]) if names else FALLBACK_GPU_POWER_W
    except ImportError:  # pragma: no cover - the policy package is optional for the assistant
        power = FALLBACK_GPU_POWER_W
    power *= spec_gpu_fraction(spec)  # a task sharing its GPU: its part
    kwh = tasks * spec["gpus"] * power * minutes * 60 / 3.6e6
    return {"kwh": kwh, "gpus": spec["gpus"], "power_w": power, "minutes": float(minutes), "tasks": tasks}


def summarize(
    spec: dict[str, Any],
    now: datetime,
    offpeak_windows: str,
    client: AssistantClient | None,
    gpus_view: dict[str, Any] | None,
    tasks: int = 1,
) -> dict[str, Any]:
    """Start label, estimate, energy and quota effect of a spec (each only when known); CardError when the
    API's estimate refuses its `depends_on` or `depends_on_any` (a task that does not exist, or another
    team's), as submitting it would. For a sweep of `tasks`, the start and end are its first task's, the
    energy, cost and GPU-hours all of its tasks'."""
    summary: dict[str, Any] = {}
    minutes = spec.get("estimated_minutes") or spec.get("time_limit_minutes")
    est: dict[str, Any] = {}
    if client is not None:
        try:
            est = client.estimate(
                gpus=spec.get("gpus"),
                gpu_memory_gb=spec.get("gpu_memory_gb"),
                gpu_fraction=spec.get("gpu_fraction"),
                estimated_minutes=spec.get("estimated_minutes"),
                offpeak=bool(spec.get("offpeak")),
                not_before=spec.get("not_before"),
                time_limit_minutes=spec.get("time_limit_minutes"),
                name=spec.get("name"),  # the scheduler learns run times by user, name and size
                depends_on=spec.get("depends_on") or None,  # it starts only after its parents succeed
                depends_on_any=spec.get("depends_on_any") or None,  # ... or end, however they end
                deadline=spec.get("deadline"),  # the warning a submit would answer, queue included
            )
        except ClientError as exc:  # no estimate: the card says what it knows
            if exc.status_code == 422 and any(e.get("field") in PARENT_FIELDS for e in exc.errors):
                raise CardError(exc.message, exc.errors) from None  # no such parent (or not yours)
    if est.get("estimated_run_s") and est.get("estimate_source"):  # the run time the scheduler will assume
        minutes = float(est["estimated_run_s"]) / 60
        if not spec.get("estimated_minutes"):
            summary["run_estimate"] = {"minutes": minutes, "source": est["estimate_source"]}
    not_before = datetime.fromisoformat(spec["not_before"]) if spec.get("not_before") else None
    run_minutes = float(minutes or PolicyConfig.default_estimate_s / 60)
    start, why = earliest_start(now, not_before, bool(spec.get("offpeak")), offpeak_windows, run_minutes)
    summary["start_label"] = start_label(start, now, why, start <= now, cpu_only=spec.get("gpus") == 0)
    estimated_start: datetime | None = start
    if est:
        summary["wait_reason"] = est.get("reason")
        if est.get("wait_s"):  # it waits for other work: what that does to its deadline, only the API knows
            summary["deadline_warning"] = est.get("deadline_warning")
        if est.get("start"):
            estimated_start = max(start, datetime.fromisoformat(est["start"]).astimezone(now.tzinfo))
        elif est.get("reason"):  # it cannot start as things stand (a used-up budget, no such GPU)
            estimated_start = None
        if est.get("energy_cost") is not None and minutes:  # priced from the expected start
            currency = est.get("currency") or ""
            summary["energy_cost"] = f"~{amount(tasks * float(est['energy_cost']), 2)} {currency}".strip()
    if estimated_start is not None:
        summary["estimated_start"] = estimated_start.isoformat()
        if minutes:
            summary["estimated_end"] = (estimated_start + timedelta(minutes=float(minutes))).isoformat()
    summary["energy"] = _energy(spec, gpus_view, minutes, tasks)
    summary["quota"] = _quota_effect(spec, client, minutes, tasks)
    summary["cli"] = cli_equivalent(spec)
    return {key: value for key, value in summary.items() if value is not None}


def _quota_effect(
    spec: dict[str, Any], client: AssistantClient | None, minutes: float | None, tasks: int = 1
) -> dict[str, Any] | None:
    """What the task does to its team's day budget (and to the person's own, where they have one), as facts
    (`replies.quota_words` says them); nothing for a CPU-only task, which uses no GPU-hours and no budget
    holds."""
    if client is None or spec.get("gpus", 1) == 0:
        return None
    try:
        quota = client.quota()
    except ClientError:
        return None
    day = quota.get("day") or {}
    budget = day.get("budget_gpu_h")
    effect = {
        "team": quota.get("team"),
        "budget_gpu_h": None if budget is None else float(budget),
        "used_gpu_h": float(day.get("used_gpu_h") or 0),
        "state": day.get("state"),
        "uses_gpu_h": (
            tasks * gpu_weight(int(spec.get("gpus", 1)), spec_gpu_fraction(spec)) * float(minutes) / 60
            if minutes
            else None
        ),
    }
    own = (quota.get("user_budget") or {}).get("day") or {}
    if own.get("budget_gpu_h") is not None:
        used = float(own.get("used_gpu_h") or 0)
        effect["own"] = {
            "budget_gpu_h": float(own["budget_gpu_h"]),
            "used_gpu_h": used,
            "state": own.get("state"),
        }
    return effect


def sweep_preview(spec: dict[str, Any]) -> dict[str, Any] | None:
    """For a spec with a `sweep`: how many tasks it makes, its parameters and the first few commands."""
    if spec.get("sweep") is None:
        return None
    tasks = expand(parse_spec({key: value for key, value in spec.items() if value is not None}))
    return {
        "tasks": len(tasks),
        "params": list(dict.fromkeys(name for task in tasks for name in task.params)),
        "examples": [task.spec.command for task in tasks[:SWEEP_EXAMPLES]],
        "more": max(0, len(tasks) - SWEEP_EXAMPLES),
        "max_running": spec.get("max_running"),
    }
