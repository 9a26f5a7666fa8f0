"""The long-lived workers: the chat (the model and its turns) and ingestion (dropped files and the
folder watcher), each on its own thread (``desktop.threads``), driven by queued signals, so that
neither waits behind the other. Short store work goes through ``desktop.threads.Tasks``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from PySide6.QtCore import QObject, Signal, Slot

from desktop.bridge import EngineBridge
from desktop.threads import describe_failure
from engine import keys
from engine.agent import Agent
from engine.errors import MnemoError
from engine.events import Event, TurnFinished
from engine.ingest.ingestor import FileResult, Ingestor, IngestProgress
from engine.ingest.watch import FolderWatcher, WatchedFolders
from engine.llm import ChatModel, load_model, model_settings
from engine.mnemo import Mnemo
from engine.server.completion_turn import ReplyForClient, TurnRecord, store_history
from engine.server.handoff import HandedTurn
from engine.settings import Settings

log = logging.getLogger("mnemo.desktop")

ModelLoader = Callable[[Settings], ChatModel]


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
        handed_started(HandedTurn, list): a message from another program is being answered,
            after the earlier (role, text) messages it came with that were stored.
    """

    loading = Signal(str)
    loaded = Signal(str, int, object)
    load_failed = Signal(str)
    busy = Signal(bool)
    failed = Signal(str)
    stats = Signal(object)
    handed_started = Signal(object, list)
    conversation_started = Signal(str)

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
            conversation = self._mnemo.conversations.current()  # where the person left off
            self.agent = Agent(self._mnemo, model, conversation_id=conversation)
        except Exception as error:
            self.load_failed.emit(describe_failure(error))
            return
        self.loaded.emit(model.name, model.context_length, model.parameter_count)
        if self.agent.interrupted:
            self._run(lambda agent, cancel: agent.resume(on_event=self._bridge, cancel=cancel))
        else:
            self.refresh_stats()
        self._catch_up()

    def _catch_up(self) -> None:
        """The fold a one-shot `mnemo chat -m` left (``Agent.catch_up``), made on this thread
        while the person types: Send stays enabled, and a message sent meanwhile waits in the
        queue of this thread."""
        try:
            if self.agent is not None and self.agent.catch_up(on_event=self._bridge):
                self.refresh_stats()
        except Exception as error:  # the next turn folds if it must
            log.warning("folding the window at the start failed: %s", error)

    @Slot()
    def new_conversation(self) -> None:
        """Start a conversation here, on the thread that sends messages: one typed right after
        Ctrl+N goes into the new conversation, never the old one."""
        try:
            conversation_id = self._mnemo.conversations.start()
        except Exception as error:
            self.failed.emit(describe_failure(error))
            return
        self.open_conversation(conversation_id)
        self.conversation_started.emit(conversation_id)

    @Slot(str)
    def open_conversation(self, conversation_id: str) -> None:
        """Go on in another conversation (the model stays loaded); before a model is loaded,
        ``load_model`` opens the current one."""
        if self.agent is not None and self.agent.conversation_id != conversation_id:
            self.agent = Agent(self._mnemo, self.agent.model, conversation_id=conversation_id)
            self.refresh_stats()
            self._catch_up()

    @Slot(str)
    def send(self, text: str) -> None:
        self._run(lambda agent, cancel: agent.send(text, on_event=self._bridge, cancel=cancel))

    @Slot(object)
    def answer(self, handed: HandedTurn) -> None:
        """A message another program sent through `mnemo serve --local`: answered as a typed
        one, with the request's earlier messages stored first, and told to that program as the
        reply is written (``engine.server.handoff``)."""

        def work(agent: Agent, cancel: threading.Event) -> TurnFinished:
            try:
                program = None if handed.person else handed.program  # whose word it is
                stored = store_history(self._mnemo, agent.conversation_id, handed.history, program)
                self.handed_started.emit(handed, stored)
                record = TurnRecord(agent.conversation_id, len(stored))
                reply = ReplyForClient(lambda: agent.mode.mode == "self", handed.send)

                def on_event(event: Event) -> None:
                    self._bridge(event)
                    record.add(event)
                    reply.add(event)

                finished = agent.send(
                    handed.text, on_event=on_event, cancel=cancel, program=program
                )
            except Exception as error:
                handed.tell({"error": describe_failure(error)})
                raise
            problem = record.failure(finished)
            if problem:
                handed.tell({"error": problem})
            else:
                handed.tell({"done": record.extension(), "reply": record.reply or finished.reply})
            return finished

        if self.agent is None:
            handed.refuse("Mnemo's window has no model loaded; choose one there.")
            self.busy.emit(False)  # the window lets go of the message
            return
        self._run(work)

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
