"""Long work on a worker thread that Ctrl-C stops cleanly, for the command line.

Python delivers Ctrl-C to the main thread; tearing through a generation or a file write with it
could leave half a step. So the work runs on a worker with a cancel flag, and Ctrl-C only sets
the flag: the work stops at its next safe point and keeps what it completed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def run_interruptibly(
    work: Callable[[threading.Event], T], on_interrupt: Callable[[], object]
) -> T:
    """Run ``work(cancel)`` on a worker; Ctrl-C calls ``on_interrupt`` and sets ``cancel``."""
    cancel = threading.Event()
    outcome: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(work(cancel))
        except BaseException as error:  # handed to the calling thread
            failure.append(error)

    worker = threading.Thread(target=target, name="mnemo-work", daemon=True)
    worker.start()
    while worker.is_alive():
        try:
            worker.join(0.1)
        except KeyboardInterrupt:
            on_interrupt()
            cancel.set()
    if failure:
        raise failure[0]
    return outcome[0]
