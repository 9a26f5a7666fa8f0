"""The one place where engine events become Qt signals.

The engine calls ``bridge(event)`` on whatever thread runs the work (a turn, the folder watcher);
each signal is then delivered to widgets on the GUI thread through Qt's queued connections, so no
widget is ever touched from a worker.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from engine.events import (
    ContextEvicted,
    Event,
    FunctionCalled,
    FunctionReturned,
    MemoryPressure,
    MessageSent,
    Notice,
    ProposalApplied,
    ProposalCreated,
    ReplyWithdrawn,
    StepStarted,
    TextStreamed,
    TurnFinished,
)
from engine.ingest.ingestor import FileResult

# Each event and the signal that carries it (TextStreamed carries only its text).
# The calls after which knowledge memory may hold new facts.
KNOWLEDGE_WRITERS = frozenset({"remember", "knowledge_add"})

SIGNALS: dict[type[Event], str] = {
    FunctionCalled: "function_called",
    FunctionReturned: "function_returned",
    MessageSent: "message_sent",
    ReplyWithdrawn: "reply_withdrawn",
    StepStarted: "step_started",
    ProposalCreated: "proposal_created",
    ProposalApplied: "proposal_applied",
    MemoryPressure: "memory_pressure",
    ContextEvicted: "context_evicted",
    Notice: "notice",
    TurnFinished: "turn_finished",
}


class EngineBridge(QObject):
    """Engine events as signals; call it from any thread.

    Signals:
        text_streamed(str): a piece of the reply being written.
        function_called(FunctionCalled) / function_returned(FunctionReturned): one call's row.
        message_sent(MessageSent): the reply is complete.
        reply_withdrawn(ReplyWithdrawn): the reply shown so far repeated an earlier one and is
            taken back; another is being written.
        step_started(StepStarted): a step begins; carries the context's token use.
        proposal_created(ProposalCreated) / proposal_applied(ProposalApplied): core-memory edits.
        memory_pressure(MemoryPressure) / context_evicted(ContextEvicted): the window filled up.
        notice(Notice): something about the turn the user should read.
        turn_finished(TurnFinished): the turn is over, for whatever reason.
        core_changed(): core memory changed (a decision, an edit, an auto-approved proposal).
        knowledge_changed(): a turn may have stored or proposed facts (knowledge memory).
        document_changed(FileResult): the folder watcher indexed or dropped a file.
    """

    text_streamed = Signal(str)
    function_called = Signal(object)
    function_returned = Signal(object)
    message_sent = Signal(object)
    reply_withdrawn = Signal(object)
    step_started = Signal(object)
    proposal_created = Signal(object)
    proposal_applied = Signal(object)
    memory_pressure = Signal(object)
    context_evicted = Signal(object)
    notice = Signal(object)
    turn_finished = Signal(object)
    core_changed = Signal()
    knowledge_changed = Signal()
    document_changed = Signal(object)

    def __call__(self, event: Event) -> None:
        if isinstance(event, TextStreamed):
            self.text_streamed.emit(event.text)
            return
        signal = SIGNALS.get(type(event))
        if signal is not None:
            getattr(self, signal).emit(event)
        if isinstance(event, ProposalApplied):
            self.core_changed.emit()
        if isinstance(event, FunctionReturned) and event.name in KNOWLEDGE_WRITERS:
            self.knowledge_changed.emit()

    def file_done(self, result: FileResult) -> None:
        """The folder watcher's ``on_result``."""
        self.document_changed.emit(result)
