"""The chat searches task history: `list_tasks(since, until, name, tag, node)` through the real API, the
offline model reading "what did I run yesterday?" / "上周的 train.py" / "tasks tagged exp7", and the replies
("showing 20 of 22", "no task matches" with what was searched)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from sqlalchemy import update

from assistant.agent import Assistant
from assistant.client import AssistantClient
from assistant.parsing.history import read_period, resolve_since, resolve_until
from assistant.parsing.intents import understand
from assistant.replies import reply_for, search_words
from scheduler.service import Cluster
from scheduler.store.tables import Task
from tests.assistant.conftest import NOW, ScriptedChatModel, tool_call, tool_result

SHANGHAI = datetime.fromisoformat("2026-03-05T15:00:00+08:00")  # a Thursday


def _submit(cluster: Cluster, client: AssistantClient, name: str, at: datetime, **spec: Any) -> int:
    """A CPU task named `name` sent through the API, its submission time then set to `at` in SQL."""
    task = client.submit({"command": f"python {name.split()[0]}", "name": name, "gpus": 0, **spec})
    with cluster.factory.begin() as session:
        session.execute(update(Task).where(Task.id == task["id"]).values(submitted_at=at))
    return int(task["id"])


def _ids(result: dict[str, Any]) -> list[int]:
    return [task["id"] for task in result["tasks"]]


# --- the tool, through the real API ----------------------------------------------------------------------


def test_what_did_i_run_yesterday_lists_that_whole_day_both_ends_included(make_assistant, cluster):
    assistant = make_assistant()  # NOW: Monday 2026-03-02 15:00 UTC, the cluster's zone UTC
    who = assistant.client
    before = _submit(cluster, who, "a.py", datetime(2026, 2, 28, 23, 59, 59, tzinfo=UTC))
    first = _submit(cluster, who, "b.py", datetime(2026, 3, 1, 0, 0, tzinfo=UTC))
    last = _submit(cluster, who, "c.py", datetime(2026, 3, 1, 23, 59, 59, 500000, tzinfo=UTC))
    today = _submit(cluster, who, "d.py", datetime(2026, 3, 2, 0, 0, tzinfo=UTC))

    turn = assistant.ask("what did I run yesterday?")

    result = tool_result(assistant.history, "list_tasks")
    assert _ids(result) == [last, first] and result["total"] == 2
    assert {before, today}.isdisjoint(_ids(result))
    assert turn.reply == f"2 task(s) (submitted yesterday):\n#{last} c.py — queued\n#{first} b.py — queued"


def test_a_chinese_search_for_last_weeks_train_py_finds_its_sweep_runs_too(make_assistant, cluster):
    assistant = make_assistant()
    who = assistant.client
    run = _submit(cluster, who, "train.py", datetime(2026, 2, 24, 10, tzinfo=UTC))
    swept = _submit(cluster, who, "train.py lr:0.1", datetime(2026, 2, 26, 10, tzinfo=UTC))
    _submit(cluster, who, "eval.py", datetime(2026, 2, 25, 10, tzinfo=UTC))
    _submit(cluster, who, "train.py", datetime(2026, 3, 2, 10, tzinfo=UTC))  # this week

    turn = assistant.ask("我上周跑的 train.py")

    assert turn.tool_calls[0]["args"]["name"] == "train.py*"
    assert turn.spec is None and not turn.cards  # a search, not a new task
    assert _ids(tool_result(assistant.history, "list_tasks")) == [swept, run]
    assert turn.reply.startswith("共 2 个任务（02-23 至 03-01 提交、名称 train.py*）：")


def test_tasks_tagged_exp7_are_only_those_carrying_the_tag(make_assistant, cluster):
    assistant = make_assistant()
    who = assistant.client
    tagged = _submit(cluster, who, "a.py", datetime(2026, 3, 1, tzinfo=UTC), tags=["exp7", "lr"])
    _submit(cluster, who, "b.py", datetime(2026, 3, 1, tzinfo=UTC), tags=["exp70"])

    turn = assistant.ask("show tasks tagged exp7")

    assert turn.tool_calls == [{"name": "list_tasks", "args": {"tag": "exp7"}}]
    assert _ids(tool_result(assistant.history, "list_tasks")) == [tagged]


def test_a_cut_page_says_how_many_matched_in_all(make_assistant, cluster):
    assistant = make_assistant()
    who = assistant.client
    for minute in range(22):
        _submit(cluster, who, f"t{minute}.py", datetime(2026, 3, 1, 9, minute, tzinfo=UTC))

    turn = assistant.ask("what did I run yesterday")

    result = tool_result(assistant.history, "list_tasks")
    assert (result["count"], result["total"]) == (20, 22)
    assert turn.reply.startswith(
        "Showing 20 of 22 tasks (submitted yesterday), newest first (`nightshift ls` lists them all):"
    )


def test_no_match_says_what_was_searched_in_the_persons_language(make_assistant, cluster):
    assistant = make_assistant()

    english = assistant.ask("failed runs of train.py last week").reply
    chinese = assistant.ask("标签 exp9 的任务").reply

    assert english == "No task matches (failed, submitted 02-23 – 03-01, named train.py*)."
    assert chinese == "没有符合条件的任务（标签 exp9）。"


def test_a_scripted_model_passes_words_resolved_in_the_clusters_zone(
    cluster: Cluster, make_client: Callable[[str], AssistantClient], make_identity: Callable[..., Any]
):
    # Given a cluster in Shanghai (UTC+8), where it is already Tuesday 03-03 04:00 at 20:00 UTC Monday
    settings = cluster.settings.model_copy(update={"timezone": "Asia/Shanghai"})
    _, token = make_identity("alice", "vision")
    who = make_client(token)
    late_monday = _submit(cluster, who, "a.py", datetime(2026, 3, 1, 16, 30, tzinfo=UTC))  # 03-02 00:30 +8
    _submit(cluster, who, "b.py", datetime(2026, 3, 1, 15, 30, tzinfo=UTC))  # 03-01 23:30 in Shanghai
    model = ScriptedChatModel(
        messages=iter(
            [
                tool_call("list_tasks", {"since": "yesterday", "until": "yesterday", "node": None}),
                AIMessage(content="One task."),
            ]
        )
    )
    now = datetime(2026, 3, 2, 20, 0, tzinfo=UTC)
    assistant = Assistant(settings, make_client(token), model=model, now=lambda: now)

    assistant.ask("what did I run yesterday?")

    result = tool_result(assistant.history, "list_tasks")
    assert _ids(result) == [late_monday]
    assert result["searched"] == {
        "since": "2026-03-02T00:00:00+08:00",
        "until": "2026-03-02T23:59:59.999999+08:00",
    }


def test_a_time_the_tool_cannot_read_goes_back_to_the_model_with_what_it_reads(make_assistant):
    model = ScriptedChatModel(
        messages=iter([tool_call("list_tasks", {"since": "the blue moon"}), AIMessage(content="?")])
    )
    assistant = make_assistant(model=model)

    assistant.ask("tasks since the blue moon")

    result = tool_result(assistant.history, "list_tasks")
    assert result["ok"] is False
    assert result["error"].startswith("since: cannot read the time 'the blue moon'")


def test_a_node_search_passes_the_node_to_the_api(make_assistant, cluster):
    assistant = make_assistant()
    who = assistant.client
    _submit(cluster, who, "a.py", datetime(2026, 3, 1, tzinfo=UTC))  # never ran anywhere

    turn = assistant.ask("tasks that ran on gpu-box-2")

    assert turn.tool_calls == [{"name": "list_tasks", "args": {"node": "gpu-box-2"}}]
    assert turn.reply == "No task matches (ran on gpu-box-2)."


# --- the offline model's reading ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "args"),
    [
        (
            "what did I run yesterday",
            {"since": "2026-03-04T00:00:00+08:00", "until": "2026-03-04T23:59:59.999999+08:00"},
        ),
        ("my tasks since monday", {"since": "2026-03-02T00:00:00+08:00"}),
        ("failed tasks this week", {"status": "failed", "since": "2026-03-02T00:00:00+08:00"}),
        ("tasks tagged exp7", {"tag": "exp7"}),
        (
            "runs of train.py last week",
            {
                "name": "train.py*",
                "since": "2026-02-23T00:00:00+08:00",
                "until": "2026-03-01T23:59:59.999999+08:00",
            },
        ),
        (
            "昨天跑了哪些任务",
            {"since": "2026-03-04T00:00:00+08:00", "until": "2026-03-04T23:59:59.999999+08:00"},
        ),
        (
            "上周的 train.py",
            {
                "name": "train.py*",
                "since": "2026-02-23T00:00:00+08:00",
                "until": "2026-03-01T23:59:59.999999+08:00",
            },
        ),
        ("标签 exp7 的任务", {"tag": "exp7"}),
        ("本周失败的任务", {"status": "failed", "since": "2026-03-02T00:00:00+08:00"}),
        (
            "tasks named baseline from last month",
            {
                "name": "baseline",
                "since": "2026-02-01T00:00:00+08:00",
                "until": "2026-02-28T23:59:59.999999+08:00",
            },
        ),
        ("jobs I submitted in the last 3 days", {"since": "2026-03-02T15:00:00+08:00"}),
        ("在 box-a 上跑的任务", {"node": "box-a"}),
        (
            "上周五跑的任务",
            {"since": "2026-02-27T00:00:00+08:00", "until": "2026-02-27T23:59:59.999999+08:00"},
        ),
    ],
)
def test_the_offline_model_reads_a_history_search(text: str, args: dict[str, str]) -> None:
    reading = understand(text, SHANGHAI)

    assert (reading.tool, reading.args) == ("list_tasks", args)


@pytest.mark.parametrize(
    ("search", "other", "tool"),
    [
        ("上周的 train.py", "上周的 train.py 今晚再跑一次", "submit_task"),  # a time ahead: a new task
        ("runs of train.py last week", "run train.py tonight", "submit_task"),
        ("tasks that ran on node box-a", "run `python train.py` on node box-a", "submit_task"),
        ("tasks tagged exp7", "submit 3 tasks tagged exp7", None),  # a new task, its command missing
        ("what did I run yesterday", "how much did we use yesterday", "utilization_report"),
        ("昨天跑了哪些任务", "昨天晚上有任务失败吗？", "night_summary"),
        ("which tasks failed yesterday", "how did task 12 go yesterday?", "explain_task"),
    ],
)
def test_a_search_is_told_from_the_requests_its_words_share(search: str, other: str, tool: str | None):
    reading = understand(search, SHANGHAI)
    assert reading.tool == "list_tasks" and {"since", "name", "tag", "node"} & reading.args.keys()
    assert understand(other, SHANGHAI).tool == tool


def test_words_of_time_read_for_the_tools_arguments() -> None:
    zone = SHANGHAI.tzinfo
    assert zone is not None

    assert resolve_since("last week", SHANGHAI, zone).isoformat() == "2026-02-23T00:00:00+08:00"
    assert resolve_until("上周", SHANGHAI, zone).isoformat() == "2026-03-01T23:59:59.999999+08:00"
    assert resolve_until("2026-03-01", SHANGHAI, zone).isoformat() == "2026-03-01T23:59:59.999999+08:00"
    assert resolve_since("9am", SHANGHAI, zone).isoformat() == "2026-03-05T09:00:00+08:00"  # parse_past
    assert resolve_since("2026-03-01T09:00", SHANGHAI, zone).isoformat() == "2026-03-01T09:00:00+08:00"
    march = read_period("since march 10", SHANGHAI)  # no year, still ahead this year: last year's
    assert march is not None and march.start.isoformat() == "2025-03-10T00:00:00+08:00"


# --- the replies ----------------------------------------------------------------------------------------


def test_what_was_searched_reads_in_english_and_chinese() -> None:
    searched = {
        "status": "failed",
        "since": "2026-03-04T00:00:00+08:00",
        "until": "2026-03-04T23:59:59.999999+08:00",
        "name": "<data>train.py*</data>",
        "tag": "<data>exp7</data>",
        "node": "<data>box-a</data>",
    }

    assert search_words(searched, SHANGHAI, "en") == (
        "failed, submitted yesterday, named train.py*, tagged exp7, ran on box-a"
    )
    assert (
        search_words(searched, SHANGHAI, "zh")
        == "失败、昨天提交、名称 train.py*、标签 exp7、在 box-a 上运行过"
    )
    since_nine = {"since": "2026-03-05T01:00:00+00:00"}  # 09:00 in Shanghai
    assert search_words(since_nine, SHANGHAI, "en") == "submitted since today 09:00"
    assert search_words(since_nine, SHANGHAI, "zh") == "今天 09:00 以来提交"
    nothing = '{"ok": true, "tasks": [], "count": 0, "total": 0, "searched": {}}'
    assert reply_for("list_tasks", nothing, "en", NOW) == "You have no matching tasks."  # no filter


@pytest.mark.parametrize(
    ("text", "args"),
    [
        ("show bob's tasks", {"submitted_by": "bob"}),
        ("what is bob running", {"status": "running", "submitted_by": "bob"}),
        ("show me the jobs of alice", {"submitted_by": "alice"}),
        ("bob的任务", {"submitted_by": "bob"}),
        ("show bob's failed jobs", {"status": "failed", "submitted_by": "bob"}),
        ("what did bob submit today", {"since": "2026-03-02T00:00:00+00:00", "submitted_by": "bob"}),
        ("what has bob run", {"submitted_by": "bob"}),
        ("bob今天提交了什么", {"since": "2026-03-02T00:00:00+00:00", "submitted_by": "bob"}),
        ("bob跑了哪些任务", {"submitted_by": "bob"}),
    ],
)
def test_a_teammates_tasks_are_a_list_of_theirs(text, args):
    reading = understand(text, NOW)

    assert (reading.tool, reading.args) == ("list_tasks", args)


@pytest.mark.parametrize(
    "text",
    ["what's running", "show me everyone's tasks", "show the team's tasks", "标签 exp7 的任务", "what did I submit today",
     "what did we run yesterday", "我今天提交了什么"],
)  # fmt: skip
def test_words_that_name_no_person_filter_no_user(text):
    assert "submitted_by" not in understand(text, NOW).args


def test_a_teammates_list_holds_their_tasks_and_another_teams_user_is_not_shown(make_assistant):
    alice = make_assistant("alice", "vision")
    bob = make_assistant("bob", "vision")
    carol = make_assistant("carol", "speech")
    for who in (alice, bob, bob, carol):
        who.client.submit(
            {"command": f"echo {who.user}", "gpus": 0, "not_before": "2030-01-01T09:00:00+00:00"}
        )

    teammate = alice.ask("show bob's tasks")
    outsider = alice.ask("show carol's tasks")
    chinese = alice.ask("carol的任务")

    listed = tool_result(alice.history[:4], "list_tasks")  # the first turn's
    assert listed["count"] == 2 and {task["command"] for task in listed["tasks"]} == {"<data>echo bob</data>"}
    assert teammate.reply.startswith("2 task(s)")
    assert outsider.tool_calls == [{"name": "list_tasks", "args": {"submitted_by": "carol"}}]
    assert outsider.reply == "Sorry, that didn't work: no user 'carol' in team vision"
    assert chinese.reply == "抱歉，没能完成：团队 vision 里没有用户 carol"


@pytest.mark.parametrize("text", ["show my held tasks", "which of my tasks are paused", "列出暂停的任务"])
def test_held_tasks_are_asked_for_as_such(text):
    assert (understand(text, NOW).tool, understand(text, NOW).args) == ("list_tasks", {"held": True})


def test_the_held_list_holds_only_the_held_tasks(make_assistant, cluster):
    assistant = make_assistant()
    later = "2030-01-01T09:00:00+00:00"
    held, free = (
        int(assistant.client.submit({"command": "true", "gpus": 0, "not_before": later})["id"]) for _ in "ab"
    )
    assistant.client.hold(held)

    turn = assistant.ask("show my held tasks")

    listed = tool_result(assistant.history, "list_tasks")
    assert [task["id"] for task in listed["tasks"]] == [held] and free != held
    assert turn.reply.startswith("1 task(s)") and f"#{held}" in turn.reply


@pytest.mark.parametrize(
    ("text", "days"),
    [
        ("how long did I wait yesterday", 1),
        ("how long did we wait this week", 7),
        ("what was the average wait this week", 7),
        ("我们这周平均等了多久", 7),
    ],
)
def test_how_long_one_waited_is_the_reports_waits_not_an_estimate(text, days):
    reading = understand(text, NOW)

    assert (reading.tool, reading.args) == ("utilization_report", {"days": days})
