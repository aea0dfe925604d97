"""Requests that add labels to one task or take them away, queued or running: "tag 12 with exp7", "add the
tags exp7 and ablation to 12", "remove the tag exp7 from 12", "给12号加个标签exp7", "把12号的标签exp7去掉"
(`change_task` with `add_tags` / `remove_tags`; its other tags stay)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from assistant.parsing.fields import _QUOTE, _VALUE

_I = re.I
_ID = r"(?:(?:task|job)\s*)?#?(?P<id>\d+)(?:\s*号)?(?:\s*(?:任务|作业))?"
_SEPARATOR = r"\s*,\s*|\s+and\s+|\s*(?:和|、|与|及)\s*"
_TAGS = rf"(?P<tags>{_QUOTE}{_VALUE}{_QUOTE}(?:(?:{_SEPARATOR}){_QUOTE}{_VALUE}{_QUOTE})*)"
_LABEL = r"(?:tags?|labels?)"
_ZH_LABEL = r"(?:标签|tag)"

ADD = [
    re.compile(rf"\b(?:tag|label)\s+{_ID}\s+(?:with|as)\s+(?:the\s+)?(?:{_LABEL}\s+)?{_TAGS}", _I),
    re.compile(rf"\badd\s+(?:the\s+|a\s+)?{_LABEL}\s+{_TAGS}\s+to\s+{_ID}", _I),
    re.compile(rf"\badd\s+{_TAGS}\s+as\s+(?:a\s+)?{_LABEL}\s+(?:to|on)\s+{_ID}", _I),
    re.compile(rf"{_ID}\s*(?:加|添加|加上|打上|打|增加)\s*(?:个|一个)?\s*{_ZH_LABEL}\s*[:：]?\s*{_TAGS}", _I),
    re.compile(rf"(?:给|为)\s*{_ID}\s*(?:打上|加上|加)\s*{_TAGS}\s*的?\s*{_ZH_LABEL}", _I),
]
REMOVE = [
    re.compile(
        rf"\b(?:remove|drop|delete|take\s+(?:off|away))\s+(?:the\s+)?{_LABEL}\s+{_TAGS}\s+(?:from|of|on)\s+{_ID}",
        _I,
    ),
    re.compile(rf"\buntag\s+{_TAGS}\s+from\s+{_ID}", _I),
    re.compile(rf"{_ID}\s*的?\s*{_ZH_LABEL}\s*{_TAGS}\s*(?:去掉|删掉|删除|移除|拿掉|取消)", _I),
    re.compile(rf"(?:去掉|删掉|删除|移除|拿掉|取消)\s*{_ID}\s*的?\s*{_ZH_LABEL}\s*{_TAGS}", _I),
]


@dataclass(frozen=True)
class TagChange:
    """Labels to add to task `task_id`, or to take away from it."""

    task_id: int
    add: list[str]
    remove: list[str]


def read_tag_change(text: str) -> TagChange | None:
    """The labels `text` asks to add to one task or take away from it; None when it asks no such change."""
    for patterns, adds in ((REMOVE, False), (ADD, True)):
        for pattern in patterns:
            match = pattern.search(text)
            if match is not None:
                tags = _tag_list(match.group("tags"))
                task_id = int(match.group("id"))
                return TagChange(task_id, tags, []) if adds else TagChange(task_id, [], tags)
    return None


def _tag_list(said: str) -> list[str]:
    """ "exp7, 'ablation' and v2" as ["exp7", "ablation", "v2"]."""
    return [part.strip("\"'`“”‘’「」 ") for part in re.split(_SEPARATOR, said, flags=_I) if part.strip()]
