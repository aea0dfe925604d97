"""'When is off-peak?', 'is it off-peak now?', '谷时是几点': the cluster's windows, now inside or when the next
starts, from the settings the system prompt carries; not a task's estimate."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from assistant.agent import Assistant
from assistant.parsing.intents import understand
from assistant.window_words import offpeak_window_words
from tests.assistant.conftest import NOW

SHANGHAI = ZoneInfo("Asia/Shanghai")


@pytest.mark.parametrize(
    "text",
    [
        "what is the off-peak window",
        "is it off-peak now?",
        "when is power cheapest",
        "谷时是几点",
        "现在是不是谷时",
        "what's the electricity price now",
        "is now a cheap time to run",
        "现在电价贵吗",
    ],
)
def test_questions_about_the_window_get_the_window(text):
    assert understand(text, NOW).reason == "offpeak_window"


@pytest.mark.parametrize(
    ("text", "tool"),
    [
        ("what would a 2 GPU task cost off-peak", "estimate_wait"),
        ("how long would a 2-GPU job wait tonight?", "estimate_wait"),
        ("stop waiting for off-peak on 5", "change_task"),
    ],
)
def test_questions_about_a_task_in_the_window_stay_about_the_task(text, tool):
    assert understand(text, NOW).tool == tool


def test_run_in_the_cheapest_hours_is_an_offpeak_task():
    assert understand("run python train.py in the cheapest hours", NOW).args["offpeak"] is True


def test_outside_the_window_it_says_when_the_next_starts():
    afternoon = datetime(2026, 3, 2, 15, 0, tzinfo=SHANGHAI)

    english = offpeak_window_words("23:00-07:00", afternoon, "en")
    chinese = offpeak_window_words("23:00-07:00", afternoon, "zh")

    assert english.startswith(
        "Off-peak (cheap power) is 23:00-07:00, cluster time. It is 15:00 now: the next"
    )
    assert "window starts at 23:00 (in 8.0 h)." in english
    assert (
        "谷时（低价电）时段：23:00-07:00（集群时间）。现在是 15:00，下一个谷时 23:00 开始（8.0 小时后）。"
        in chinese
    )


def test_inside_the_window_it_says_until_when_even_across_midnight_and_touching_windows():
    late = datetime(2026, 3, 2, 23, 30, tzinfo=SHANGHAI)

    assert "It is off-peak now, until 07:00." in offpeak_window_words("23:00-07:00", late, "en")
    # a lunch window touching nothing, and a night one made of two that touch at midnight
    two = offpeak_window_words("12:00-13:00,22:00-24:00,00:00-06:00", late, "en")
    assert "is 12:00-13:00, 22:00-00:00, 00:00-06:00" in two and "until 06:00." in two


def test_a_cluster_without_a_window_says_tonight_starts_whenever_gpus_are_free():
    assert "sets no off-peak" in offpeak_window_words("", datetime(2026, 3, 2, 15, 0, tzinfo=SHANGHAI), "en")


def test_the_assistant_answers_from_its_clusters_settings(cluster, make_client, make_identity):
    settings = cluster.settings.model_copy(update={"offpeak": "01:00-05:00"})
    _, token = make_identity("alice", "vision")
    assistant = Assistant(settings, make_client(token), now=lambda: NOW, user="alice", team="vision")

    turn = assistant.ask("when is off-peak?")

    assert turn.tool_calls == [] and "Off-peak (cheap power) is 01:00-05:00" in turn.reply
    assert f"It is {NOW:%H:%M} now: the next window starts at 01:00" in turn.reply
