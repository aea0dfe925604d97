"""The offline model on the development set: at least 150 requests, at least 95% right."""

from __future__ import annotations

import re

from assistant.evaluation import evaluate, load_devset
from assistant.offline import OfflineChatModel


def test_the_devset_is_large_and_varied():
    cases = load_devset()
    assert len(cases) >= 150
    chinese = [c for c in cases if re.search(r"[\u4e00-\u9fff]", c["text"])]
    assert len(chinese) >= 40 and len(cases) - len(chinese) >= 80
    kinds = {next(iter(c["expect"])) for c in cases}
    assert kinds == {"tool", "calls", "ask", "refuse", "help"}  # calls: several at once ("why are 12-15 ...")
    tools = {c["expect"]["tool"] for c in cases if "tool" in c["expect"]}
    # the brief's nine, cancel_tasks, requeue_task, change/hold/release, night_summary, seven of sweeps
    assert len(tools) == 22


def test_the_offline_model_gets_at_least_95_percent_right():
    score = evaluate(OfflineChatModel(), load_devset())
    misses = [(o.case["text"], o.got["tool_calls"] or o.got["kind"]) for o in score.outcomes if not o.ok]
    assert score.accuracy >= 0.95, misses
