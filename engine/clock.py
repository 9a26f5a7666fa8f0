"""The time memory keeps: the wall clock, which only ``travel`` moves.

Every time stamp memory stores (when a message was said, a fact learned or ended, a proposal
made or decided) and the day the model is told it is come from here. A benchmark that plays a
person's six months on their own days (``tests/benchmarks/months.py``), and tests of what is
said about the past, ``travel`` to a day; the clock goes on running from there.
"""

from __future__ import annotations

import time as _time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime

_shift = 0.0  # seconds added to the wall clock while travelling


def timestamp() -> float:
    """UNIX seconds, now."""
    return _time.time() + _shift


def now() -> datetime:
    """Now, in the user's time zone."""
    return datetime.fromtimestamp(timestamp()).astimezone()


def today() -> date:
    return now().date()


@contextmanager
def travel(to: datetime | date) -> Iterator[None]:
    """Be at ``to`` while the block runs (a date: its noon, local time). Process-wide: the
    stores' threads keep the same time as the agent's."""
    global _shift
    moment = to if isinstance(to, datetime) else datetime(to.year, to.month, to.day, 12)
    before = _shift
    _shift = moment.timestamp() - _time.time()
    try:
        yield
    finally:
        _shift = before
