"""Everyday words about one's tasks: "is anything running?", "what went wrong with 9", "which node is 9
on", "move 9 to the front", "restart 9" (a card that says the first copy still runs)."""

from __future__ import annotations

import os
import re

import pytest

from assistant.parsing.fields import names_several_tasks, task_ids
from assistant.parsing.intents import understand
from scheduler.clock import now_ms
from scheduler.dispatcher import Dispatcher
from scheduler.gpus import SimulatedGpus
from scheduler.worker import Worker
from tests.assistant.conftest import NOW
from tests.conftest import wait_until

pytestmark = pytest.mark.usefixtures("four_gpu_node")


@pytest.mark.parametrize(
    ("text", "tool", "args"),
    [
        ("is anything running right now", "list_tasks", {"status": "running"}),
        ("anything running?", "list_tasks", {"status": "running"}),
        ("are any jobs queued", "list_tasks", {"status": "queued"}),
        ("what's the error in task 9", "explain_task", {"task_id": 9}),
        ("what went wrong with 9", "explain_task", {"task_id": 9}),
        ("9号任务报错了", "explain_task", {"task_id": 9}),
        ("which node is task 9 on", "explain_task", {"task_id": 9}),
        ("9号任务在哪个节点上", "explain_task", {"task_id": 9}),
        ("is task 9 using the gpu", "explain_task", {"task_id": 9}),
        ("move task 9 to the front", "change_task", {"task_id": 9, "priority": "urgent"}),
        ("put 9 at the top of the queue", "change_task", {"task_id": 9, "priority": "urgent"}),
        ("把9号任务放到最前面", "change_task", {"task_id": 9, "priority": "urgent"}),
        ("bump task 9", "change_task", {"task_id": 9, "priority": "high"}),
        ("prioritize task 9", "change_task", {"task_id": 9, "priority": "high"}),
        ("how much longer will 9 run", "explain_task", {"task_id": 9}),
        ("how long until 9 is done", "explain_task", {"task_id": 9}),
        ("when does 9 end", "explain_task", {"task_id": 9}),
        ("9号还要跑多久", "explain_task", {"task_id": 9}),
        ("how long will task 9 take to start", "estimate_wait", {"task_id": 9}),
        ("restart 9", "submit_task", {"like_task": 9}),
        ("restart task 9 on 2 gpus", "submit_task", {"like_task": 9, "gpus": 2}),
    ],
)
def test_everyday_words_about_a_task_reach_its_tool(text, tool, args):
    reading = understand(text, NOW)

    assert (reading.tool, reading.args) == (tool, args)


@pytest.mark.parametrize(
    "text",
    [
        "run `python train.py` and email me on error",  # a submit, whatever words follow
        "restart the scheduler",  # the servers are not the person's to restart
        "帮我插队",  # passing everyone is refused, as before
    ],
)
def test_the_new_words_do_not_take_over_other_requests(text):
    reading = understand(text, NOW)

    assert reading.tool not in ("explain_task", "change_task") and "like_task" not in reading.args


def test_restarting_a_running_task_says_the_first_copy_goes_on_until_it_is_cancelled(make_assistant, cluster):
    assistant = make_assistant()
    task = assistant.client.submit({"command": "python train.py", "gpus": 1})
    assert cluster.queue.assign(task["id"], "node-a", [0], now_ms())
    claim = cluster.queue.claim("node-a", now_ms(), 60_000)
    assert claim is not None and cluster.tasks.mark_running(
        task["id"], claim.token, "node-a", claim.gpu_indices
    )

    english = assistant.ask(f"restart {task['id']}")
    chinese = assistant.ask(f"重新跑一下{task['id']}号")

    assert english.cards[0]["warnings"] == [
        f"task {task['id']} is still running: this is another task beside it "
        f"(cancel {task['id']} to stop the first)"
    ]
    assert f"⚠ Task {task['id']} is still running" in english.reply
    assert (
        f"任务 {task['id']} 仍在运行：确认后会在它之外再加一个任务（要停掉原来的，请取消 {task['id']} 号）"
        in chinese.reply
    )


def test_running_an_ended_task_again_has_no_such_warning(make_assistant, cluster):
    assistant = make_assistant()
    task = assistant.client.submit({"command": "python train.py", "gpus": 1})
    assistant.client.cancel(task["id"])

    turn = assistant.ask(f"run {task['id']} again")

    assert "warnings" not in turn.cards[0]


@pytest.mark.parametrize(
    ("text", "task_id"),
    [
        ("where are the checkpoints of 12", 12),
        ("where is my model saved", None),
        ("where are my outputs", None),
        ("how do I get my results", None),
        ("12号的模型权重保存在哪", 12),
    ],
)
def test_where_a_tasks_files_are_is_a_pointer_to_its_workdir_and_output_folder(text, task_id):
    reading = understand(text, NOW)

    assert (reading.kind, reading.reason) == ("help", "outputs")
    assert reading.args == ({} if task_id is None else {"task_id": task_id})


@pytest.mark.parametrize(
    ("text", "tool"),
    [("where is task 12", "queue_position"), ("where is my job in the queue", "queue_position")],
)
def test_where_a_task_is_in_the_queue_stays_its_position(text, tool):
    assert understand(text, NOW).tool == tool


def test_the_outputs_pointer_names_the_task_and_where_to_look(make_assistant):
    assistant = make_assistant()

    english = assistant.ask("where are the checkpoints of 12")
    chinese = assistant.ask("12号的模型权重保存在哪")

    assert english.tool_calls == [] and "Files task #12 writes" in english.reply
    assert "`nightshift show 12`" in english.reply and "$NIGHTSHIFT_OUTPUT_DIR" in english.reply
    assert "任务 #12 写的文件" in chinese.reply and "`nightshift show 12`" in chinese.reply


def test_the_results_of_a_tag_are_compared():
    assert understand("show results of tag exp7", NOW).args == {"tag": "exp7"}


@pytest.mark.parametrize(
    "text",
    [
        "run an interactive session on a gpu",
        "give me a gpu for debugging for an hour",
        "I need a GPU for an hour to debug",
        "给我一张卡调试一下",
    ],
)
def test_a_shell_on_a_gpu_is_pointed_to_nightshift_shell(text, make_assistant):
    turn = make_assistant().ask(text)

    assert understand(text, NOW).reason == "interactive"
    assert turn.cards == [] and "nightshift shell --gpus 1 --time-limit 120" in turn.reply
    assert "jupyter lab --no-browser" in turn.reply  # a notebook is still a task to queue


def test_a_command_with_interactive_in_it_is_still_a_submission():
    reading = understand("run python train.py --interactive", NOW)

    assert reading.args == {"command": "python train.py --interactive"}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("make tasks 1-11 urgent", "one_change"),
        ("rerun 1-11", "one_rerun"),
    ],
)
def test_several_tasks_named_at_once_get_a_question_not_a_card_for_the_first_alone(text, reason):
    assert (understand(text, NOW).kind, understand(text, NOW).reason) == ("question", reason)


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("cancel tasks 12-15", [12, 13, 14, 15]),
        ("取消12到15号", [12, 13, 14, 15]),
        ("cancel 12, 13 and 15", [12, 13, 15]),
        ("取消12和13号", [12, 13]),
    ],
)
def test_several_tasks_named_for_a_cancel_are_one_card(text, ids):
    reading = understand(text, NOW)

    assert (reading.tool, reading.args) == ("cancel_tasks", {"task_ids": ids})


def test_more_tasks_than_a_card_takes_are_pointed_to_the_command_line():
    reading = understand("cancel 1-21", NOW)

    assert (reading.kind, reading.reason) == ("question", "bulk_own")
    assert understand("cancel 1-20", NOW).args == {"task_ids": list(range(1, 21))}


@pytest.mark.parametrize(
    ("text", "args", "ids"),
    [
        ("make 12 and 13 urgent", {"priority": "urgent"}, [12, 13]),
        ("make tasks 12-15 urgent", {"priority": "urgent"}, [12, 13, 14, 15]),
        ("把12号和13号改成高优先级", {"priority": "high"}, [12, 13]),
        ("give 12 and 13 2 more hours", {"more_minutes": 120}, [12, 13]),
        ("取消12号和13号的截止时间", {"clear": ["deadline"]}, [12, 13]),
        ("cancel 12 and 13's deadline", {"clear": ["deadline"]}, [12, 13]),
        ("remove the time limit of tasks 12, 13", {"clear": ["time_limit_minutes"]}, [12, 13]),
    ],
)
def test_the_same_change_to_several_tasks_is_a_card_each(text, args, ids):
    reading = understand(text, NOW)

    assert reading.tool == "change_task"
    assert [reading.args, *reading.more] == [{"task_id": task_id, **args} for task_id in ids]


@pytest.mark.parametrize(
    ("text", "tool", "ids"),
    [("hold 12-15", "hold_task", [12, 13, 14, 15]), ("放行12和13号", "release_task", [12, 13])],
)
def test_several_tasks_held_or_released_are_one_call_each(text, tool, ids):
    reading = understand(text, NOW)

    assert reading.tool == tool
    assert [reading.args, *reading.more] == [{"task_id": task_id} for task_id in ids]


@pytest.mark.parametrize(
    ("text", "args"),
    [
        ("rerun 12, 2 gpus", {"like_task": 12, "gpus": 2}),
        ("run task 12 again after tasks 13 and 14", {"like_task": 12, "depends_on": [13, 14]}),
        ("cancel 12", {"task_id": 12}),
    ],
)
def test_a_size_or_a_parent_beside_one_task_is_no_second_task(text, args):
    assert understand(text, NOW).args == args


def test_a_date_or_a_name_with_dashes_is_no_run_of_tasks():
    assert not names_several_tasks("what failed on 2026-12-05")
    assert not names_several_tasks("run it on gpu-box-12-15")
    assert names_several_tasks("tasks 12-15") and task_ids("tasks 12-15") == [12, 13, 14, 15]


def test_what_happened_on_a_day_lists_that_days_tasks_and_no_task_is_named_by_its_date():
    on_a_day = understand("what happened on 2026-12-05", NOW)
    to_a_task = understand("what happened to task 12 on 2026-12-05", NOW)

    assert on_a_day.tool == "list_tasks" and on_a_day.args["since"].startswith("2026-12-05T00:00")
    assert (to_a_task.tool, to_a_task.args) == ("explain_task", {"task_id": 12})


@pytest.mark.parametrize(
    "text",
    [
        "rename task {id} to exp4",
        "change the name of {id} to exp4",
        "把{id}号改名为 exp4",
        "change task {id} to be named exp4",
    ],
)
def test_a_queued_task_is_renamed_on_a_change_card(text, make_assistant, cluster):
    # before, a name among a change's fields crashed the reader (the helper's own parameter was `name`)
    assistant = make_assistant()
    task = assistant.client.submit(
        {"command": "python train.py", "gpus": 1, "not_before": "2030-01-01T00:00:00Z"}
    )

    turn = assistant.ask(text.format(id=task["id"]))

    assert turn.tool_calls == [{"name": "change_task", "args": {"task_id": task["id"], "name": "exp4"}}]
    result = assistant.confirm(turn.cards[0]["action_id"])
    assert result["ok"] and assistant.client.get_task(task["id"])["name"] == "exp4"


def test_a_card_is_renamed_by_what_is_said_next(make_assistant):
    assistant = make_assistant()
    assistant.ask("run `python train.py` on 1 GPU")

    renamed = assistant.ask("change the name to baseline")

    assert renamed.cards[0]["spec"]["name"] == "baseline"


def test_a_wait_for_a_gpu_model_or_node_is_estimated_there_and_said_with_it(make_assistant):
    assistant = make_assistant()

    here = assistant.ask("when could 2 GPUs on node node-a start?")
    missing = assistant.ask("how long would 2 A100s wait?")
    chinese = assistant.ask("现在能拿到两张A100吗")

    assert here.tool_calls == [{"name": "estimate_wait", "args": {"gpus": 2, "node": "node-a"}}]
    assert here.reply.startswith("A 2-GPU task on node node-a would start now")
    assert missing.tool_calls == [{"name": "estimate_wait", "args": {"gpus": 2, "gpu_model": "A100"}}]
    assert "no GPU model matches 'A100' (the GPUs here are: Simulated GPU 24GB)" in missing.reply
    assert chinese.tool_calls == missing.tool_calls
    assert "没有型号包含 'A100' 的卡（这里的型号：Simulated GPU 24GB）" in chinese.reply


@pytest.mark.parametrize(
    ("text", "tool", "args"),
    [
        ("what's the exit code of 12", "explain_task", {"task_id": 12}),
        ("what did 12 exit with", "explain_task", {"task_id": 12}),
        ("12号的退出码是多少", "explain_task", {"task_id": 12}),
        ("what's eating GPU 3", "cluster_status", {}),
        ("are there tasks running", "list_tasks", {"status": "running"}),
        ("how much has my team used this month", "utilization_report", {"days": 30}),
    ],
)
def test_exit_codes_gpu_hogs_running_tasks_and_team_use_are_read(text, tool, args):
    reading = understand(text, NOW)

    assert (reading.tool, reading.args) == (tool, args)


@pytest.mark.parametrize(
    "text", ["pause all my tasks", "hold all my queued tasks", "release all my tasks", "暂停我所有的任务"]
)
def test_holding_every_task_asks_for_one_at_a_time_rather_than_listing_them(text):
    reading = understand(text, NOW)

    assert (reading.kind, reading.reason) == ("question", "one_hold")


def test_a_list_of_paused_tasks_is_still_a_list():
    assert understand("列出暂停的任务", NOW).tool == "list_tasks"


def test_how_long_an_ended_task_took_is_answered_from_when_it_ran(
    make_assistant, cluster, run_in_thread, tmp_path
):
    worker = Worker(cluster, "node-b", SimulatedGpus("1x24", node="node-b"), base_env=dict(os.environ))
    worker.publish_node()
    run_in_thread(Dispatcher(cluster).run)
    run_in_thread(worker.run)
    assistant = make_assistant()
    task_id = int(
        assistant.client.submit({"command": "sleep 0.2", "gpus": 1, "workdir": str(tmp_path)})["id"]
    )
    wait_until(lambda: cluster.tasks.get_any(task_id).status == "succeeded")

    turn = assistant.ask(f"how long did {task_id} take")
    waited = assistant.ask(f"how long did {task_id} wait")
    command = assistant.ask(f"what command did {task_id} run")

    assert turn.tool_calls == [{"name": "explain_task", "args": {"task_id": task_id}}]
    # seconds, not "0 min"
    assert re.match(rf"Task #{task_id} succeeded\. It waited \d+ s, then ran \d+ s \(", turn.reply), (
        turn.reply
    )
    assert waited.tool_calls == turn.tool_calls and waited.reply == turn.reply
    assert command.reply == f"{turn.reply} Its command: `sleep 0.2`."  # said only when asked


@pytest.mark.parametrize(
    ("text", "args"),
    [
        ("start after 13", None),  # no task named: 13 is the hour, not task 13
        ("change 12 to start after 13:00", {"task_id": 12, "not_before": "2026-03-03T13:00:00+00:00"}),
        ("move 12 to 23:00", {"task_id": 12, "not_before": "2026-03-02T23:00:00+00:00"}),
    ],
)
def test_a_number_read_as_a_time_names_no_task(text, args):
    reading = understand(text, NOW)

    if args is None:
        assert reading.tool is None and reading.kind == "question"
    else:
        assert (reading.tool, reading.args) == ("change_task", args)


def test_a_setting_asked_for_is_said_from_the_tasks_own_spec(make_assistant):
    assistant = make_assistant()
    spec = {"command": "python train.py", "gpus": 1, "not_before": "2030-01-01T09:00:00+00:00"}
    task_id = int(assistant.client.submit({**spec, "time_limit_minutes": 30, "tags": ["exp7"]})["id"])

    limit = assistant.ask(f"what is {task_id}'s time limit")
    tags = assistant.ask(f"{task_id}号有哪些标签")
    plain = assistant.ask(f"why is {task_id} waiting")

    assert limit.reply.endswith(" Its time limit (min): 30.")
    assert tags.reply.endswith("它的标签：exp7。")
    assert "time limit" not in plain.reply and "exp7" not in plain.reply


@pytest.mark.parametrize(
    "text", ["is 45 still alive?", "is 45 dead", "did 45 die", "45 still going?", "what's up with 45", "check on 45",
             "45号还活着吗"],
)  # fmt: skip
def test_whether_a_task_is_alive_is_its_explanation(text):
    reading = understand(text, NOW)

    assert (reading.tool, reading.args) == ("explain_task", {"task_id": 45})


@pytest.mark.parametrize("text", ["is gpu-02 dead", "is node box-1 alive"])
def test_whether_a_node_is_alive_is_still_the_clusters_status(text):
    assert understand(text, NOW).tool == "cluster_status"


@pytest.mark.parametrize(
    ("text", "priority"),
    [
        ("run python a.py, not urgent", "low"),  # was read as urgent
        ("run python a.py, it's not urgent", "low"),
        ("跑 python a.py 不紧急", "low"),
        ("run python a.py, not important", "low"),
        ("跑 python a.py，不重要", "low"),
        ("run python a.py, it can wait", "low"),
        ("run python a.py, urgent", "urgent"),
        ("跑 python a.py 紧急", "urgent"),
        ("run python a.py, important", "high"),
    ],
)
def test_a_priority_said_with_not_is_its_opposite(text, priority):
    reading = understand(text, NOW)

    assert (reading.tool, reading.args["priority"]) == ("submit_task", priority)


@pytest.mark.parametrize(
    ("text", "priority"),
    [
        ("45 can wait", "low"),
        ("no rush on 45", "low"),
        ("45 isn't urgent", "low"),
        ("45号不急", "low"),
        ("45号可以晚点跑", "low"),
        ("45 is urgent", "urgent"),
        ("45号加急", "urgent"),
    ],
)
def test_a_class_said_of_a_task_without_a_verb_changes_its_priority(text, priority):
    reading = understand(text, NOW)

    assert (reading.tool, reading.args) == ("change_task", {"task_id": 45, "priority": priority})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("45号先放一放", ("tool", "hold_task", None)),
        ("45号占了多少显存", ("tool", "explain_task", None)),
        ("45号的checkpoint在哪", ("help", None, "outputs")),
        ("给45号再加一张卡", ("help", None, "change_fixed")),
        ("give 45 one more GPU", ("help", None, "change_fixed")),
        ("run 45 again with 2 more gpus", ("question", None, "gpus_in_all")),
        ("45号再跑一遍，多加一张卡", ("question", None, "gpus_in_all")),
        ("45 can wait for 44", ("tool", "change_task", None)),  # a wait for 44, not a class
    ],
)
def test_more_everyday_words_about_a_task(text, expected):
    reading = understand(text, NOW)

    kind, tool, reason = expected
    assert (reading.kind, reading.tool) == (kind, tool)
    assert reading.reason == reason if reason else reading.args.get("task_id") == 45


@pytest.mark.parametrize(
    "text",
    ["scrap 45", "don't run 45", "I don't want 45 anymore", "I don't need job 45", "45不要了", "45号不要了",
     "把45号从队列里去掉"],
)  # fmt: skip
def test_more_ways_to_say_cancel_a_task(text):
    reading = understand(text, NOW)

    assert (reading.tool, reading.args) == ("cancel_task", {"task_id": 45})


@pytest.mark.parametrize(
    ("text", "tool", "args"),
    [
        ("how does the queue look", "queue_position", {}),
        ("what does the queue look like", "queue_position", {}),
        ("is 45 urgent?", "explain_task", {"task_id": 45}),  # asks its class; "45 is urgent" changes it
        ("what priority is 45", "explain_task", {"task_id": 45}),
        ("45 is urgent", "change_task", {"task_id": 45, "priority": "urgent"}),
    ],
)
def test_the_queue_and_a_tasks_class_asked_about(text, tool, args):
    reading = understand(text, NOW)

    assert (reading.tool, reading.args) == (tool, args)


@pytest.mark.parametrize("text", ["cancel all my failed tasks", "cancel all our jobs", "取消我们所有的任务"])
def test_cancelling_all_that_is_no_own_live_task_asks_and_points_to_cancel_mine(text, make_assistant):
    turn = make_assistant().ask(text)

    assert turn.tool_calls == [] and turn.cards == []
    assert "nightshift cancel --mine --status queued" in turn.reply


@pytest.mark.parametrize(
    ("text", "tool", "key", "args", "ids"),
    [
        ("rerun 12 and 13", "submit_task", "like_task", {}, [12, 13]),
        ("rerun 12-14 on 2 gpus", "submit_task", "like_task", {"gpus": 2}, [12, 13, 14]),
        ("12号和13号今晚再跑一遍", "submit_task", "like_task", {"offpeak": True}, [12, 13]),
        ("requeue 12 and 13", "requeue_task", "task_id", {}, [12, 13]),
    ],
)
def test_several_tasks_run_again_are_a_card_each(text, tool, key, args, ids):
    reading = understand(text, NOW)

    assert reading.tool == tool
    assert [reading.args, *reading.more] == [{key: task_id, **args} for task_id in ids]
