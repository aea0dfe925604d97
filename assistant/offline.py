"""The built-in offline model: a LangChain chat model that reads common requests (English and Chinese).

It needs no network and no weights: rules in `assistant.parsing` turn a request into one tool call (or a
question back, or a polite refusal), and `assistant.replies` turns tool results into a short answer. It
never acts on text that comes back from tools: only the person's own message can lead to a tool call.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool

from assistant.parsing.commands import find_command, remove_span
from assistant.parsing.fields import task_ids
from assistant.parsing.intents import ASKS_COST, Reading, asked_fields, follow_up_to_card, understand
from assistant.parsing.waits import answered_after
from assistant.replies import canned, language_of, no_latest_task_words, reply_for
from assistant.tools import CARD_TOOLS
from assistant.window_words import offpeak_window_words
from scheduler.settings import Settings

NOW_LINE = re.compile(r"Current time:\s*(\S+)")
OFFPEAK_LINE = re.compile(r"Off-peak \(cheap electricity\) windows:\s*([^\n]*?)\.?\s*$", re.M)
META_KEY = "nightshift"
DEFAULT_OFFPEAK = str(Settings.model_fields["offpeak"].default)


def _text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    parts = [part if isinstance(part, str) else str(part.get("text", "")) for part in content]
    return " ".join(parts)


class OfflineChatModel(BaseChatModel):
    """Rule-based tool-calling chat model; `now` pins the clock, else the system prompt's time is used."""

    now: datetime | None = None

    @property
    def _llm_type(self) -> str:
        return "nightshift-offline"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """The tool list is fixed by design; binding changes nothing."""
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.respond(messages))])

    # --- the rules -----------------------------------------------------------------------------------

    def _now(self, messages: Sequence[BaseMessage]) -> datetime:
        if self.now is not None:
            return self.now
        for message in messages:
            if isinstance(message, SystemMessage):
                found = NOW_LINE.search(_text(message))
                if found:
                    try:
                        return datetime.fromisoformat(found.group(1))
                    except ValueError:
                        break
        return datetime.now().astimezone()

    def respond(self, messages: Sequence[BaseMessage]) -> AIMessage:
        """The next message: a reply to tool results, or a tool call / question / refusal for the person."""
        human_index = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
        if human_index < 0:
            return AIMessage(content=canned("help", "help", "en"))
        text = _text(messages[human_index])
        lang = language_of(text)
        now = self._now(messages)
        moment = Moment(now, _offpeak_of(messages))
        results = [m for m in messages[human_index + 1 :] if isinstance(m, ToolMessage)]
        if results:
            found = _found_latest(messages[human_index + 1 :], lang)
            if isinstance(found, Reading):  # "cancel my last job": its list is back; now the request
                return self._message_for(found, text, lang, moment)
            if found is not None:
                return AIMessage(content=found, response_metadata={META_KEY: {"kind": "answer"}})
            last_call = max(i for i, m in enumerate(messages) if isinstance(m, AIMessage) and m.tool_calls)
            answered = [m for m in messages[last_call + 1 :] if isinstance(m, ToolMessage)]
            return self._summarize(
                answered,
                lang,
                now,
                about_cost=bool(ASKS_COST.search(text)),
                asked=asked_fields(text),
            )
        card = last_card(messages[:human_index])
        follow = follow_up_to_card(text, now) if card is not None else None
        if card is not None and follow is not None:
            if follow.kind != "edit":
                return self._message_for(follow, text, lang, moment)
            if card.tool == "submit_task":  # a new card with the changes stands in for the last one
                changed = {
                    key: value for key, value in {**card.args, **follow.args}.items() if value is not None
                }
                if card.args.get("env") and follow.args.get("env"):  # "also set HF_HOME=...": one more
                    changed["env"] = {**card.args["env"], **follow.args["env"]}
                changed["replaces_card"] = card.action_id
                return self._message_for(Reading("tool", "submit_task", changed), text, lang, moment)
        reading = understand(self._with_context(messages[:human_index], text), now)
        return self._message_for(reading, text, lang, moment)

    def _with_context(self, history: Sequence[BaseMessage], text: str) -> str:
        """Merge a short follow-up ("python train.py", "31") with the request that asked for it."""
        previous = next((m for m in reversed(history) if isinstance(m, AIMessage)), None)
        meta = previous.response_metadata.get(META_KEY, {}) if previous is not None else {}
        request = meta.get("request")
        if not request:
            return text
        if meta.get("reason") == "need_command":
            found = find_command(text)
            if found is None:
                return text
            return f"`{found.command}` {remove_span(text, found.start, found.end).strip()} {request}"
        if meta.get("reason") == "need_task_id" and re.fullmatch(
            r"\s*(?:task|job|#|任务)?\s*#?\d+\s*号?\s*", text
        ):
            return f"{request} task {task_ids(text)[0]}"
        if meta.get("reason") == "parent_or_hour":  # "after task 13" or "after 13:00", in the request
            return answered_after(request, text)
        if meta.get("reason") == "need_sweep_id":
            number = re.fullmatch(r"\s*(?:sweep|扫参)?\s*#?(\d+)\s*号?\s*", text, re.I)
            return f"{request} sweep {number[1]}" if number else text
        return text

    def _message_for(self, reading: Reading, text: str, lang: str, moment: Moment) -> AIMessage:
        """The tool call, question, refusal or pointer for `reading` (`text`: the person's message; `moment`:
        the time and off-peak windows the system prompt gives)."""
        if reading.kind == "tool" and reading.tool:
            calls = [
                {"name": reading.tool, "args": args, "id": _call_id(), "type": "tool_call"}
                for args in (reading.args, *reading.more)
            ]
            called: dict[str, Any] = {"kind": "tool"}
            if reading.then is not None:  # what to do with the task the list finds
                called["then"] = asdict(reading.then)
            return AIMessage(content="", tool_calls=calls, response_metadata={META_KEY: called})
        meta = {"kind": reading.kind, "reason": reading.reason}
        if reading.kind == "question":
            meta["request"] = text
        if reading.reason == "offpeak_window":  # the cluster's windows, from the system prompt
            content = offpeak_window_words(moment.offpeak, moment.now, lang)
        else:
            content = canned(reading.kind, reading.reason, lang, task_id=reading.args.get("task_id"))
        return AIMessage(content=content, response_metadata={META_KEY: meta})

    def _summarize(
        self,
        results: Sequence[ToolMessage],
        lang: str,
        now: datetime,
        *,
        about_cost: bool,
        asked: tuple[str, ...],
    ) -> AIMessage:
        replies = [
            reply_for(
                str(result.name or ""),
                _text(result),
                lang,
                now,
                about_cost=about_cost,
                asked=asked,
            )
            for result in results
        ]
        return AIMessage(content="\n\n".join(replies), response_metadata={META_KEY: {"kind": "answer"}})


def _found_latest(turn: Sequence[BaseMessage], lang: str) -> Reading | str | None:
    """Once the list of one's tasks a request asked for as "my last job" (or the latest sweep, for "my last
    sweep") is back, the turn's only call so far: the request with its id, or what to say when there is
    none; None when the turn asked no such list."""
    calls = [m for m in turn if isinstance(m, AIMessage) and m.tool_calls]
    if len(calls) != 1:
        return None
    then = calls[0].response_metadata.get(META_KEY, {}).get("then")
    result = next((m for m in turn if isinstance(m, ToolMessage)), None)
    if not then or result is None:
        return None
    try:
        listed = json.loads(_text(result))
    except ValueError:
        return None
    if not isinstance(listed, dict) or not listed.get("ok", True):  # the list failed: its error is said
        return None
    found = (listed.get("tasks") or [None])[0] or listed.get("sweep")  # the newest task, or the sweep
    if not found:
        return no_latest_task_words(lang)
    request = {key: value for key, value in then.items() if key != "then"}
    return Reading(**request).with_task(int(found["id"]))


def _call_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"


@dataclass(frozen=True)
class Moment:
    """The time of a turn and the cluster's off-peak windows ("23:00-07:00"), as the system prompt says."""

    now: datetime
    offpeak: str


def _offpeak_of(messages: Sequence[BaseMessage]) -> str:
    """The off-peak windows the system prompt names; the default window when there is no such line."""
    for message in messages:
        if isinstance(message, SystemMessage):
            found = OFFPEAK_LINE.search(_text(message))
            if found:
                return found.group(1).strip()
    return DEFAULT_OFFPEAK


@dataclass(frozen=True)
class MadeCard:
    """The latest card of a chat: the tool call that made it, and its action id."""

    tool: str
    args: dict[str, Any]
    action_id: str


def last_card(history: Sequence[BaseMessage]) -> MadeCard | None:
    """The call that made the latest card of this chat, unless something was confirmed since (a
    confirmation is said without a tool call, unlike this model's answers) or a later request for a card was
    refused (it dropped the cards before it); None when there is none."""
    results: dict[str, str] = {}
    for message in reversed(history):
        if isinstance(message, ToolMessage):
            results[message.tool_call_id] = _text(message)
        elif isinstance(message, AIMessage):
            if not message.tool_calls and META_KEY not in message.response_metadata:
                return None  # "Submitted task #12": the card was confirmed
            for call in message.tool_calls:
                card = _pending_action(results.get(str(call.get("id")), ""))
                if card is not None:
                    args = {key: value for key, value in call["args"].items() if key != "replaces_card"}
                    return MadeCard(call["name"], args, str(card.get("action_id")))
            if any(call["name"] in CARD_TOOLS for call in message.tool_calls):
                return None  # "I can't submit that": a new request, refused; the card before it is gone
    return None


def _pending_action(result: str) -> dict[str, Any] | None:
    try:
        data = json.loads(result)
    except ValueError:
        return None
    card = data.get("pending_action") if isinstance(data, dict) else None
    return card if isinstance(card, dict) else None
