"""What a request says about a sweep or a tag's runs: which sweep ("sweep 4", "扫参4", "第4个扫参"), which
metric to compare them by ("by val_loss", "best loss", "按 acc", "acc 最高") and which way is better."""

from __future__ import annotations

import re
from typing import Any

from assistant.parsing.history import TAG, plain_words

_I = re.I

# a sweep by its id ("sweep 5", "扫参5", "4号扫参"): its number is no task id
SWEEP_REF = re.compile(
    r"\bsweeps?\s*(?:id\s*)?#?\s*(?P<a>\d+)|扫参\s*#?\s*(?P<b>\d+)|第\s*(?P<c>\d+)\s*(?:个|组)?扫参"
    r"|(?P<d>\d+)\s*号\s*扫参",
    _I,
)
# a sweep named without its number ("my sweep", "扫参")
SWEEP_WORD = re.compile(r"\bsweeps?\b|扫参", _I)
_METRIC = r"`?(?P<m>[A-Za-z_][A-Za-z0-9_./\-]*)`?"
_EXTREME = r"(?:best|highest|lowest|largest|smallest|top|max(?:imum)?|min(?:imum)?)"
# where a request names the metric, most explicit first
METRICS = (
    re.compile(rf"\bby\s+(?:the\s+|its\s+|their\s+)?(?:{_EXTREME}\s+)?{_METRIC}", _I),
    re.compile(rf"按(?:照)?\s*{_METRIC}", _I),
    re.compile(rf"\b{_EXTREME}\s+{_METRIC}", _I),
    re.compile(rf"{_METRIC}\s*(?:最低|最小|最高|最大|最好|最优)", _I),
)
MAXIMIZE = re.compile(r"\b(?:highest|largest|biggest|max(?:imum|imi[sz]e)?)\b|最高|最大", _I)
MINIMIZE = re.compile(r"\b(?:lowest|smallest|min(?:imum|imi[sz]e)?)\b|最低|最小", _I)
# words after "by" or "best" that name no metric
_NOT_METRICS = {"the", "a", "an", "its", "their", "one", "ones", "run", "runs", "task", "tasks", "job"}
_NOT_METRICS |= {"jobs", "result", "results", "sweep", "sweeps", "metric", "metrics", "so", "far", "which"}
_NOT_METRICS |= {"what", "tag", "tagged", "it", "them", "now", "default", "of", "me", "i", "we", "and", "or"}


def sweep_id_of(text: str) -> int | None:
    """The sweep a request names by its number, or None."""
    match = SWEEP_REF.search(text)
    if match is None:
        return None
    return int(next(value for value in match.groupdict().values() if value))


def tag_of(text: str) -> str | None:
    """The tag a request names ("tagged exp7", "标签 exp7"), or None."""
    for match in TAG.finditer(plain_words(text)):
        value = next((v for v in match.groupdict().values() if v), None)
        if value and value.lower() not in _NOT_METRICS:
            return value
    return None


def metric_args(text: str) -> dict[str, Any]:
    """`metric` and `maximize` of compare_results as the request gives them ({} for neither): "by
    val_loss" → val_loss; "highest acc" → acc, larger is better; "lowest", "最低" → smaller is better."""
    args: dict[str, Any] = {}
    names = (match.group("m").rstrip(".-/") for pattern in METRICS for match in pattern.finditer(text))
    metric = next((name for name in names if name and name.lower() not in _NOT_METRICS), None)
    if metric is not None:
        args["metric"] = metric
    larger, smaller = bool(MAXIMIZE.search(text)), bool(MINIMIZE.search(text))
    if larger != smaller:
        args["maximize"] = larger
    return args
