"""The dates a question's own time phrase points at: "two weeks ago", "last Saturday", "in June",
"during the past month".

A person who asks "What gardening did I do two weeks ago?" has already said when; a turn said
before then cannot tell of it. Search uses the window's start as evidence, not as a filter
(``recall_search`` ranks turns said before it lower and adds the best turns said since to the
candidates). The window has slack, because people count loosely: "two weeks ago" is 10 to 18
days, and "last Saturday" can be the one before. Its end does not count: "I bought a bike last
week" may be said today.

Only phrases that name a time relative to ``now``, or a month with its year, are read. A month
alone is not: "Where am I flying in March?" may ask about a plan, told before March. "How many
days ago did I…" asks for a date and names none. English only.
"""

from __future__ import annotations

import calendar
import re
from datetime import datetime, timedelta

Window = tuple[datetime, datetime]

_DAY = timedelta(days=1)
_UNITS = {"day": _DAY, "week": 7 * _DAY, "month": 30 * _DAY, "year": 365 * _DAY}
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "a few": 3, "few": 3, "several": 4,
}  # fmt: skip
_VAGUE = {"a couple of", "a few", "few", "several"}
_NUMBER = rf"(?P<n>\d{{1,3}}|{'|'.join(sorted(_NUMBERS, key=len, reverse=True))})"  # longest first
_UNIT = r"(?P<unit>day|week|month|year)s?"
_AGO = re.compile(rf"\b{_NUMBER}\s+{_UNIT}\s+ago\b", re.IGNORECASE)
_PAST = re.compile(
    rf"\b(?:in|during|over|within)\s+the\s+(?:past|last)\s+(?:{_NUMBER}\s+)?{_UNIT}\b",
    re.IGNORECASE,
)
_WEEKDAYS = [day.lower() for day in calendar.day_name]
_LAST_DAY = re.compile(rf"\blast\s+(?P<day>{'|'.join(_WEEKDAYS)})\b", re.IGNORECASE)
_LAST_UNIT = re.compile(r"\blast\s+(?P<unit>week|month|year)\b", re.IGNORECASE)
_MONTHS = [month.lower() for month in calendar.month_name[1:]]
_IN_MONTH = re.compile(
    rf"\b(?:in|during|of)\s+(?:early\s+|late\s+|mid-?)?(?P<month>{'|'.join(_MONTHS)})"
    r",?\s+(?P<year>\d{4})\b",
    re.IGNORECASE,
)
_YESTERDAY = re.compile(r"\byesterday\b", re.IGNORECASE)


def named_window(query: str, now: datetime) -> Window | None:
    """The dates ``query``'s time phrase names, as seen at ``now``, with the slack people mean;
    None when it names none."""
    if found := _AGO.search(query):
        count = _count(found["n"])
        unit = _UNITS[found["unit"].lower()]
        slack = unit * (1.0 if found["n"].lower() in _VAGUE else 0.5) + _DAY
        return _bounded(now - count * unit - slack, now - count * unit + slack, now)
    if found := _PAST.search(query):
        count = _count(found["n"]) if found["n"] else 1
        return _bounded(now - count * _UNITS[found["unit"].lower()] - _DAY, now, now)
    if found := _LAST_DAY.search(query):
        back = (now.weekday() - _WEEKDAYS.index(found["day"].lower())) % 7 or 7
        day = now - back * _DAY
        return _bounded(day - 2 * _DAY, day + 2 * _DAY, now)
    if found := _LAST_UNIT.search(query):
        unit = _UNITS[found["unit"].lower()]
        return _bounded(now - 2 * unit - _DAY, now - unit / 2, now)
    if _YESTERDAY.search(query):
        return _bounded(now - 2 * _DAY, now, now)
    if found := _IN_MONTH.search(query):
        month = _MONTHS.index(found["month"].lower()) + 1
        year = int(found["year"])
        first = now.replace(year=year, month=month, day=1, hour=0, minute=0, second=0)
        last = first.replace(day=calendar.monthrange(year, month)[1], hour=23, minute=59)
        return _bounded(first - 3 * _DAY, last + 3 * _DAY, now)
    return None


def _count(number: str) -> int:
    return int(number) if number.isdigit() else _NUMBERS[number.lower()]


def _bounded(start: datetime, end: datetime, now: datetime) -> Window | None:
    """The window up to ``now`` (a question asks about what was said before it)."""
    end = min(end, now)
    return (start, end) if start < end else None
