"""Whether a turn the person waits for is running: work that can wait (the embedder's table of
word-piece vectors) pauses meanwhile. On a 2-core machine it took the model's cores: a one-shot
``mnemo chat -m`` on a 10k profile took 7 s instead of 3 s while the table was being filled
(tests/benchmarks/felt_speed.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_running = 0
_changed = threading.Condition()


@contextmanager
def turn_running() -> Iterator[None]:
    """Around a turn: background work waits until it is over."""
    global _running
    with _changed:
        _running += 1
    try:
        yield
    finally:
        with _changed:
            _running -= 1
            _changed.notify_all()


def wait_until_idle(stop: threading.Event) -> None:
    """Return when no turn is running, or when ``stop`` is set (the process is ending)."""
    with _changed:
        while _running and not stop.is_set():
            _changed.wait(0.2)
