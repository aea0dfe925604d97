"""Asked which GPUs are free, the chat does not count a GPU that takes no tasks (too hot, unreadable, on a
drained node) as free, and says why it is out, in English and Chinese, in the words `explain` uses."""

from __future__ import annotations

import re

from scheduler.clock import now_ms
from scheduler.nodes import NodeGpu, TeamReservation
from tests.assistant.conftest import tool_result

GB = 1024
HOT = "too hot: 91 °C (above 85 °C; back in service below 80 °C)"
LOST = (
    "unreadable: NVML could not read the handle of GPU 2: GPU is lost; back in service once the driver reads "
    "it again (a lost GPU needs a reset or a reboot)"
)


def _boxes(cluster) -> None:
    """gpu-box: GPU 0 in service, 1 too hot, 2 lost; spare-box (2 GPUs) drained; published as workers would."""
    gpus = [
        NodeGpu(0, "NVIDIA A100", 80 * GB, 80 * GB),
        NodeGpu(1, "NVIDIA A100", 80 * GB, 80 * GB, out_of_service=HOT),
        NodeGpu(2, "unreadable GPU", 0, 0, out_of_service=LOST),
    ]
    cluster.nodes.publish("gpu-box", gpus, now_ms(), "nvml")
    spare = [NodeGpu(i, "NVIDIA L4", 24 * GB, 24 * GB) for i in range(2)]
    cluster.nodes.publish("spare-box", spare, now_ms(), "nvml")
    cluster.nodes.set_drained("spare-box", True)


def test_which_gpus_are_free_counts_only_those_in_service_and_says_why_the_others_are_out(
    make_assistant, cluster
):
    _boxes(cluster)
    assistant = make_assistant()

    reply = assistant.ask("which GPUs are free?").reply

    assert "0 of 5 GPUs are busy; 1 free, 4 out of service, 80 GB of GPU memory free" in reply, reply
    assert f"Out of service: GPU 1 of gpu-box: {HOT}." in reply
    assert f"Out of service: GPU 2 of gpu-box: {LOST}." in reply
    assert "Out of service: node spare-box is drained (2 GPUs)." in reply
    summary = tool_result(assistant.history, "cluster_status")["summary"]
    assert summary["out_of_service"] == [
        {"why": HOT, "gpus": ["gpu-box:1"]},
        {"why": LOST, "gpus": ["gpu-box:2"]},
        {"why": "node spare-box is drained", "gpus": ["spare-box:0", "spare-box:1"]},
    ]


def test_in_chinese_the_reasons_are_said_in_chinese(make_assistant, cluster):
    _boxes(cluster)

    reply = make_assistant().ask("哪些卡空闲").reply

    assert "5 张卡中 0 张在用，1 张空闲，4 张停用，空闲显存 80 GB" in reply, reply
    assert "停用：gpu-box 的 1 号卡过热：91 °C（超过 85 °C；降到 80 °C 以下恢复）。" in reply
    assert (
        "停用：gpu-box 的 2 号卡无法读取（驱动报告：NVML could not read the handle of GPU 2: GPU is lost）；"
        "驱动能再次读取后恢复（掉卡需要重置或重启）。"
    ) in reply
    assert "停用：节点 spare-box 已排空（2 张卡）。" in reply


def test_a_wait_asked_while_every_gpu_is_out_of_service_says_why_there_is_no_estimate(
    make_assistant, cluster
):
    spare = [NodeGpu(i, "NVIDIA L4", 24 * GB, 24 * GB) for i in range(2)]
    cluster.nodes.publish("spare-box", spare, now_ms(), "nvml")
    cluster.nodes.set_drained("spare-box", True)

    english = make_assistant().ask("how long would a 1-GPU job wait?").reply
    chinese = make_assistant().ask("一张卡的任务要等多久").reply

    assert english.startswith(
        "I have no estimate of when it would start: waiting for GPUs out of service (2 of 2: node spare-box is "
        "drained"
    ), english
    assert chinese.startswith(
        "暂时估计不出什么时候开始：等待停用的卡恢复（2 张中的 2 张：节点 spare-box 已排空"
    ), chinese


def test_a_down_node_is_said_in_explains_words_in_both_languages(make_assistant, cluster):
    gone = [NodeGpu(0, "NVIDIA L4", 24 * GB, 24 * GB)]
    cluster.nodes.publish("old-box", gone, now_ms() - 3_600_000, "nvml")  # silent for an hour

    english = make_assistant().ask("which GPUs are free?").reply
    chinese = make_assistant().ask("哪些卡空闲").reply

    # an hour and the few seconds the test itself takes
    assert re.search(
        r"Out of service: node old-box is down \(no heartbeat for 36\d\d s\) \(1 GPU\)\.", english
    )
    assert re.search(r"停用：节点 old-box 离线（36\d\d 秒没有心跳）（1 张卡）。", chinese), chinese


def test_the_chat_says_which_nodes_are_reserved_for_a_team_or_going_down_for_maintenance(
    make_assistant, cluster
):
    box = [NodeGpu(0, "NVIDIA A100", 80 * GB, 80 * GB)]
    for name in ("gpu-box", "spare-box", "old-box"):
        cluster.nodes.publish(name, box, now_ms(), "nvml")
    hour_ms = 3600 * 1000
    cluster.nodes.reserve(
        "gpu-box", TeamReservation("vision", now_ms() + hour_ms, now_ms() + 9 * hour_ms), now_ms()
    )
    cluster.nodes.set_drained("spare-box", True, now_ms() + 2 * hour_ms, until_ms=now_ms() + 4 * hour_ms)
    cluster.nodes.set_drained("old-box", True, now_ms() - hour_ms, until_ms=now_ms() + 3 * hour_ms)

    english = make_assistant().ask("which GPUs are free?").reply
    chinese = make_assistant().ask("哪些卡空闲").reply

    time = r"(?:today |tomorrow |\d\d-\d\d )\d\d:\d\d"  # read on the chat's clock, else dated
    assert re.search(
        rf"Node gpu-box is reserved for team vision from {time} until {time}: only its tasks start there then\.",
        english,
    ), english
    assert re.search(rf"Node spare-box goes down for maintenance at {time} \(until {time}\)\.", english)
    assert re.search(rf"Node old-box is down for maintenance until {time}\.", english)
    day = r"(?:今天 |明天 |\d\d-\d\d )\d\d:\d\d"
    assert re.search(
        rf"节点 gpu-box 在 {day} 至 {day} 预留给团队 vision：这段时间只运行该团队的任务。", chinese
    ), chinese
    assert re.search(rf"节点 spare-box 将于 {day} 停机维护（至 {day}）。", chinese)
    assert re.search(rf"节点 old-box 正在停机维护，{day} 恢复。", chinese)


def test_the_chat_says_a_reservation_or_a_maintenance_comes_round_again(make_assistant, cluster):
    cluster.nodes.publish("gpu-box", [NodeGpu(0, "NVIDIA A100", 80 * GB, 80 * GB)], now_ms(), "nvml")
    hour_ms = 3600 * 1000
    weekly = TeamReservation("vision", now_ms() + hour_ms, now_ms() + 3 * hour_ms, "weekly", "UTC")
    cluster.nodes.reserve("gpu-box", weekly, now_ms())
    cluster.nodes.publish("spare-box", [NodeGpu(0, "NVIDIA A100", 80 * GB, 80 * GB)], now_ms(), "nvml")
    cluster.nodes.set_drained("spare-box", True, now_ms() + hour_ms, None, now_ms() + 2 * hour_ms, "daily")

    english = make_assistant().ask("which GPUs are free?").reply
    chinese = make_assistant().ask("哪些卡空闲").reply

    time = r"(?:today |tomorrow |\d\d-\d\d )\d\d:\d\d"
    assert re.search(
        rf"Node gpu-box is reserved for team vision from {time} until {time}, and again every week: only its "
        r"tasks start there then\.",
        english,
    ), english
    day = r"(?:今天 |明天 |\d\d-\d\d )\d\d:\d\d"
    assert re.search(rf"节点 gpu-box 在 {day} 至 {day} 预留给团队 vision，之后每周同一时段也是：", chinese), (
        chinese
    )
    assert re.search(
        rf"Node spare-box goes down for maintenance at {time} \(until {time}\)\. It comes round again every day\.",
        english,
    ), english
    assert re.search(
        rf"节点 spare-box 将于 {day} 停机维护（至 {day}）。之后每天同一时段都会维护。", chinese
    ), chinese


def test_the_chat_names_the_gpus_a_reservation_holds(make_assistant, cluster):
    box = [NodeGpu(i, "NVIDIA A100", 80 * GB, 80 * GB) for i in range(4)]
    cluster.nodes.publish("part-box", box, now_ms(), "nvml")
    hour_ms = 3600 * 1000
    cluster.nodes.reserve(
        "part-box", TeamReservation("nlp", now_ms() + hour_ms, now_ms() + 2 * hour_ms), now_ms(), 2
    )

    english = make_assistant().ask("which GPUs are free?").reply
    chinese = make_assistant().ask("哪些卡空闲").reply

    time = r"(?:today |tomorrow |\d\d-\d\d )\d\d:\d\d"
    assert re.search(
        rf"GPUs 2, 3 of node part-box are reserved for team nlp from {time} until {time}: ", english
    )
    day = r"(?:今天 |明天 |\d\d-\d\d )\d\d:\d\d"
    assert re.search(rf"节点 part-box 的 2、3 号卡在 {day} 至 {day} 预留给团队 nlp：", chinese), chinese


def test_the_chat_says_which_gpus_are_free_node_by_node(make_assistant, cluster):
    cluster.nodes.publish(
        "gpu-box", [NodeGpu(i, "NVIDIA A100", 80 * GB, 80 * GB) for i in range(2)], now_ms(), "nvml"
    )
    cluster.nodes.publish("box-2", [NodeGpu(0, "NVIDIA L4", 24 * GB, 20 * GB)], now_ms(), "nvml")

    english = make_assistant().ask("which GPUs are free?").reply
    chinese = make_assistant().ask("哪些卡空闲").reply

    assert "\nFree: box-2 GPU 0 (20 GB free); gpu-box GPUs 0, 1 (80 GB free each).\n" in english + "\n", (
        english
    )
    assert "\n空闲：box-2 的 0 号卡（20 GB 空闲）；gpu-box 的 0、1 号卡（每张 80 GB 空闲）。" in chinese, (
        chinese
    )
