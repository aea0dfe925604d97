"""What a request asks to take away from a task or a sweep, back to its default: "remove the time
limit", "drop task 5's deadline", "no time limit", "取消扫参3的时间限制", "5号的截止时间去掉" (a change, never
a cancel: the task stays, its limit goes)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_I = re.I

# each field a request may take away, by the words that name it (English, then Chinese)
_FIELD_WORDS: dict[str, tuple[str, str]] = {
    "time_limit_minutes": (
        r"time[\s-]*limits?|time[\s-]*outs?|wall[\s-]*time(?:\s+limit)?|run[\s-]*time\s+(?:limit|cap)"
        r"|max(?:imum)?\s+run[\s-]*time",
        r"时间限制|运行时长限制|运行时间限制|时长限制|限时|时限|超时(?:时间|限制)|最长运行时间",
    ),
    "deadline": (r"deadlines?|due\s+(?:time|date)", r"截止时间|截止日期|截止期限|最晚完成时间|期限"),
    "not_before": (
        r"not[\s-]*before(?:\s+time)?|start[\s-]*(?:time|delay)|earliest\s+start(?:\s+time)?|delayed\s+start",
        r"最早开始时间|最早开始|开始时间|延迟开始",
    ),
    "estimated_minutes": (
        r"(?:run[\s-]*time\s+|time\s+|duration\s+)?estimates?|estimated\s+(?:run[\s-]*)?(?:time|duration)",
        r"预计时长|预计时间|预计运行时间|预估时长|预估时间|估计时长|估计时间",
    ),
    "retries": (r"retr(?:y|ies)(?:\s+count)?|automatic\s+retr(?:y|ies)", r"(?:自动)?重试(?:次数)?"),
    "offpeak": (
        r"off[\s-]*peak(?:\s+(?:wait|window|only|requirement|restriction))?",
        r"(?:只在)?谷时(?:限制|等待|运行)?",
    ),
}
# whose field: "task 5's", "#5's", "its", "12 and 13's"; "5号的", "扫参3的", "它的", "12号和13号的"
_EN_IDS = r"#?\s*\d+(?:\s*(?:,|\band\b|&)\s*#?\s*\d+)*"
_OWNER = rf"(?:(?:task|job|sweep)s?\s*{_EN_IDS}'?s|#\d+'?s|{_EN_IDS}'s)"
_DET = rf"(?:(?:the|its|any|their|that|this|my|our|{_OWNER})\s+)*"
_EN_VERB = (
    r"\b(?:remove|drop|clear|lift|delete|cancel|unset|disable|scrap|ditch|turn\s+off|get\s+rid\s+of"
    r"|do\s+away\s+with|take\s+(?:off|away|out))\s+"
)
_EN_NONE = (
    r"\b(?:no(?:\s+more)?|without(?:\s+(?:a|an|any|the|its|their|that|this|my|our))?|with\s+no"
    r"|(?:do|does|did)(?:\s+not|n'?t)\s+(?:need|want)\s+(?:a|an|any|the|its))\s+"
)
_EN_REF = rf"(?:\s+(?:of|on|for)\s+(?:(?:task|job|sweep)s?\s*)?{_EN_IDS})?"
_EN_TO_NONE = r"\s+(?:to|=|:)\s*(?:none|null|nothing|unlimited|no\s+limit)\b"
_ZH_VERB = r"(?:取消|去掉|去除|解除|删掉|删除|移除|清除|拿掉|撤销|不要|不设|不用)"
_ZH_OWNER = (
    r"(?:(?:任务|作业)\s*#?\s*\d+\s*号?|#?\s*\d+\s*号\s*(?:任务|作业)?|扫参\s*#?\s*\d+|\d+\s*号\s*扫参"
    r"|(?:(?:任务|作业)\s*)?#?\s*\d+\s*号?(?:\s*(?:和|、|，|,|及|与|跟)\s*#?\s*\d+\s*号?)+\s*(?:任务|作业)?"
    r"|它|这个任务|该任务)"
)
_ZH_AFTER = (
    r"\s*(?:也|都)?\s*(?:给我)?\s*(?:去掉|取消|去除|解除|删掉|删除|移除|清除|拿掉|不要了?|不用了?|不设了?)"
)
_ZH_TO_NONE = r"\s*(?:改成|改为|设为|设成|调成)\s*(?:无|没有|不限|无限制?)"


def _pattern(english: str, chinese: str, extra: str = "") -> re.Pattern[str]:
    """The ways a request takes one field away: a verb before it ("remove the", "no", "取消…的"), after it
    ("…去掉"), or its value set to none ("time limit of task 5 to none", "时间限制改成无")."""
    return re.compile(
        rf"(?:{_EN_VERB}{_DET}|{_EN_NONE})(?:{english})\b"
        rf"|\btake\s+{_DET}(?:{english})\s+off\b"
        rf"|\b(?:{english}){_EN_REF}{_EN_TO_NONE}"
        rf"|{_ZH_VERB}\s*掉?\s*(?:{_ZH_OWNER}\s*)?的?\s*(?:{chinese})"
        rf"|(?:{chinese})(?:{_ZH_AFTER}|{_ZH_TO_NONE})" + extra,
        _I,
    )


# "不限时", "没有时间限制": no time limit, in words of their own
_EXTRA = {
    "time_limit_minutes": r"|不限时|不限制?(?:运行)?时长|不限制?运行时间|没有时间限制",
    "offpeak": (
        r"|\bstop\s+waiting\s+for\s+(?:the\s+)?off[\s-]*peak(?:\s+window)?|不用等谷时|不等谷时|别等谷时"
    ),
}
CLEARS: dict[str, re.Pattern[str]] = {
    field: _pattern(english, chinese, _EXTRA.get(field, ""))
    for field, (english, chinese) in _FIELD_WORDS.items()
}


@dataclass(frozen=True)
class Cleared:
    """The fields a request takes away (in the order of `CLEARS`), and its text with those words blanked
    (what is left may ask other changes: "remove the deadline of 5 and make it urgent")."""

    fields: list[str]
    rest: str


def cleared_fields(text: str) -> Cleared:
    """The fields `text` asks to put back to their defaults ("drop the time limit of task 5" →
    time_limit_minutes; "取消扫参3的截止时间" → deadline), each phrase blanked out of the text."""
    fields: list[str] = []
    for field, pattern in CLEARS.items():
        for match in pattern.finditer(text):
            text = text[: match.start()] + " " * (match.end() - match.start()) + text[match.end() :]
            if field not in fields:
                fields.append(field)
    return Cleared(fields, text)
