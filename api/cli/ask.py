"""`nightshift ask "TEXT"`: one chat turn with the assistant from the shell (for people and scripts)."""

from __future__ import annotations

import json
import os
import shlex
from datetime import datetime, tzinfo
from typing import Annotated, Any

import typer

from api.cli.options import CLEAR_OPTIONS
from api.cli.zone import in_cluster_zone
from scheduler.clock import local_zone
from scheduler.errors import NightshiftError
from scheduler.settings import get_settings

DRY_RUN_TIMEOUT_S = 5.0
# a change card's fields as `nightshift change` options
_CHANGE_OPTIONS = {
    "priority": "--priority",
    "not_before": "--after",
    "deadline": "--deadline",
    "time_limit_minutes": "--time-limit",
    "estimated_minutes": "--estimate",
    "retries": "--retries",
    "name": "--name",
}
_PARENT_OPTIONS = {"depends_on": "--depends-on", "depends_on_any": "--after-any"}
_CLEAR_NAMES = {field: name for name, field in CLEAR_OPTIONS.items()}  # the others by their own names


def change_command(card: dict[str, Any]) -> str:
    """The `nightshift change ID ...` line that does what a change card does."""
    words = ["nightshift", "change", str(card.get("task_id"))]
    changes = {key: new for key, (_, new) in (card.get("changes") or {}).items()}
    if "not_before" in changes and changes["not_before"] is None:
        words.append("--now")
        changes.pop("not_before")
        changes.pop("offpeak", None)  # --now drops both
    if "offpeak" in changes:
        words.append("--tonight" if changes.pop("offpeak") else "--anytime")
    if "tags" in changes:  # the labels added and taken away: "--tag exp7 --untag old"
        before, after = (list(tags or []) for tags in card["changes"]["tags"])
        words += [part for tag in after if tag not in before for part in ("--tag", tag)]
        words += [part for tag in before if tag not in after for part in ("--untag", tag)]
        changes.pop("tags")
    for key, value in changes.items():
        if value is None or value == []:  # back to its default: "remove the time limit"
            words += ["--clear", _CLEAR_NAMES.get(key, key)]
        elif key in _PARENT_OPTIONS:  # each task it waits for: "--depends-on 12 --depends-on 13"
            words += [part for parent in value for part in (_PARENT_OPTIONS[key], str(parent))]
        elif key in _CHANGE_OPTIONS:
            words += [_CHANGE_OPTIONS[key], str(value)]
    return shlex.join(words)


def resolve_now(text: str | None, zone: tzinfo | None) -> datetime:
    """`--now` as an aware time in the cluster's zone; with no zone known, this machine's, and a time given
    with an offset keeps it."""
    if not text:
        return datetime.now(zone) if zone else datetime.now().astimezone()
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise NightshiftError(f"--now {text!r} is not ISO 8601 (like 2026-03-02T15:00:00+08:00)") from None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=zone) if zone else moment.astimezone()
    return moment.astimezone(zone) if zone else moment


def ask_command(
    text: Annotated[
        str, typer.Argument(help="what you want, e.g. 'run `python train.py` tonight on 2 GPUs'")
    ],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="change nothing; validate locally")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    now: Annotated[str | None, typer.Option("--now", help="pretend it is this time (ISO 8601)")] = None,
    user: Annotated[str | None, typer.Option("--user", help="who is asking (context for the reply)")] = None,
    team: Annotated[str | None, typer.Option("--team", help="their team (context for the reply)")] = None,
) -> None:
    """One chat turn: submissions and cancellations are shown as cards, never performed here."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    from api.client import find_token
    from assistant.agent import Assistant
    from assistant.client import AssistantClient
    from assistant.replies import language_of

    settings = in_cluster_zone(get_settings())
    try:
        moment = resolve_now(now, local_zone(settings.timezone) if settings.timezone else None)
    except NightshiftError as exc:
        if as_json:  # still one JSON object, as scripts read it
            print(json.dumps({"reply": "", "tool_calls": [], "spec": None, "error": exc.message}))
        typer.echo(f"error: {exc.message}", err=True)
        raise typer.Exit(2) from None
    timeout_s = DRY_RUN_TIMEOUT_S if dry_run else 30.0
    client = AssistantClient(settings.api_url, find_token(settings), timeout_s=timeout_s)
    try:
        assistant = Assistant(
            settings,
            client,
            now=lambda: moment,
            user=user,
            team=team,
            default_workdir=os.getcwd(),
            dry_run=dry_run,
        )
        turn = assistant.ask(text)
    finally:
        client.close()
    if as_json:
        print(json.dumps(turn.as_json(), ensure_ascii=False, default=str))
        return
    print(turn.reply)
    zh = language_of(text) == "zh"
    for card in turn.cards:
        if card.get("kind") == "submit":
            command = card.get("summary", {}).get("cli", "")
            print(f"\n{'用这条命令提交' if zh else 'to submit it'}: {command}")
        elif card.get("kind") == "cancel":
            print(f"\n{'用这条命令取消' if zh else 'to cancel it'}: nightshift cancel {card.get('task_id')}")
        elif card.get("kind") == "change":
            print(f"\n{'用这条命令修改' if zh else 'to change it'}: {change_command(card)}")
    if dry_run and turn.cards:
        print("（试运行：什么都没有改）" if zh else "(dry run: nothing was changed)")
