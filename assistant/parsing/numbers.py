"""Numbers people write in English or Chinese: digits, "two", "两", "十二", "半", and durations in minutes."""

from __future__ import annotations

import re

EN_NUMBERS: dict[str, int] = {
    "zero": 0,
    "no": 0,
    "a": 1,
    "an": 1,
    "one": 1,
    "single": 1,
    "two": 2,
    "both": 2,
    "couple": 2,
    "double": 2,
    "pair": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "sixteen": 16,
    "twenty": 20,
    "thirty": 30,
}
ZH_DIGITS: dict[str, int] = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "两": 2,
    "二": 2,
    "俩": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
    "单": 1,
    "双": 2,
}
ZH_NUMBER = "[零〇一两二俩三四五六七八九十百单双]+"
EN_NUMBER = "|".join(sorted(EN_NUMBERS, key=len, reverse=True))
NUMBER = rf"(?:\d+(?:\.\d+)?|{ZH_NUMBER}|\b(?:{EN_NUMBER})\b)"

_MINUTES_PER_UNIT: dict[str, float] = {
    "m": 1,
    "min": 1,
    "mins": 1,
    "minute": 1,
    "minutes": 1,
    "分钟": 1,
    "分": 1,
    "h": 60,
    "hr": 60,
    "hrs": 60,
    "hour": 60,
    "hours": 60,
    "小时": 60,
    "个小时": 60,
    "钟头": 60,
    "个钟头": 60,
    "d": 1440,
    "day": 1440,
    "days": 1440,
    "天": 1440,
}
DURATION_UNIT = (
    r"(?:个小时|个钟头|小时|钟头|分钟|天|hours|hour|hrs|hr|h|minutes|minute|mins|min|m|days|day|d)"
)
DURATION = re.compile(
    rf"(?P<num>{NUMBER})\s*(?P<half>个半)?\s*(?P<unit>{DURATION_UNIT})(?![a-z])", re.IGNORECASE
)
_HALF_HOUR = re.compile(r"(半\s*(?:个)?\s*(?:小时|钟头)|half\s+an?\s+hour|an?\s+hour\s+and\s+a\s+half)", re.I)
_AN_HOUR = re.compile(r"\b(?:an|one)\s+hour\b", re.I)


def zh_number(text: str) -> int | None:
    """A Chinese numeral such as 两, 十二, 二十四 as an int, or None."""
    if not text or any(ch not in "零〇一两二俩三四五六七八九十百单双" for ch in text):
        return None
    if text in ZH_DIGITS:
        return ZH_DIGITS[text]
    total, current = 0, 0
    for ch in text:
        if ch == "百":
            total += (current or 1) * 100
            current = 0
        elif ch == "十":
            total += (current or 1) * 10
            current = 0
        elif ch in ZH_DIGITS:
            current = ZH_DIGITS[ch]
        else:
            return None
    return total + current


def to_number(text: str) -> float | None:
    """Digits, an English number word or a Chinese numeral as a number, or None."""
    value = text.strip().lower()
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    if value in EN_NUMBERS:
        return float(EN_NUMBERS[value])
    number = zh_number(value)
    return float(number) if number is not None else None


def to_int(text: str) -> int | None:
    """Like `to_number`, but only whole numbers."""
    number = to_number(text)
    return int(number) if number is not None and number == int(number) else None


def duration_minutes(text: str) -> float | None:
    """The first duration in `text` ("3 hours", "90 min", "2h", "两个半小时", "半小时") in minutes."""
    if re.search(r"half\s+an?\s+hour", text, re.I):
        return 30.0
    match = DURATION.search(text)
    if match:
        number = to_number(match.group("num"))
        unit = match.group("unit").lower()
        if number is not None and unit in _MINUTES_PER_UNIT:
            minutes = number * _MINUTES_PER_UNIT[unit]
            if match.group("half"):
                minutes += _MINUTES_PER_UNIT[unit] / 2
            if re.search(r"\s+and\s+a\s+half", text[match.end() : match.end() + 14], re.I):
                minutes += _MINUTES_PER_UNIT[unit] / 2
            return minutes
    if _HALF_HOUR.search(text):
        return 90.0 if "and a half" in text.lower() else 30.0
    if _AN_HOUR.search(text):
        return 60.0
    return None


def tidy(number: float) -> int | float:
    """3.0 -> 3, 2.5 stays 2.5 (so JSON shows what a person wrote)."""
    return int(number) if number == int(number) else number
