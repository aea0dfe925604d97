"""The chat agent: a LangChain `create_agent` loop over the tools, for one person's session.

`Assistant.ask(text)` runs one turn and returns what was said and which tools were called; cards for
submissions, cancellations and changes (of a task or a whole sweep) wait in `Assistant.actions` until
`Assistant.confirm(action_id)` performs them through the API with the person's own client (the model has no
way to confirm); a new request for a card (submit, cancel or change, even one refused) drops the cards
waiting from before it. Holding a queued task (or a sweep's) back and releasing it act at once, as the Tasks
tab's buttons do: each undoes the other.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest, dynamic_prompt
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from api.client import ClientError
from assistant.cards import ActionStore, PendingAction
from assistant.client import AssistantClient
from assistant.offline import OfflineChatModel
from assistant.prompt_files import PROMPT_FILES, find_prompts_dir
from assistant.replies import (
    field_label,
    language_of,
    retired_cards_words,
    status_zh,
    sweep_cancelled_words,
    sweep_changed_words,
    sweep_rerun_words,
    tasks_cancelled_words,
    warning_words,
)
from assistant.tools import CARD_TOOLS, ToolContext, make_tools
from scheduler.clock import local_zone
from scheduler.settings import Settings

PROMPTS_DIR = find_prompts_dir()
RECURSION_LIMIT = 16
HISTORY_MESSAGES = 40


def load_prompt(prompts_dir: Path = PROMPTS_DIR, **values: str) -> str:
    """The system prompt: the prompt files joined, with {placeholders} filled in."""
    text = "\n\n".join((prompts_dir / name).read_text(encoding="utf-8").strip() for name in PROMPT_FILES)
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


def llm_configured(settings: Settings) -> bool:
    """True when an OpenAI-compatible endpoint or model is configured."""
    return bool(settings.llm_base_url or settings.llm_model)


def make_model(settings: Settings) -> tuple[BaseChatModel, str]:
    """The configured OpenAI-compatible model (streaming), else the offline one; and a label saying which."""
    if not llm_configured(settings):
        return OfflineChatModel(), "offline model (built-in rules, no network)"
    from langchain_openai import ChatOpenAI

    model_name = settings.llm_model or "gpt-4o-mini"
    model = ChatOpenAI(
        model=model_name,
        base_url=settings.llm_base_url,
        api_key=settings.llm_api_key or "not-needed",  # type: ignore[arg-type]
        streaming=True,
        temperature=0,
        timeout=120,
        max_retries=1,
    )
    where = settings.llm_base_url or "api.openai.com"
    return model, f"{model_name} via {where} (OpenAI-compatible)"


@dataclass
class Turn:
    """One chat turn: the reply, the tool calls made, the cards waiting, the earlier cards it dropped, and
    for submits the spec or error."""

    reply: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    cards: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    spec: dict[str, Any] | None = None
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The `nightshift ask --json` object."""
        return {"reply": self.reply, "tool_calls": self.tool_calls, "spec": self.spec, "error": self.error}


class NothingDone(Exception):
    """A confirmed action of which the API refused every part (each task of a card ended meanwhile)."""


def _with_warnings(text: str, task: dict[str, Any], lang: str) -> str:
    """What a confirmed submit or change says, with each warning the API answered it with (a deadline it
    cannot meet: it is queued all the same) in the person's language."""
    notes = [warning_words(str(warning), lang) for warning in task.get("warnings") or []]
    return ("" if lang == "zh" else " ").join([text, *notes])


def _sweep_warnings(sweep: dict[str, Any]) -> list[str]:
    """The warnings a sweep change's answer carries on its tasks (a deadline they cannot meet), each once."""
    return list(
        dict.fromkeys(str(w) for task in sweep.get("tasks") or [] for w in task.get("warnings") or [])
    )


class Assistant:
    """One person's chat session: model, tools bound to their client, history and pending actions."""

    def __init__(
        self,
        settings: Settings,
        client: AssistantClient | None,
        *,
        model: BaseChatModel | None = None,
        model_label: str | None = None,
        now: Callable[[], datetime] | None = None,
        user: str | None = None,
        team: str | None = None,
        default_workdir: str | None = None,
        prompts_dir: Path = PROMPTS_DIR,
        dry_run: bool = False,
    ) -> None:
        if model is None:
            model, label = make_model(settings)
            model_label = model_label or label
        self.model_label = model_label or type(model).__name__
        self.settings = settings
        self.client = client
        zone = local_zone(settings.timezone)
        self.now = now or (lambda: datetime.now(zone))
        self.user, self.team = user or "you", team or "your team"
        self.actions = ActionStore()
        self.history: list[BaseMessage] = []
        self.prompts_dir = prompts_dir
        self.context = ToolContext(
            client=client,
            actions=self.actions,
            now=self.now,
            offpeak=settings.offpeak,
            default_workdir=default_workdir or str(settings.home / "work"),
            max_task_gpus=settings.max_task_gpus,
            dry_run=dry_run,
            zone=zone,
        )

        @dynamic_prompt
        def system_prompt(request: ModelRequest) -> str:
            return self.system_prompt()

        self.graph = create_agent(model, make_tools(self.context), middleware=[system_prompt])

    def system_prompt(self) -> str:
        """The system prompt for this moment (time, person, windows filled in)."""
        now = self.now()
        return load_prompt(
            self.prompts_dir,
            now=now.isoformat(timespec="seconds"),
            user=self.user,
            team=self.team,
            timezone=self.settings.timezone or str(now.tzinfo),
            offpeak=self.settings.offpeak,
        )

    def _config(self) -> RunnableConfig:
        return {"recursion_limit": RECURSION_LIMIT}

    def _inputs(self, text: str) -> Any:
        return {"messages": [*self.history, HumanMessage(text)]}

    def ask(self, text: str) -> Turn:
        """Run one turn to the end and return it."""
        earlier = self._pending_ids()
        state = self.graph.invoke(self._inputs(text), self._config())
        return self._finish(state["messages"], earlier)

    def stream(self, text: str) -> Iterator[str | Turn]:
        """Run one turn, yielding reply text as it is generated, then the finished Turn."""
        final: list[BaseMessage] = []
        earlier = self._pending_ids()
        modes: Any = ["messages", "values"]
        parts: Iterator[Any] = self.graph.stream(self._inputs(text), self._config(), stream_mode=modes)
        for mode, payload in parts:
            if mode == "messages":
                chunk = payload[0]
                if (
                    isinstance(chunk, AIMessageChunk | AIMessage)
                    and isinstance(chunk.content, str)
                    and chunk.content
                ):
                    yield chunk.content
            elif mode == "values":
                final = list(payload["messages"])
        yield self._finish(final, earlier)

    def _pending_ids(self) -> list[str]:
        """The ids of the cards waiting now (before a turn), oldest first."""
        return [action.action_id for action in self.actions.pending()]

    def _finish(self, messages: list[BaseMessage], earlier: list[str]) -> Turn:
        start = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
        new = messages[start + 1 :]
        self.history = messages[-HISTORY_MESSAGES:]
        turn = Turn(reply="")
        for message in new:
            if isinstance(message, AIMessage):
                turn.tool_calls += [
                    {"name": call["name"], "args": call["args"]} for call in message.tool_calls
                ]
                if isinstance(message.content, str) and message.content and not message.tool_calls:
                    turn.reply = message.content
            elif isinstance(message, ToolMessage):
                self._note_result(turn, message)
        if any(call["name"] in CARD_TOOLS for call in turn.tool_calls):
            self._retire(turn, earlier)
        return turn

    def _retire(self, turn: Turn, earlier: list[str]) -> None:
        """A new submit, cancel or change request (a card, or refused) drops the cards still waiting from
        before it, so that none is confirmed by mistake under the new answer; the reply says so."""
        turn.dropped = [action.card for action_id in earlier if (action := self.actions.take(action_id))]
        if turn.dropped:
            note = retired_cards_words(turn.dropped, self.language())
            turn.reply = f"{turn.reply}\n\n{note}" if turn.reply else note

    def _note_result(self, turn: Turn, message: ToolMessage) -> None:
        try:
            data = json.loads(str(message.content))
        except ValueError:
            return
        card = data.get("pending_action") if isinstance(data, dict) else None
        if card:
            turn.cards.append(card)
            if card.get("kind") == "submit":
                turn.spec, turn.error = card["spec"], None
        elif message.name == "submit_task" and isinstance(data, dict) and not data.get("ok", True):
            turn.spec, turn.error = None, str(data.get("error"))
        elif isinstance(data, dict) and not data.get("ok", True) and data.get("error"):
            # another request that cannot be done (a task that is not there, one already over): its message
            turn.error = str(data["error"]) if turn.error is None else f"{turn.error}; {data['error']}"

    def confirm(self, action_id: str) -> dict[str, Any]:
        """Perform a pending action through the API with the person's own client (once)."""
        action = self.actions.take(action_id)
        if action is None:
            return {"ok": False, "error": f"no pending action {action_id!r} (already confirmed or dropped?)"}
        if self.client is None:
            return {"ok": False, "error": "no API connection: nothing was done"}
        try:
            task, message, zh = self._perform(action)
        except ClientError as exc:
            return {"ok": False, "error": exc.message, "errors": exc.errors}
        except NothingDone as nothing:
            return {"ok": False, "error": str(nothing)}
        message, zh = _with_warnings(message, task, "en"), _with_warnings(zh, task, "zh")
        self.history.append(AIMessage(content=message))
        return {"ok": True, "task": task, "message": zh if self.language() == "zh" else message}

    def _perform(self, action: PendingAction) -> tuple[dict[str, Any], str, str]:
        """Do a confirmed action through the API: what it answered, and what to say (English, Chinese)."""
        assert self.client is not None
        payload = action.payload
        if action.kind == "submit" and payload["spec"].get("sweep") is not None:
            sweep = self.client.submit_sweep(payload["spec"], idempotency_key=action.action_id)
            message = f"Submitted sweep #{sweep['id']} ({sweep['name']}): {sweep['tasks_count']} tasks."
            return (
                sweep,
                message,
                f"已提交扫参 #{sweep['id']}（{sweep['name']}）：共 {sweep['tasks_count']} 个任务。",
            )
        if action.kind == "submit":
            task = self.client.submit(payload["spec"], idempotency_key=action.action_id)
            message = f"Submitted task #{task['id']} ({task['name']}): {task['status']}."
            return task, message, f"已提交任务 #{task['id']}（{task['name']}）：{status_zh(task['status'])}。"
        if action.kind in ("cancel_sweep", "rerun_sweep", "change_sweep"):
            return self._perform_on_sweep(action.kind, int(payload["sweep_id"]), payload)
        if action.kind == "cancel_tasks":
            outcomes = self._cancel_each([int(task_id) for task_id in payload["task_ids"]])
            if not any(outcome["status"] for outcome in outcomes):  # every one refused: nothing done
                raise NothingDone(tasks_cancelled_words(outcomes, self.language()))
            return {}, tasks_cancelled_words(outcomes, "en"), tasks_cancelled_words(outcomes, "zh")
        return self._perform_on_task(action.kind, int(payload["task_id"]), payload)

    def _perform_on_task(
        self, kind: str, task_id: int, payload: dict[str, Any]
    ) -> tuple[dict[str, Any], str, str]:
        """A confirmed change, requeue or cancel of one task."""
        assert self.client is not None
        if kind == "change":
            task = self.client.change(task_id, payload["changes"])
            names = ", ".join(payload["changes"])
            labels = "、".join(field_label(key, "zh") for key in payload["changes"])
            message = f"Changed task #{task['id']} ({names}): {task['status']}."
            return task, message, f"已修改任务 #{task['id']}（{labels}）：{status_zh(task['status'])}。"
        if kind == "requeue":
            task = self.client.requeue(task_id)
            return (
                task,
                f"Task #{task_id} is stopping (its stop signal is sent); it goes back to the queue with its "
                "age.",
                f"任务 #{task_id} 正在停止（已发出停止信号），之后回到队列，保留原来的排队时间。",
            )
        task = self.client.cancel(task_id)
        if task["status"] == "running":  # its stop signal is sent; it ends within its grace period
            return (
                task,
                f"Task #{task_id} is stopping (its stop signal is sent).",
                f"任务 #{task_id} 正在停止（已发出停止信号）。",
            )
        return (
            task,
            f"Task #{task_id} is {task['status']}.",
            f"任务 #{task_id}：{status_zh(task['status'])}。",
        )

    def _perform_on_sweep(
        self, kind: str, sweep_id: int, payload: dict[str, Any]
    ) -> tuple[dict[str, Any], str, str]:
        """A confirmed cancel, rerun or change of a whole sweep."""
        assert self.client is not None
        if kind == "cancel_sweep":
            sweep = self.client.cancel_sweep(sweep_id)
            return sweep, sweep_cancelled_words(sweep, "en"), sweep_cancelled_words(sweep, "zh")
        if kind == "rerun_sweep":
            sweep = self.client.rerun_sweep(sweep_id, payload["status"])
            return sweep, sweep_rerun_words(sweep, "en"), sweep_rerun_words(sweep, "zh")
        sweep = self.client.change_sweep(sweep_id, payload["changes"])
        fields = list(payload["changes"])
        words = sweep_changed_words(sweep, fields, "en"), sweep_changed_words(sweep, fields, "zh")
        return {**sweep, "warnings": _sweep_warnings(sweep)}, *words

    def _cancel_each(self, task_ids: list[int]) -> list[dict[str, Any]]:
        """Cancel each task of a confirmed card in turn: `outcomes` holds each one's status after it, or the
        API's refusal (one that ended meanwhile, say), so one refusal does not leave the others standing."""
        assert self.client is not None
        outcomes: list[dict[str, Any]] = []
        for task_id in task_ids:
            try:
                outcomes.append(
                    {"id": task_id, "status": self.client.cancel(task_id)["status"], "error": None}
                )
            except ClientError as exc:
                if exc.status_code == 0 or exc.status_code >= 500:
                    raise  # the API is gone: say so rather than a list of the same failure
                outcomes.append({"id": task_id, "status": None, "error": exc.message})
        return outcomes

    def drop(self, action_id: str) -> bool:
        """Forget a pending action without doing it."""
        return self.actions.take(action_id) is not None

    def language(self) -> str:
        """`zh` when the person's last message was in Chinese, else `en`: what replies and cards use."""
        last = next((m for m in reversed(self.history) if isinstance(m, HumanMessage)), None)
        return language_of(str(last.content)) if last is not None else "en"
