"""A task or a sweep named by being one's latest ("my last job", "the job I just submitted", "my last failed
run", "我最后一个任务", "刚提交的任务"; "cancel my last sweep", "暂停我最近的扫参"): which call finds it
(one's own tasks, newest first, of a status; one's latest sweep), and the request with a stand-in number,
so the rest of it is read as for "task 12" or "sweep 4"."""

from __future__ import annotations

import re
from dataclasses import dataclass

STAND_IN = 0  # no task has it (ids start at 1): the id the latest task's stands in for until it is known

_STATUS_WORDS = {
    "failed": "failed",
    "crashed": "failed",
    "running": "running",
    "queued": "queued",
    "waiting": "queued",
    "pending": "queued",
    "finished": "succeeded",
    "succeeded": "succeeded",
    "successful": "succeeded",
    "cancelled": "cancelled",
    "canceled": "cancelled",
    "失败": "failed",
    "挂掉": "failed",
    "在跑": "running",
    "排队": "queued",
    "成功": "succeeded",
    "取消": "cancelled",
}
_EN_STATUS = r"failed|crashed|running|queued|waiting|pending|finished|succeeded|successful|cancell?ed"
LATEST_TASK = re.compile(
    rf"\b(?:my|the|our)\s+(?:very\s+)?(?:last|latest|most\s+recent|newest|previous)\s+(?:(?P<s>{_EN_STATUS})\s+)?"
    r"(?:jobs?|tasks?|runs?|submissions?|one)\b"
    r"|\bthe\s+(?:jobs?|tasks?|one|run)\s+(?:that\s+)?I\s+(?:just\s+)?(?:submitted|sent|ran|started|queued|made)\b"
    r"|(?:我的?)?(?:最后|最近|最新|上)(?:一个|一次|那个)?(?:提交)?的?(?P<z>失败|挂掉|在跑|排队|成功|取消)?(?:了)?的?(?:任务|作业)"
    r"|(?:我)?(?:刚才|刚刚|刚)(?:提交|交|跑)的(?:那个)?(?:任务|作业)",
    re.I,
)


LATEST_SWEEP = re.compile(
    r"\b(?:my|the|our)\s+(?:very\s+)?(?:last|latest|most\s+recent|newest|previous)\s+sweep\b"
    r"|\bthe\s+sweep\s+(?:that\s+)?I\s+(?:just\s+)?(?:submitted|sent|ran|started|made)\b"
    r"|(?:我的?)?(?:最后|最近|最新|刚才|刚刚|刚)(?:一个|那个|提交的|的)*扫参",
    re.I,
)


@dataclass(frozen=True)
class LatestTask:
    """A request about one's latest task (or sweep: `sweep`): `status` of the list that finds a task (None:
    any), and `text` with the phrase as "task 0" ("0号任务" in Chinese; "sweep 0"; `STAND_IN`)."""

    status: str | None
    text: str
    sweep: bool = False


def latest_task(text: str) -> LatestTask | None:
    """The latest task or sweep `text` names instead of a number ("cancel my last job"), or None when it
    names none."""
    sweep = LATEST_SWEEP.search(text)
    if sweep is not None:
        stand_in = f"扫参{STAND_IN}" if not sweep[0].isascii() else f"sweep {STAND_IN}"
        return LatestTask(None, f"{text[: sweep.start()]}{stand_in}{text[sweep.end() :]}", sweep=True)
    match = LATEST_TASK.search(text)
    if match is None:
        return None
    said = (match["s"] or match["z"] or "").lower()
    stand_in = (
        f"{STAND_IN}号任务"
        if match["z"] is not None or re.match(r"[^\x00-\x7f]", match[0])
        else f"task {STAND_IN}"
    )
    replaced = f"{text[: match.start()]}{stand_in}{text[match.end() :]}"
    return LatestTask(_STATUS_WORDS.get(said), replaced)
