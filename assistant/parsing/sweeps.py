"""What a request says about a sweep or a tag's runs: which sweep ("sweep 4", "扫参4", "第4个扫参"), which
metric to compare them by ("by val_loss", "best loss", "按 acc", "acc 最高") and which way is better, how
many of its tasks may run at once ("2 at a time", "一次最多跑2个"; "no limit", "不限制同时运行数量"), and the
sweep a command's brace lists make ("python train.py --lr {1e-3,1e-4}")."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from assistant.parsing.history import TAG, plain_words
from assistant.parsing.numbers import NUMBER, to_int
from scheduler.sweeps import typed_values, value_range

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
_NOT_METRICS |= {"in", "on", "for", "at", "with", "from", "was", "is", "were", "are", "setting", "settings"}


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


# "哪个lr最好", "which lr is best": the parameter asked for, not the metric that ranks the runs
_CHOSEN_BEFORE = re.compile(r"(?:哪个|哪组|哪种|哪一个|\bwhich)\s*$", re.I)
_BEST_AFTER = re.compile(r"\s*(?:最好|最优|(?:is|was)\s+(?:the\s+)?best)", re.I)


def _chosen(text: str, start: int, end: int) -> bool:
    """True when the word at `start`-`end` is the parameter asked for, not a metric: "哪个lr最好", "which lr
    is best" (but "哪组 acc 最高" ranks by acc)."""
    return bool(_CHOSEN_BEFORE.search(text[:start]) and _BEST_AFTER.match(text, end))


# a metric said in two words ("best val loss"): the split a metrics.json names with "_"
_SPLIT = re.compile(r"(?:val|valid|validation|train|training|test|eval|dev)$", re.I)
_SECOND = re.compile(r"\s+(loss|acc|accuracy|error|err|f1|auc|score|bleu|ppl|perplexity|map)\b", re.I)


def _whole_metric(name: str, after: str) -> str:
    """`val_loss` for "val" followed by " loss" ("best val loss"); else `name` as it is."""
    second = _SECOND.match(after) if _SPLIT.fullmatch(name) else None
    return f"{name}_{second[1]}" if second else name


def metric_args(text: str) -> dict[str, Any]:
    """`metric` and `maximize` of compare_results as the request gives them ({} for neither): "by
    val_loss" → val_loss; "highest acc" → acc, larger is better; "lowest", "最低" → smaller is better."""
    args: dict[str, Any] = {}
    names = (
        _whole_metric(match.group("m").rstrip(".-/"), text[match.end() :])
        for pattern in METRICS
        for match in pattern.finditer(text)
        if not _chosen(text, match.start("m"), match.end("m"))
    )
    metric = next((name for name in names if name and name.lower() not in _NOT_METRICS), None)
    if metric is not None:
        args["metric"] = metric
    larger, smaller = bool(MAXIMIZE.search(text)), bool(MINIMIZE.search(text))
    if larger != smaller:
        args["maximize"] = larger
    return args


# how many of a sweep's tasks run at once: "2 at a time", "at most four at once", "一次最多跑2个",
# "同时跑4个", "最多同时运行3个", "并发数改成2"
AT_A_TIME = re.compile(
    rf"(?:\bat\s+most\s+)?(?P<n>{NUMBER})\s+(?:(?:of\s+(?:it|them)|tasks?|jobs?|runs?)\s+)?"
    rf"at\s+(?:a\s+time|once)\b"
    rf"|(?:一次|同时|每次)\s*(?:最多|至多)?\s*(?:只)?\s*(?:跑|运行|执行|开)?\s*(?P<z>{NUMBER})\s*个"
    rf"|(?:最多|至多)\s*(?:同时|一次)\s*(?:跑|运行|执行)?\s*(?P<y>{NUMBER})\s*个"
    rf"|(?:并发数?|同时运行的?(?:数量|个数|数))\s*(?:改成|改为|设成|设为|调到|调成|=|为|是|:|：)?\s*(?P<x>{NUMBER})"
    rf"(?!\s*(?:张|卡|GB|gb|小时|分钟|天|[.\d]))",
    _I,
)
_LIMIT_KIND = r"(?:(?:running|concurrency|parallel(?:ism)?|at[- ]once|max[_ ]?running)\s+)?"
# no limit on how many run at once: "no limit", "remove the limit", "all at once", "不限制同时运行数量",
# "取消并发限制" (never a time limit, a quota or a budget: those words name something else)
NO_RUNNING_LIMIT = re.compile(
    rf"\b(?:remove|lift|drop|clear|delete|disable|turn\s+off|get\s+rid\s+of|take\s+off)\s+"
    rf"(?:the\s+|its\s+|any\s+|their\s+)?{_LIMIT_KIND}(?:limit|cap|throttle)s?\b"
    rf"|\b(?:no|without\s+(?:a|any))\s+{_LIMIT_KIND}(?:limit|cap|throttle)s?\b"
    r"(?:\s+on\s+how\s+many\s+(?:of\s+(?:it|them)\s+)?(?:run|go)\s+at\s+(?:once|a\s+time))?"
    r"|\bunlimited\b|\bunthrottled?\b"
    r"|\ball\b(?:\s+of)?(?:\s+(?:it|them|its\s+tasks|the\s+tasks))?\s+(?:(?:run|go|start)\s+)?at\s+once\b"
    r"|\bmax[_ ]?running\s*(?:=|:|to)?\s*(?:none|null)\b|\bstop\s+(?:limiting|throttling)\b"
    r"|不(?:再)?限制?\s*(?:同时(?:运行|跑)?的?|并发的?|并行的?)?(?:数量|个数|数)?"
    r"(?=\s*(?:同时|并发|并行|数量|个数|$|[，。,.!！]))"
    r"|(?:同时(?:运行|跑)的?|并发的?|并行的?)(?:数量|个数|数)?\s*(?:不限制?|不设上限|没有上限|无限制)"
    r"|(?:取消|去掉|去除|解除|删掉|移除|不要)\s*(?:它?的)?\s*(?:同时(?:运行|跑)的?|并发|并行)?(?:数量|个数|数)?的?"
    r"(?:限制|上限)"
    r"|(?:同时(?:运行|跑)的?|并发|并行)(?:数量|个数|数)?的?(?:限制|上限)\s*(?:去掉|取消|解除|删掉|移除|不要了?)"
    r"|全部同时(?:跑|运行)|都同时(?:跑|运行)",
    _I,
)
# where "limit" may name a quota, a budget or a time: not a sweep's limit on how many run at once
_OTHER_LIMITS = re.compile(
    r"\b(?:quota|budget|time|gpu[\s-]*hours?)\b|配额|额度|预算|时间|时长|机时|卡时", _I
)


@dataclass(frozen=True)
class RunningLimit:
    """What a request says of how many of a sweep's tasks may run at once: `max_running` (None: no limit),
    and the request's text with those words blanked out (the rest may ask other changes)."""

    max_running: int | None
    rest: str

    def args(self) -> dict[str, Any]:
        """change_sweep's arguments for it: `max_running`, or `lift_max_running` for no limit."""
        return {"lift_max_running": True} if self.max_running is None else {"max_running": self.max_running}


def running_limit_of(text: str) -> RunningLimit | None:
    """How many of a sweep's tasks the request lets run at once ("two at a time" → 2, "让扫参3同时跑4个" →
    4; "no limit", "remove the limit", "不限制同时运行数量" → no limit), or None when it says nothing of it
    (or names a limit of something else: a time limit, a quota). The sweep's own number is never the count
    ("let all of sweep 3 run at once")."""
    unnamed = SWEEP_REF.sub(lambda ref: " " * len(ref[0]), text)
    lifted = NO_RUNNING_LIMIT.search(unnamed)
    if lifted is not None and not _OTHER_LIMITS.search(unnamed):
        return RunningLimit(None, _blank(text, lifted))
    return at_a_time_of(text, unnamed)


def at_a_time_of(text: str, unnamed: str | None = None) -> RunningLimit | None:
    """How many at once `text` says in numbers ("2 at a time", "同时最多跑2个" → 2), with those words blanked;
    None when it says no such number (`unnamed`: the text with its sweep's own number blanked)."""
    for match in AT_A_TIME.finditer(text if unnamed is None else unnamed):
        number = to_int(next(value for value in match.groupdict().values() if value))
        if number is not None and number >= 1:
            return RunningLimit(number, _blank(text, match))
    return None


def without_running_limit(text: str) -> str:
    """`text` with its words about no limit on how many of a sweep run at once blanked out ("remove the
    limit on sweep 3" asks for no quota or privilege), unless they may name a quota, budget or time limit."""
    limit = running_limit_of(text)
    return limit.rest if limit is not None and limit.max_running is None else text


# a list of values in braces in a command, a shell word of its own or after `=` ("--lr {1e-3,1e-4}",
# "--bs={32,64}"): one parameter of a grid (never `${HOME}`, a `{lr}` placeholder, nor braces in quotes)
_VALUE = r"[^{}\s,'\"`$;|&<>()]+"
# "{1e-3,1e-4}", or a shell's sequence "{1..5}", "{0..100..10}" (every value from, to, by a step)
BRACE_LIST = re.compile(
    rf"(?:(?<=\s)|(?<==))\{{(?:(?P<values>{_VALUE}(?:\s*,\s*{_VALUE})+)"
    r"|(?P<first>-?\d{1,9})\.\.(?P<last>-?\d{1,9})(?:\.\.(?P<step>-?\d{1,9}))?)\}(?=\s|$)"
)
_QUOTED = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"")
_PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


@dataclass(frozen=True)
class BraceGrid:
    """A command whose brace lists make a sweep: the command with `{name}` in their place, and the grid."""

    command: str
    grid: dict[str, list[Any]]


def brace_grid(command: str) -> BraceGrid | None:
    """The sweep a command's brace lists ask for ("python train.py --lr {1e-3,1e-4} --bs {32,64}" → every
    combination of lr and bs), each named by its flag (`--batch-size` → batch_size; else p1, p2, ...), its
    values as written (numbers when each reads back the same); None when the command has no brace list."""
    masked = _QUOTED.sub(lambda quoted: "'" * len(quoted[0]), command)
    found = list(BRACE_LIST.finditer(masked))
    if not found:
        return None
    grid: dict[str, list[Any]] = {}
    for index, match in enumerate(found, start=1):
        name = _param_name(masked[: match.start()], index)
        values = (
            typed_values([v.strip() for v in match["values"].split(",")])
            if match["values"]
            else value_range(int(match["first"]), int(match["last"]), int(match["step"] or 1))
        )
        grid[f"{name}_{index}" if name in grid else name] = values
    for match, name in zip(reversed(found), reversed(list(grid)), strict=True):
        command = command[: match.start()] + "{" + name + "}" + command[match.end() :]
    return BraceGrid(command, grid)


def _param_name(before: str, index: int) -> str:
    """A brace list's parameter name from the flag or `key=` before it ("--batch-size " → batch_size)."""
    words = before.split()
    if before.endswith("="):  # "--lr=" → "--lr", "lr=" → "lr"
        word = words[-1][:-1]
    else:
        word = words[-1] if words and words[-1].startswith("-") else ""
    name = re.sub(r"\W", "_", word.lstrip("-")).strip("_")
    return name if _PARAM_NAME.fullmatch(name) else f"p{index}"


def _blank(text: str, match: re.Match[str]) -> str:
    return text[: match.start()] + " " * (match.end() - match.start()) + text[match.end() :]


# a `{name}` placeholder in a command (never `${HOME}`): a sweep parameter the request must give values for
PLACEHOLDER = re.compile(r"(?<![$\w{])\{(?P<name>[A-Za-z_][A-Za-z0-9_]{0,63})\}(?!\})")
# words that ask for several runs of one command ("try lr 0.1 and 0.01", "with seeds 1,2,3", "网格搜索")
SWEEP_INTENT = re.compile(
    r"\b(?:try(?:ing)?|sweep(?:ing)?|grid[\s-]*search|for\s+(?:each|every))\b|\bwith\s+(?:seeds|values)\b"
    r"|\b(?:for|with)\s+[A-Za-z_]\w*\s+in\b|\b(?:various|different|several|multiple)\s+(?:values|seeds|lrs?"
    r"|learning\s+rates|batch\s+sizes)\b|试一下|试试|网格搜索|分别(?:用|跑)|扫(?:一下|一遍|参)?(?=\s*[\w\u4e00-\u9fff])",
    _I,
)
_WORD_VALUE = r"[-+]?[A-Za-z0-9_.+\-]*\d[A-Za-z0-9_.+\-]*"  # values with a digit: "0.1", "1e-3", "32", "gpt2"
# between two values: "0.1, 0.01 and 0.001", "0.1 和 0.01"、"0.1、0.01"
_BETWEEN_VALUES = r"\s*(?:,|，|、|\s|\band\b|\bor\b|和|或|跟|与|及)\s*"
_MAX_RANGE = 1000


@dataclass(frozen=True)
class WordedValues:
    """The values a request gives one sweep parameter in words, and where it says them (start, end)."""

    values: list[Any]
    span: tuple[int, int]


def worded_values(name: str, text: str) -> WordedValues | None:
    """The values a request gives parameter `name` in words: "for lr in 1e-3 1e-4", "lr 0.1, 0.01 and
    0.001", "lr=[0.1, 0.01]", "lr 取 0.1 和 0.01", "seeds 1 to 5", "seed 1 到 5" (each whole number between,
    both ends included); values have a digit. None when it gives fewer than two."""
    key = re.escape(name) + r"(?:e?s)?"
    listed = rf"(?P<v>(?:{_WORD_VALUE})(?:{_BETWEEN_VALUES}(?:{_WORD_VALUE}))+)"
    span = re.search(
        rf"\b{key}\s*(?:from\s+|取|从)?\s*(?P<a>\d+)\s*(?:to|through|-|\.\.|到|至)\s*(?P<b>\d+)\b", text, _I
    )
    if span and 0 < int(span["b"]) - int(span["a"]) < _MAX_RANGE:
        return WordedValues(list(range(int(span["a"]), int(span["b"]) + 1)), span.span())
    for pattern in (
        rf"\bfor\s+{key}\s+in\s+\[?{listed}\]?",
        rf"\b{key}\s*(?:=|:|\bin\b|\bof\b|取|用|为|是|设为|设成)?\s*\[?{listed}\]?",
    ):
        found = re.search(pattern, text, _I)
        if found:
            values = [v for v in re.split(_BETWEEN_VALUES, found["v"]) if v]
            if len(values) >= 2:
                return WordedValues(typed_values(values), found.span())
    return None
