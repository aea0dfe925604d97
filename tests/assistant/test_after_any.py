"""The chat and `depends_on_any`: "after 12 ends, whatever happens" is read as it, "after 12 succeeds" stays
`depends_on`; the card, its command line and the Chinese replies say it."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from assistant.cards import cli_equivalent
from assistant.parsing.intents import understand
from assistant.reasons_zh import reason_zh
from assistant.replies import card_text

NOW = datetime(2026, 12, 1, 15, 0, tzinfo=ZoneInfo("Asia/Shanghai"))


@pytest.mark.parametrize(
    ("text", "args"),
    [
        ("run `python eval.py` after 12 finishes whatever happens", {"depends_on_any": [12]}),
        ("run `python eval.py` after task 12 ends, pass or fail", {"depends_on_any": [12]}),
        ("run `python eval.py` after tasks 12 and 13 finish, even if it fails", {"depends_on_any": [12, 13]}),
        ("run `python eval.py` when 12 is done, no matter how it ends", {"depends_on_any": [12]}),
        ("12 跑完后（不管成功失败）跑 `python eval.py`", {"depends_on_any": [12]}),
        ("等任务 30 结束后，无论成败都跑 `python eval.py`", {"depends_on_any": [30]}),
        ("run `python eval.py` after 12 succeeds", {"depends_on": [12]}),
        ("run `python eval.py` after task 12 finishes", {"depends_on": [12]}),
        ("12 跑完后跑 `python eval.py`", {"depends_on": [12]}),
    ],
)
def test_a_parent_to_end_whatever_happens_is_read_apart_from_one_to_succeed(
    text: str, args: dict[str, object]
) -> None:
    reading = understand(text, NOW)

    assert reading.tool == "submit_task" and reading.args == {"command": "python eval.py", **args}


def test_the_card_says_it_in_both_languages_and_its_command_line_has_after_any() -> None:
    spec = {"command": "python eval.py", "depends_on_any": [5, 6], "depends_on": [4]}
    card = {"kind": "submit", "spec": spec, "summary": {}}

    assert "after task #4 succeeds, after task #5, #6 ends, however it ends" in card_text(card, "en", NOW)
    assert "等任务 #5, #6 结束后（不论成败）" in card_text(card, "zh", NOW)
    assert "--depends-on 4 --after-any 5 --after-any 6 --" in cli_equivalent(spec)


def test_the_reason_and_a_refusal_read_in_chinese() -> None:
    assert reason_zh("waiting for task 12 to end") == "等待任务 12 结束（不论成功与否）"
    assert "不存在（或不属于你的团队）" in reason_zh("depends_on_any names task 9, which does not exist")
