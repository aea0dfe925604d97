"""Chinese for the scheduler's plain-language reasons ("behind 3 higher-priority tasks", "waiting for
off-peak at 23:00") and the common reasons a spec is refused ("gpus must be between 0 and 4 …", "depends_on
names task 9, which does not exist"), for the replies the assistant words itself.

The scheduler words its reasons once, in English (`scheduler/policy/reasons.py`, `engine.py`, `quotas.py`,
`executor/outcome.py`); the API and the CLI show them as they are. A Chinese reply translates the parts it
knows, one `; `-separated part at a time, and leaves anything else as it is (a name, a path, a reason added
later), so a reply is never wrong, at worst partly English.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], str]]

_PERIOD = {"day": "日", "week": "周"}  # rolling: the last 24 h, the last 7 days


def duration_zh(text: str) -> str:
    """`~25 min` → `约 25 分钟`, `~1.5 h` → `约 1.5 小时`, `~2.0 d` → `约 2.0 天` (`human_duration`'s)."""
    match = re.fullmatch(r"~?\s*([\d.]+)\s*(min|h|d)", text.strip())
    if match is None:
        return text
    unit = {"min": "分钟", "h": "小时", "d": "天"}[match.group(2)]
    return f"约 {match.group(1)} {unit}"


def _how_it_ended(text: str) -> str:
    text = re.sub(  # `JobOutcome.describe` of a job that outlived its stop's grace
        r"killed by SIGKILL after its ([\d.]+)-s grace", r"宽限 \1 秒后仍在运行，被 SIGKILL 终止", text
    )
    text = re.sub(r"killed by (SIG\w+|signal \d+)", r"被 \1 终止", text)
    text = re.sub(r"exit code (-?\d+)", r"退出码 \1", text)
    for english, chinese in _ENDED_ZH.items():
        text = text.replace(f" ({english})", f"（{chinese}）")
    return text


# what `JobOutcome.describe` adds after an exit code or signal
_ENDED_ZH = {
    "not sent by nightshift": "不是 nightshift 发的",
    "command not found": "找不到命令",
    "not executable": "没有执行权限",
}


def counts_zh(text: str) -> str:
    """A sweep's tasks by status as the API's messages say them (`1 failed, 3 succeeded`) in Chinese
    (`失败 1 个、成功完成 3 个`)."""
    parts = re.findall(r"(\d+) (\w+)", text)
    if not parts or ", ".join(f"{n} {s}" for n, s in parts) != text.strip():
        return text
    return "、".join(f"{_STATUS_ZH.get(status, status)} {count} 个" for count, status in parts)


def _out_of_reach_zh(m: re.Match[str]) -> str:
    """`submission.deadline_out_of_reach`'s note in Chinese."""
    held = {"not before": "按要求的最早开始时间", "off-peak window": "谷时窗口"}
    start = "即使现在就开始" if m[2] == "now" else f"最早 {m[3]} 才能开始（{held[m[4]]}）"
    words = f"它赶不上截止时间 {m[1]}：{start}"
    if m[5]:
        kind = "预计时长" if m[6] == "estimate" else "时间限制"
        words += f"，按{kind}{duration_zh(m[5])}要到 {m[7]} 左右才结束"
    return words


_STATUS_ZH = {
    "succeeded": "成功完成",
    "failed": "失败",
    "cancelled": "被取消",
    "running": "在运行",
    "queued": "排队中",
}
_LIVE_ZH = {"queued": "排队中", "running": "运行中"}

_RULES: list[Rule] = [
    (re.compile(r"task (\d+) not found"), lambda m: f"找不到任务 {m[1]}（或它不属于你的团队）"),
    # a root worker's refusals of a job (`scheduler.accounts`): what the admin is to set
    (
        re.compile(
            r"the worker runs as root and user '(.+)' has no OS account to run jobs as: map it to an OS "
            r"account in the run_as setting \(e\.g\. (.+)\), or set allow_root_jobs "
            r"\(NIGHTSHIFT_ALLOW_ROOT_JOBS=true\) to run it as root"
        ),
        lambda m: (
            f"worker 以 root 运行，而用户 {m[1]} 没有用来运行任务的系统账户：请管理员在 run_as 设置里"
            f"把它映射到一个系统账户（例如 {m[2]}），或打开 allow_root_jobs"
            "（NIGHTSHIFT_ALLOW_ROOT_JOBS=true）以 root 运行"
        ),
    ),
    (
        re.compile(r"OS account '(.+)' \(from the run_as setting\) does not exist on this node"),
        lambda m: f"run_as 设置里的系统账户 {m[1]} 在这个节点上不存在",
    ),
    (
        re.compile(r"user '(.+)' is mapped to the root account '(.+)', and allow_root_jobs is off"),
        lambda m: f"用户 {m[1]} 被映射到 root 账户 {m[2]}，而 allow_root_jobs 没有打开",
    ),
    (re.compile(r"sweep (\d+) not found"), lambda m: f"找不到扫参 {m[1]}"),
    (re.compile(r"no sweep (\d+)"), lambda m: f"没有扫参 {m[1]}"),
    (
        re.compile(r"sweep (\d+)(?: has ended)?: nothing to cancel \((.*)\)"),
        lambda m: f"扫参 {m[1]} 的任务都已结束，没有可取消的（{counts_zh(m[2])}）",
    ),
    (
        re.compile(r"sweep (\d+) has no queued task to hold \((.*)\)"),
        lambda m: f"扫参 {m[1]} 没有排队中的任务可暂停（{counts_zh(m[2])}）",
    ),
    (
        re.compile(r"sweep (\d+) has no queued task (?:left: nothing )?to change \((.*)\)"),
        lambda m: f"扫参 {m[1]} 没有排队中的任务可修改（{counts_zh(m[2])}）",
    ),
    (
        re.compile(r"sweep (\d+) already has no limit on how many run at once"),
        lambda m: f"扫参 {m[1]} 本来就没有同时运行数量的限制",
    ),
    (
        re.compile(r"no limit on how many run at once, or at most (\d+): not both"),
        lambda m: f"不限制同时运行数量，还是最多同时运行 {m[1]} 个：只能二选一",
    ),
    (
        re.compile(r"(task|sweep) (\d+) already has (\w+) at its default \((.+)\)"),
        lambda m: (
            f"{'任务' if m[1] == 'task' else '扫参'} {m[2]} 的{_field_zh(m[3])}本来就是默认值"
            f"（{'无' if m[4] == 'none' else m[4]}）"
        ),
    ),
    (
        re.compile(r"cannot clear (.+): clear takes (.+)"),
        lambda m: f"{m[1]} 不能恢复默认值：能恢复的只有 {m[2]}",
    ),
    (
        re.compile(r"(\w+): (.+), or back to its default: not both"),
        lambda m: f"{_field_zh(m[1])}改成 {m[2]}，还是恢复默认值：只能二选一",
    ),
    (
        re.compile(r"clear leaves fields of an earlier task out when it runs again \(with like_task\).*"),
        lambda m: (
            "clear 只用于重新运行之前的任务（like_task）时去掉它的某些设置；"
            "新任务只有给出的设置：请去掉 clear"
        ),
    ),
    (
        re.compile(r"max_running limits how many tasks of a sweep run at once, and this is a single task.*"),
        lambda m: "max_running 限制的是扫参里同时运行的任务数，而这是单个任务：请去掉它，或给出扫参的参数值",
    ),
    (
        re.compile(r"sweep (\d+) has no held task to release \((.*)\)"),
        lambda m: f"扫参 {m[1]} 没有被暂停的任务可放行（{counts_zh(m[2])}）",
    ),
    (re.compile(r"no task carries the tag '(.*)'"), lambda m: f"没有任务带标签 {m[1]}"),
    (
        re.compile(r"say which runs to compare: .*"),
        lambda m: "请说要比较哪些运行：一个扫参（编号）或一个标签，二选一",
    ),
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
        re.compile(r"none of your tasks is (queued or running|queued|running): nothing to cancel"),
        lambda m: f"你没有{_LIVE_ZH.get(m[1], '排队中或运行中')}的任务：没有可取消的",
    ),
    (
        re.compile(
            r"you have (\d+) (\w+) tasks; the chat cancels up to (\d+) on one card: `(.+)` shows them .*"
        ),
        lambda m: (
            f"你有 {m[1]} 个任务，聊天里一张卡片最多取消 {m[3]} 个：`{m[4]}` 会先全部列出再询问是否取消"
        ),
    ),
    (
        re.compile(r"task (\d+) is (\w+): it is already waiting in the queue"),
        lambda m: f"任务 {m[1]} {_STATUS_ZH.get(m[2], m[2])}：它已经在队列里等待",
    ),
    (
        re.compile(r"task (\d+) is running: cancel stops it"),
        lambda m: f"任务 {m[1]} 正在运行：取消才能停止它",
    ),
    (re.compile(r"only a queued task can be held"), lambda m: "只有排队中的任务可以暂停"),
    (re.compile(r"only a queued task can be changed"), lambda m: "只有排队中的任务可以修改"),
    (
        re.compile(r"only a queued or running task can be changed"),
        lambda m: "只有排队中或运行中的任务可以修改",
    ),
    (
        re.compile(r"task (\d+) is running: (.+) can no longer change"),
        lambda m: f"任务 {m[1]} 正在运行：{m[2]} 已不能修改",
    ),
    (
        re.compile(r"a running task can change only .+"),
        lambda m: "运行中的任务只能改时间限制、预计时长、重试次数、名称和标签",
    ),
    (
        re.compile(r"task (\d+) has no time limit, so it needs no more time: it runs until it ends"),
        lambda m: f"任务 {m[1]} 没有时间限制，不需要加时：它会一直运行到结束",
    ),
    (re.compile(r"task (\d+) has run (\d+) min already"), lambda m: f"任务 {m[1]} 已经运行了 {m[2]} 分钟"),
    (
        re.compile(
            r"a ([\d.]+)-min time limit would stop it at once: give it more than (\d+) min, or cancel it"
        ),
        lambda m: f"{m[1]} 分钟的时间限制会让它立刻停止：请给它超过 {m[2]} 分钟，或者取消它",
    ),
    (re.compile(r"you can see only your own team's quota"), lambda m: "你只能查看自己团队的配额"),
    (re.compile(r"this needs an admin token"), lambda m: "这需要管理员令牌"),
    (re.compile(r"behind (\d+) higher-priority tasks?"), lambda m: f"前面还有 {m[1]} 个优先级更高的任务"),
    (re.compile(r"team (\S+) is at its (\d+)-GPU cap"), lambda m: f"团队 {m[1]} 已用满 {m[2]} 张卡的上限"),
    (
        re.compile(r"(\S+) is at the (\d+)-GPU cap per person"),
        lambda m: f"{m[1]} 已用满每人 {m[2]} 张卡的上限",
    ),
    (re.compile(r"waiting for task (\d+) to succeed"), lambda m: f"等待任务 {m[1]} 成功完成"),
    (re.compile(r"waiting for task (\d+) to end"), lambda m: f"等待任务 {m[1]} 结束（不论成功与否）"),
    (
        re.compile(r"task (\d+), which it depends on, did not succeed"),
        lambda m: f"它依赖的任务 {m[1]} 没有成功",
    ),
    (re.compile(r"no GPU has (\d+) GB free"), lambda m: f"没有一张卡有 {m[1]} GB 空闲显存"),
    (
        re.compile(
            r"(no GPU has \d+ GB free|no node has \d+ GPUs with \d+ GB free), nor would one once "
            r"nightshift's tasks end: (\d+) GB of GPU (\d+) of (\S+) is in use outside them"
            r"(?:, most by pid (\d+)(?: of (\S+))?(?: \((.*)\))?)?"
        ),
        lambda m: (
            f"{_part(m[1])}，nightshift 的任务都结束了也不够：{m[4]} 的 {m[3]} 号卡有 {m[2]} GB 显存"
            "被 nightshift 以外的进程占用"
            + ("，主要是" + (f" {m[6]} 的" if m[6] else "") + f"进程 {m[5]}" if m[5] else "")
            + (f"（{m[7]}）" if m[7] else "")
        ),
    ),
    (re.compile(r"it starts when that is freed"), lambda m: "这部分显存释放后才会开始"),
    (
        re.compile(r"no node has (\d+) GPUs with (\d+) GB free"),
        lambda m: f"没有一个节点同时有 {m[1]} 张空闲 {m[2]} GB 显存的卡",
    ),
    (re.compile(r"no node has (\d+) free GPUs"), lambda m: f"没有一个节点同时有 {m[1]} 张空闲的卡"),
    (re.compile(r"all GPUs are busy"), lambda m: "所有卡都在忙"),
    (re.compile(r"the next frees in (.+)"), lambda m: f"下一张卡{duration_zh(m[1])}后空出"),
    (
        re.compile(r"task (\d+), ahead of it, has (\d+) GPUs? reserved on (.+)"),
        lambda m: f"但排在前面的任务 {m[1]} 已在 {m[3]} 预留了 {m[2]} 张卡",
    ),
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
        re.compile(r"node (\S+) is down \(its worker was stopped (\d+) s ago\)"),
        lambda m: f"节点 {m[1]} 离线（它的 worker 已在 {m[2]} 秒前停止）",
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
            r"(?:, (\d+) MiB before it started)? \(a leftover process\?\)"
        ),
        lambda m: (
            f"{m[2]} 的 {m[1]} 号卡显存未释放：任务 {m[4]} 结束后仍占用 {m[3]} MiB"
            + (f"（开始前为 {m[5]} MiB）" if m[5] else "")
            + "（可能有残留进程）"
        ),
    ),
    (re.compile(r"back in service once it is freed"), lambda m: "释放后恢复"),
    (
        re.compile(r"GPU (\d+) of (\S+): unreadable: (.+)"),
        lambda m: f"{m[2]} 的 {m[1]} 号卡无法读取（驱动报告：{m[3]}）",
    ),
    (
        re.compile(
            r"back in service once the driver reads it again \(a lost GPU needs a reset or a reboot\)"
        ),
        lambda m: "驱动能再次读取后恢复（掉卡需要重置或重启）",
    ),
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
        re.compile(
            r"waiting for a node in service \(all are drained or down; `nightshift nodes` shows them\)"
        ),
        lambda m: "等待可用的节点（所有节点都被排空或离线；`nightshift nodes` 可查看）",
    ),
    (
        re.compile(
            r"waiting for node (\S+) to be in service \(drained or down; `nightshift nodes` shows it\)"
        ),
        lambda m: f"等待节点 {m[1]} 恢复服务（它被排空或离线；`nightshift nodes` 可查看）",
    ),
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
    (
        re.compile(r"(day|week) budget of (\S+) in team (\S+) is used up \((.+) GPU-h\)"),
        lambda m: f"{m[2]} 在团队 {m[3]} 的个人{_PERIOD[m[1]]}预算已用完（{m[4]} GPU小时）",
    ),
    (
        re.compile(
            r"new starts again at (.+?), when its (day|week) budget frees too: the work running now, by its "
            r"estimates, uses that up meanwhile"
        ),
        lambda m: (
            f"{m[1]} 起可以再启动新任务（那时{_PERIOD[m[2]]}预算才恢复："
            "按预计时长，正在运行的任务会先把它用完）"
        ),
    ),
    (re.compile(r"new starts again at (.+)"), lambda m: f"{m[1]} 起可以再启动新任务"),
    (
        re.compile(
            r"nodes? (.+?) goe?s? down for maintenance at (.+?)(?: until (.+?))?: "
            r"its (.+) estimate would run past it"
        ),
        lambda m: (
            f"节点 {m[1]} 将于 {m[2]} 停机维护{f'（至 {m[3]}）' if m[3] else ''}：它预计运行"
            f"{duration_zh(m[4])}，会超过维护时间"
        ),
    ),
    (
        re.compile(r"nodes? (.+?) (?:is|are) down for maintenance until (.+)"),
        lambda m: f"节点 {m[1]} 正在停机维护，{m[2]} 恢复",
    ),
    (
        re.compile(
            r"nodes? (.+?) (?:is|are) reserved for team (\S+) from (.+?) until (.+?): "
            r"its (.+) estimate would run into it"
        ),
        lambda m: (
            f"节点 {m[1]} 在 {m[3]} 至 {m[4]} 预留给团队 {m[2]}："
            f"它预计运行{duration_zh(m[5])}，会占用预留时段"
        ),
    ),
    (
        re.compile(r"nodes? (.+?) (?:is|are) reserved for team (\S+) until (.+)"),
        lambda m: f"节点 {m[1]} 预留给团队 {m[2]}，直到 {m[3]}",
    ),
    (
        re.compile(r"held by (\S+): nightshift release (\d+) lets it start"),
        lambda m: f"被 {m[1]} 暂停：运行 nightshift release {m[2]} 后才会开始",
    ),
    (
        re.compile(r"waiting for a slot: sweep (\d+) runs at most (\d+) at a time"),
        lambda m: f"等待空位：扫参 {m[1]} 同时最多运行 {m[2]} 个任务",
    ),
    (
        re.compile(r"team (\S+) has used (\d+)% of its (day|week) budget \((.+) GPU-h\)"),
        lambda m: f"团队 {m[1]} 已用掉{_PERIOD[m[3]]}预算的 {m[2]}%（{m[4]} GPU小时）",
    ),
    (
        re.compile(r"(\S+) in team (\S+) has used (\d+)% of their (day|week) budget \((.+) GPU-h\)"),
        lambda m: f"{m[1]} 在团队 {m[2]} 已用掉个人{_PERIOD[m[4]]}预算的 {m[3]}%（{m[5]} GPU小时）",
    ),
    (
        re.compile(r"deep in the queue \(beyond the forecast window\)"),
        lambda m: "排在队列很后面（超出预测范围）",
    ),
    (
        re.compile(
            r"task (\d+) is still (running|queued): this is another task beside it "
            r"\(cancel \d+ to (stop|drop) the first\)"
        ),
        lambda m: (
            f"任务 {m[1]} 仍在{'运行' if m[2] == 'running' else '排队'}：确认后会在它之外再加一个任务"
            f"（要{'停掉' if m[3] == 'stop' else '去掉'}原来的，请取消 {m[1]} 号）"
        ),
    ),
    (
        re.compile(
            r"task (\d+) is a run of sweep (\d+): this new task is outside it \(`nightshift rerun \d+`, or "
            r"\"rerun the failed runs of sweep \d+\" here, runs it again in its place\)"
        ),
        lambda m: (
            f"任务 {m[1]} 是扫参 {m[2]} 的一次运行：这个新任务不在扫参里"
            f"（在命令行用 `nightshift rerun {m[1]}`，或说“重跑扫参{m[2]}失败的任务”，会在扫参里原位重跑）"
        ),
    ),
    (
        re.compile(
            r"with the work queued ahead of it, it should start around (.+) and end around (.+), after its "
            r"deadline (.+)"
        ),
        lambda m: f"按前面排队的任务，预计 {m[1]} 左右开始、{m[2]} 左右结束，晚于截止时间 {m[3]}",
    ),
    (
        re.compile(r"expected to end around (.+), after its deadline (.+)"),
        lambda m: f"预计 {m[1]} 左右结束，晚于截止时间 {m[2]}",
    ),
    (
        re.compile(
            r"it cannot finish by its deadline (.+?): the earliest it may start is (now|(.+) \((not before|"
            r"off-peak window)\))(?:, and its (\S+ \S+) (estimate|time limit) ends it around (.+))?"
        ),
        _out_of_reach_zh,
    ),
    (re.compile(r"starts now"), lambda m: "马上就能开始"),
    (re.compile(r"finished successfully"), lambda m: "已成功完成"),
    (re.compile(r"cancelled by (\S+)"), lambda m: f"被 {m[1]} 取消"),
    (re.compile(r"by (\S+)"), lambda m: f"操作人 {m[1]}"),
    (re.compile(r"on (\S+) GPUs ([\d,]+) since (.+)"), lambda m: f"在 {m[1]} 的 {m[2]} 号卡上，自 {m[3]} 起"),
    (re.compile(r"on (\S+) since (.+)"), lambda m: f"在 {m[1]} 上，自 {m[2]} 起"),
    (
        re.compile(r"stopped: its output passed the log size limit \((.+)\)"),
        lambda m: f"输出超过日志大小上限被停止（{_how_it_ended(m[1])}）",
    ),
    (
        re.compile(r"stopped at its time limit \((.+)\)"),
        lambda m: f"超过时间限制被停止（{_how_it_ended(m[1])}）",
    ),
    (re.compile(r"out of memory \((.+)\)"), lambda m: f"显存不足（{_how_it_ended(m[1])}）"),
    (re.compile(r"cancelled \((.+)\)"), lambda m: f"已取消（{_how_it_ended(m[1])}）"),
    (
        re.compile(rf"(?:exit code -?\d+|killed by \S+)(?: \((?:{'|'.join(map(re.escape, _ENDED_ZH))})\))?"),
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


# spec fields as a Chinese reply names them (the spec's validation messages name the field)
_FIELD_ZH = {
    "gpus": "卡数",
    "gpu_memory_gb": "每张卡的显存（GB）",
    "time_limit_minutes": "时间限制（分钟）",
    "estimated_minutes": "预计时长（分钟）",
    "retries": "重试次数",
    "priority": "优先级",
    "not_before": "最早开始时间",
    "deadline": "截止时间",
    "offpeak": "只在谷时运行",
    "max_running": "最多同时运行数",
    "depends_on": "依赖的任务",
    "depends_on_any": "等其结束的任务",
    "node": "节点",
    "gpu_model": "GPU 型号",
    "conda_env": "conda 环境",
    "docker_image": "docker 镜像",
}


PRIORITY_ZH = {"low": "低", "normal": "普通", "high": "高", "urgent": "紧急"}  # a task's priority class


def _field_zh(name: str) -> str:
    return _FIELD_ZH.get(name, name)


def _largest_zh(m: re.Match[str]) -> str:
    """`the largest node has 4 GPUs` / `node a has 2 A100 GPUs` in Chinese."""
    where = f"节点 {m[2]} " if m[2] else "最大的节点"
    model = f" {m[4].strip()} " if m[4] else ""
    return f"{where}只有 {m[3]} 张{model}卡"


_BOUND_ZH = {
    "greater than or equal to": "不能小于",
    "greater than": "必须大于",
    "less than or equal to": "不能大于",
    "less than": "必须小于",
}

# Why a spec is refused (`scheduler/spec.py`, `submission.py`, `service.check_dependencies`) or why a task
# failed to launch (`executor/launch.py`): the messages a person gets back from a submit most often.
_SPEC_RULES: list[Rule] = [
    (
        re.compile(
            r"gpus must be between 0 and (\d+) on this cluster "
            r"\((?:the largest node|node (\S+)) has (\d+)( \S+)? GPUs\)"
        ),
        lambda m: f"这个集群上卡数必须在 0 到 {m[1]} 之间（{_largest_zh(m)}）",
    ),
    (re.compile(r"you asked for (\d+)"), lambda m: f"你要了 {m[1]} 张"),
    (
        re.compile(r"no GPU (?:on this cluster|on node (\S+)) has ([\d.]+) GB \(the largest has (\d+) GB\)"),
        lambda m: (
            f"{f'节点 {m[1]} 上' if m[1] else '这个集群'}没有一张卡有 {m[2]} GB 显存（最大的 {m[3]} GB）"
        ),
    ),
    (re.compile(r"ask for fewer GPUs or less memory"), lambda m: "请少要几张卡或少要些显存"),
    (
        re.compile(r"there is no node named (.+) on this cluster \(nodes: (.*)\)"),
        lambda m: f"这个集群没有叫 {m[1]} 的节点（现有节点：{m[2]}）",
    ),
    (re.compile(r"there is no node named (.+)"), lambda m: f"这个集群没有叫 {m[1]} 的节点"),
    (
        re.compile(
            r"no GPU model matches (.+) \((?:GPU models here|the GPUs here are|node (\S+) has):? (.*)\)"
        ),
        lambda m: f"没有型号包含 {m[1]} 的卡（{f'节点 {m[2]} 上' if m[2] else '这里'}的型号：{m[3]}）",
    ),
    (
        re.compile(r"(depends_on|depends_on_any) names task (\d+), which does not exist"),
        lambda m: f"{_field_zh(m[1])} {m[2]} 不存在（或不属于你的团队）",
    ),
    (
        re.compile(
            r"depends_on names task (\d+), which (failed|was cancelled): this task could never start "
            r"\(run \d+ again and depend on the new one, leave it out, or wait for it to end however it ends "
            r"with depends_on_any\)"
        ),
        lambda m: (
            f"依赖的任务 {m[1]} 已经{'失败' if m[2] == 'failed' else '被取消'}：这个任务永远不会开始"
            f"（可以重跑 {m[1]} 并依赖新任务、去掉这个依赖，或用 depends_on_any 等它结束，不论成败）"
        ),
    ),
    (
        re.compile(r"(depends_on|depends_on_any): task (\d+) already waits for task (\d+)(?: \((.+)\))?"),
        lambda m: (
            f"{_field_zh(m[1])}：任务 {m[2]} 已经在等任务 {m[3]}"
            + (f"（{m[4].replace('task ', '任务 ')}）" if m[4] else "")
        ),
    ),
    (
        re.compile(r"if (\d+) waited for it too, neither could ever start"),
        lambda m: f"如果 {m[1]} 也等它，两个都永远不会开始",
    ),
    (
        re.compile(r"(depends_on|depends_on_any): task (\d+) cannot wait for itself"),
        lambda m: f"{_field_zh(m[1])}：任务 {m[2]} 不能等它自己",
    ),
    (
        re.compile(r"task (\d+) does not wait for task ([\d, ]+): it waits for (no task|.+)"),
        lambda m: (
            f"任务 {m[1]} 并没有在等任务 {m[2]}：它"
            + ("没有在等任何任务" if m[3] == "no task" else f"在等{m[3].replace('task ', '任务 ')}")
        ),
    ),
    (re.compile(r"no user '(.+)' in team (.+)"), lambda m: f"团队 {m[2]} 里没有用户 {m[1]}"),
    (
        re.compile(r"(task|sweep) (\d+) already has (\w+): (.+)"),
        lambda m: (
            f"{'任务' if m[1] == 'task' else '扫参'} {m[2]} 的{_field_zh(m[3])}本来就是 "
            f"{PRIORITY_ZH.get(m[4], m[4]) if m[3] == 'priority' else m[4]}"
        ),
    ),
    (
        re.compile(r"(conda_env|docker_image) (.+) was requested but (\S+) is not installed on this node"),
        lambda m: f"要求了 {_field_zh(m[1])} {m[2]}，但这个节点没有安装 {m[3]}",
    ),
    (
        re.compile(r"docker_image (.+) is not allowed on this cluster"),
        lambda m: f"这个集群不允许使用 docker 镜像 {m[1]}",
    ),
    (re.compile(r"allowed: (.+)"), lambda m: f"允许的：{m[1]}"),
    (
        re.compile(r"deadline (.+) is in the past"),
        lambda m: f"截止时间 {m[1]} 已经过去了",
    ),
    (re.compile(r"give a later time or leave it out"), lambda m: "请给一个更晚的时间，或者不设截止时间"),
    (re.compile(r"deadline must be after not_before"), lambda m: "截止时间必须晚于最早开始时间"),
    (
        re.compile(r"choose conda_env or docker_image, not both"),
        lambda m: "conda 环境和 docker 镜像只能选一个",
    ),
    (
        re.compile(r"(gpu_memory_gb|gpu_model) needs gpus of at least 1 \(gpus is 0: a CPU-only task\)"),
        lambda m: f"指定{_field_zh(m[1])}需要至少 1 张卡（卡数为 0 是纯 CPU 任务）",
    ),
    (
        re.compile(r"(\w+) must be a number of (?:minutes|GB|seconds|units) \(got (.+)\)"),
        lambda m: f"{_field_zh(m[1])}必须是一个有限的数字（收到的是 {m[2]}）",
    ),
    (
        re.compile(
            r"(\w+): Input should be (greater than or equal to|greater than|less than or equal to|less than)"
            r" (-?[\d.]+)(?: \(got (.+)\))?"
        ),
        lambda m: f"{_field_zh(m[1])}{_BOUND_ZH[m[2]]} {m[3]}" + (f"（收到的是 {m[4]}）" if m[4] else ""),
    ),
]
_RULES += _SPEC_RULES


def _part(text: str) -> str:
    for pattern, words in _RULES:
        match = pattern.fullmatch(text.strip())
        if match is not None:
            return words(match)
    return text


def reason_zh(reason: str) -> str:
    """The Chinese of a scheduler reason, part by part (`; `-separated); unknown parts stay as they are."""
    return _days_zh("；".join(_part(part) for part in _parts(reason)))


_DAY_WORDS = (
    (re.compile(r"\btomorrow (?=\d{1,2}:\d\d)"), "明天 "),
    (re.compile(r"\byesterday (?=\d{1,2}:\d\d)"), "昨天 "),
    (re.compile(r"\ba date out of range\b"), "一个超出范围的日期"),
)


def _days_zh(text: str) -> str:
    """The day words `reasons.local_time` puts before an hour ("tomorrow 07:00"), in Chinese."""
    for pattern, words in _DAY_WORDS:
        text = pattern.sub(words, text)
    return text


def _parts(reason: str) -> list[str]:
    """`reason` split at each `; ` that is not inside parentheses."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(reason):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and reason.startswith("; ", i):
            parts.append(reason[start:i])
            start = i + 2
    return [*parts, reason[start:]]
