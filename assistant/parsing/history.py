"""History searches: "what did I run yesterday?", "my tasks since monday", "上周的 train.py", "tagged exp7".

A span of past time is read from the words people use (English and Chinese) and resolved against `now`
in the cluster's zone: a day is from its midnight to its last microsecond (the API includes both ends), a
week is Monday to Sunday, "last 3 days" runs up to now. `resolve_since` / `resolve_until` read the
`list_tasks` tool's own arguments the same way, and fall back to `scheduler.timeparse.parse_past` (ISO
8601, `9am`, `-2d`, `3h ago`, as `nightshift ls --since` reads them). `read_search` reads a whole request:
its span of time, the task name (a script's runs, sweeps included, are `train.py*`), a tag and a node.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo

from assistant.parsing.fields import _QUOTE, _VALUE, TAG
from assistant.parsing.numbers import NUMBER, to_int
from assistant.parsing.times import MONTH_NAME, read_date, read_times
from scheduler.errors import SpecError
from scheduler.task_names import default_name
from scheduler.timeparse import parse_past

_I = re.I
_WD = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_ZH_WD = "[一二三四五六日天]"
_ZH_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_ZH_DAY_NUMBER = r"(?:\d{1,2}|[一二三四五六七八九十]{1,3})"
# a day: "yesterday", "monday", "last friday", "2026-03-01", "March 1"; "昨天", "周一", "上周五", "3月1日"
_DAY_EN = (
    rf"(?:the\s+)?day\s+before\s+yesterday|yesterday|today|(?:last\s+)?{_WD}\b"
    r"|\d{4}[-/]\d{1,2}[-/]\d{1,2}(?![\d:T])"
    rf"|{MONTH_NAME}\s*\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+\d{{4}}\b)?"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{MONTH_NAME}(?:,?\s+\d{{4}}\b)?"
)
_DAY_ZH = (
    rf"前天|昨天|今天|(?:上|这|本)?个?(?:周|星期|礼拜){_ZH_WD}"
    rf"|(?:\d{{4}}\s*年\s*)?{_ZH_DAY_NUMBER}\s*月\s*{_ZH_DAY_NUMBER}\s*[日号]?"
)
_CLOCK_EN = r"\d{1,2}(?::\d{2})?\s*[ap]\.?m\.?(?![a-z])|\d{1,2}:\d{2}(?!\d)"
PERIOD = re.compile(
    # from a moment on: "since monday", "since 9am", "周一以来", "从昨天开始"
    rf"\b(?:since|after)\s+(?P<since>{_DAY_EN}|{_CLOCK_EN})"
    rf"|(?:自从?|从)?\s*(?P<zsince>{_DAY_ZH})\s*(?:以来|起|开始|之后|以后)"
    # a rolling span up to now: "last 3 days", "past 24 hours", "the past week", "最近三天", "过去一周"
    rf"|\b(?:in\s+the\s+)?(?:last|past|previous)\s+(?P<n>{NUMBER})\s+(?P<unit>hours?|days?|weeks?|months?)\b"
    r"|\b(?:the\s+)?past\s+(?P<unit1>day|week|month)\b"
    rf"|(?:最近|过去|近)\s*(?P<zn>{NUMBER})\s*个?\s*(?P<zunit>小时|钟头|天|日|周|星期|礼拜|月)"
    # a calendar week or month: "this week", "last month", "本周", "上个月"
    r"|\b(?P<this>this|last|previous)\s+(?P<what>week|month)\b"
    rf"|(?P<zthis>本|这个?|上个?)(?P<zwhat>周|星期|礼拜|月)(?!{_ZH_WD})"
    # one day: "yesterday", "on friday", "on March 1", "昨天", "上周五", "3月1日"
    rf"|\b(?:on\s+)?(?P<day>{_DAY_EN})"
    rf"|(?P<zday>{_DAY_ZH})",
    _I,
)
_UNIT = {"hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(days=7)}
_ZH_UNIT = {"小时": "hour", "钟头": "hour", "天": "day", "日": "day", "周": "week", "星期": "week"}
_ZH_UNIT |= {"礼拜": "week", "月": "month"}


@dataclass(frozen=True)
class Period:
    """A span of past time, both ends included: from `start` to `end` (None: up to now); `span` is where
    the text named it."""

    start: datetime
    end: datetime | None
    span: tuple[int, int] = (0, 0)


def day_start(day: date, zone: tzinfo | None) -> datetime:
    """The first moment of `day` in `zone`."""
    return datetime.combine(day, time(0), tzinfo=zone)


def day_end(day: date, zone: tzinfo | None) -> datetime:
    """The last moment of `day` in `zone` (its last microsecond: the API includes the end)."""
    return datetime.combine(day, time.max, tzinfo=zone)


def _zone(now: datetime) -> tzinfo:
    """The zone of an aware `now` (the cluster's)."""
    zone = now.tzinfo
    if zone is None:
        raise ValueError("now must be aware (in the cluster's zone)")
    return zone


def _whole_days(first: date, last: date | None, zone: tzinfo | None) -> tuple[datetime, datetime | None]:
    return day_start(first, zone), day_end(last, zone) if last is not None else None


def _past_date(text: str, now: datetime) -> date | None:
    """The calendar date `text` names, on or before today: "March 5" without a year is last year's once
    this year's is still ahead."""
    found = read_date(text, now)
    if found is None:
        return None
    day = found.day
    if day > now.date() and not re.search(r"\d{4}", text):
        try:
            return day.replace(year=day.year - 1)
        except ValueError:  # February 29
            return None
    return day


def _zh_weekday(text: str, today: date) -> date:
    """ "周一": the latest Monday, today included; "上周一": last week's; "这周一", "本周一": this week's."""
    weekday = _ZH_WEEKDAY[text[-1]]
    monday = today - timedelta(days=today.weekday())
    if text.startswith("上"):
        return monday - timedelta(days=7) + timedelta(days=weekday)
    if text.startswith(("这", "本")):
        return monday + timedelta(days=weekday)
    return today - timedelta(days=(today.weekday() - weekday) % 7)


def _day(text: str, now: datetime) -> date | None:
    """The date a day expression (`_DAY_EN`, `_DAY_ZH`) names, on or before today."""
    key = " ".join(text.lower().split()).removeprefix("on ")
    today = now.date()
    offsets = {"today": 0, "今天": 0, "yesterday": 1, "昨天": 1, "前天": 2}
    if key in offsets:
        return today - timedelta(days=offsets[key])
    if key.endswith("day before yesterday"):
        return today - timedelta(days=2)
    if re.fullmatch(rf"(?:last\s+)?{_WD}", key):
        return parse_past(key, now, _zone(now)).date()
    if re.fullmatch(rf"(?:上|这|本)?个?(?:周|星期|礼拜){_ZH_WD}", key):
        return _zh_weekday(key.replace("个", ""), today)
    return _past_date(text, now)


def _calendar(which: str, unit: str, today: date) -> tuple[date, date | None]:
    """This or last calendar week (Monday to Sunday) or month: its first day, and its last (None for this
    one: up to now)."""
    last = which.lower() in {"last", "previous"} or which.startswith("上")
    if unit in {"week", "周", "星期", "礼拜"}:
        monday = today - timedelta(days=today.weekday())
        return (monday - timedelta(days=7), monday - timedelta(days=1)) if last else (monday, None)
    first = today.replace(day=1)
    if not last:
        return first, None
    end = first - timedelta(days=1)
    return end.replace(day=1), end


def _rolling(count: str | None, unit: str, now: datetime) -> datetime | None:
    """`now` less `count` hours, days, weeks or months (30 days)."""
    number = to_int(count) if count else 1
    if not number or number <= 0:
        return None
    step = _UNIT.get(unit.lower().rstrip("s"), timedelta(days=30))
    try:
        return now - step * number
    except OverflowError:
        return None


def _since(text: str, now: datetime) -> datetime | None:
    """The moment "since X" names: a day's midnight, or the last time the clock showed X."""
    day = _day(text, now)
    if day is not None:
        return day_start(day, now.tzinfo)
    clock = re.sub(r"\s+|\.", "", text.lower())
    try:
        return parse_past(clock, now, _zone(now))
    except SpecError:
        return None


def _period_of(match: re.Match[str], now: datetime) -> Period | None:
    """The span one `PERIOD` match names; None when it names no real time ("February 30")."""
    group, zone = match.group, now.tzinfo
    start: datetime | None
    end: datetime | None = None
    if group("since") or group("zsince"):
        start = _since(group("since") or group("zsince"), now)
    elif group("n") or group("unit1"):
        start = _rolling(group("n"), group("unit") or group("unit1"), now)
    elif group("zn"):
        start = _rolling(group("zn"), _ZH_UNIT[group("zunit")], now)
    elif group("this") or group("zthis"):
        first, last = _calendar(group("this") or group("zthis"), group("what") or group("zwhat"), now.date())
        start, end = _whole_days(first, last, zone)
    else:
        day = _day(group("day") or group("zday"), now)
        if day is None:
            return None
        start, end = _whole_days(day, day, zone)
    return Period(start, end, match.span()) if start is not None else None


def read_period(text: str, now: datetime) -> Period | None:
    """The first span of past time in `text`, resolved against `now` (aware, in the cluster's zone)."""
    for match in PERIOD.finditer(text):
        period = _period_of(match, now)
        if period is not None:
            return period
    return None


def whole_period(text: str, now: datetime) -> Period | None:
    """The span of past time `text` is, when it is one and nothing else ("last week", "昨天")."""
    match = PERIOD.fullmatch(" ".join(text.split()))
    return _period_of(match, now) if match else None


def resolve_since(text: str, now: datetime, zone: tzinfo) -> datetime:
    """A `since` argument as an aware datetime: words of a span ("last week": its first moment) or what
    `parse_past` reads (ISO 8601 without an offset is in `zone`); `SpecError` says what is understood."""
    period = whole_period(text, now.astimezone(zone))
    return period.start if period is not None else parse_past(text, now, zone)


def resolve_until(text: str, now: datetime, zone: tzinfo) -> datetime:
    """An `until` argument as an aware datetime: a day or span's last moment ("yesterday": 23:59:59.999999,
    "2026-03-01": that whole day), else what `parse_past` reads."""
    period = whole_period(text, now.astimezone(zone))
    if period is None:
        return parse_past(text, now, zone)
    return period.end if period.end is not None else now


# --- a whole request ------------------------------------------------------------------------------------

NAME = re.compile(
    rf"\b(?:named|called)\s+{_QUOTE}(?P<a>{_VALUE}\*?){_QUOTE}"
    rf"|(?:名为|名叫|名字(?:是|叫)|叫做?)\s*{_QUOTE}(?P<z>{_VALUE}\*?){_QUOTE}",
    _I,
)
_NODE_VALUE = r"[A-Za-z][\w.\-]*"
NODE = re.compile(
    rf"\b(?:on\s+)?node\s+{_QUOTE}(?P<a>{_NODE_VALUE}){_QUOTE}"
    rf"|\b(?:ran|run|running|executed)\s+on\s+(?!node\b)(?P<b>{_NODE_VALUE})"
    rf"|节点\s*{_QUOTE}(?P<z>{_NODE_VALUE}){_QUOTE}"
    rf"|在\s*(?P<z2>{_NODE_VALUE})\s*上(?:跑|运行|执行)",
    _I,
)
# a word after "ran on" that names GPUs, not a node: "ran on A100s", "ran on gpus"
_NOT_A_NODE = re.compile(r"(?:gpus?|cards?|cpus?|the|an?|[AHVLT]\d{2,3}s?)", _I)
_NOT_A_VALUE = {"and", "or", "the", "of", "for", "to", "in", "on", "with", "is", "that", "which", "from"}
_NOT_A_VALUE |= {"since", "last", "this", "yesterday", "today", "please", "were", "are", "was", "my", "our"}
_NOT_A_VALUE |= {"tasks", "jobs", "runs", "task", "job", "run"}
# a script named in the text ("runs of train.py"): its tasks are named after it, a sweep's with its
# parameters after (`train.py lr:0.1`)
SCRIPT = re.compile(r"(?<![\w.\-/])(?:[\w.\-]+/)*(?P<script>[\w.\-]+\.(?:py|sh|ipynb|jl|R))(?![\w\-])")
_FENCED = re.compile(r"`[^`]+`")
# words that ask about tasks already sent, not for a new one
PAST = re.compile(
    r"\bruns?\s+of\b|\bran\b|\bsubmitted\b|\bwhat\s+(?:did|have|has)\s+(?:i|we)\b|\bthat\s+(?:i|we)\s+(?:ran|sent)\b"
    r"|\bwhat\s+(?:did|has)\s+[A-Za-z][\w.-]{0,31}\s+(?:submit|run|send|queue)\b"  # "what did bob submit"
    r"|跑过|跑的|跑了|提交的|提交了|提交过|运行过|运行的|运行了",
    _I,
)
TASK_WORDS = re.compile(r"\b(?:jobs?|tasks?|runs)\b|任务|作业", _I)
# a request for a new task, with no word of the past: "submit 3 tasks tagged exp7" is no search
_ORDER = re.compile(
    r"^\s*(?:please\s+)?(?:run|submit|launch|queue|start|schedule)\b|^\s*(?:请)?(?:跑|提交|运行)", _I
)


@dataclass(frozen=True)
class Search:
    """The filters of a history search (None: not named)."""

    period: Period | None = None
    name: str | None = None
    tag: str | None = None
    node: str | None = None
    user: str | None = None

    def args(self, now: datetime) -> dict[str, str]:
        """`list_tasks` arguments: `since` and `until` as ISO 8601 (an end still ahead of `now` left out)."""
        args: dict[str, str] = {}
        if self.period is not None:
            args["since"] = self.period.start.isoformat()
            if self.period.end is not None and self.period.end < now:
                args["until"] = self.period.end.isoformat()
        for key in ("name", "tag", "node"):
            if getattr(self, key) is not None:
                args[key] = getattr(self, key)
        if self.user is not None:  # a filter of whose tasks, never who asks
            args["submitted_by"] = self.user
        return args

    def without_period(self, text: str) -> str:
        """`text` with its span of time blanked (no number of a date is a task id)."""
        return _blank(text, [self.period.span]) if self.period is not None else text


def _value(pattern: re.Pattern[str], text: str) -> str | None:
    """The first value `pattern` reads from `text` (any named group), unless it is a plain word."""
    for match in pattern.finditer(text):
        value = next((v for v in match.groupdict().values() if v), None)
        if value and value.lower() not in _NOT_A_VALUE:
            return value
    return None


# a teammate's tasks ("bob's tasks", "jobs of bob", "what is bob running", "bob的任务"): the user filter
USER_TASKS = re.compile(
    r"\b(?P<a>[A-Za-z][\w.-]{0,31})'s\s+(?:tasks|jobs|runs|queued|running|failed)\b"
    r"|\b(?:tasks|jobs|runs)\s+(?:of|from|by)\s+(?:user\s+)?(?P<b>[A-Za-z][\w.-]{0,31})\b(?!\s*\.\w)"
    r"|\bwhat\s+(?:is|'s|has)\s+(?P<c>[A-Za-z][\w.-]{0,31})\s+(?:running|queued|submitted|run)\b"
    r"|(?<![A-Za-z0-9_.-])(?P<z>[A-Za-z][\w.-]{0,31})\s*的(?:任务|作业)"
    # "what did bob submit today", "bob今天提交了什么", "bob跑了哪些任务"
    r"|\bwhat\s+(?:did|has)\s+(?P<d>[A-Za-z][\w.-]{0,31})\s+(?:submit|run|send|queue)"
    r"|(?<![A-Za-z0-9_.-])(?P<y>[A-Za-z][A-Za-z0-9_.-]{0,31})\s*(?:今天|昨天|昨晚|这周|本周|上周|最近)?\s*(?:提交|跑|运行)(?:了|过)"
    r"(?:什么|哪些)",
    re.I,
)
_NOT_A_USER = _NOT_A_VALUE | {
    "your", "team", "teams", "everyone", "everybody", "someone", "anyone", "nobody", "it", "this", "that",
    "node", "gpu", "sweep", "tag", "user", "today", "yesterday", "week", "month", "night", "tonight",
    "morning", "friday", "monday", "saturday", "sunday", "tuesday", "wednesday", "thursday", "everything",
    "all", "other", "others", "people", "their", "his", "her", "who", "each", "latest", "newest", "current",
    "what", "where", "which", "how", "when", "why", "here", "there", "else", "i", "we", "you", "they",
}  # fmt: skip
# what a name before 的 may be instead of a person: "标签 exp7 的任务" (a tag), "节点 box-a 的任务" (a node)
_NOT_A_PERSON_BEFORE = ("标签", "节点", "名字", "名为", "叫", "扫参", "tag", "node", "named", "called")


def _user(text: str) -> str | None:
    """The person whose tasks a request asks for ("bob's tasks", "what is bob running"), or None."""
    for match in USER_TASKS.finditer(text):
        value = next(v for v in match.groupdict().values() if v)
        if value.lower() in _NOT_A_USER or re.search(r"\d{3,}|\.(?:py|sh)$", value):
            continue
        if text[: match.start()].rstrip().lower().endswith(_NOT_A_PERSON_BEFORE):
            continue
        return value
    return None


def _node(text: str) -> str | None:
    """The node a request names: "on node box-a", "ran on gpu-box-2", "节点 box-a", "在 box-a 上跑"."""
    for match in NODE.finditer(text):
        value = match.group("a") or match.group("z") or match.group("b") or match.group("z2")
        loose = bool(match.group("b") or match.group("z2"))
        if value.lower() in _NOT_A_VALUE or _NOT_A_NODE.fullmatch(value):
            continue
        if loose and not re.search(r"[\d\-]", value):  # "ran on time": a node name has a digit or dash
            continue
        return value
    return None


def script_name(text: str, command: str | None) -> str | None:
    """The task name a request's script stands for, as a prefix: `train.py*` (its sweeps' tasks too);
    from the command in backticks (`python -m pkg.train`: `pkg.train*`), else from a script's file name."""
    fenced = _FENCED.search(text)
    if fenced and command:
        return default_name(command) + "*"
    script = SCRIPT.search(text)
    return script.group("script") + "*" if script else None


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    for start, end in spans:
        text = text[:start] + " " * (end - start) + text[end:]
    return text


def plain_words(text: str) -> str:
    """`text` with its commands (in backticks) and script names blanked: what it says about them."""
    spans = [m.span() for m in _FENCED.finditer(text)] + [m.span() for m in SCRIPT.finditer(text)]
    return _blank(text, spans)


def read_search(text: str, command: str | None, now: datetime, listing: bool = False) -> Search | None:
    """The history search `text` asks for, or None when it asks for none: a filter (span of time, task
    name or script, tag, node) and words that ask about tasks sent before (`listing`: the caller read a
    request for a list). With a command (`command`), only words of the past make it a search ("runs of
    train.py", "上周的 train.py"), and never a time ahead ("run train.py tonight")."""
    plain = plain_words(text)
    period = read_period(plain, now)
    name = _value(NAME, plain) or script_name(text, command)
    search = Search(period, name, _value(TAG, plain), _node(plain), _user(plain))
    if not (period or search.name or search.tag or search.node or search.user):
        return None
    past = bool(PAST.search(plain) or (period and re.match(r"\s*的", plain[period.span[1] :])))
    if command is not None:
        return search if past and not _ahead(plain, period, now) else None
    if past or (period and listing) or search.user:  # "what is bob running": bob's tasks
        return search
    asks = listing or TASK_WORDS.search(plain)
    return search if asks and not _ORDER.search(plain) else None


def _ahead(plain: str, period: Period | None, now: datetime) -> bool:
    """True when `plain` (its span of past time aside) names a time ahead: a request for a new task."""
    when = read_times(_blank(plain, [period.span] if period else []), now)
    return bool(when.not_before or when.deadline or when.offpeak)
