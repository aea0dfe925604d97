"""The offline reader answers any text without raising: words of the dev set in any order, halves of two
requests joined, and any unicode. (A change naming the task's `name` once crashed it.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assistant.parsing.intents import Reading, follow_up_to_card, understand
from tests.assistant.conftest import NOW

DEVSET = [
    json.loads(line)["text"] for line in (Path(__file__).parent / "devset.jsonl").open(encoding="utf-8")
]
WORDS = sorted({word for text in DEVSET for word in re.findall(r"\S+", text)})

shuffled_words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=14).map(" ".join)
joined_halves = st.tuples(st.sampled_from(DEVSET), st.sampled_from(DEVSET)).map(
    lambda pair: pair[0][: len(pair[0]) // 2] + " " + pair[1][len(pair[1]) // 2 :]
)
# an act on a task, or a new one, with fields a spec has: every pairing of what a reading may carry
ACTS = [
    "change task 12 to", "make 12", "rename 12 to", "run task 12 again", "rerun 12", "cancel 12", "hold 12",
    "give 12", "why is 12", "把12号", "12号再跑一遍", "run `python train.py`", "run python train.py", "跑 train.py",
    "how long would", "what would it cost to run", "try lr 0.1 and 0.01 with `python t.py --lr {lr}`",
    "make 12 wait for 13", "12 no longer needs to wait for 13", "让12号等13号跑完", "cancel my last job",
    "rerun the last failed job", "why are 12-15", "are 12 and 13", "how long did 12", "hold all my tasks",
]  # fmt: skip
FIELDS = [
    "named exp4", "high priority", "on 2 gpus", "tonight", "with WANDB_MODE=offline", "time limit 3h",
    "about 2 hours", "retry twice", "after 13", "by 9am", "on node box-2", "on an A100", "with 40gb",
    "without the time limit", "2 at a time", "3 times", "on gpu 3", "--seed {1..3}", "urgent", "now",
    "改成高优先级", "今晚", "两张卡", "名字叫 exp5", "多加两小时", "whatever happens", "also", "and 14",
    "and email me when done", "on the biggest GPU", "sweep lr 0.1 0.01", "跑完通知我", "after task 13",
]  # fmt: skip
composed = st.tuples(st.sampled_from(ACTS), st.lists(st.sampled_from(FIELDS), min_size=1, max_size=3)).map(
    lambda parts: " ".join([parts[0], *parts[1]])
)
requests = st.one_of(composed, shuffled_words, joined_halves, st.text(max_size=200))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests)
def test_any_request_gets_a_reading_and_any_follow_up_a_reading_or_none(text):
    reading = understand(text, NOW)
    follow = follow_up_to_card(text, NOW)

    assert isinstance(reading, Reading) and reading.kind in ("tool", "question", "refusal", "help")
    assert follow is None or isinstance(follow, Reading)


@pytest.mark.parametrize(
    "text", ["python明天上午0点60", "run python train.py at 9:75", "run python train.py on dec 5 at 9:75"]
)
def test_a_clock_with_no_such_minute_is_no_time_and_no_crash(text):
    reading = understand(text, NOW)  # found by the fuzz above: "0点60" raised ValueError (minute 60)

    assert reading.tool == "submit_task"
    assert ":60" not in reading.args.get("not_before", "") and ":75" not in reading.args.get("not_before", "")
