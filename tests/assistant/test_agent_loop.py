"""The agent loop: model → tools → the real API (in-process) → answer; cards wait for the person's confirm."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta

import pytest
from langchain_core.messages import AIMessage

from assistant.replies import card_text
from scheduler.policy.tariff import estimate_cost
from tests.assistant.conftest import NOW, ScriptedChatModel, tool_call

pytestmark = pytest.mark.usefixtures("four_gpu_node")


def test_a_scripted_model_calls_a_tool_through_the_api_and_answers(make_assistant, cluster):
    # Given a scripted model that asks for list_tasks, then answers
    model = ScriptedChatModel(
        messages=iter(
            [tool_call("list_tasks", {"status": "queued"}), AIMessage(content="You have 1 queued task.")]
        )
    )
    assistant = make_assistant(model=model)
    assistant.client.submit({"command": "echo hi", "gpus": 0})

    # When the person asks
    turn = assistant.ask("what is queued?")

    # Then the tool ran against the real API and the model's answer came back
    assert turn.tool_calls == [{"name": "list_tasks", "args": {"status": "queued"}}]
    assert turn.reply == "You have 1 queued task."
    result = [m for m in assistant.history if m.type == "tool"][-1]
    assert '"count": 1' in result.content and "<data>echo hi</data>" in result.content


def test_submit_returns_a_card_and_only_confirm_submits(make_assistant, cluster):
    assistant = make_assistant()

    turn = assistant.ask("run `python train.py` tonight on 2 GPUs")

    assert turn.tool_calls == [
        {"name": "submit_task", "args": {"command": "python train.py", "gpus": 2, "offpeak": True}}
    ]
    assert cluster.tasks.count_by_status() == {}
    assert len(turn.cards) == 1 and turn.cards[0]["kind"] == "submit"
    assert "confirm" in turn.reply and "23:00" in turn.reply
    assert turn.spec is not None and turn.spec["offpeak"] is True and turn.spec["name"] == "train.py"

    result = assistant.confirm(turn.cards[0]["action_id"])

    assert result["ok"], result
    assert result["task"]["status"] == "queued" and result["task"]["spec"]["offpeak"] is True
    assert cluster.tasks.count_by_status() == {"queued": 1}
    assert assistant.confirm(turn.cards[0]["action_id"])["ok"] is False  # a card is used once


def test_a_card_prices_the_energy_from_when_the_task_would_start(make_assistant, cluster):
    assistant = make_assistant()

    tonight = assistant.ask("run `python train.py` tonight on 2 GPUs, should take 2 hours")

    summary = tonight.cards[0]["summary"]
    start = datetime.fromisoformat(summary["estimated_start"])
    assert start.astimezone(cluster.zone).hour >= 23 or start.astimezone(cluster.zone).hour < 7
    kwh = summary["energy"]["kwh"]
    cost = estimate_cost(start.timestamp(), start.timestamp() + 7200, kwh, cluster.policy_config.tariff)
    assert summary["energy_cost"] == f"~{cost:.2f} {cluster.policy_config.tariff.currency}"
    assert f"{summary['energy_cost']} at the tariff's rates" in tonight.reply


@pytest.mark.parametrize(
    ("run", "may_start"),
    [
        ("about 1 hour", "today 05:30, off-peak"),  # ends 06:30, inside this window (23:00-07:00)
        ("", "today 05:30, off-peak"),  # the default hour the scheduler assumes fits too
        ("about 2 hours", "tonight 23:00, off-peak"),  # would run past 07:00: the scheduler waits
    ],
)
def test_an_offpeak_card_inside_the_window_may_start_now_only_if_the_run_ends_in_it(
    make_assistant, run, may_start
):
    assistant = make_assistant(now=datetime.fromisoformat("2026-03-03T05:30:00+00:00"))

    turn = assistant.ask(f"run `python finetune.py` tonight on 2 GPUs {run}".strip())

    assert turn.cards[0]["summary"]["start_label"] == may_start


def test_a_cpu_only_card_speaks_of_cpu_only_and_not_of_gpus_freeing(make_assistant):
    assistant = make_assistant()

    english = assistant.ask("run `python prepare.py` on cpu only")
    chinese = assistant.ask("不用GPU，跑 `python prepare.py`")

    assert english.cards[0]["spec"]["gpus"] == 0
    assert "• resources: CPU only (no GPU)" in english.reply
    assert "• may start: right away (CPU only)" in english.reply
    assert (
        "• 资源: 只用 CPU（不占 GPU）" in chinese.reply
        and "• 最早开始: 立即开始（只用 CPU）" in chinese.reply
    )
    assert not any(words in english.reply for words in ("0 GPUs", "GPUs are free"))
    assert not any(words in chinese.reply for words in ("0 张卡", "空闲 GPU"))


def test_a_card_without_a_run_time_says_it_assumed_the_default_and_prices_that(make_assistant, cluster):
    assistant = make_assistant()

    turn = assistant.ask("run `python train.py` on 2 GPUs")

    summary = turn.cards[0]["summary"]
    default_minutes = cluster.policy_config.default_estimate_s / 60
    assert summary["run_estimate"] == {"minutes": default_minutes, "source": "default"}
    start, end = (datetime.fromisoformat(summary[key]) for key in ("estimated_start", "estimated_end"))
    assert end - start == timedelta(minutes=default_minutes)
    assert summary["energy"]["minutes"] == default_minutes and "energy_cost" in summary
    assert f"a guess of {default_minutes:.0f} min: say how long it runs for a better estimate" in turn.reply


def test_a_card_for_a_task_that_waits_for_another_starts_after_it(make_assistant, cluster):
    assistant = make_assistant()
    parent = assistant.client.submit(
        {"command": "sleep 1", "not_before": "2030-01-07T12:00:00+00:00", "estimated_minutes": 60}
    )

    turn = assistant.ask(f"run `python b.py` after task {parent['id']}")

    assert turn.spec is not None and turn.spec["depends_on"] == [parent["id"]]
    start = datetime.fromisoformat(turn.cards[0]["summary"]["estimated_start"])
    assert start == datetime.fromisoformat("2030-01-07T13:00:00+00:00")  # when its parent should end


def test_a_list_longer_than_one_answer_says_how_many_there_are_in_all(make_assistant, cluster):
    assistant = make_assistant()
    for number in range(22):
        assistant.client.submit({"command": f"echo {number}", "gpus": 0})

    reply = assistant.ask("list my tasks").reply

    # the API counts them (`total`): the answer holds the newest 20, and says of how many
    assert reply.startswith("Showing 20 of 22 tasks, newest first (`nightshift ls` lists them all):")
    assert "… and 12 more" in reply


def test_a_validation_error_goes_back_to_the_model_as_the_tool_result(make_assistant, cluster):
    model = ScriptedChatModel(
        messages=iter(
            [
                tool_call("submit_task", {"command": "python train.py", "gpus": 6}),
                tool_call("submit_task", {"command": "python train.py", "gpus": 4}, "call_2"),
                AIMessage(content="The cluster has 4 GPUs per node, so I used 4. Please confirm."),
            ]
        )
    )
    assistant = make_assistant(model=model)

    turn = assistant.ask("run train.py on 6 GPUs")

    errors = [m.content for m in assistant.history if m.type == "tool" and '"ok": false' in m.content]
    assert errors and "between 0 and 4" in errors[0]
    assert turn.spec is not None and turn.spec["gpus"] == 4 and turn.error is None
    assert cluster.tasks.count_by_status() == {}


def test_the_offline_model_reports_a_spec_error_in_the_persons_language(make_assistant):
    assistant = make_assistant()

    turn = assistant.ask("用两张卡跑 `python train.py`，显存 200G")

    assert turn.spec is None and turn.error is not None and "200" in turn.error
    assert "无法提交" in turn.reply


def test_cancel_needs_a_confirm_and_then_cancels_through_the_api(make_assistant, cluster):
    assistant = make_assistant()
    task = assistant.client.submit({"command": "sleep 100", "gpus": 0})

    turn = assistant.ask(f"cancel task {task['id']}")

    assert turn.tool_calls == [{"name": "cancel_task", "args": {"task_id": task["id"]}}]
    assert cluster.tasks.get_any(task["id"]).status == "queued"
    result = assistant.confirm(turn.cards[0]["action_id"])
    assert result["ok"] and cluster.tasks.get_any(task["id"]).status == "cancelled"


def test_several_tasks_are_cancelled_on_one_card_and_each_says_how_it_went(make_assistant, cluster):
    assistant = make_assistant()
    first, second, ended = (
        assistant.client.submit({"command": "sleep 100", "gpus": 0})["id"] for _ in range(3)
    )
    assistant.client.cancel(ended)

    turn = assistant.ask(f"cancel {first}, {second} and {ended}")
    card = turn.cards[0]
    untouched = [cluster.tasks.get_any(task_id).status for task_id in (first, second)]
    assistant.client.cancel(second)  # cancelled meanwhile, from the command line
    result = assistant.confirm(card["action_id"])

    assert turn.tool_calls == [{"name": "cancel_tasks", "args": {"task_ids": [first, second, ended]}}]
    assert (card["task_ids"], card["left_out"]) == ([first, second], [{"id": ended, "status": "cancelled"}])
    assert f"Cancel these 2 tasks?\n• #{first} (" in turn.reply
    assert f"• left out, already ended: #{ended} (cancelled)" in turn.reply
    assert turn.reply.endswith("Nothing happens until you confirm.")
    assert untouched == ["queued", "queued"]
    assert result["ok"] and cluster.tasks.get_any(first).status == "cancelled"
    assert result["message"] == (
        f"Cancelled #{first}. Not cancelled: #{second}: task {second} already cancelled; nothing to cancel."
    )
    assert assistant.confirm(card["action_id"])["ok"] is False  # once


def test_all_of_ones_own_queued_tasks_are_cancelled_on_one_card_never_a_teammates(make_assistant, cluster):
    alice, bob = make_assistant("alice", "vision"), make_assistant("bob", "vision")
    later = {"command": "python train.py", "gpus": 0, "not_before": "2030-01-01T00:00:00Z"}
    mine = [alice.client.submit(later)["id"] for _ in range(2)]
    teammates = bob.client.submit(later)["id"]

    turn = alice.ask("cancel all my queued jobs")
    result = alice.confirm(turn.cards[0]["action_id"])
    nothing_left = alice.ask("取消我所有排队的任务")

    assert turn.tool_calls == [{"name": "cancel_tasks", "args": {"mine": True, "status": "queued"}}]
    assert turn.cards[0]["task_ids"] == mine and f"#{teammates}" not in turn.reply
    assert result["ok"] and result["message"] == f"Cancelled #{mine[0]}, #{mine[1]}."
    assert [cluster.tasks.get_any(i).status for i in (*mine, teammates)] == [
        "cancelled",
        "cancelled",
        "queued",
    ]
    assert (
        nothing_left.cards == [] and nothing_left.reply == "抱歉，没能完成：你没有排队中的任务：没有可取消的"
    )


def test_more_own_tasks_than_a_card_takes_are_pointed_to_cancel_mine(make_assistant, cluster):
    assistant = make_assistant()
    later = {"command": "python train.py", "gpus": 0, "not_before": "2030-01-01T00:00:00Z"}
    for _ in range(21):
        assistant.client.submit(later)

    turn = assistant.ask("cancel everything")

    assert turn.cards == []
    assert "you have 21 live tasks; the chat cancels up to 20 on one card" in turn.reply
    assert "`nightshift cancel --mine`" in turn.reply


def test_a_card_of_several_tasks_that_all_ended_meanwhile_does_nothing_and_says_so(make_assistant, cluster):
    assistant = make_assistant()
    ids = [assistant.client.submit({"command": "sleep 100", "gpus": 0})["id"] for _ in range(2)]

    turn = assistant.ask(f"取消{ids[0]}和{ids[1]}号")
    for task_id in ids:
        assistant.client.cancel(task_id)
    result = assistant.confirm(turn.cards[0]["action_id"])
    every_one_ended = assistant.ask(f"cancel {ids[0]} and {ids[1]}")

    assert turn.reply.startswith("要取消这 2 个任务吗？")
    assert result["ok"] is False and result["error"].startswith(f"未取消：#{ids[0]}: ")
    assert f"；#{ids[1]}: " in result["error"]
    assert every_one_ended.cards == []
    assert (
        f"tasks {ids[0]} already cancelled, {ids[1]} already cancelled; nothing to cancel"
        in every_one_ended.reply
    )


def test_the_same_change_to_several_tasks_is_a_card_each_confirmed_one_after_another(make_assistant, cluster):
    assistant = make_assistant()
    ids = [assistant.client.submit({"command": "sleep 100", "gpus": 0})["id"] for _ in range(2)]

    turn = assistant.ask(f"make {ids[0]} and {ids[1]} urgent")
    untouched = {cluster.tasks.get_any(task_id).priority for task_id in ids}
    first = assistant.confirm(turn.cards[0]["action_id"])
    between = [cluster.tasks.get_any(task_id).priority for task_id in ids]
    second = assistant.confirm(turn.cards[1]["action_id"])

    assert [card["task_id"] for card in turn.cards] == ids
    assert turn.reply.count("• priority: normal → urgent") == 2 and turn.reply.count("please confirm") >= 1
    assert untouched == {"normal"} and between == ["urgent", "normal"]
    assert first["ok"] and second["ok"] and cluster.tasks.get_any(ids[1]).priority == "urgent"


def test_two_tasks_run_again_with_the_same_change_are_two_cards(make_assistant, cluster):
    assistant = make_assistant()
    ids = [assistant.client.submit({"command": f"python t{i}.py", "gpus": 1})["id"] for i in range(2)]
    for task_id in ids:
        assistant.client.cancel(task_id)

    turn = assistant.ask(f"rerun {ids[0]} and {ids[1]} on 2 gpus")
    results = [assistant.confirm(card["action_id"]) for card in turn.cards]

    assert [card["spec"]["command"] for card in turn.cards] == ["python t0.py", "python t1.py"]
    assert all(result["ok"] for result in results)
    made = [cluster.tasks.get_any(result["task"]["id"]) for result in results]
    assert [(task.spec["command"], task.gpus) for task in made] == [("python t0.py", 2), ("python t1.py", 2)]


def test_a_change_shows_before_and_after_on_a_card_and_happens_only_once_confirmed(make_assistant, cluster):
    assistant = make_assistant()
    tid = assistant.client.submit(
        {"command": "python train.py", "gpus": 1, "not_before": "2030-01-01T09:00:00Z"}
    )["id"]
    enqueued = cluster.tasks.get_any(tid).enqueued_at

    urgent = assistant.ask(f"make {tid} urgent and start it now")
    untouched = cluster.tasks.get_any(tid)
    result = assistant.confirm(urgent.cards[0]["action_id"])
    changed = cluster.tasks.get_any(tid)

    call = {"name": "change_task", "args": {"task_id": tid, "priority": "urgent", "start_now": True}}
    assert urgent.tool_calls == [call]
    assert urgent.cards[0]["changes"] == {
        "priority": ["normal", "urgent"],
        "not_before": ["2030-01-01T09:00:00+00:00", None],
    }
    assert "• priority: normal → urgent" in urgent.reply and "please confirm" in urgent.reply
    assert "• not before: 01-01 09:00 → as soon as GPUs are free" in urgent.reply
    assert (untouched.priority, untouched.spec["not_before"]) == ("normal", "2030-01-01T09:00:00+00:00")
    assert result["ok"] and result["message"] == f"Changed task #{tid} (priority, not_before): queued."
    assert (changed.priority, changed.spec["not_before"], changed.enqueued_at) == ("urgent", None, enqueued)


def test_a_card_whose_deadline_cannot_be_met_says_so_before_it_is_confirmed(make_assistant, cluster):
    # Given requests that may start at 21:00 at the earliest, run for 2 hours and should be done by 22:00
    assistant = make_assistant()

    english = assistant.ask("run `python train.py` after 9pm, done by 10pm, takes about 2 hours")
    chinese = assistant.ask("晚上9点以后跑 `python train.py`，10点前跑完，预计2小时")
    in_time = assistant.ask("run `python train.py` after 9pm, done by 11:30pm, takes about 2 hours")

    # Then the card says what the API would warn of, as the API words it, and the person may fix it first
    note = (
        "it cannot finish by its deadline 22:00: the earliest it may start is 21:00 (not before), and its "
        "~2.0 h estimate ends it around 23:00"
    )
    assert english.cards[0]["warnings"] == chinese.cards[0]["warnings"] == [note]
    assert f"\n• ⚠ I{note[1:]}.\nNothing is submitted until you confirm." in english.reply
    assert (
        "• ⚠ 它赶不上截止时间 22:00：最早 21:00 才能开始（按要求的最早开始时间），按预计时长约 2.0 小时"
        in chinese.reply
    )
    assert "warnings" not in in_time.cards[0] and "⚠" not in in_time.reply
    assert cluster.tasks.count_by_status() == {}


def test_a_card_says_when_the_work_queued_ahead_would_make_it_miss_its_deadline(make_assistant, cluster):
    # Given the node's four GPUs promised to an urgent 2-hour task queued first
    model = ScriptedChatModel(messages=iter([AIMessage(content="-")]))
    assistant = make_assistant(model=model)
    assistant.client.submit(
        {"command": "python big.py", "gpus": 4, "priority": "urgent", "estimated_minutes": 120}
    )
    soon = (datetime.now().astimezone() + timedelta(minutes=90)).isoformat()  # the server's clock
    spec = {"command": "python train.py", "gpus": 4, "estimated_minutes": 60, "deadline": soon}
    model.messages = iter([tool_call("submit_task", spec), AIMessage("-")])

    card = assistant.ask("run train.py on 4 GPUs, 1 h, done within 90 minutes").cards[0]

    # Then the card says what the submit would answer: an idle cluster would make it, this queue would not
    [warning] = card["warnings"]
    assert warning.startswith("with the work queued ahead of it, it should start around ")
    # the deadline's day is said when it is not today: "after its deadline tomorrow 00:14" late at night
    assert re.search(r", after its deadline (?:tomorrow )?" + soon[11:16] + "$", warning), warning
    assert "deadline_warning" not in card["summary"]
    assert "• ⚠ With the work queued ahead of it" in card_text(card, "en", NOW)
    assert "• ⚠ 按前面排队的任务，预计" in card_text(card, "zh", NOW)


def test_a_change_card_says_when_the_changed_task_cannot_meet_its_deadline(make_assistant, cluster):
    model = ScriptedChatModel(messages=iter([AIMessage(content="-")]))
    assistant = make_assistant(model=model)
    tid = assistant.client.submit(
        {"command": "python train.py", "gpus": 1, "not_before": "2030-01-01T09:00:00Z",
         "deadline": "2030-01-01T12:00:00Z", "estimated_minutes": 60}
    )["id"]  # fmt: skip
    model.messages = iter(
        [tool_call("change_task", {"task_id": tid, "estimated_minutes": 240}), AIMessage("-")]
    )

    card = assistant.ask(f"{tid} will take 4 hours").cards[0]

    assert card["warnings"] == [
        "it cannot finish by its deadline 2030-01-01 12:00: the earliest it may start is 2030-01-01 09:00 "
        "(not before), and its ~4.0 h estimate ends it around 2030-01-01 13:00"
    ]
    assert "\n• ⚠ It cannot finish by its deadline 2030-01-01 12:00" in card_text(card, "en", NOW)
    assert cluster.tasks.get_any(tid).spec["estimated_minutes"] == 60  # the card alone changes nothing


def test_a_confirmed_submit_or_change_passes_on_the_apis_warnings_in_the_persons_language(
    make_assistant, cluster
):
    # Given a card for a 2-hour task that may start at 09:00 and should be done by 10:00
    late = {"command": "python train.py", "gpus": 1, "not_before": "2030-01-01T09:00:00+00:00",
            "deadline": "2030-01-01T10:00:00+00:00", "estimated_minutes": 120}  # fmt: skip
    model = ScriptedChatModel(messages=iter([tool_call("submit_task", late), AIMessage("-")]))
    assistant = make_assistant(model=model)
    submitted = assistant.confirm(assistant.ask("run train.py at 9, done by 10, 2 h").cards[0]["action_id"])
    tid = submitted["task"]["id"]
    model.messages = iter([tool_call("change_task", {"task_id": tid, "priority": "high"}), AIMessage("-")])
    changed = assistant.confirm(assistant.ask(f"把{tid}号改成高优先级").cards[0]["action_id"])

    # Then the API queued it all the same, and the confirmation says what it warned of
    assert submitted["message"] == (
        f"Submitted task #{tid} (train.py): queued. ⚠ It cannot finish by its deadline 2030-01-01 10:00: the "
        "earliest it may start is 2030-01-01 09:00 (not before), and its ~2.0 h estimate ends it around "
        "2030-01-01 11:00."
    )
    assert changed["message"] == (
        f"已修改任务 #{tid}（优先级）：排队中。⚠ 它赶不上截止时间 2030-01-01 10:00：最早 2030-01-01 09:00 才能"
        "开始（按要求的最早开始时间），按预计时长约 2.0 小时要到 2030-01-01 11:00 左右才结束。"
    )
    assert submitted["task"]["warnings"] and changed["task"]["warnings"]


def test_raise_my_priority_asks_which_task_and_the_number_alone_makes_the_card(make_assistant):
    assistant = make_assistant()
    tid = assistant.client.submit(
        {"command": "python train.py", "gpus": 1, "not_before": "2030-01-01T09:00:00Z"}
    )["id"]

    which = assistant.ask("帮我把优先级调到最高")
    card = assistant.ask(str(tid))

    assert which.tool_calls == [] and which.reply.startswith("是哪个任务？")
    assert card.tool_calls == [{"name": "change_task", "args": {"task_id": tid, "priority": "urgent"}}]


def test_a_change_the_task_cannot_take_is_explained_and_makes_no_card(make_assistant, cluster):
    assistant = make_assistant()
    queued = assistant.client.submit({"command": "python train.py", "gpus": 1, "priority": "high"})["id"]
    done = assistant.client.submit({"command": "true", "gpus": 1})["id"]
    assistant.client.cancel(done)

    gpus = assistant.ask(f"change task {queued} to 4 GPUs")
    finished = assistant.ask(f"make {done} urgent")
    same = assistant.ask(f"make task {queued} high priority")
    chinese = assistant.ask(f"把{done}号改成高优先级")

    assert gpus.tool_calls == [] and "run 12 again on 4 GPUs" in gpus.reply
    assert finished.cards == [] and finished.reply.endswith(
        f"task {done} already cancelled; only a queued or running task can be changed"
    )
    assert same.cards == [] and same.reply.endswith(f"task {queued} already has priority: high")
    assert chinese.reply == f"抱歉，没能完成：任务 {done} 已经被取消；只有排队中或运行中的任务可以修改"
    assert cluster.tasks.get_any(queued).priority == "high"


def test_run_a_task_again_makes_a_card_of_its_spec_changed_as_asked_and_confirm_submits_it(
    make_assistant, cluster
):
    assistant = make_assistant()
    first = assistant.client.submit(
        {"command": "python train.py --lr 0.1", "gpus": 1, "estimated_minutes": 30, "workdir": "/data/exp"}
    )

    turn = assistant.ask(f"run task {first['id']} again on 2 GPUs")

    assert turn.tool_calls == [{"name": "submit_task", "args": {"like_task": first["id"], "gpus": 2}}]
    spec = turn.cards[0]["spec"]
    assert (spec["command"], spec["gpus"], spec["workdir"]) == ("python train.py --lr 0.1", 2, "/data/exp")
    assert spec["estimated_minutes"] == 30 and turn.cards[0]["summary"]["like_task"]["task_id"] == first["id"]
    assert f"based on: task #{first['id']}" in turn.reply
    assert cluster.tasks.count_by_status() == {"queued": 1}  # nothing yet
    result = assistant.confirm(turn.cards[0]["action_id"])
    assert result["ok"] and result["task"]["id"] != first["id"]
    assert (result["task"]["command"], result["task"]["gpus"]) == ("python train.py --lr 0.1", 2)


def test_run_a_task_again_without_its_time_limit_leaves_the_limit_out_and_says_so(make_assistant, cluster):
    assistant = make_assistant()
    first = assistant.client.submit({"command": "python train.py", "gpus": 1, "time_limit_minutes": 120})

    turn = assistant.ask(f"rerun {first['id']} without a time limit")
    result = assistant.confirm(turn.cards[0]["action_id"])
    chinese = assistant.ask(f"{first['id']}号再跑一遍，不限时")
    remove_then_rerun = assistant.ask(f"remove the time limit from {first['id']} and rerun it")
    new_task = assistant.ask("run `python eval.py`, no time limit")

    assert turn.tool_calls == [
        {"name": "submit_task", "args": {"like_task": first["id"], "clear": ["time_limit_minutes"]}}
    ]
    assert turn.cards[0]["spec"].get("time_limit_minutes") is None
    assert turn.cards[0]["summary"]["like_task"]["cleared"] == {"time_limit_minutes": 120}
    assert f"based on: task #{first['id']} (without its time limit (min), 120)" in turn.reply
    assert chinese.cards[0]["spec"].get("time_limit_minutes") is None
    assert "去掉原来的时间限制（分钟）（120）" in chinese.reply
    assert [card["kind"] for card in remove_then_rerun.cards] == ["submit"]  # a new task, never a cancel
    assert remove_then_rerun.cards[0]["summary"]["like_task"]["cleared"] == {"time_limit_minutes": 120}
    assert new_task.cards and new_task.cards[0]["spec"].get("time_limit_minutes") is None
    assert result["ok"], result
    assert result["task"]["spec"]["time_limit_minutes"] is None
    assert cluster.tasks.get_any(first["id"]).spec["time_limit_minutes"] == 120  # the first keeps its own


def test_another_teams_task_cannot_be_run_again_through_the_chat(make_assistant, cluster):
    bob = make_assistant(user="bob", team="nlp")
    theirs = bob.client.submit({"command": "echo secret", "gpus": 0})
    assistant = make_assistant()

    english = assistant.ask(f"rerun task {theirs['id']}")
    chinese = assistant.ask(f"{theirs['id']}号再跑一遍")

    assert english.cards == [] and f"task {theirs['id']} not found" in english.reply
    assert chinese.reply.startswith(f"无法提交：找不到任务 {theirs['id']}（或它不属于你的团队）")
    assert "secret" not in english.reply + chinese.reply


def test_a_task_is_held_and_released_from_the_chat_in_english_and_chinese(make_assistant, cluster):
    assistant = make_assistant()
    tid = assistant.client.submit({"command": "python train.py", "gpus": 1})["id"]

    pause = assistant.ask(f"pause task {tid}")
    held, in_queue_while_held = cluster.tasks.get_any(tid), tid in cluster.queue.queued_ids()
    listed = assistant.ask("list my queued tasks")
    why = assistant.ask(f"why isn't {tid} running?")
    why_zh = assistant.ask(f"{tid}号为什么还没开始？")
    again = assistant.ask(f"暂停{tid}号任务")
    released = assistant.ask(f"放行{tid}号")
    twice = assistant.ask(f"release {tid}")

    # hold acts at once (no card), as the Hold button does; release undoes it
    assert pause.tool_calls == [{"name": "hold_task", "args": {"task_id": tid}}] and pause.cards == []
    assert (held.status, held.held_by) == ("queued", "alice") and not in_queue_while_held
    assert pause.reply.startswith(f"Task #{tid} is held: it stays queued, keeps its place")
    # in the chat, what to say here ("release 12"), not the shell's `nightshift release 12`
    assert f'queued (held: say "release {tid}")' in listed.reply
    assert f'held by alice: say "release {tid}" to let it start' in why.reply
    assert f"被 alice 暂停：说“放行{tid}号”后才会开始" in why_zh.reply
    assert "nightshift release" not in why.reply + why_zh.reply + listed.reply + again.reply
    assert again.reply == f"抱歉，没能完成：任务 {tid} 已被 alice 暂停；说“放行{tid}号”即可放行"
    assert released.reply == f"任务 #{tid} 已放行：按原来的优先级和排队时间重新排队。"
    assert cluster.tasks.get_any(tid).held_by is None and tid in cluster.queue.queued_ids()
    assert twice.reply == f"Sorry, that didn't work: task {tid} is not held (queued); nothing to release"


def test_the_chat_holds_only_the_persons_own_teams_queued_tasks(make_assistant, cluster):
    bob = make_assistant(user="bob", team="nlp")
    theirs = bob.client.submit({"command": "python train.py", "gpus": 1})["id"]
    assistant = make_assistant()
    done = assistant.client.submit({"command": "true", "gpus": 1})["id"]
    assistant.client.cancel(done)

    other_team = assistant.ask(f"hold {theirs}")
    finished = assistant.ask(f"hold {done}")
    two = assistant.ask(f"hold {theirs} and {done}")

    assert other_team.reply == f"Sorry, that didn't work: task {theirs} not found"
    assert cluster.tasks.get_any(theirs).held_by is None
    assert finished.reply.endswith(f"task {done} already cancelled; only a queued task can be held")
    assert [call["args"] for call in two.tool_calls] == [{"task_id": theirs}, {"task_id": done}]
    assert f"task {theirs} not found" in two.reply and f"task {done} already cancelled" in two.reply
    assert cluster.tasks.get_any(theirs).held_by is None


def test_a_dry_run_hold_changes_nothing(make_assistant, cluster):
    assistant = make_assistant(dry_run=True)
    tid = assistant.client.submit({"command": "python train.py", "gpus": 1})["id"]

    hold = assistant.ask(f"hold {tid}")

    assert hold.tool_calls == [{"name": "hold_task", "args": {"task_id": tid}}]
    assert hold.reply == f"Dry run: task #{tid} would be held; nothing was changed."
    assert cluster.tasks.get_any(tid).held_by is None


def test_a_change_to_a_whole_sweep_is_its_card_tool_not_a_pointer_to_the_cli(make_assistant):
    assistant = make_assistant()
    change = assistant.ask("make sweep 5 low priority")

    assert change.tool_calls == [{"name": "change_sweep", "args": {"sweep_id": 5, "priority": "low"}}]
    assert change.reply == "Sorry, that didn't work: no sweep 5" and "nightshift change" not in change.reply


def test_a_dropped_card_is_never_performed(make_assistant, cluster):
    assistant = make_assistant()
    turn = assistant.ask("run `echo hi` on cpu only")

    assert assistant.drop(turn.cards[0]["action_id"]) is True
    assert assistant.confirm(turn.cards[0]["action_id"])["ok"] is False
    assert cluster.tasks.count_by_status() == {}


def test_read_tools_answer_from_the_api_data(make_assistant):
    assistant = make_assistant()
    task = assistant.client.submit({"command": "python train.py", "gpus": 2})

    position = assistant.ask("where is my job in the queue?")
    wait = assistant.ask("how long will I wait?")
    why = assistant.ask(f"why isn't {task['id']} running?")
    gpus = assistant.ask("how busy are the GPUs?")
    quota = assistant.ask("how much quota is left?")
    report = assistant.ask("utilization this week by team")

    assert f"#{task['id']}" in position.reply and "number 1" in position.reply
    assert wait.tool_calls == [{"name": "estimate_wait", "args": {}}]
    assert wait.reply == f"Task #{task['id']} would start now."  # 4 GPUs free; no scheduler runs here
    assert why.reply.startswith(f"Task #{task['id']} is queued")
    assert "of 4 GPUs are busy" in gpus.reply
    assert quota.reply.startswith("Team vision:") and "last 7 days" in quota.reply
    assert "GPU-hours used" in report.reply


def test_why_a_task_failed_quotes_its_last_output_in_both_languages(make_assistant, cluster):
    assistant = make_assistant()
    task = assistant.client.submit({"command": "python train.py", "gpus": 0})
    cluster.queue.remove(task["id"])
    cluster.tasks.fail_queued(task["id"], "exit_code", "exit code 1")
    cluster.log_path(task["id"]).parent.mkdir(parents=True, exist_ok=True)
    cluster.log_path(task["id"]).write_text(
        f"==> nightshift task {task['id']} attempt 1 on node-a at 2026-03-02T15:00:00+08:00\n"
        "==> $ python train.py\nTraceback (most recent call last):\nKeyError: 'lr'\n"
        f"==> nightshift task {task['id']} attempt 1 ended: exit code 1 after 1.0 s\n"
    )

    english = assistant.ask(f"why did {task['id']} fail?")
    chinese = assistant.ask(f"任务{task['id']}为什么失败了")

    assert english.reply == (
        f"Task #{task['id']} failed: exit code 1. Its last output: `KeyError: 'lr'` "
        f"(all of it: `nightshift logs {task['id']}`)."
    )
    assert chinese.reply.startswith(f"任务 #{task['id']} 失败了：退出码 1。最后的输出：`KeyError: 'lr'`")
    tool_result = json.loads([m.content for m in assistant.history if m.type == "tool"][-1])
    assert (
        tool_result["explain"]["last_output"]
        == "<data>Traceback (most recent call last):\nKeyError: 'lr'</data>"
    )


def test_why_and_when_a_task_ends_after_its_deadline_says_so_in_both_languages(make_assistant, cluster):
    # Given a queued task whose 2-hour estimate ends well after its deadline half an hour from now (the API's
    # clock): the deadline is a goal, so it is queued all the same
    assistant = make_assistant()
    deadline = (datetime.now().astimezone() + timedelta(minutes=30)).isoformat()
    tid = assistant.client.submit(
        {"command": "python train.py", "gpus": 1, "estimated_minutes": 120, "deadline": deadline}
    )["id"]

    why, when, chinese = (
        assistant.ask(text).reply for text in (f"why isn't {tid} running?", f"when will {tid} finish?",
                                                f"{tid}号什么时候跑完？")
    )  # fmt: skip

    late = r"expected to end around (?:tomorrow )?\d\d:\d\d, after its deadline (?:tomorrow )?\d\d:\d\d"
    assert re.search(rf"\. It is {late}\.$", why), why
    assert when == why
    assert re.search(r"。预计 .+ 左右结束，晚于截止时间 .+。$", chinese), chinese


def test_how_last_night_went_counts_what_ended_and_says_why_each_failure_failed(make_assistant, cluster):
    assistant = make_assistant()
    first, second, third = (
        assistant.client.submit({"command": f"python t{i}.py", "gpus": 0}) for i in range(3)
    )
    for task in (first, second):
        cluster.queue.remove(task["id"])
    cluster.tasks.fail_queued(first["id"], "nonzero_exit", "exit code 3")
    cluster.tasks.fail_queued(second["id"], "timeout", "stopped at its time limit")
    assistant.client.cancel(third["id"])
    cluster.log_path(first["id"]).parent.mkdir(parents=True, exist_ok=True)
    cluster.log_path(first["id"]).write_text("Traceback (most recent call last):\nKeyError: 'lr'\n")
    bob = make_assistant("bob", "nlp").client
    bob.cancel(bob.submit({"command": "python other.py", "gpus": 0})["id"])  # another team's: not counted

    english = assistant.ask("how did last night go?")
    chinese = assistant.ask("昨晚跑得怎么样")

    assert english.tool_calls == [{"name": "night_summary", "args": {}}]
    head, *failures, hint = english.reply.splitlines()
    assert head.startswith("Since ") and head.endswith(
        ": 0 succeeded, 2 failed, 1 cancelled; 0.00 GPU-hours, 0.00 EUR."
    )
    assert failures == [
        f"✗ #{first['id']} t0.py: exit code 3 — `KeyError: 'lr'`",
        f"✗ #{second['id']} t1.py: stopped at its time limit",
    ]
    assert hint == f'Why one failed, in its own words: "why did {first["id"]} fail?"'
    assert "失败 2 个，取消 1 个" in chinese.reply and f"✗ #{first['id']} t0.py：退出码 3" in chinese.reply


def test_chinese_cards_name_weekdays_fields_and_priorities_in_chinese(make_assistant):
    assistant = make_assistant()  # Monday 2026-03-02
    tid = assistant.client.submit({"command": "python train.py", "gpus": 1})["id"]

    submit = assistant.ask("周六用一张卡跑 `python a.py`，高优先级")
    change = assistant.ask(f"把{tid}号改成紧急优先级")
    done = assistant.confirm(change.cards[0]["action_id"])

    assert "• 最早开始: 周六 03-07 08:00" in submit.reply and "Sat" not in submit.reply
    assert "优先级 高" in submit.reply and "high" not in submit.reply
    assert "• 优先级: 普通 → 紧急" in change.reply
    assert done["message"] == f"已修改任务 #{tid}（优先级）：排队中。"


def test_chinese_questions_get_chinese_answers(make_assistant):
    assistant = make_assistant()
    assistant.client.submit({"command": "python train.py", "gpus": 1})

    assert "排在第 1 位" in assistant.ask("我的任务排第几？").reply
    assert "张卡" in assistant.ask("有空闲的卡吗？").reply


def test_a_confirmation_answers_in_the_language_of_the_conversation(make_assistant, cluster):
    assistant = make_assistant()
    english = assistant.ask("run `echo hi` on cpu only")
    assert assistant.language() == "en"
    assert assistant.confirm(english.cards[0]["action_id"])["message"].startswith("Submitted task #")

    chinese = assistant.ask("用 CPU 跑 `echo 你好`")
    assert assistant.language() == "zh"
    message = assistant.confirm(chinese.cards[0]["action_id"])["message"]
    assert message.startswith("已提交任务 #") and message.endswith("：排队中。"), message
    cancel = assistant.ask(f"取消任务 {message.split('#')[1].split('（')[0]}")
    assert assistant.confirm(cancel.cards[0]["action_id"])["message"].endswith("：已取消。")


def test_the_apis_refusals_read_in_chinese_in_a_chinese_conversation(make_assistant, cluster):
    assistant = make_assistant()
    task = assistant.client.submit({"command": "python train.py", "gpus": 1})
    assistant.client.cancel(task["id"])

    missing = assistant.ask("帮我看看999为什么还没跑")
    again = assistant.ask(f"取消{task['id']}")

    assert missing.reply == "抱歉，没能完成：找不到任务 999（或它不属于你的团队）"
    assert again.reply == f"抱歉，没能完成：任务 {task['id']} 已经被取消；没有可取消的"


def test_a_deadline_that_has_passed_gets_no_card_but_a_message_saying_so(make_assistant, cluster):
    model = ScriptedChatModel(
        messages=iter(
            [
                tool_call("submit_task", {"command": "python train.py", "deadline": "2026-03-02T09:00:00"}),
                AIMessage(content="That time has passed; when should it finish?"),
            ]
        )
    )
    assistant = make_assistant(model=model)

    turn = assistant.ask("run train.py, finish by 9 this morning")

    errors = [m.content for m in assistant.history if m.type == "tool" and '"ok": false' in m.content]
    assert errors and "deadline 2026-03-02 09:00" in errors[0] and "is in the past" in errors[0]
    assert turn.cards == [] and cluster.tasks.count_by_status() == {}


def test_a_card_is_refused_for_a_gpu_model_the_cluster_does_not_have(make_assistant, cluster):
    assistant = make_assistant()

    model = assistant.ask("run python eval.py on an H100")

    assert model.cards == [] and model.error is not None and "no GPU model matches 'H100'" in model.error
    assert "no GPU model matches 'H100'" in model.reply
    assert cluster.tasks.count_by_status() == {}


def test_a_missing_command_gets_a_question_and_the_answer_completes_the_request(make_assistant):
    assistant = make_assistant()

    first = assistant.ask("run something on 2 GPUs tonight")
    second = assistant.ask("python train.py")

    assert first.tool_calls == [] and "command" in first.reply
    assert second.tool_calls == [
        {"name": "submit_task", "args": {"command": "python train.py", "gpus": 2, "offpeak": True}}
    ]


def test_a_card_is_changed_by_what_the_person_says_next_and_only_the_confirm_button_submits(
    make_assistant, cluster
):
    assistant = make_assistant()

    first = assistant.ask("run `python train.py` on 2 GPUs")
    changed = assistant.ask("make it 4 GPUs, tonight")
    between = assistant.ask("how long will I wait?")
    chinese = assistant.ask("改成高优先级")
    said_yes = assistant.ask("yes")
    said_no = assistant.ask("no, cancel that")

    def args(turn):
        return {k: v for k, v in turn.tool_calls[0]["args"].items() if k != "replaces_card"}

    assert args(changed) == {"command": "python train.py", "gpus": 4, "offpeak": True}
    assert changed.tool_calls[0]["args"]["replaces_card"] == first.cards[0]["action_id"]
    assert between.tool_calls[0]["name"] == "estimate_wait"  # a question is no change to the card
    assert args(chinese) == {"command": "python train.py", "gpus": 4, "offpeak": True, "priority": "high"}
    assert "准备提交" in chinese.reply
    assert said_yes.tool_calls == [] and "Press Confirm on the card" in said_yes.reply
    assert said_no.tool_calls == [] and "Press Drop on the card" in said_no.reply
    assert cluster.tasks.count_by_status() == {}  # words submit nothing
    # the cards a change stood in for can no longer be confirmed; the last one can, once
    assert [a.action_id for a in assistant.actions.pending()] == [chinese.cards[0]["action_id"]]
    assert assistant.confirm(first.cards[0]["action_id"])["ok"] is False
    result = assistant.confirm(chinese.cards[0]["action_id"])
    assert result["ok"] and (result["task"]["gpus"], result["task"]["priority"]) == (4, "high")
    after = assistant.ask("make it 8 GPUs")  # the card was confirmed: nothing left to change
    assert after.tool_calls == [] and cluster.tasks.count_by_status() == {"queued": 1}


def test_a_new_request_drops_the_card_before_it_even_when_it_is_refused(make_assistant, cluster):
    assistant = make_assistant()

    first = assistant.ask("run `python a.py` on 1 GPU")
    refused = assistant.ask("run `python b.py` on 9 GPUs")  # the node has 4
    after = [assistant.ask(text) for text in ("make it 2 GPUs", "yes")]

    assert "I can't submit that" in refused.reply
    assert "The earlier card (submit `python a.py`) is dropped" in refused.reply
    assert "nothing was submitted" in refused.reply
    assert [card["action_id"] for card in refused.dropped] == [first.cards[0]["action_id"]]
    assert assistant.actions.pending() == []  # nothing is left to confirm by mistake
    assert assistant.confirm(first.cards[0]["action_id"])["ok"] is False
    assert [turn.tool_calls for turn in after] == [[], []]  # no edit of, nor yes to, the dropped card
    assert cluster.tasks.count_by_status() == {}


def test_a_new_card_stands_in_for_the_one_before_and_says_so_in_chinese(make_assistant, cluster):
    assistant = make_assistant()

    first = assistant.ask("用一张卡跑 `python a.py`")
    question = assistant.ask("现在集群忙吗")  # a question is no new request: the card stays
    waiting = [a.action_id for a in assistant.actions.pending()]
    second = assistant.ask("用两张卡跑 `python b.py`")

    assert question.dropped == [] and waiting == [first.cards[0]["action_id"]]
    assert "之前的卡片（提交 `python a.py`）已作废" in second.reply and "没有提交任何任务" in second.reply
    assert [a.action_id for a in assistant.actions.pending()] == [second.cards[0]["action_id"]]
    assert assistant.confirm(first.cards[0]["action_id"])["ok"] is False


def test_an_older_server_without_the_new_endpoints_gets_a_plain_answer(cluster, make_identity):
    # Given an API without explain/estimate/quota/reports (no fallback transport)
    from api.main import create_app
    from assistant.agent import Assistant
    from assistant.client import AssistantClient
    from tests.assistant.conftest import AppTransport, TestClient

    _, token = make_identity("alice", "vision")
    with TestClient(create_app(cluster)) as api:
        client = AssistantClient("http://testserver", token, transport=AppTransport(api, old_server=True))
        assistant = Assistant(cluster.settings, client, now=lambda: datetime.now().astimezone())
        task = client.submit({"command": "echo hi", "gpus": 0})
        turn = assistant.ask("how much quota is left?")
        why = assistant.ask(f"why isn't {task['id']} running?")
        card = assistant.ask("run `python train.py` on 1 GPU")
        client.close()

    assert "no /quota endpoint yet" in turn.reply
    assert f"#{task['id']}" in why.reply and "queued" in why.reply
    assert card.spec is not None and card.cards


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_card_after_a_task_that_does_not_exist_is_refused_as_the_api_would(
    make_assistant, make_identity, cluster, dry_run
):
    others = make_assistant(user="bob", team="audio")
    theirs = others.client.submit({"command": "sleep 1", "gpus": 0})
    assistant = make_assistant(dry_run=dry_run)

    missing = assistant.ask("run python a.py after task 999")
    not_ours = assistant.ask(f"run python a.py after task {theirs['id']}")
    chinese = assistant.ask("等999号任务完成后跑 python a.py")

    assert missing.cards == [] and missing.spec is None
    assert missing.error == "depends_on names task 999, which does not exist"
    assert "after task #999 succeeds" not in missing.reply and "does not exist" in missing.reply
    assert not_ours.cards == [] and f"task {theirs['id']}, which does not exist" in (not_ours.error or "")
    assert chinese.reply == "无法提交：依赖的任务 999 不存在（或不属于你的团队）。请告诉我要怎么改。"
    assert cluster.tasks.count_by_status() == {"queued": 1}


@pytest.mark.parametrize(
    ("text", "reply"),
    [
        (
            "用8张卡跑 python a.py",
            "无法提交：这个集群上卡数必须在 0 到 4 之间（最大的节点只有 4 张卡）；你要了 8 张。请告诉我要怎么改。",
        ),
        (
            "用两张卡跑 python a.py，每张100G显存",
            "无法提交：这个集群没有一张卡有 100 GB 显存（最大的 24 GB）。请告诉我要怎么改。",
        ),
        ("用 -1 张卡跑 python a.py", "无法提交：卡数不能小于 0。请告诉我要怎么改。"),
        ("跑 python a.py，时间限制 0 分钟", "无法提交：时间限制（分钟）必须大于 0。请告诉我要怎么改。"),
        (
            "在 gpu-box-9 上跑 python a.py",
            "无法提交：这个集群没有叫 'gpu-box-9' 的节点（现有节点：node-a）。请告诉我要怎么改。",
        ),
    ],
)
def test_a_refused_chinese_request_is_told_why_in_chinese(make_assistant, text, reply):
    turn = make_assistant(dry_run=True).ask(text)

    assert turn.cards == [] and turn.reply == reply


def test_an_unknown_gpu_model_and_a_passed_deadline_are_refused_in_chinese(make_assistant):
    assistant = make_assistant(dry_run=True)

    model = assistant.ask("用A100跑 python a.py")
    late = assistant.ask("run python a.py by yesterday")

    assert model.cards == [] and model.reply.startswith("无法提交：没有型号包含 'A100' 的卡（这里的型号：")
    assert late.cards == [] and late.error is not None and "is in the past" in late.error


def test_a_negated_cancel_cancels_nothing_and_says_so(make_assistant, cluster):
    assistant = make_assistant()
    tid = assistant.client.submit({"command": "python train.py", "gpus": 1})["id"]

    english = assistant.ask(f"don't cancel task {tid}")
    chinese = assistant.ask(f"{tid}号别取消")
    lowered = assistant.ask(f"drop the priority of {tid}")

    assert english.cards == [] and english.reply.startswith("OK: nothing is cancelled.")
    assert chinese.cards == [] and chinese.reply.startswith("好的，什么都不取消。")
    assert [card["kind"] for card in lowered.cards] == ["change"]
    assert lowered.cards[0]["changes"]["priority"] == ["normal", "low"]
    assert cluster.tasks.get_any(tid).status == "queued"


def test_an_admins_where_is_my_job_does_not_call_another_teams_task_theirs(make_assistant):
    bob = make_assistant("bob", "nlp")
    theirs = bob.client.submit({"command": "python train.py", "gpus": 2})
    admin = make_assistant("root", "ops", admin=True)

    english = admin.ask("where is my job in the queue?").reply
    chinese = admin.ask("我的任务排第几").reply
    own = admin.client.submit({"command": "python eval.py"})
    mixed = admin.ask("where is my job in the queue?").reply

    assert english.startswith("None of your own tasks is waiting; in the queue:\n")
    assert f"#{theirs['id']} train.py (bob) is number 1" in english
    assert chinese.startswith("你自己没有在排队的任务；队列里有：") and "bob" in chinese
    assert (
        "None of your own" not in mixed and f"#{own['id']} eval.py (root)" in mixed
    )  # whose each is, as usual
