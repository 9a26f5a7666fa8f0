"""Threads for the window: how a worker gets its thread, the short-task queue, and Python's
garbage collection kept on the GUI thread.

Which store calls may run on the GUI thread: those that read or write a handful of SQLite rows
by key, well under a millisecond each: a setting, the core blocks and one block's history, the
pending proposals with their previews, the conversation's last messages when the window
opens, and knowledge memory's entity list and one entity's facts. Everything else (searches,
pages of passages or messages, deletions, ingestion, anything that embeds or touches LanceDB,
model loads) goes through ``Tasks`` or a worker, so that the window never waits on a disk, a
lock or the embedder.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, QThread, QTimer, Signal, Slot

from engine.errors import user_message

log = logging.getLogger("mnemo.desktop")


def describe_failure(error: BaseException) -> str:
    """The sentence a user sees for a failure; a bug is logged and said plainly."""
    sentence = user_message(error)
    if sentence is not None:
        return sentence
    log.error("unexpected failure", exc_info=error)
    return (
        f"Something went wrong inside Mnemo ({type(error).__name__}: {error}). Nothing already "
        "saved was lost; the details are in the log (Settings shows where)."
    )


# Worker threads run at a lower scheduling priority than the GUI thread, and so do the threads
# they start (llama.cpp's and the watcher's inherit it): on a machine with few cores, generation
# and embedding otherwise keep every core busy and the window waits its turn for a CPU.
WORKER_NICENESS = 5


class _Niceness(QObject):
    """Lives on the worker's thread, so that its slot runs there (Linux: niceness is per
    thread). A plain function would run on the thread that owns the QThread object."""

    @Slot()
    def lower(self) -> None:
        if sys.platform.startswith("linux"):
            try:
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WORKER_NICENESS)
            except OSError as error:
                log.info("could not lower a worker's priority: %s", error)


def start_thread(worker: QObject, name: str) -> QThread:
    thread = QThread()
    thread.setObjectName(name)
    worker.moveToThread(thread)
    niceness = _Niceness()
    niceness.moveToThread(thread)
    thread.started.connect(niceness.lower)
    thread.niceness = niceness  # type: ignore[attr-defined]  # kept alive with the thread
    thread.start()
    return thread


class GuiThreadCollector(QObject):
    """Python's cyclic garbage collection, run on the GUI thread only, while the window lives.

    Left automatic, a collection runs on whichever thread happens to allocate, and destroys what
    it frees there, Qt objects included: undefined behaviour in Qt, and one CI run died of it (a
    segmentation fault, "Garbage-collecting" on the chat thread). So automatic collection is off
    and a timer on the GUI thread collects when CPython would (its thresholds). What is alive when
    the window opens (modules and the engine: ~190k objects) is frozen first, so that a full
    collection walks only what came later: ~100 ms otherwise, a pause the window would show.
    """

    INTERVAL_MS = 100

    def __init__(self, parent: QObject) -> None:
        super().__init__(parent)
        self._was_enabled = gc.isenabled()
        gc.disable()
        gc.freeze()
        self._timer = QTimer(self)
        self._timer.timeout.connect(self.collect_due)
        self._timer.start(self.INTERVAL_MS)

    def collect_due(self) -> None:
        counts, thresholds = gc.get_count(), gc.get_threshold()
        for generation in (2, 1, 0):
            if counts[generation] > thresholds[generation]:
                gc.collect(generation)
                return

    def stop(self) -> None:
        """Hand collection back to Python (after the worker threads have ended)."""
        self._timer.stop()
        gc.unfreeze()
        if self._was_enabled:
            gc.enable()


# What a change can be about. A task names what it changed (``Tasks.submit(changes=...)``), and
# so does the engine through the bridge; each page listens to ``Tasks.changed`` for the kinds it
# shows and refreshes itself. Nothing else needs to know who shows what.
CORE = "core"  # core memory blocks and their history
PROPOSALS = "proposals"  # the model's memory changes waiting for the user
KNOWLEDGE = "knowledge"  # knowledge memory's entities and facts
MESSAGES = "messages"  # stored conversation messages
PASSAGES = "passages"  # archival passages
FOLDERS = "folders"  # the watched folders


@dataclass
class _Job:
    work: Callable[[], Any]
    done: Callable[[Any], None] | None
    failed: Callable[[str], None] | None
    changes: tuple[str, ...] = ()


class _TaskWorker(QObject):
    finished = Signal(object, object)
    failed = Signal(object, str)

    @Slot(object)
    def run(self, job: _Job) -> None:
        try:
            result = job.work()
        except Exception as error:
            self.failed.emit(job, describe_failure(error))
            return
        self.finished.emit(job, result)


class Tasks(QObject):
    """Short store work run in order on one thread; results come back on the GUI thread.

    Signals:
        error(str): a task without its own failure handler failed (the window shows it).
        idle(): the queue ran empty (tests wait on it).
        changed(str): stored data of this kind changed (a task's, or one ``announce`` passes
            on); the pages that show it refresh.
    """

    error = Signal(str)
    idle = Signal()
    changed = Signal(str)
    _request = Signal(object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._worker = _TaskWorker()
        self._thread = start_thread(self._worker, "mnemo-tasks")
        self._request.connect(self._worker.run)
        self._worker.finished.connect(self._finished)
        self._worker.failed.connect(self._failed)
        self.pending = 0

    def submit(
        self,
        work: Callable[[], Any],
        done: Callable[[Any], None] | None = None,
        failed: Callable[[str], None] | None = None,
        *,
        changes: tuple[str, ...] = (),
    ) -> None:
        """Run ``work`` on the tasks thread; then ``done(result)`` on the GUI thread and
        ``changed`` for each kind in ``changes`` (or ``failed(sentence)``)."""
        self.pending += 1
        self._request.emit(_Job(work, done, failed, changes))

    def announce(self, kind: str) -> None:
        """A change made elsewhere (the agent, a worker, the settings), for the same listeners."""
        self.changed.emit(kind)

    def _finished(self, job: _Job, result: Any) -> None:
        try:
            if job.done is not None:
                job.done(result)
            for kind in job.changes:
                self.changed.emit(kind)
        finally:
            self._settle()

    def _failed(self, job: _Job, message: str) -> None:
        try:
            (job.failed or self.error.emit)(message)
        finally:
            self._settle()

    def _settle(self) -> None:
        self.pending -= 1
        if not self.pending:
            self.idle.emit()

    def stop(self) -> None:
        self._thread.quit()
        self._thread.wait()
