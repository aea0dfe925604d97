"""Chinese for the scheduler's plain-language reasons ("behind 3 higher-priority tasks", "waiting for
off-peak at 23:00"), for the replies the assistant words itself.

The scheduler words its reasons once, in English (`scheduler/policy/reasons.py`, `engine.py`, `quotas.py`,
`executor/outcome.py`); the API and the CLI show them as they are. A Chinese reply translates the parts it
knows, one `; `-separated part at a time, and leaves anything else as it is (a name, a path, a reason added
later), so a reply is never wrong, at worst partly English.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], str]]

_PERIOD = {"day": "今日", "week": "本周"}


def duration_zh(text: str) -> str:
    """`~25 min` → `约 25 分钟`, `~1.5 h` → `约 1.5 小时`, `~2.0 d` → `约 2.0 天` (`human_duration`'s)."""
    match = re.fullmatch(r"~?\s*([\d.]+)\s*(min|h|d)", text.strip())
    if match is None:
        return text
    unit = {"min": "分钟", "h": "小时", "d": "天"}[match.group(2)]
    return f"约 {match.group(1)} {unit}"


def _how_it_ended(text: str) -> str:
    text = re.sub(r"killed by (SIG\w+|signal \d+)", r"被 \1 终止", text)
    text = re.sub(r"exit code (-?\d+)", r"退出码 \1", text)
    return text.replace(" (not sent by nightshift)", "（不是 nightshift 发的）")


_STATUS_ZH = {
    "succeeded": "成功完成",
    "failed": "失败",
    "cancelled": "被取消",
    "running": "在运行",
    "queued": "排队中",
}

_RULES: list[Rule] = [
    (re.compile(r"task (\d+) not found"), lambda m: f"找不到任务 {m[1]}（或它不属于你的团队）"),
    (re.compile(r"sweep (\d+) not found"), lambda m: f"找不到扫参 {m[1]}"),
    (re.compile(r"task (\d+) already (\w+)"), lambda m: f"任务 {m[1]} 已经{_STATUS_ZH.get(m[2], m[2])}"),
    (re.compile(r"nothing to cancel"), lambda m: "没有可取消的"),
    (re.compile(r"task (\d+) is already held by (\S+)"), lambda m: f"任务 {m[1]} 已被 {m[2]} 暂停"),
    (re.compile(r"nightshift release (\d+)"), lambda m: f"运行 nightshift release {m[1]} 可放行"),
    (
        re.compile(r"task (\d+) is not held \((\w+)\)"),
        lambda m: f"任务 {m[1]} 没有被暂停（{_STATUS_ZH.get(m[2], m[2])}）",
    ),
    (re.compile(r"nothing to release"), lambda m: "无需放行"),
    (
        re.compile(r"task (\d+) is running: cancel stops it"),
        lambda m: f"任务 {m[1]} 正在运行：取消才能停止它",
    ),
    (re.compile(r"only a queued task can be held"), lambda m: "只有排队中的任务可以暂停"),
    (re.compile(r"only a queued task can be changed"), lambda m: "只有排队中的任务可以修改"),
    (re.compile(r"you can see only your own team's quota"), lambda m: "你只能查看自己团队的配额"),
    (re.compile(r"this needs an admin token"), lambda m: "这需要管理员令牌"),
    (re.compile(r"behind (\d+) higher-priority tasks?"), lambda m: f"前面还有 {m[1]} 个优先级更高的任务"),
    (re.compile(r"team (\S+) is at its (\d+)-GPU cap"), lambda m: f"团队 {m[1]} 已用满 {m[2]} 张卡的上限"),
    (re.compile(r"waiting for task (\d+) to succeed"), lambda m: f"等待任务 {m[1]} 成功完成"),
    (
        re.compile(r"task (\d+), which it depends on, did not succeed"),
        lambda m: f"它依赖的任务 {m[1]} 没有成功",
    ),
    (re.compile(r"no GPU has (\d+) GB free"), lambda m: f"没有一张卡有 {m[1]} GB 空闲显存"),
    (
        re.compile(r"no node has (\d+) GPUs with (\d+) GB free"),
        lambda m: f"没有一个节点同时有 {m[1]} 张空闲 {m[2]} GB 显存的卡",
    ),
    (re.compile(r"no node has (\d+) free GPUs"), lambda m: f"没有一个节点同时有 {m[1]} 张空闲的卡"),
    (re.compile(r"all GPUs are busy"), lambda m: "所有卡都在忙"),
    (re.compile(r"the next frees in (.+)"), lambda m: f"下一张卡{duration_zh(m[1])}后空出"),
    (
        re.compile(
            r"waiting for GPUs out of service \((\d+) of (\d+): (.*); (`nightshift \w+`) shows which\)"
        ),
        lambda m: f"等待停用的卡恢复（{m[2]} 张中的 {m[1]} 张：{reason_zh(m[3])}；{m[4]} 可查看）",
    ),
    (re.compile(r"node (\S+) is drained"), lambda m: f"节点 {m[1]} 已排空"),
    (
        re.compile(r"node (\S+) is down \(no heartbeat for (\d+) s\)"),
        lambda m: f"节点 {m[1]} 离线（{m[2]} 秒没有心跳）",
    ),
    (
        re.compile(
            r"GPU (\d+) of (\S+): too hot: (\S+) °C \(above (\S+) °C; back in service below (\S+) °C\)"
        ),
        lambda m: f"{m[2]} 的 {m[1]} 号卡过热：{m[3]} °C（超过 {m[4]} °C；降到 {m[5]} °C 以下恢复）",
    ),
    (
        re.compile(
            r"GPU (\d+) of (\S+): memory still held: (\d+) MiB in use after task (\d+) ended"
            r" \(a leftover process\?\)"
        ),
        lambda m: f"{m[2]} 的 {m[1]} 号卡显存未释放：任务 {m[4]} 结束后仍占用 {m[3]} MiB（可能有残留进程）",
    ),
    (re.compile(r"back in service once it is freed"), lambda m: "释放后恢复"),
    (
        re.compile(r"a drained or down node, a GPU too hot or holding a finished task's memory"),
        lambda m: "节点被排空或离线、卡过热或显存仍被已结束的任务占着",
    ),
    (re.compile(r"(\d+) more"), lambda m: f"另有 {m[1]} 项"),
    (
        re.compile(r"next in line: (\d+) GPUs? reserved on (.+), expected free in (.+)"),
        lambda m: f"下一个就轮到它：已在 {m[2]} 预留 {m[1]} 张卡，预计{duration_zh(m[3])}后空出",
    ),
    (re.compile(r"waiting until (.+) \(not before\)"), lambda m: f"按要求 {m[1]} 之前不开始"),
    (
        re.compile(r"retrying at (.+) \(backoff after a failed attempt\)"),
        lambda m: f"上次失败后等待重试，{m[1]} 再试",
    ),
    (
        re.compile(
            r"waiting for off-peak at (.+?): its (.+) estimate does not fit in what is left of this window"
        ),
        lambda m: f"等待 {m[1]} 的谷时窗口：预计要跑{duration_zh(m[2])}，本窗口剩下的时间不够",
    ),
    (re.compile(r"waiting for off-peak at (.+)"), lambda m: f"等待 {m[1]} 开始的谷时电价窗口"),
    (
        re.compile(r"(day|week) budget of team (\S+) is used up \((.+) GPU-h\)"),
        lambda m: f"团队 {m[2]} 的{_PERIOD[m[1]]}预算已用完（{m[3]} GPU小时）",
    ),
    (re.compile(r"new starts again at (.+)"), lambda m: f"{m[1]} 起可以再启动新任务"),
    (
        re.compile(r"held by (\S+): nightshift release (\d+) lets it start"),
        lambda m: f"被 {m[1]} 暂停：运行 nightshift release {m[2]} 后才会开始",
    ),
    (
        re.compile(r"team (\S+) has used (\d+)% of its (day|week) budget \((.+) GPU-h\)"),
        lambda m: f"团队 {m[1]} 已用掉{_PERIOD[m[3]]}预算的 {m[2]}%（{m[4]} GPU小时）",
    ),
    (
        re.compile(r"deep in the queue \(beyond the forecast window\)"),
        lambda m: "排在队列很后面（超出预测范围）",
    ),
    (re.compile(r"starts now"), lambda m: "马上就能开始"),
    (re.compile(r"finished successfully"), lambda m: "已成功完成"),
    (re.compile(r"cancelled by (\S+)"), lambda m: f"被 {m[1]} 取消"),
    (re.compile(r"by (\S+)"), lambda m: f"操作人 {m[1]}"),
    (re.compile(r"on (\S+) GPUs ([\d,]+) since (.+)"), lambda m: f"在 {m[1]} 的 {m[2]} 号卡上，自 {m[3]} 起"),
    (re.compile(r"on (\S+) since (.+)"), lambda m: f"在 {m[1]} 上，自 {m[2]} 起"),
    (
        re.compile(r"stopped at its time limit \((.+)\)"),
        lambda m: f"超过时间限制被停止（{_how_it_ended(m[1])}）",
    ),
    (re.compile(r"out of memory \((.+)\)"), lambda m: f"显存不足（{_how_it_ended(m[1])}）"),
    (re.compile(r"cancelled \((.+)\)"), lambda m: f"已取消（{_how_it_ended(m[1])}）"),
    (
        re.compile(r"(?:exit code -?\d+|killed by \S+)(?: \(not sent by nightshift\))?"),
        lambda m: _how_it_ended(m[0]),
    ),
    (
        re.compile(r"worker (\S+) (?:was stopped|restarted)"),
        lambda m: f"节点 {m[1]} 上的 worker 停止或重启了",
    ),
    (re.compile(r"cannot start on this cluster: (.+)"), lambda m: f"在这个集群上无法开始：{_part(m[1])}"),
    (
        re.compile(r"no node has (\d+) GPUs(?: with (\d+) GB each)? \(at most (\d+) on one node\)"),
        lambda m: f"没有一个节点有 {m[1]} 张{f'{m[2]} GB 的' if m[2] else ''}卡（单个节点最多 {m[3]} 张）",
    ),
    (
        re.compile(r"no GPU here has (\d+) GB \(the largest has (\d+) GB\)"),
        lambda m: f"没有一张卡有 {m[1]} GB 显存（最大的 {m[2]} GB）",
    ),
]


def _part(text: str) -> str:
    for pattern, words in _RULES:
        match = pattern.fullmatch(text.strip())
        if match is not None:
            return words(match)
    return text


def reason_zh(reason: str) -> str:
    """The Chinese of a scheduler reason, part by part (`; `-separated); unknown parts stay as they are."""
    return "；".join(_part(part) for part in _parts(reason))


def _parts(reason: str) -> list[str]:
    """`reason` split at each `; ` that is not inside parentheses."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(reason):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and reason.startswith("; ", i):
            parts.append(reason[start:i])
            start = i + 2
    return [*parts, reason[start:]]
