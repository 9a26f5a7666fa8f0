"""Engine work off the GUI thread: long-lived worker objects on QThreads, driven by queued signals.

Three threads, each for one kind of work, so that none waits behind another: the chat (the model
and its turns), ingestion (dropped files and the folder watcher), and short store tasks (searches,
edits, deletions) that would still stall the window if they ran on the GUI thread.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, QThread, QTimer, Signal, Slot

from desktop.bridge import EngineBridge
from engine import keys
from engine.agent import Agent
from engine.errors import MnemoError, user_message
from engine.events import TurnFinished
from engine.ingest.ingestor import FileResult, Ingestor, IngestProgress
from engine.ingest.watch import FolderWatcher, WatchedFolders
from engine.llm import ChatModel, load_model, model_settings
from engine.mnemo import Mnemo
from engine.settings import Settings

log = logging.getLogger("mnemo.desktop")

ModelLoader = Callable[[Settings], ChatModel]


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


def load_configured_model(settings: Settings) -> ChatModel:
    """The model the settings name, with the desktop's wording for a missing key."""
    config = model_settings(settings)
    backend = config.backend
    if config.needs_api_key and keys.get_key(backend) is None:
        raise MnemoError(
            f"There is no API key for {backend}. Enter it in Settings under Model, then press "
            "Apply."
        )
    return load_model(settings)


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


class ChatWorker(QObject):
    """Owns the model and the agent; its slots run on the chat thread.

    Stop is not a slot (the thread is busy generating): the GUI sets ``cancel`` directly.

    Signals:
        loading(str): a model is being loaded (its description).
        loaded(str, int, object): the model's name, context length and parameter count (None
            for API models; it chooses the automatic memory mode).
        load_failed(str): why the model could not be loaded, in words.
        busy(bool): a turn started (True) or ended (False).
        failed(str): a turn failed in a way the agent could not report itself.
        stats(ContextStats): the window's token use, after each turn and on request.
    """

    loading = Signal(str)
    loaded = Signal(str, int, object)
    load_failed = Signal(str)
    busy = Signal(bool)
    failed = Signal(str)
    stats = Signal(object)

    def __init__(self, mnemo: Mnemo, bridge: EngineBridge, loader: ModelLoader) -> None:
        super().__init__()
        self._mnemo = mnemo
        self._bridge = bridge
        self._loader = loader
        self.agent: Agent | None = None
        self.cancel = threading.Event()

    @Slot()
    def load_model(self) -> None:
        self.loading.emit(model_settings(self._mnemo.settings).describe())
        previous, self.agent = self.agent, None
        if previous is not None and hasattr(previous.model, "close"):
            previous.model.close()
        try:
            model = self._loader(self._mnemo.settings)
            self.agent = Agent(self._mnemo, model)
        except Exception as error:
            self.load_failed.emit(describe_failure(error))
            return
        self.loaded.emit(model.name, model.context_length, model.parameter_count)
        if self.agent.interrupted:
            self._run(lambda agent, cancel: agent.resume(on_event=self._bridge, cancel=cancel))
        else:
            self.refresh_stats()

    @Slot(str)
    def send(self, text: str) -> None:
        self._run(lambda agent, cancel: agent.send(text, on_event=self._bridge, cancel=cancel))

    @Slot()
    def refresh_stats(self) -> None:
        if self.agent is None:
            return
        try:
            self.stats.emit(self.agent.context_stats())
        except Exception as error:  # the numbers are a view; a failure must not end the app
            log.warning("context stats failed: %s", error)

    def _run(self, work: Callable[[Agent, threading.Event], TurnFinished | None]) -> None:
        if self.agent is None:
            self.failed.emit("No model is loaded; choose one in Settings and press Apply.")
            return
        self.busy.emit(True)
        try:
            work(self.agent, self.cancel)
        except Exception as error:
            self.failed.emit(describe_failure(error))
        finally:
            self.busy.emit(False)
            self.refresh_stats()


class IngestWorker(QObject):
    """Dropped and added files, and the folder watcher; its slots run on the ingestion thread.

    Signals:
        started(int): files about to be read (after the folders were walked).
        progress(int, int, str): files done, files in all, the file being read.
        file_done(FileResult): one file's outcome (dropped files and the watcher alike).
        finished(IngestProgress): the batch is over (done, cancelled or failed).
        failed(str): the batch could not run, in words.
        waiting(str): another Mnemo is ingesting into this profile; this batch waits for it.
        folders_changed(): a folder was added to or removed from the watched folders.
    """

    started = Signal(int)
    progress = Signal(int, int, str)
    file_done = Signal(object)
    finished = Signal(object)
    failed = Signal(str)
    waiting = Signal(str)
    folders_changed = Signal()

    def __init__(self, mnemo: Mnemo) -> None:
        super().__init__()
        self._mnemo = mnemo
        self._watcher: FolderWatcher | None = None
        self.cancel = threading.Event()

    @Slot(list)
    def ingest(self, paths: Sequence[str]) -> None:
        self.cancel.clear()
        ingestor = Ingestor(
            self._mnemo,
            on_wait=lambda: self.waiting.emit(
                "Another Mnemo is adding documents to this profile; waiting for it to finish."
            ),
        )
        reported = 0

        def report(state: IngestProgress) -> None:
            nonlocal reported
            for result in state.results[reported:]:
                self.file_done.emit(result)
            reported = len(state.results)
            self.progress.emit(state.files_done, state.files_total, state.current or "")

        try:
            files = ingestor.collect(paths)
            self.started.emit(len(files))
            final = ingestor.ingest(files, progress=report, cancel=self.cancel)
            report(final)
        except Exception as error:
            self.failed.emit(describe_failure(error))
            final = IngestProgress()
        self.finished.emit(final)

    @Slot()
    def watch(self) -> None:
        """(Re)start watching the profile's watched folders; stop when there are none."""
        self.stop_watching()
        if WatchedFolders(self._mnemo).all():
            self._watcher = FolderWatcher(self._mnemo, on_result=self._watched)
            self._watcher.start()

    @Slot(str)
    def add_watched(self, path: str) -> None:
        """Watch a folder: read what it holds now (with progress), then follow its changes."""
        try:
            WatchedFolders(self._mnemo).add(path)
        except Exception as error:
            self.failed.emit(describe_failure(error))
            return
        self.folders_changed.emit()
        self.ingest([path])
        self.watch()

    @Slot(str, bool)
    def remove_watched(self, path: str, keep_passages: bool) -> None:
        try:
            WatchedFolders(self._mnemo).remove(path)
            if not keep_passages:
                removed = Ingestor(self._mnemo).remove(path)
                self.file_done.emit(FileResult(path, "removed", removed))
        except Exception as error:
            self.failed.emit(describe_failure(error))
        self.folders_changed.emit()
        self.watch()

    def _watched(self, result: FileResult) -> None:
        self.file_done.emit(result)

    @Slot()
    def stop_watching(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None


@dataclass
class _Job:
    work: Callable[[], Any]
    done: Callable[[Any], None] | None
    failed: Callable[[str], None] | None


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
    """

    error = Signal(str)
    idle = Signal()
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
    ) -> None:
        self.pending += 1
        self._request.emit(_Job(work, done, failed))

    def _finished(self, job: _Job, result: Any) -> None:
        try:
            if job.done is not None:
                job.done(result)
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
