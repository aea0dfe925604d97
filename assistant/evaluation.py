"""Score a chat model on the development set: right tool and arguments, or the right question/refusal."""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from assistant.agent import PROMPTS_DIR, load_prompt
from assistant.offline import META_KEY

DEVSET = Path(__file__).resolve().parent.parent / "tests" / "assistant" / "devset.jsonl"


@dataclass
class Outcome:
    """One case: whether it was right, what came out, and how long the model took."""

    case: dict[str, Any]
    ok: bool
    got: dict[str, Any]
    ms: float


@dataclass
class Score:
    """Accuracy over the cases, and the median time per turn."""

    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def accuracy(self) -> float:
        """Share of cases right."""
        return sum(o.ok for o in self.outcomes) / max(1, len(self.outcomes))

    @property
    def median_ms(self) -> float:
        """Median model time per turn (ms)."""
        return statistics.median(o.ms for o in self.outcomes) if self.outcomes else 0.0

    def summary(self) -> dict[str, Any]:
        """The bench's JSON line."""
        return {
            "accuracy": round(self.accuracy, 4),
            "count": len(self.outcomes),
            "correct": sum(o.ok for o in self.outcomes),
            "median_ms_per_turn": round(self.median_ms, 2),
        }


def load_devset(path: Path = DEVSET) -> list[dict[str, Any]]:
    """The cases, one JSON object per line."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _same(expected: Any, got: Any) -> bool:
    if isinstance(expected, str) and isinstance(got, str) and "T" in expected and expected[:4].isdigit():
        try:
            return datetime.fromisoformat(expected) == datetime.fromisoformat(got)
        except ValueError:
            return expected == got
    if isinstance(expected, int | float) and isinstance(got, int | float) and not isinstance(got, bool):
        return float(expected) == float(got)
    if isinstance(expected, list) and isinstance(got, list):
        return len(expected) == len(got) and all(_same(e, g) for e, g in zip(expected, got, strict=True))
    return bool(expected == got)


def _same_call(want: dict[str, Any], call: dict[str, Any]) -> bool:
    args, expected = call["args"], want["args"]
    return (
        call["name"] == want["tool"]
        and set(args) == set(expected)
        and all(_same(expected[k], args[k]) for k in expected)
    )


def judge(expect: dict[str, Any], message: AIMessage) -> tuple[bool, dict[str, Any]]:
    """Compare one model answer with the expectation."""
    calls: list[dict[str, Any]] = [{"name": c["name"], "args": c["args"]} for c in message.tool_calls]
    kind = message.response_metadata.get(META_KEY, {}).get("kind")
    got: dict[str, Any] = {"tool_calls": calls, "kind": kind, "reply": str(message.content)[:120]}
    if "tool" in expect or "calls" in expect:  # one call, or several ("calls": [{"tool", "args"}, ...])
        wanted = expect.get("calls") or [{"tool": expect["tool"], "args": expect["args"]}]
        return len(calls) == len(wanted) and all(
            _same_call(want, call) for want, call in zip(wanted, calls, strict=False)
        ), got
    if calls:
        return False, got
    if "ask" in expect:
        return kind == "question", got
    if "refuse" in expect:
        return kind == "refusal", got
    return kind == "help", got


def evaluate(model: BaseChatModel, cases: list[dict[str, Any]]) -> Score:
    """Run each case as a fresh one-message chat (system prompt with the case's `now`)."""
    score = Score()
    for case in cases:
        system = load_prompt(
            PROMPTS_DIR, now=case["now"], user="alice", team="vision", timezone="local", offpeak="23:00-07:00"
        )
        started = time.perf_counter()
        message = model.invoke([SystemMessage(system), HumanMessage(case["text"])])
        elapsed_ms = (time.perf_counter() - started) * 1000
        assert isinstance(message, AIMessage)
        ok, got = judge(case["expect"], message)
        score.outcomes.append(Outcome(case, ok, got, elapsed_ms))
    return score
