"""The scheduler's reasons in Chinese, as they come out of the scheduler (not retyped), so a reworded
reason that the translation no longer knows shows up here."""

from __future__ import annotations

import json
import signal
from dataclasses import replace

import pytest

from assistant.reasons_zh import reason_zh
from assistant.replies import reply_for
from assistant.tools import CLEAR_NEEDS_LIKE_TASK
from scheduler.accounts import account_for
from scheduler.dependencies import refuse_dependency_loop, refuse_parent
from scheduler.errors import ExecutorError, NightshiftError
from scheduler.executor import launch
from scheduler.executor.outcome import JobOutcome
from scheduler.nodes import NodeGpu, NodeState
from scheduler.policy import reasons
from scheduler.policy.config import PolicyConfig, TeamUsage
from scheduler.policy.engine import decide
from scheduler.policy.quotas import budget_status, member_budget_status
from scheduler.policy.types import GpuSlot
from scheduler.spec import parse_spec
from scheduler.submission import check_against_cluster, deadline_out_of_reach
from tests.policy.builders import make_gpus, make_task

GB = 1024


def _out_of_service() -> list[GpuSlot]:
    """GPUs out of service as `gpu_slots` words them: a drained node, a down one, a hot GPU, leftover memory."""
    hot = "too hot: 91 °C (above 85 °C; back in service below 80 °C)"
    held = "memory still held: 6000 MiB in use after task 7 ended (a leftover process?); back in service once it is freed"
    whys = (
        ["node n0 is drained"] * 2
        + ["node n1 is down (no heartbeat for 90 s)"] * 2
        + [f"GPU 1 of n2: {hot}", f"GPU 2 of n2: {held}"]
    )
    return [
        GpuSlot("n", i, 24 * GB, 24 * GB, available=False, why_unavailable=why) for i, why in enumerate(whys)
    ]


def _pending(**task: object) -> str:
    """The reason `decide` gives a task on an empty 4-GPU node at 2026-12-01 12:00 UTC."""
    now_s = 1_796_126_400.0  # 2026-12-01T12:00:00Z
    d = decide(
        [make_task(1, enqueued_at_s=now_s, **task)],
        [],
        make_gpus(),
        now_s,
        PolicyConfig(offpeak="23:00-07:00"),
    )
    return d.pending_reasons[1]


CASES = [
    (reasons.behind(3), "前面还有 3 个优先级更高的任务"),
    (reasons.no_node_in_service(None), "等待可用的节点（所有节点都被排空或离线；`nightshift nodes` 可查看）"),
    (reasons.no_node_in_service("gpu-2"), "等待节点 gpu-2 恢复服务（它被排空或离线；`nightshift nodes` 可查看）"),
    (reasons.team_cap("vision", 4), "团队 vision 已用满 4 张卡的上限"),
    (reasons.user_cap("alice", 2), "alice 已用满每人 2 张卡的上限"),
    (reasons.waiting_for_parent(12), "等待任务 12 成功完成"),
    (reasons.parent_failed(12), "它依赖的任务 12 没有成功"),
    (reasons.no_room(1, 40 * GB, 1500), "没有一张卡有 40 GB 空闲显存；下一张卡约 25 分钟后空出"),
    (reasons.no_room(2, 40 * GB, None), "没有一个节点同时有 2 张空闲 40 GB 显存的卡"),
    (reasons.no_room(2, 0, 7200), "没有一个节点同时有 2 张空闲的卡；下一张卡约 2.0 小时后空出"),
    (reasons.no_room(1, 0, None), "所有卡都在忙"),
    (
        CLEAR_NEEDS_LIKE_TASK,
        "clear 只用于重新运行之前的任务（like_task）时去掉它的某些设置；新任务只有给出的设置：请去掉 clear",
    ),
    (
        reasons.no_room(2, 0, 600) + "; " + reasons.reserved_ahead(4, 4, ("n0",)),
        "没有一个节点同时有 2 张空闲的卡；下一张卡约 10 分钟后空出；但排在前面的任务 4 已在 n0 预留了 4 张卡",
    ),
    (
        reasons.out_of_service([GpuSlot("n0", i, 24 * GB, 24 * GB, available=False) for i in range(8)], 16),
        "等待停用的卡恢复（16 张中的 8 张：节点被排空或离线、卡过热或显存仍被已结束的任务占着；`nightshift gpus` 可查看）",
    ),
    (
        reasons.out_of_service(_out_of_service(), 16),
        "等待停用的卡恢复（16 张中的 6 张：节点 n0 已排空；节点 n1 离线（90 秒没有心跳）；n2 的 1 号卡过热："
        "91 °C（超过 85 °C；降到 80 °C 以下恢复）；另有 1 项；`nightshift gpus` 可查看）",
    ),
    (reasons.reserved(2, ("n0",), 5400), "下一个就轮到它：已在 n0 预留 2 张卡，预计约 1.5 小时后空出"),
    (
        budget_status("nlp", {"nlp": TeamUsage("nlp", gpu_s_last_day=40 * 3600)}, PolicyConfig(day_budget_gpu_h={"nlp": 40})).message,
        "团队 nlp 的日预算已用完（40.0/40 GPU小时）",
    ),
    (
        budget_status("nlp", {"nlp": TeamUsage("nlp", gpu_s_last_week=90 * 3600)}, PolicyConfig(week_budget_gpu_h={"nlp": 100})).message,
        "团队 nlp 已用掉周预算的 90%（90.0/100 GPU小时）",
    ),
    (
        member_budget_status("nlp", "ann", {"nlp": TeamUsage("nlp", member_gpu_s_last_day={"ann": 10 * 3600})}, PolicyConfig(user_day_budget_gpu_h={"ann": 10})).message,
        "ann 在团队 nlp 的个人日预算已用完（10.0/10 GPU小时）",
    ),
    (
        member_budget_status("nlp", "ann", {"nlp": TeamUsage("nlp", member_gpu_s_last_week={"ann": 85 * 3600})}, PolicyConfig(default_user_week_budget_gpu_h=100)).message,
        "ann 在团队 nlp 已用掉个人周预算的 85%（85.0/100 GPU小时）",
    ),
    (
        "node box-1 goes down for maintenance at tomorrow 09:00: its ~2.0 h estimate would run past it",
        "节点 box-1 将于 明天 09:00 停机维护：它预计运行约 2.0 小时，会超过维护时间",
    ),
    (
        "node box-1 goes down for maintenance at 09:00 until 11:00: its ~2.0 h estimate would run past it",
        "节点 box-1 将于 09:00 停机维护（至 11:00）：它预计运行约 2.0 小时，会超过维护时间",
    ),
    ("node box-1 is down for maintenance until tomorrow 11:00", "节点 box-1 正在停机维护，明天 11:00 恢复"),
    (
        "node box-1 is reserved for team vision from 09:00 until 18:00: its ~2.0 h estimate would run into it",
        "节点 box-1 在 09:00 至 18:00 预留给团队 vision：它预计运行约 2.0 小时，会占用预留时段",
    ),
    ("node box-1 is reserved for team vision until tomorrow 18:00", "节点 box-1 预留给团队 vision，直到 明天 18:00"),
    (JobOutcome(3, None, "nonzero_exit").describe(), "退出码 3"),
    (JobOutcome(None, signal.SIGTERM, "timeout").describe(), "超过时间限制被停止（被 SIGTERM 终止）"),
    (JobOutcome(1, None, "oom").describe(), "显存不足（退出码 1）"),
    (JobOutcome(None, signal.SIGSEGV, "signal").describe(), "被 SIGSEGV 终止（不是 nightshift 发的）"),
    (JobOutcome(None, signal.SIGTERM, "cancelled").describe(), "已取消（被 SIGTERM 终止）"),
    (_pending(not_before_s=1_796_158_800.0), "按要求 21:00 之前不开始"),
    (_pending(retry_at_s=1_796_128_200.0), "上次失败后等待重试，12:30 再试"),
    (_pending(not_before_s=1_796_126_400.0 + 25 * 3600), "按要求 明天 13:00 之前不开始"),
    (_pending(offpeak=True), "等待 23:00 开始的谷时电价窗口"),
    (_pending(gpus=8), "在这个集群上无法开始：没有一个节点有 8 张卡（单个节点最多 4 张）"),
    (_pending(gpus=2, gpu_memory_mib=30 * GB), "在这个集群上无法开始：没有一张卡有 30 GB 显存（最大的 24 GB）"),
]  # fmt: skip


@pytest.mark.parametrize(("english", "chinese"), CASES, ids=[english for english, _ in CASES])
def test_a_scheduler_reason_reads_in_chinese(english: str, chinese: str) -> None:
    assert reason_zh(english) == chinese


def _refused_account(user: str, run_as: dict[str, str]) -> str:
    """What a root worker says when it refuses `user`'s job."""
    with pytest.raises(ExecutorError) as refused:
        account_for(user, run_as, False, euid=lambda: 0)
    return refused.value.message


def test_a_root_workers_refusal_of_a_job_reads_in_chinese() -> None:
    unmapped = reason_zh(_refused_account("no-such-user-xyz", {}))
    missing = reason_zh(_refused_account("alice", {"alice": "no-such-account-xyz"}))
    to_root = reason_zh(_refused_account("alice", {"alice": "root"}))

    assert unmapped.startswith("worker 以 root 运行，而用户 no-such-user-xyz 没有用来运行任务的系统账户：")
    assert """NIGHTSHIFT_RUN_AS='{"no-such-user-xyz": "ACCOUNT"}'""" in unmapped
    assert missing == "run_as 设置里的系统账户 no-such-account-xyz 在这个节点上不存在"
    assert to_root == "用户 alice 被映射到 root 账户 root，而 allow_root_jobs 没有打开"


def test_a_reason_the_translation_does_not_know_stays_as_it_is() -> None:
    assert reason_zh("waiting for the moon") == "waiting for the moon"
    assert reason_zh("all GPUs are busy; waiting for the moon") == "所有卡都在忙；waiting for the moon"


def test_a_gpu_holding_a_finished_tasks_memory_reads_in_chinese() -> None:
    held = (
        "waiting for GPUs out of service (1 of 4: GPU 2 of n2: memory still held: 6000 MiB in use after task 7 "
        "ended (a leftover process?); back in service once it is freed; `nightshift gpus` shows which)"
    )
    assert reason_zh(held) == (
        "等待停用的卡恢复（4 张中的 1 张：n2 的 2 号卡显存未释放：任务 7 结束后仍占用 6000 MiB（可能有残留进程）；"
        "释放后恢复；`nightshift gpus` 可查看）"
    )
    beside = held.replace("ended (a", "ended, 2000 MiB before it started (a")
    assert "任务 7 结束后仍占用 6000 MiB（开始前为 2000 MiB）（可能有残留进程）" in reason_zh(beside)


def test_memory_held_outside_nightshift_reads_in_chinese() -> None:
    gpu = GpuSlot("gpu-box", 0, 140 * GB, 20 * GB, outside_mib=100 * GB)
    assert reason_zh(reasons.held_outside(1, 60 * GB, gpu)) == (
        "没有一张卡有 60 GB 空闲显存，nightshift 的任务都结束了也不够：gpu-box 的 0 号卡有 100 GB 显存"
        "被 nightshift 以外的进程占用；这部分显存释放后才会开始"
    )
    assert reason_zh(reasons.held_outside(2, 60 * GB, gpu)).startswith("没有一个节点同时有 2 张空闲 60 GB")
    named = replace(gpu, outside_by="pid 4242 of alice")
    assert "被 nightshift 以外的进程占用，主要是 alice 的进程 4242；" in reason_zh(
        reasons.held_outside(1, 60 * GB, named)
    )
    assert "主要是进程 77；" in reason_zh(reasons.held_outside(1, 60 * GB, replace(gpu, outside_by="pid 77")))


def test_a_command_not_found_or_not_executable_reads_in_chinese() -> None:
    assert reason_zh(JobOutcome(127, None, "nonzero_exit").describe()) == "退出码 127（找不到命令）"
    assert reason_zh(JobOutcome(126, None, "nonzero_exit").describe()) == "退出码 126（没有执行权限）"


def test_an_end_after_the_deadline_reads_in_chinese() -> None:
    now_s = 1_796_126_400.0  # 2026-12-01T12:00:00Z
    late = reasons.ends_after_deadline(now_s + 14 * 3600, now_s + 10 * 3600, now_s, "UTC")

    assert reason_zh(late) == "预计 明天 02:00 左右结束，晚于截止时间 22:00"


def test_an_end_after_the_deadline_behind_the_queue_reads_in_chinese() -> None:
    now_s = 1_796_126_400.0  # 2026-12-01T12:00:00Z
    late = reasons.queue_ends_after_deadline(now_s + 2 * 3600, now_s + 3 * 3600, now_s + 5400, now_s, "UTC")

    assert reason_zh(late) == "按前面排队的任务，预计 14:00 左右开始、15:00 左右结束，晚于截止时间 13:30"


def test_a_deadline_out_of_reach_reads_in_chinese() -> None:
    now_s = 1_796_126_400.0  # 2026-12-01T12:00:00Z
    config = PolicyConfig(offpeak="23:00-07:00", timezone="UTC")
    tonight = make_task(offpeak=True, estimated_s=None, deadline_s=now_s + 1800)
    later = make_task(not_before_s=now_s + 3600, estimated_s=7200, deadline_s=now_s + 7200)
    limit = make_task(estimated_s=None, time_limit_s=3 * 3600, deadline_s=now_s + 3600)

    assert [
        reason_zh(deadline_out_of_reach(task, config, now_s) or "") for task in (tonight, later, limit)
    ] == [
        "它赶不上截止时间 12:30：最早 23:00 才能开始（谷时窗口）",
        "它赶不上截止时间 14:00：最早 13:00 才能开始（按要求的最早开始时间），按预计时长约 2.0 小时要到 15:00 左右才结束",
        "它赶不上截止时间 13:00：即使现在就开始，按时间限制约 3.0 小时要到 15:00 左右才结束",
    ]


def _refusal(check) -> str:  # `check` raises the scheduler's own error
    try:
        check()
    except NightshiftError as exc:
        return exc.message
    raise AssertionError("no refusal")


def _node(gpus: int, gb: int) -> NodeState:
    return NodeState(
        "node-a", tuple(NodeGpu(i, "NVIDIA RTX 4090", gb * 1024, gb * 1024) for i in range(gpus)), 0
    )


@pytest.mark.parametrize(
    ("refusal", "chinese"),
    [
        (
            lambda: check_against_cluster(parse_spec({"command": "x", "gpus": 8}), [_node(4, 24)], 8),
            "这个集群上卡数必须在 0 到 4 之间（最大的节点只有 4 张卡）；你要了 8 张",
        ),
        (
            lambda: check_against_cluster(
                parse_spec({"command": "x", "gpu_memory_gb": 100}), [_node(4, 24)], 8
            ),
            "这个集群没有一张卡有 100 GB 显存（最大的 24 GB）",
        ),
        (
            lambda: check_against_cluster(
                parse_spec({"command": "x", "gpu_memory_gb": 40, "node": "node-a"}),
                [_node(4, 24), NodeState("node-b", (NodeGpu(0, "NVIDIA A100", 80 * 1024, 80 * 1024),), 0)],
                8,
            ),
            "节点 node-a 上没有一张卡有 40 GB 显存（最大的 24 GB）",
        ),
        (
            lambda: check_against_cluster(
                parse_spec({"command": "x", "gpu_model": "A100"}), [_node(4, 24)], 8
            ),
            "没有型号包含 'A100' 的卡（这里的型号：NVIDIA RTX 4090）",
        ),
        (
            lambda: check_against_cluster(
                parse_spec({"command": "x", "node": "gpu-box-9"}), [_node(4, 24)], 8
            ),
            "这个集群没有叫 'gpu-box-9' 的节点（现有节点：node-a）",
        ),
        (
            lambda: launch._require(lambda _: None, "conda", "conda_env 'nosuchenv'"),
            "要求了 conda 环境 'nosuchenv'，但这个节点没有安装 conda",
        ),
        (lambda: parse_spec({"command": "x", "gpus": -1}), "卡数不能小于 0"),
        (lambda: parse_spec({"command": "x", "time_limit_minutes": 0}), "时间限制（分钟）必须大于 0"),
        (
            lambda: parse_spec({"command": "x", "time_limit_minutes": "NaN"}),
            "时间限制（分钟）必须是一个有限的数字（收到的是 'NaN'）",
        ),
        (
            lambda: parse_spec({"command": "x", "conda_env": "a", "docker_image": "b"}),
            "conda 环境和 docker 镜像只能选一个",
        ),
    ],
)
def test_a_spec_refusal_reads_in_chinese(refusal, chinese: str) -> None:
    assert reason_zh(_refusal(refusal)) == chinese


def test_a_failed_task_in_a_chinese_list_says_why_in_chinese() -> None:
    message = _refusal(lambda: launch._require(lambda _: None, "docker", "docker_image 'pytorch/pytorch'"))
    tasks = {
        "ok": True,
        "tasks": [{"id": 7, "name": "<data>a.py</data>", "status": "failed", "message": message}],
    }

    reply = reply_for("list_tasks", json.dumps(tasks), "zh")

    assert "#7 a.py — 失败（要求了 docker 镜像 'pytorch/pytorch'，但这个节点没有安装 docker）" in reply


def test_a_job_stopped_at_the_log_limit_reads_in_chinese() -> None:
    stopped = JobOutcome(exit_code=None, signal=signal.SIGTERM, reason="output_limit").describe()

    assert stopped == "stopped: its output passed the log size limit (killed by SIGTERM)"
    assert reason_zh(stopped).startswith("输出超过日志大小上限被停止（")


def test_a_refused_change_of_what_a_task_waits_for_reads_in_chinese() -> None:
    waits = {2: [], 3: [2], 4: [3]}
    loop = _refusal(lambda: refuse_dependency_loop(2, {"depends_on": [3]}, lambda t: waits.get(t, [])))
    chain = _refusal(lambda: refuse_dependency_loop(2, {"depends_on_any": [4]}, lambda t: waits.get(t, [])))
    itself = _refusal(lambda: refuse_dependency_loop(2, {"depends_on": [2]}, lambda t: []))
    failed = _refusal(lambda: refuse_parent("depends_on", 5, "failed"))

    assert reason_zh(loop) == "依赖的任务：任务 3 已经在等任务 2；如果 2 也等它，两个都永远不会开始"
    assert reason_zh(chain) == (
        "等其结束的任务：任务 4 已经在等任务 2（任务 4 → 任务 3 → 任务 2）；如果 2 也等它，两个都永远不会开始"
    )
    assert reason_zh(itself) == "依赖的任务：任务 2 不能等它自己"
    assert reason_zh(failed) == (
        "依赖的任务 5 已经失败：这个任务永远不会开始"
        "（可以重跑 5 并依赖新任务、去掉这个依赖，或用 depends_on_any 等它结束，不论成败）"
    )


def test_a_job_killed_after_its_grace_says_so_in_chinese() -> None:
    ended = JobOutcome(None, signal.SIGKILL, "cancelled", outlived_grace_s=10.0).describe()

    assert reason_zh(ended) == ("已取消（宽限 10 秒后仍在运行，被 SIGKILL 终止）")
