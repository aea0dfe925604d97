"""Times people type, in English and Chinese, resolved against a given `now` (aware, cluster zone).

Rules (also in prompts/tools.md): "tonight", "overnight", "今晚" mean the off-peak window (`offpeak: true`)
unless an explicit clock time is given, which then becomes `not_before`; "off-peak", "谷时", "when power is
cheap" always mean `offpeak: true`; "by 8am", "8点前" mean a `deadline`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta

from assistant.parsing.numbers import DURATION_UNIT, NUMBER, duration_minutes, to_int

_DAY = (
    r"(?:the\s+)?day\s+after\s+tomorrow|today|tonight|tomorrow|yesterday|this|"
    r"今天|明天|后天|今晚|明晚|明早|今早|明日|今日|昨天"
)
_PART = r"morning|afternoon|evening|night|早上|上午|中午|下午|傍晚|晚上|凌晨|夜里|半夜|早晨|清晨"
_PREP = (
    r"not\s+before|no\s+later\s+than|starting\s+at|starting|deadline(?:\s+is)?|after|at|from|around|about|"
    r"by|before|until|till|past|between"
)
_ZH_HOUR = r"\d{1,2}|[零一二两三四五六七八九十]{1,3}"
CLOCK = re.compile(
    rf"(?:(?P<day>{_DAY})\s*)?(?:(?P<part>{_PART})\s*)?(?:(?P<prep>{_PREP})\s+)?(?:(?P<day_b>{_DAY})\s*)?"
    rf"(?:(?P<part_b>{_PART})\s*)?"
    # am/pm ends at an ASCII neighbour only: Chinese runs on after it ("9am-5pm跑"), and `\b` would not end it
    r"(?:(?P<h1>\d{1,2})[:：](?P<m1>\d{2})(?!\d)\s*(?P<ap1>[ap]\.?m(?![A-Za-z0-9_])\.?)?"
    r"|(?P<h2>\d{1,2})\s*(?P<ap2>[ap]\.?m(?![A-Za-z0-9_])\.?)"
    # "高一点", "晚一点" is "a bit higher / later", not one o'clock ("今晚一点", "明早8点" still are)
    r"|(?!(?<=[高低快早多少大小好慢强弱长短])一\s*[点點])(?!(?<=(?<!今)晚)一\s*[点點])"
    rf"(?P<h3>{_ZH_HOUR})\s*[点點时](?!间|长|限)(?P<zm>半|一刻|三刻|\s*\d{{1,2}}\s*分?|[零一二三四五六七八九十]{{1,3}}\s*分)?"
    r"|\b(?P<word>midnight|noon)\b"
    r"|(?(prep)(?P<h4>[01]?\d|2[0-4])\b"  # an hour of the day: "after 44" is a task id (fields.DEPENDS)
    r"(?!\s*(?:gpus?|gb|g\b|gib|cards?|hours?|hrs?|h\b|min|minutes?|%|x\b|days?|times|retries|tasks?|jobs?"
    r"|[.:]\d))"
    # with no preposition, a bare hour only when the part of day follows: "for 8 in the evening"
    r"|(?P<h5>\d{1,2})(?=\s+in\s+the\s+(?:morning|afternoon|evening|night)\b)))"
    # the part of day after the hour: "at 3 in the afternoon (tomorrow)"
    r"(?:\s+in\s+the\s+(?P<part_c>morning|afternoon|evening|night))?"
    rf"(?:\s*(?P<post>(?:{_DAY})(?:\s+(?:morning|afternoon|evening|night))?|以后|之后|后|之前|以前|前|开始|起))?",
    re.I,
)
RELATIVE = re.compile(
    rf"\b(?:in|after)\s+(?P<a>(?:{NUMBER})\s*(?:个半|个)?\s*{DURATION_UNIT}(?![a-z])|half\s+an\s+hour|an\s+hour)"
    rf"(?:\s+from\s+now)?|(?P<b>half\s+an\s+hour|(?:{NUMBER})\s*{DURATION_UNIT}(?![a-z]))\s+(?:from\s+now|later)\b"
    rf"|过\s*(?P<c>(?:{NUMBER})\s*(?:个半|个)?\s*(?:小时|钟头|分钟)|半\s*个?\s*小时)"
    rf"|(?P<d>(?:{NUMBER})\s*(?:个半|个)?\s*(?:小时|钟头|分钟)|半\s*个?\s*小时)\s*(?:以后|之后|后)",
    re.I,
)
_MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
    "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
MONTH_NAME = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b\.?"
)
_ZH_DAY_NUMBER = r"\d{1,2}|[一二三四五六七八九十]{1,3}"
_WEEKDAYS = {
    "monday": 0,
    "tuesday": 1,
    "wednesday": 2,
    "thursday": 3,
    "friday": 4,
    "saturday": 5,
    "sunday": 6,
}
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
WEEKDAY_NAME = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"
# A calendar date: "2026-12-05" (with its time: "2026-12-05T09:00", "2026-12-05 09:00+08:00"), "2026/12/05",
# "December 5", "Dec 5th, 2026", "5 Dec", "2026年12月5日", "12月5号", and "5号" (a day of this month) only
# where a time of day or 之前/之后/跑 follows and no 跑完 comes before: "42号跑完", "跑完31号之后" are tasks.
DATE = re.compile(
    r"(?<![\d.:/-])(?P<iy>\d{4})[-/](?P<im>\d{1,2})[-/](?P<id>\d{1,2})(?![\d.:/])"
    r"(?:(?:T|\s+)(?P<ih>\d{1,2}):(?P<imin>\d{2})(?::\d{2}(?:\.\d+)?)?(?P<tz>Z|[+-]\d{2}:?\d{2})?(?![\d:]))?"
    rf"|\b(?P<mon>{MONTH_NAME})\s*(?P<md>\d{{1,2}})(?:st|nd|rd|th)?(?![:.]\d|\s*(?:[ap]\.?m\b|h\b|hours?|min))"
    r"(?:,?\s+(?P<my>\d{4}))?\b"
    rf"|\b(?P<dm>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mon2>{MONTH_NAME})(?:,?\s+(?P<my2>\d{{4}})\b)?"
    rf"|(?:(?P<zy>\d{{4}})\s*年\s*)?(?P<zm>{_ZH_DAY_NUMBER})\s*月\s*(?P<zd>{_ZH_DAY_NUMBER})\s*[日号]?"
    rf"|(?<![\d月])(?<!跑完)(?<!做完)(?<!完成)(?P<zd2>{_ZH_DAY_NUMBER})\s*[号日](?=\s*(?:早上|上午|中午|下午|傍晚|晚上|凌晨|夜里|早晨|清晨|半夜"
    r"|\d{1,2}\s*[点點时:：]|[零一二两三四五六七八九十]{1,3}\s*[点點时]|之前|以前|之后|以后|前|后|开始|再跑|跑(?!完)))"
    # a day of the week: "friday", "next monday", "周五", "星期六", "下周一", "这周日"
    rf"|\b(?:(?P<wnext>next|this|coming)\s+)?(?P<wd>{WEEKDAY_NAME})"
    r"|(?P<znext>下个?|这个?|本)?\s*(?:周|星期|礼拜)(?P<zwd>[一二三四五六日天])",
    re.I,
)


@dataclass
class _Date:
    """A date read from the text, and its time when the text gave one ("2026-12-05T09:00")."""

    day: date
    at: datetime | None
    span: tuple[int, int]
    weekly: bool = False  # a bare weekday ("friday", "周五"): today's, or next week's once its time passed


def _date_number(text: str | None) -> int | None:
    return to_int(text) if text else None


def _next_date(now: datetime, year: int | None, month: int, day: int) -> date | None:
    """That date; with no year, this year's unless it has passed (then next year's)."""
    try:
        found = date(year or now.year, month, day)
        if year is None and found < now.date():
            found = date(now.year + 1, month, day)
    except ValueError:
        return None
    return found


def _weekday(match: re.Match[str], now: datetime) -> date:
    """The day a weekday names: the next one from today on ("friday", "周五"; today's own counts), the
    one after today ("next friday"), or that day of next week ("下周五") or of this week ("这周五")."""
    if match.group("wd"):
        weekday = _WEEKDAYS[match.group("wd").lower()]
        ahead = (weekday - now.weekday()) % 7
        if ahead == 0 and (match.group("wnext") or "").lower() in {"next", "coming"}:
            ahead = 7
        return now.date() + timedelta(days=ahead)
    weekday = _ZH_WEEKDAYS[match.group("zwd")]
    which = (match.group("znext") or "").strip()
    if which.startswith(("下", "这", "本")):  # a calendar week: Monday to Sunday
        monday = now.date() - timedelta(days=now.weekday())
        return monday + timedelta(days=weekday + (7 if which.startswith("下") else 0))
    return now.date() + timedelta(days=(weekday - now.weekday()) % 7)


def read_dates(text: str, now: datetime) -> list[_Date]:
    """The calendar dates in `text`, in order, resolved against `now` (none that is no real date, like
    2026-02-30)."""
    return [found for match in DATE.finditer(text) if (found := _date_of(match, now)) is not None]


def read_date(text: str, now: datetime) -> _Date | None:
    """The first calendar date in `text`, resolved against `now` (None when there is none)."""
    found = read_dates(text, now)
    return found[0] if found else None


def _date_of(match: re.Match[str], now: datetime) -> _Date | None:
    """The date one `DATE` match names, with its time when it gave one; None for no real date."""
    group = match.group
    if group("wd") or group("zwd"):
        bare = not (group("wnext") or (group("znext") or "").strip())
        return _Date(_weekday(match, now), None, match.span(), weekly=bare)
    if group("iy"):
        day = _next_date(now, int(group("iy")), int(group("im")), int(group("id")))
        if day is None:
            return None
        at = None
        if group("ih") and int(group("ih")) < 24:
            at = datetime.combine(day, time(int(group("ih")), int(group("imin"))), now.tzinfo)
            if group("tz"):
                offset = datetime.fromisoformat(f"2000-01-01T00:00{group('tz').replace('Z', '+00:00')}")
                at = at.replace(tzinfo=offset.tzinfo).astimezone(now.tzinfo)
        return _Date(day, at, match.span())
    if group("mon") or group("mon2"):
        month = _MONTHS[(group("mon") or group("mon2"))[:3].lower()]
        number = _date_number(group("md") or group("dm"))
        year = group("my") or group("my2")
    elif group("zm"):
        month, number, year = _date_number(group("zm")) or 0, _date_number(group("zd")), group("zy")
    else:
        number, year = _date_number(group("zd2")), None
        month = now.month
        if number is not None and number < now.day:  # "5号" past this month's 5th: next month's
            month = now.month % 12 + 1
            year = str(now.year + (1 if now.month == 12 else 0))
    day = _next_date(now, int(year) if year else None, month, number or 0)
    return _Date(day, None, match.span()) if day is not None else None


def blank_dates(text: str, now: datetime) -> str:
    """`text` with its calendar dates blanked (same length), so no number in them is read as anything else."""
    for found in read_dates(text, now):
        start, end = found.span
        text = text[:start] + " " * (end - start) + text[end:]
    return text


# chat spellings, read as the words they stand for
CHAT_SPELLINGS = {"tonite": "tonight", "tmr": "tomorrow", "tmrw": "tomorrow", "tmrow": "tomorrow"}
_CHAT_SPELLING = re.compile(r"\b(?:" + "|".join(CHAT_SPELLINGS) + r")\b", re.I)
ALWAYS_OFFPEAK = re.compile(
    r"off[\s-]?peak|cheap(?:er|est)?\s+(?:power|electricity|energy|hours|rates?|tariff)|when\s+(?:power|electricity|"
    r"energy)\s+is\s+cheap(?:er)?|when\s+(?:(?:the\s+)?gpus?|it|they|compute)\s+(?:is|are|gets?)\s+cheap(?:er|est)?"
    r"|when\s+(?:it'?s|it\s+is)\s+cheap(?:er|est)?|at\s+the\s+cheapest\s+(?:time|hours?)|low[\s-]tariff|谷时|谷电|低谷|谷段|峰谷|电价低|电费便宜|电便宜|便宜的时候",
    re.I,
)
NIGHT = re.compile(
    r"\btonight\b|\bover\s*night\b|\bat\s+night\b|\bduring\s+the\s+night\b|\bin\s+the\s+night\b|\blate\s+night\b"
    r"|\bthis\s+evening\b|今晚|今天晚上|今夜|晚上|夜里|夜间|半夜|通宵",
    re.I,
)
NEXT_NIGHT = re.compile(r"\btomorrow\s+(?:night|evening)\b|明晚|明天晚上|明天夜里", re.I)
DAY_ONLY = re.compile(
    r"\b(?P<en>(?:the\s+)?day\s+after\s+tomorrow|tomorrow)(?:\s+(?P<enpart>morning|afternoon))?\b"
    r"|\bthis\s+(?P<this>morning|afternoon)\b"
    r"|(?P<zh>后天|明天|明早|明日)(?P<zhpart>早上|上午|中午|下午|早晨|清晨)?"
    # the weekend: from Saturday 00:00 ("周末跑", "run it over the weekend"); today when it is the weekend
    r"|(?P<weekend>\b(?:(?:this|the|over\s+the|on\s+the|at\s+the)\s+)weekend\b|(?:这个?|本)?周末)",
    re.I,
)
_DAY_OFFSET = {
    "today": 0,
    "tonight": 0,
    "this": 0,
    "今天": 0,
    "今晚": 0,
    "今早": 0,
    "今日": 0,
    "tomorrow": 1,
    "明天": 1,
    "明晚": 1,
    "明早": 1,
    "明日": 1,
    "后天": 2,
    "yesterday": -1,
    "昨天": -1,
}
_PM_PARTS = {"afternoon", "evening", "night", "下午", "傍晚", "晚上", "tonight", "今晚", "明晚"}
_AM_PARTS = {"morning", "早上", "上午", "凌晨", "早晨", "清晨", "明早", "今早"}
_PART_HOUR = {
    "morning": 8,
    "afternoon": 14,
    "早上": 8,
    "上午": 9,
    "中午": 12,
    "下午": 14,
    "早晨": 8,
    "清晨": 7,
}
_NIGHT_PARTS = {"evening", "night", "晚上", "傍晚", "夜里"}
# a part of the day right after a date with no clock: "friday night", "周六晚上", "Dec 5 afternoon"
_DATE_PART = re.compile(
    r"\s*(?P<part>morning|afternoon|evening|night|早上|上午|中午|下午|傍晚|晚上|夜里|早晨|清晨)", re.I
)
_DEADLINE_WORDS = {
    "by",
    "before",
    "until",
    "till",
    "no later than",
    "deadline",
    "deadline is",
    "之前",
    "以前",
    "前",
}


@dataclass
class When:
    """What the times in a request mean for the spec, and which parts of the text they used."""

    not_before: datetime | None = None
    offpeak: bool = False
    deadline: datetime | None = None
    spans: list[tuple[int, int]] = field(default_factory=list)


def _day_offset(*words: str | None) -> int | None:
    for word in words:
        if not word:
            continue
        key = " ".join(word.lower().split())
        if "day after tomorrow" in key:
            return 2
        for name, offset in _DAY_OFFSET.items():
            if key.startswith(name):
                return offset
    return None


def _minute(match: re.Match[str]) -> int:
    if match.group("m1"):
        return int(match.group("m1"))
    zm = (match.group("zm") or "").strip()
    if not zm:
        return 0
    special = {"半": 30, "一刻": 15, "三刻": 45}
    if zm in special:
        return special[zm]
    return to_int(zm.rstrip("分").strip()) or 0


def _hour(match: re.Match[str], parts: set[str], day: int | None) -> tuple[int, bool]:
    """(hour 0-23, fixed) — fixed is False when am/pm is unknown (then the next occurrence is used)."""
    if match.group("word"):
        return (0 if match.group("word").lower() == "midnight" else 12), True
    raw = next((match.group(h) for h in ("h1", "h2", "h3", "h4", "h5") if match.group(h)), "0")
    hour = to_int(raw) or 0
    ampm = (match.group("ap1") or match.group("ap2") or "").lower().replace(".", "")
    if ampm:
        return (hour % 12) + (12 if ampm == "pm" else 0), True
    if match.group("h1") and hour >= 13:
        return hour, True
    if hour == 12 and parts & {"tonight", "今晚", "晚上", "night", "夜里", "半夜", "明晚"}:
        return 0, True
    if hour < 5 and parts & {"tonight", "今晚"}:
        return hour, True  # "tonight at 2": 2am, moved to the next day below
    if parts & _PM_PARTS and hour < 12:
        return hour + 12, True
    if parts & {"中午"}:
        return (hour + 12 if hour < 6 else hour), True
    if parts & {"夜里", "半夜", "night"}:
        return (hour + 12 if 7 <= hour < 12 else hour), True
    if parts & _AM_PARTS or hour >= 13 or hour == 0:
        return hour, True
    if match.group("h1"):
        return hour, True
    return hour, day is not None


def _resolve_clock(match: re.Match[str], now: datetime, on: date | None = None) -> datetime:
    """The moment a clock match means: on the date `on` when the text named one, else by its day words."""
    words = [match.group(name) for name in ("day", "part", "day_b", "part_b", "part_c", "post")]
    parts = {w.lower().split()[-1] if w.isascii() else w for w in words if w}
    day = _day_offset(match.group("day"), match.group("day_b"), match.group("post"))
    if on is not None:
        day = (on - now.date()).days
        parts -= {"tonight", "今晚"}  # "December 5 tonight" makes no sense: the date decides the day
    hour, fixed = _hour(match, parts, day)
    minute = _minute(match)
    base = now.replace(second=0, microsecond=0)
    if day is not None:
        moment = (base + timedelta(days=day)).replace(hour=hour % 24, minute=minute)
        if day == 0 and "tonight" in parts | {w.lower() for w in words if w} and hour < 7:
            moment += timedelta(days=1)
        if day == 0 and {"今晚"} & parts and hour < 7:
            moment += timedelta(days=1)
        return moment
    candidates = [hour] if fixed else [hour, hour + 12]
    options = []
    for h in candidates:
        moment = base.replace(hour=h % 24, minute=minute)
        options.append(moment if moment > now else moment + timedelta(days=1))
    return min(options)


# what stands between the two clocks of a span of time: "9am and 5pm", "9am to 5pm", "9am-5pm", "9点到17点"
_RANGE_GAP = re.compile(r"\s*(?:and|to|until|till|through|-|–|~|到|至)\s*", re.I)


def _has_day(match: re.Match[str]) -> bool:
    return _day_offset(match.group("day"), match.group("day_b"), match.group("post")) is not None


def _range(
    start: tuple[re.Match[str], datetime], end: tuple[re.Match[str], datetime]
) -> tuple[datetime, datetime]:
    """The start and the deadline of "between 9am and 5pm tomorrow": a day said once is both clocks' day,
    and the end is after the start."""
    (start_match, begin), (end_match, finish) = start, end
    if _has_day(end_match) and not _has_day(start_match):
        begin = datetime.combine(finish.date(), begin.timetz())
    elif _has_day(start_match) and not _has_day(end_match):
        finish = datetime.combine(begin.date(), finish.timetz())
    if finish <= begin:
        finish += timedelta(days=1)
    return begin, finish


def _is_deadline(match: re.Match[str], text: str) -> bool:
    prep = " ".join((match.group("prep") or "").lower().split())
    post = match.group("post") or ""
    if prep in _DEADLINE_WORDS or post in _DEADLINE_WORDS or _DEADLINE_AFTER_CLOCK.match(text, match.end()):
        return True
    return _deadline_before(text, match.start())


# a deadline named right after its clock: "明早8点截止", "到8点为止"
_DEADLINE_AFTER_CLOCK = re.compile(r"\s*(?:截止|为止)")


def _deadline_before(text: str, start: int) -> bool:
    before = text[max(0, start - 12) : start].lower()
    if re.search(r"(finish(?:ed)?|done|ready|complete[d]?)\s*(?:by|before)?\s*$|截止", before):
        return True
    return bool(_DEADLINE_NAMED.search(text[max(0, start - 40) : start]))


# the deadline named just before a clock: "set the deadline of 31 to 8am", "change 31's deadline to 9pm"
_DEADLINE_NAMED = re.compile(
    r"\bdeadline\s+(?:(?:of|for|on)\s+(?:(?:task|job)\s*)?#?\d+\s+)?(?:(?:to|at|as)\s+)?(?:tomorrow\s+|today\s+)?$",
    re.I,
)


# a date said as a deadline: "by December 5", "before 2026-12-05", "12月5日之前", "by yesterday"
_DATE_DEADLINE_BEFORE = re.compile(
    r"(?:\b(?:by|before|until|till|no\s+later\s+than|deadline(?:\s+is)?)\s+(?:the\s+end\s+of\s+)?(?:on\s+)?"
    r"|截止(?:到|日期|时间)?\s*(?:是|为)?\s*)$",
    re.I,
)
_DATE_DEADLINE_AFTER = re.compile(r"^\s*(?:之前|以前|前)")
DEADLINE_DAY = re.compile(
    r"\b(?:by|before|until|till|no\s+later\s+than|deadline(?:\s+is)?)\s+(?P<en>yesterday|today|tonight|tomorrow)\b"
    r"(?!\s*\d)"
    r"|(?P<zh>昨天|今天|明天|后天)\s*(?:之前|以前)",
    re.I,
)
_DAY_END = time(23, 59)


def _said_as_deadline(text: str, start: int, end: int) -> bool:
    """Whether the day said at text[start:end] is a deadline by the words around it ("by ...", "... 之前")."""
    return bool(
        _DATE_DEADLINE_BEFORE.search(text[max(0, start - 30) : start])
        or _DATE_DEADLINE_AFTER.match(text[end:])
    )


def _date_is_deadline(text: str, span: tuple[int, int], clock: re.Match[str] | None) -> bool:
    if clock is not None and _is_deadline(clock, text):
        return True
    start = min(span[0], clock.start()) if clock is not None else span[0]
    end = max(span[1], clock.end()) if clock is not None else span[1]
    return _said_as_deadline(text, start, end) or _deadline_before(text, start)


def _relative(match: re.Match[str], now: datetime) -> datetime | None:
    phrase = next(group for group in match.groups() if group)
    minutes = duration_minutes(phrase)
    return now.replace(microsecond=0) + timedelta(minutes=minutes) if minutes else None


def read_times(text: str, now: datetime) -> When:
    """Times in `text` (command already removed) against `now`; the spans used are reported.

    Chat spellings ("tmr", "tonite") are spelled out first, so spans index that spelled-out text.
    """
    text = _CHAT_SPELLING.sub(lambda m: CHAT_SPELLINGS[m.group().lower()], text)
    when = When()
    for match in RELATIVE.finditer(text):
        moment = _relative(match, now)
        if moment is not None:
            when.not_before = moment
            when.spans.append(match.span())
            break
    has_clock = _read_date(text, now, when)
    has_clock = _read_clocks(text, now, when) or has_clock
    if not has_clock:
        _deadline_day(text, now, when)
        has_clock = when.deadline is not None
    if ALWAYS_OFFPEAK.search(text):
        when.offpeak = True
    # night words that are not part of a time read ("明天晚上八点前": a deadline's evening, no night run)
    next_night = next((m for m in NEXT_NIGHT.finditer(text) if not _within(m.span(), when.spans)), None)
    night = any(not _within(m.span(), when.spans) for m in NIGHT.finditer(text))
    if next_night and when.not_before is None:
        when.offpeak = True
        when.not_before = (now + timedelta(days=1)).replace(hour=18, minute=0, second=0, microsecond=0)
        when.spans.append(next_night.span())
    elif night and when.not_before is None:  # "tonight, deadline 8am": a deadline's clock is no start
        when.offpeak = True
    if when.not_before is None and not has_clock:
        _day_only(text, now, when)
    return when


def _within(span: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    """True when `span` lies inside one of `spans`."""
    return any(start <= span[0] and span[1] <= end for start, end in spans)


def _read_clocks(text: str, now: datetime, when: When) -> bool:
    """The clock times in `text` outside the spans already read, as `not_before` or `deadline` (two joined
    as a span of time, "between 9am and 5pm", are both); True when one was read."""
    scan = text
    for start, end in when.spans:  # a date read is no clock ("2026-12-05": no 5 o'clock)
        scan = scan[:start] + " " * (end - start) + scan[end:]
    previous: tuple[re.Match[str], datetime] | None = None
    for match in CLOCK.finditer(scan):
        if any(start <= match.start() < end for start, end in when.spans) or _minute(match) > 59:
            continue  # "0点60", "9:75": no time of day
        moment = _resolve_clock(match, now)
        if (
            previous is not None
            and when.not_before == previous[1]
            and _RANGE_GAP.fullmatch(scan, previous[0].end(), match.start())
        ):  # "between 9am and 5pm tomorrow", "9点到17点": a start and a deadline, on one day
            when.not_before, when.deadline = _range(previous, (match, moment))
        elif _is_deadline(match, text):
            when.deadline = moment
        elif when.not_before is None:
            when.not_before = moment
        previous = (match, moment)
        when.spans.append(match.span())
    return previous is not None


def _read_date(text: str, now: datetime, when: When) -> bool:
    """The calendar dates in `text` ("after Dec 5, done by Dec 7": one a start, the other a deadline), each
    with its time of day (its own, the clock next to it, a part of the day after it, or 08:00 when none;
    the end of the day for a deadline), as `not_before` or `deadline`; True when one was read."""
    dates = read_dates(text, now)
    scan = text
    for found in dates:
        scan = scan[: found.span[0]] + " " * (found.span[1] - found.span[0]) + scan[found.span[1] :]
    used: list[tuple[int, int]] = []
    for found in dates:
        clock = None
        if found.at is None:  # the clock closest to the date, within a few words of it, not another's
            near = [
                m
                for m in CLOCK.finditer(scan)
                if m.start() - found.span[1] <= 12
                and found.span[0] - m.end() <= 12
                and not m.group("day")
                and m.span() not in used
                and _minute(m) <= 59
            ]
            clock = min(
                near,
                key=lambda m: min(abs(m.start() - found.span[1]), abs(found.span[0] - m.end())),
                default=None,
            )
        deadline = _date_is_deadline(text, found.span, clock)
        part = _DATE_PART.match(text, found.span[1]) if clock is None and found.at is None else None
        if found.at is not None:
            moment = found.at
        elif clock is not None:
            moment = _resolve_clock(clock, now, found.day)
        elif part is not None and not deadline:  # "周六晚上", "friday night": that evening, off-peak
            word = part.group("part").lower()
            night = word in _NIGHT_PARTS
            when.offpeak = when.offpeak or night
            moment = datetime.combine(
                found.day, time(18 if night else _PART_HOUR.get(word, 8), 0), now.tzinfo
            )
        else:
            moment = datetime.combine(found.day, _DAY_END if deadline else time(8, 0), now.tzinfo)
        said_when = clock is not None or part is not None  # "friday" alone, said on a Friday, is today
        if found.weekly and said_when and found.day == now.date() and moment < now:  # "friday 9am" at 6pm
            moment += timedelta(days=7)
        if deadline and when.deadline is None:
            when.deadline = moment
        elif not deadline and when.not_before is None:
            when.not_before = moment
        when.spans.append(found.span)
        if clock is not None:
            used.append(clock.span())
            when.spans.append(clock.span())
        if part is not None:
            when.spans.append(part.span())
    return bool(dates)


def _deadline_day(text: str, now: datetime, when: When) -> None:
    """ "by tomorrow", "昨天之前": a deadline at the end of that day (a day alone is a start); "by tomorrow
    morning": at that part of the day."""
    match = DEADLINE_DAY.search(text)
    if match is None or when.deadline is not None:
        return
    offset = _day_offset(match.group("en") or match.group("zh")) or 0
    day = now.date() + timedelta(days=offset)
    part = _DATE_PART.match(text, match.end()) if match.group("en") else None
    hour = _PART_HOUR.get(part.group("part").lower()) if part else None
    when.deadline = datetime.combine(day, _DAY_END if hour is None else time(hour, 0), now.tzinfo)
    when.spans.append(match.span() if part is None or hour is None else (match.start(), part.end()))


def _day_only(text: str, now: datetime, when: When) -> None:
    """ "tomorrow morning", "明天下午": a start then; a deadline when said as one ("明天早上之前",
    "before tomorrow afternoon")."""
    match = DAY_ONLY.search(text)
    if not match:
        return
    if match.group("weekend"):
        saturday = now.date() + timedelta(days=(5 - now.weekday()) % 7 if now.weekday() < 5 else 0)
        start = max(now.replace(second=0, microsecond=0), datetime.combine(saturday, time(0, 0), now.tzinfo))
        if _said_as_deadline(text, *match.span()):  # "by the weekend", "周末前": before the next one begins
            ahead = (5 - now.weekday()) % 7 or 7
            when.deadline = when.deadline or datetime.combine(
                now.date() + timedelta(days=ahead), time(0, 0), now.tzinfo
            )
        else:
            when.not_before = start
        when.spans.append(match.span())
        return
    day = _day_offset(match.group("en") or match.group("zh") or "this")
    part = (match.group("enpart") or match.group("this") or match.group("zhpart") or "").lower()
    hour = _PART_HOUR.get(part, 8)
    base = now.replace(second=0, microsecond=0) + timedelta(days=day or 0)
    moment = base.replace(hour=hour, minute=0)
    if _said_as_deadline(text, *match.span()):
        if when.deadline is None:
            when.deadline = moment
    else:
        when.not_before = moment
    when.spans.append(match.span())
