"""Messages that other programs send through `mnemo serve --local` while this window holds the
assistant (``engine.server.handoff``): taken when the chat is idle, shown, and answered by the
chat worker like typed ones, so the person sees every turn of their assistant here."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from PySide6.QtCore import QFileSystemWatcher, QObject, QTimer, Signal

from desktop.chat import ChatView
from desktop.workers import ChatWorker
from engine.mnemo import Mnemo
from engine.server import handoff
from engine.server.completion_turn import named_conversation

LOOK_MS = 1000  # besides the folder watch: a change it missed, or a file that failed to open


class HandedTurns(QObject):
    """Signals: answer_requested(HandedTurn): the chat worker answers it (``ChatWorker.answer``,
    which says ``handed_started`` once the request's earlier messages are stored)."""

    answer_requested = Signal(object)

    def __init__(
        self,
        mnemo: Mnemo,
        chat: ChatView,
        worker: ChatWorker,
        conversation: Callable[[], str],
        parent: QObject,
    ) -> None:
        super().__init__(parent)
        self._mnemo = mnemo
        root = self._root = mnemo.profile.root
        self._chat = chat
        self._worker = worker
        self._conversation = conversation
        self.current: handoff.HandedTurn | None = None
        self.answer_requested.connect(worker.answer)
        worker.busy.connect(self._busy)
        worker.handed_started.connect(self._show)
        folder = root / handoff.FOLDER
        with contextlib.suppress(OSError):  # a read-only profile: nobody can hand it a turn
            folder.mkdir(exist_ok=True)
        self._watch = QFileSystemWatcher([str(folder)], self)  # a message is taken at once
        self._watch.directoryChanged.connect(self._look)
        self._timer = QTimer(self)
        self._timer.timeout.connect(self._look)
        self._timer.start(LOOK_MS)

    def _look(self, _changed: str = "") -> None:
        if self.current is not None:
            if self.current.cancelled:  # the program that sent it went away
                self._worker.cancel.set()
            return
        if self._chat.busy or not self._chat.ready:
            return
        handed = handoff.claim(self._root)
        if handed is None:
            return
        named = handed.conversation
        if named and named_conversation(self._mnemo, named) != self._conversation():
            handed.refuse(
                f"Mnemo's window shows another conversation than {named!r}, and answers only "
                "there; send the message without naming a conversation, or close the window."
            )
            return
        self.current = handed
        self._worker.cancel.clear()
        self.answer_requested.emit(handed)

    def _show(self, handed: handoff.HandedTurn, stored: list[tuple[str, str]]) -> None:
        """The earlier messages the conversation did not hold, then the one being answered
        (before the reply's first piece: the worker says this first)."""
        for role, text in stored:
            self._chat.add_message(role, text)
        self._chat.add_notice(f"{handed.program} sent this through mnemo serve --local:")
        self._chat.add_message("user", handed.text)

    def _busy(self, busy: bool) -> None:
        if busy:
            return
        if self.current is not None:
            self.current.close()
            self.current = None
        QTimer.singleShot(0, self._look)  # a message that waited for this turn to end
