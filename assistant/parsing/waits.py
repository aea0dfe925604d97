"""Requests that change which tasks a queued task waits for, as Slurm's `scontrol update Dependency=`:
"make 12 wait for 13", "start 12 after task 13 finishes", "12 should also wait for 14", "让12号等13号跑完再跑"
(its `depends_on`), "... whatever happens" (`depends_on_any`), and "12 no longer needs to wait for 13",
"不用让12号等13号了" (those parents taken away)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from assistant.parsing.fields import DEPENDS, EITHER_WAY, task_ids

_I = re.I


def _list(name: str) -> str:
    """A list of task ids as group `name`: "13", "task 13", "#13, #14", "13 and 14", "13号和14号"."""
    return (
        rf"(?:(?:the\s+)?(?:tasks?|jobs?)\s*)?(?P<{name}>#?\d+(?:\s*号)?"
        r"(?:(?:\s*,\s*|\s+and\s+|\s*&\s*|\s*(?:和|、|与|及|跟)\s*)(?:(?:task|job)\s+)?#?\d+(?:\s*号)?)*)"
        r"(?!\s*(?:min|h\b|hours?|am|pm|:|gpus?|gb|点|小时|分钟))"
    )


# "wait for 13 (to finish)", "depend on 13 and 14", "等13号", "依赖13号": what the task is to wait for
WAIT_FOR = re.compile(
    rf"\bwait(?:s|ing)?\s+(?:for|on)\s+{_list('a')}|\bdepend(?:s|ing)?\s+on\s+{_list('b')}"
    rf"|(?:等|依赖(?:于)?)\s*(?:任务|作业)?\s*{_list('c')}",
    _I,
)
# "12号在13号之后跑", "12号排在13号后面": after another task, in Chinese
_AFTER_ZH = re.compile(
    r"(?:在|排在)\s*(?:任务|作业)?\s*#?(?P<n>\d+)\s*号\s*(?:任务|作业)?\s*(?:之后|以后|后面?)"
)
# "no longer wait for 13", "not depend on 13", "stop waiting for 13", "不用等13号", "别让12号等13号了"
STOP_WAITING = re.compile(
    r"(?:\b(?:not|no\s+longer|never|stop)|n't)\s+(?:\w+\s+){0,3}?(?:wait(?:s|ing)?\s+(?:for|on)|depend(?:s|ing)?\s+on)\s+"
    + _list("s")
    + r"|\b(?:remove|drop|delete|clear|take\s+away)\s+(?:the\s+|its\s+|\d+'s\s+)?dependenc(?:y|ies)\s+on\s+"
    + _list("t")
    + r"|(?:不用|不必|别|不要|无需|不再|取消)\s*(?:再)?\s*(?:让\s*#?\d+\s*号?\s*)?(?:等|依赖)"
    + r"\s*(?:任务|作业)?\s*"
    + _list("z"),
    _I,
)
# "remove the dependencies of 12", "12 shouldn't wait for anything", "取消12号的依赖": every parent taken away
WAIT_FOR_NOTHING = re.compile(
    r"\b(?:remove|drop|delete|clear|take\s+away)\s+(?:the\s+|its\s+|(?:task\s*)?#?\d+'s\s+)?"
    r"(?:dependenc(?:y|ies)|parents?|waits?)\b(?!\s+on\b)"
    r"|(?:\b(?:not|no\s+longer|stop)|n't)\s+(?:\w+\s+){0,3}?wait(?:s|ing)?\s+(?:for|on)\s+(?:anything|any\s+(?:task|job)s?"
    r"|other\s+(?:tasks|jobs))"
    r"|(?:取消|去掉|删除|移除|清除|不要)\s*(?:任务|作业)?\s*#?\d*\s*号?\s*的?\s*(?:依赖|前置任务)",
    _I,
)
# a word of change: "make", "let", "should", "改成", "让"; "is 12 waiting for 13?" asks, it changes nothing
_ASKS_A_CHANGE = re.compile(
    r"\b(?:make|let|have|set|change|switch|move|start|run|should|must|needs?\s+to|has\s+to|want|put"
    r"|schedule|reschedule|hold|wait|depend|remove|drop|delete|clear|stop|take)\b"
    r"|让|改|应该|要|需要|排在|放在|不用|不必|别|不要|无需|不再|取消|去掉|删除|移除|清除|依赖|等",
    _I,
)
_QUESTION = re.compile(
    r"^\s*(?:is|are|does|do|did|was|were|why|what|which|how|when)\b|\?\s*$|？\s*$|吗\s*[？?]?\s*$|为什么|为啥|是不是",
    _I,
)
# "also wait for 14", "还要等14号": more parents beside those it has
_ALSO = re.compile(r"\b(?:also|too|as\s+well|additionally|in\s+addition)\b|还要|也要|另外|再加", _I)
# a bare hour after "after" ("start 12 after 13"): task 13, or 13:00?
_AFTER_AN_HOUR = re.compile(
    r"\bafter\s+#?(?P<n>[01]?\d|2[0-4])\b(?!\s*(?:[:.]\d|am|pm|h\b|hours?|min))"
    r"|(?<!\d)(?P<z>[01]?\d|2[0-4])\s*(?:之后|以后)",
    _I,
)


@dataclass(frozen=True)
class WaitChange:
    """What a request changes in which tasks `task_id` waits for: `spec_field` ("depends_on" or
    "depends_on_any") set to `parents` (`also`: beside the ones it has), `stop_waiting_for` those taken
    away, or every one (`wait_for_nothing`); `hour_or_task` when "after 13" (`after`) may be an hour or a
    task."""

    task_id: int
    spec_field: str = "depends_on"
    parents: list[int] = field(default_factory=list)
    also: bool = False
    stop_waiting_for: list[int] = field(default_factory=list)
    wait_for_nothing: bool = False
    hour_or_task: bool = False
    after: int | None = None


def _ids(listed: str) -> list[int]:
    return [int(number) for number in re.findall(r"\d+", listed)]


def _listed(match: re.Match[str]) -> list[int]:
    groups = {name: value for name, value in match.groupdict().items() if value}
    return _ids(next(iter(groups.values()), ""))


def read_wait_change(text: str) -> WaitChange | None:
    """The change `text` asks in which tasks one queued task waits for; None when it asks none (a question
    about a wait, "why is 12 waiting for 13?", or a request naming no task that would wait)."""
    if _QUESTION.search(text) or not _ASKS_A_CHANGE.search(text):
        return None
    named = task_ids(text)
    stop = STOP_WAITING.search(text)
    if stop is not None:
        parents = _listed(stop)
        child = _child(named, parents, text, stop.start())
        return None if child is None else WaitChange(child, stop_waiting_for=parents)
    if WAIT_FOR_NOTHING.search(text):
        return WaitChange(named[0], wait_for_nothing=True) if len(set(named)) == 1 else None
    found = _parents(text)
    if found is None:
        return _hour_or_task(text, named)
    parents, start = found
    child = _child(named, parents, text, start)
    if child is None:
        return None
    either = EITHER_WAY.search(text) is not None
    return WaitChange(
        child, "depends_on_any" if either else "depends_on", parents, also=bool(_ALSO.search(text))
    )


def _parents(text: str) -> tuple[list[int], int] | None:
    """The tasks `text` says to wait for, and where it says so; None when it names none."""
    for pattern in (WAIT_FOR, _AFTER_ZH, *DEPENDS):
        match = pattern.search(text)
        if match is not None:
            parents = _listed(match)
            if parents:
                return parents, match.start()
    return None


def _child(named: list[int], parents: list[int], text: str, start: int) -> int | None:
    """The one task that is to wait: named before the parents ("make 12 wait for 13"), not one of them."""
    before = [task_id for task_id in task_ids(text[:start]) if task_id not in parents]
    others = [task_id for task_id in named if task_id not in parents]
    candidates = before or others
    return candidates[0] if len(set(candidates)) == 1 else None


# what follows a bare "after N" that says which it is: an hour ("after 9 p.m.", "after 12 tomorrow") or a
# task ("after 12 succeeds", read as one elsewhere)
_SAID_AFTER = re.compile(
    r"\s*(?:[ap]\.?m\b|tomorrow|today|tonight|this\s+(?:evening|morning|afternoon)|noon|midnight|o'?clock"
    r"|明天|今天|今晚|点|succeeds?|finish(?:es)?|ends?|fails?|completes?|(?:is|are)\s+(?:done|over|finished)"
    r"|跑完|完成|结束|成功)",
    re.I,
)
# a time of day anywhere in the request: its bare "after 11" is an hour ("tonight after 11")
_TIME_OF_DAY = re.compile(
    r"\btonight\b|\b(?:morning|evening|afternoon)\b|今晚|晚上|早上|上午|下午|凌晨|明早|明晚|中午", re.I
)


def _bare_after(text: str) -> re.Match[str] | None:
    """A bare "after N" ("after 12", "12之后") that may be task N or N o'clock; None when there is none, or
    the words say which ("after 12 tomorrow", "after 9 p.m.", "tonight after 11", "after 12 succeeds",
    "after #3", "09:00 之后")."""
    bare = _AFTER_AN_HOUR.search(text)
    if bare is None or _SAID_AFTER.match(text, bare.end()) or _TIME_OF_DAY.search(text):
        return None
    if "#" in bare[0] or text[: bare.start()].endswith(":"):
        return None
    return bare


def after_hour_or_task(text: str) -> int | None:
    """N of a bare "after N" in a new task's request ("run a.py after 12", "12之后跑"), which may be task N
    or N o'clock (the card would silently take the hour); None when there is none (`_bare_after`)."""
    bare = _bare_after(text)
    return None if bare is None else int(bare["n"] or bare["z"])


def _hour_or_task(text: str, named: list[int]) -> WaitChange | None:
    """ "change 12 to start after 13": task 13 or 13:00 (a question back); "start 12 after 13 whatever
    happens": task 13, however it ends; None when no such "after" (`_bare_after`: "tonight after 11" is an
    hour)."""
    bare = _bare_after(text)
    if bare is None:
        return None
    parent = int(bare["n"] or bare["z"])
    child = _child(named, [parent], text, bare.start())
    if child is None:
        return None
    if EITHER_WAY.search(text):
        return WaitChange(child, "depends_on_any", [parent])
    return WaitChange(child, hour_or_task=True, after=parent)


_JUST_THE_TASK = re.compile(
    r"\s*(?:the\s+)?(?:task|job)\s*[.!]?\s*|\s*(?:那个)?(?:任务|作业)\s*[。!！]?\s*", _I
)


def answered_after(request: str, answer: str) -> str:
    """The request with its "after 13" as the answer to "task 13, or 13:00?" says ("after task 13",
    "after 13:00", "13点之后"); "the task" alone means task 13."""
    bare = _AFTER_AN_HOUR.search(request)
    if bare is None:
        return f"{request} {answer}"
    number = bare["n"] or bare["z"]
    if _JUST_THE_TASK.fullmatch(answer):
        answer = f"task {number}" if bare["n"] else f"等{number}号任务跑完"
    said = answer.strip() if bare["z"] else "after " + re.sub(r"^\s*after\s+", "", answer, flags=_I).strip()
    return f"{request[: bare.start()]}{said}{request[bare.end() :]}"
