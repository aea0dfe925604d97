"""A notice asked for one task ("email me when it's done", "let me know when 12 finishes", "12号跑完通知我"):
nightshift sends notices to the targets an admin set per user or team, not per task, so the chat says where
they go and how to wait for a task, and makes no card that would drop the words."""

from __future__ import annotations

from datetime import datetime

import pytest

from assistant.parsing.intents import understand

NOW = datetime.fromisoformat("2026-03-02T15:00:00+08:00")


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("notify me when 12 finishes", "help"),
        ("let me know when 12 is done", "help"),
        ("email me once task 12 fails", "help"),
        ("12号跑完通知我", "help"),
        ("12号结束后发邮件给我", "help"),
        ("run python train.py and email me when done", "question"),
        ("run python train.py, ping me if it fails", "question"),
        ("跑 python train.py，跑完发邮件给我", "question"),
        # the notice as the request's last words: when it is done, said nowhere else
        ("run python train.py and email me", "question"),
        ("run python train.py, notify me on slack", "question"),
        ("跑 python train.py 发邮件给我", "question"),
    ],
)
def test_a_notice_for_one_task_gets_where_notices_go(text, kind):
    reading = understand(text, NOW)

    assert (reading.kind, reading.reason, reading.tool) == (kind, "notices", None)


@pytest.mark.parametrize(
    ("text", "tool"),
    [
        ("tell me why 12 failed", "explain_task"),
        ("what happened to 12", "explain_task"),
        ("when will 12 start", "estimate_wait"),
        ("let me know if there is a free GPU", "cluster_status"),
        ("is 12 done? let me know", "explain_task"),  # "let me know" closing a question only asks
        ("run python train.py and let me know", "submit_task"),
        ("12号怎么样了告诉我", "explain_task"),
        ("run `python notify.py --email me@lab.org` when 12 is done", "submit_task"),
    ],
)
def test_other_requests_with_tell_me_or_done_are_read_as_before(text, tool):
    assert understand(text, NOW).tool == tool


def test_the_answer_names_the_admins_targets_and_nightshift_wait(make_assistant, four_gpu_node):
    assistant = make_assistant()

    submit = assistant.ask("run python train.py and email me when done")
    english = assistant.ask("let me know when 12 is done")
    chinese = assistant.ask("12号跑完通知我")

    assert submit.cards == [] and submit.tool_calls == []
    assert submit.reply == english.reply
    assert "an admin set for you or your team in nightshift.toml" in english.reply
    assert "`nightshift wait ID` returns when it ends" in english.reply
    assert chinese.reply.startswith("nightshift 的通知（开始、成功、失败）会发到管理员")
