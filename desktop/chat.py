"""The chat: the transcript (replies as Markdown, function calls as compact rows) and the input."""

from __future__ import annotations

import html
import json
import time
from collections.abc import Sequence

from PySide6.QtCore import QPoint, Qt, QTimer, QUrl, Signal
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QScrollArea,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from desktop.assistant_memory import AssistantMemory
from desktop.ui import MessageInput, label, remove_widgets, widgets_in
from engine import forget
from engine.events import FunctionCalled, FunctionReturned
from engine.functions import describe_call
from engine.memory.proposals import Proposal
from engine.memory.recall import MessageHit
from engine.text import one_line, plain_links
from engine.transcript import (
    CITE,
    NOTICE,
    RECALL,
    RECALL_SUMMARY,
    REMEMBER,
    REMEMBERED,
    Citation,
    read_call,
    read_citations,
    result_ok,
    shown_result,
)

RENDER_INTERVAL_MS = 50  # a streamed reply is re-rendered at most this often
RESTORED_MESSAGES = 200
CALL_LINE_CHARS = 48  # of a call's description in its one line (the rest in its tooltip)


def stored_chat(
    memory: AssistantMemory, conversation_id: str
) -> tuple[list[MessageHit], list[Proposal]]:
    """What ``ChatView.restore`` shows of a conversation: its last messages, and the proposals
    they led to (so that "you approved it" still says so after a restart)."""
    hits = memory.recall.recent(RESTORED_MESSAGES, conversation_id)
    proposals = memory.proposals.all(RESTORED_MESSAGES)
    return hits, [p for p in proposals if p.conversation_id == conversation_id]


class MessageBubble(QFrame):
    """One message; an assistant reply grows as it streams and is shown as Markdown.

    Signals:
        forget_requested(str): the words selected in it (or all of it), to forget.
    """

    forget_requested = Signal(str)

    def __init__(self, role: str, text: str = "") -> None:
        super().__init__()
        self.role = role
        self.setObjectName(f"bubble_{role}")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 8)
        layout.setSpacing(2)
        layout.addWidget(label("You" if role == "user" else "Mnemo", "muted"))
        self.body = QLabel()
        self.body.setWordWrap(True)
        self.body.setTextFormat(
            Qt.TextFormat.PlainText if role == "user" else Qt.TextFormat.MarkdownText
        )
        # Text only: nothing in a message opens a link (a reply may repeat one that memory
        # carried from another program; the engine writes links out, ``plain_links``).
        self.body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.body.setOpenExternalLinks(False)
        self.body.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.body.customContextMenuRequested.connect(self._menu)
        layout.addWidget(self.body)
        self._text = text
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(RENDER_INTERVAL_MS)
        self._timer.timeout.connect(self._render)
        self._render()

    @property
    def text(self) -> str:
        return self._text

    def append(self, piece: str) -> None:
        """Streaming: pieces arrive many times a second; the label is redrawn in batches."""
        self._text += piece
        if not self._timer.isActive():
            self._timer.start()

    def set_text(self, text: str) -> None:
        self._text = text
        self._timer.stop()
        self._render()

    def _render(self) -> None:
        self.body.setText(self._text if self.role == "user" else plain_links(self._text))

    def _menu(self, at: QPoint) -> None:
        menu = QMenu(self)
        chosen = self.body.selectedText()
        menu.addAction("Copy", lambda: QApplication.clipboard().setText(chosen or self._text))
        menu.addAction(
            "Forget the selected words…" if chosen else "Forget this message…",
            lambda: self.forget_requested.emit(chosen or self._text),
        )
        menu.exec(self.body.mapToGlobal(at))


class CallRow(QFrame):
    """A function call in one line ("searched archival memory for 'taxes' → 3 of 12"). A click
    shows what it found or did, in words; the arguments, scores and ids only under "Details"."""

    def __init__(self, name: str, arguments: dict, description: str) -> None:
        super().__init__()
        self.name = name
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 0, 4, 0)
        layout.setSpacing(0)
        self.toggle = QToolButton()
        self.toggle.setCheckable(True)
        self.toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setAutoRaise(True)
        self.toggle.toggled.connect(self._expand)
        self.description = description
        self.summary = "…"
        layout.addWidget(self.toggle)
        self.outcome = label("", "muted")  # what it found or did, as the model was told
        self.outcome.setTextFormat(Qt.TextFormat.PlainText)
        self.outcome.setContentsMargins(24, 0, 0, 2)
        self.outcome.setVisible(False)
        layout.addWidget(self.outcome)
        shown = {key: value for key, value in arguments.items() if key != "request_heartbeat"}
        self.details = label(json.dumps(shown, ensure_ascii=False, indent=1), "muted")
        self.details.setTextFormat(Qt.TextFormat.PlainText)
        self.details.setVisible(False)
        self.details.setContentsMargins(24, 0, 0, 4)
        self.details_toggle = QToolButton()
        self.details_toggle.setText("Details")
        self.details_toggle.setCheckable(True)
        self.details_toggle.setAutoRaise(True)
        self.details_toggle.setVisible(False)
        self.details_toggle.toggled.connect(self.details.setVisible)
        layout.addWidget(self.details_toggle, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.details)
        self._update()

    def set_result(self, ok: bool, summary: str, result: str, trace: tuple[str, ...] = ()) -> None:
        self.summary = summary if ok else f"failed: {one_line(result, 70)}"
        self.outcome.setText(result[:2000])
        if trace:
            self.details.setText(
                self.details.text() + "\n\nWhy these were found:\n" + "\n".join(trace)
            )
        self._update()

    def set_summary(self, summary: str) -> None:
        self.summary = summary
        self._update()

    def _update(self) -> None:
        """One line that fits beside a waiting proposal at the default size (a whole remembered
        message in it pushed the chat wider than its window); the whole of it in the tooltip."""
        self.toggle.setText(f"{one_line(self.description, CALL_LINE_CHARS)} → {self.summary}")
        self.toggle.setToolTip(f"{self.description} → {self.summary}")

    def _expand(self, shown: bool) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow)
        self.outcome.setVisible(shown and bool(self.outcome.text()))
        self.details_toggle.setVisible(shown)
        self.details.setVisible(shown and self.details_toggle.isChecked())


class ChatView(QWidget):
    """Signals:
    send_requested(str): the user sent a message.
    forget_requested(str): words of a message the user asked to forget (a preview follows).
    forget_topic_requested(str): what a message asked to forget ("passport number"); it is
        never sent to the model.
    stop_requested(): the user pressed Stop.
    search_requested(str): the user searched past conversations.
    models_requested(): the user followed the offer of a better model.
    """

    send_requested = Signal(str)
    forget_requested = Signal(str)
    forget_topic_requested = Signal(str)
    stop_requested = Signal()
    search_requested = Signal(str)
    models_requested = Signal()

    def __init__(self) -> None:
        super().__init__()
        layout = QVBoxLayout(self)
        header = QHBoxLayout()
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search past conversations…")
        self.search.setClearButtonEnabled(True)
        self.search.returnPressed.connect(self._search)
        header.addWidget(self.search)
        layout.addLayout(header)

        self.scroll_area = QScrollArea()
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setFrameShape(QFrame.Shape.NoFrame)
        container = QWidget()
        self.messages = QVBoxLayout(container)
        self.messages.addStretch(1)
        self.empty = label(
            "Say hello. Mnemo keeps what matters about you in core memory (you approve every "
            "change), can look back through all your conversations, and searches the documents "
            "you drop on this window.",
            "muted",
        )
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.messages.addWidget(self.empty)
        self.scroll_area.setWidget(container)
        self.scroll_area.verticalScrollBar().rangeChanged.connect(self._follow)
        layout.addWidget(self.scroll_area, 1)

        self.model_offer = label(
            "You are chatting with the small built-in model. "
            '<a href="models">Get a better model for this computer…</a>',
            "muted",
        )
        self.model_offer.setTextFormat(Qt.TextFormat.RichText)
        self.model_offer.setTextInteractionFlags(Qt.TextInteractionFlag.LinksAccessibleByMouse)
        self.model_offer.linkActivated.connect(lambda _link: self.models_requested.emit())
        self.model_offer.setVisible(False)
        layout.addWidget(self.model_offer)

        self.waiting = label("", "muted")
        self.waiting.setObjectName("waiting")
        self.waiting.setVisible(False)
        layout.addWidget(self.waiting)

        row = QHBoxLayout()
        self.input = MessageInput()
        self.input.submitted.connect(self._send)
        row.addWidget(self.input, 1)
        self.send_button = QPushButton("Send")
        self.send_button.clicked.connect(self._send_or_stop)
        row.addWidget(self.send_button)
        layout.addLayout(row)

        self.busy = False  # a turn runs on the chat thread
        self.replied = False  # its reply is shown: the person may send the next message
        self.ready = False
        # Sent before a model was loaded (or while the server was away): shown at once, and
        # handed on when the chat is ready. One at a time, as while a reply is written.
        self.queued: str | None = None
        self._streamed = 0
        self._stream_started = 0.0
        self._reply: MessageBubble | None = None
        self._calls: list[CallRow] = []
        self._proposals: dict[int, tuple[QLabel, str, CallRow | None]] = {}
        self._at_bottom = True
        self.scroll_area.verticalScrollBar().valueChanged.connect(self._remember_position)
        self._update_button()

    def offer_better_model(self, show: bool) -> None:
        """One quiet line above the input while the bundled 135M model is in use."""
        self.model_offer.setVisible(show)

    # -- the transcript ------------------------------------------------------------------------

    def _add(self, widget: QWidget) -> None:
        self._at_bottom = self._is_at_bottom()
        self.empty.setVisible(False)
        self.messages.addWidget(widget)

    def add_message(self, role: str, text: str) -> MessageBubble:
        bubble = MessageBubble(role, text)
        bubble.forget_requested.connect(self.forget_requested)
        self._add(bubble)
        return bubble

    def add_notice(self, text: str, error: bool = False) -> QLabel:
        notice = label(text, "notice_error" if error else "notice")
        self._add(notice)
        return notice

    def stream(self, piece: str) -> None:
        if self._reply is None:
            self._reply = self.add_message("assistant", "")
            self._streamed, self._stream_started = 0, time.monotonic()
        self._reply.append(piece)
        self._streamed += 1
        elapsed = time.monotonic() - self._stream_started
        if elapsed > 0.5:
            self.set_waiting(f"Writing… {self._streamed / elapsed:.0f} tokens/s")
        else:
            self.set_waiting("Writing…")

    def set_waiting(self, text: str) -> None:
        """What the person is waiting for ("Searching memory…", "Thinking…"); empty: nothing."""
        self.waiting.setText(text)
        self.waiting.setVisible(bool(text))

    def withdraw_reply(self, _event: object = None) -> None:
        """The reply streamed so far repeated an earlier one; the next attempt replaces it."""
        if self._reply is not None:
            self._reply.set_text("")

    def reply_done(self, text: str, sources: tuple[Citation, ...] = ()) -> None:
        """The reply is whole: it is shown, and the next message can be sent at once (what the
        turn does after it, keeping what was said, does not hold the input)."""
        self.replied = self.busy
        self.set_waiting("")
        self._update_button()
        if self._reply is None:
            self.add_message("assistant", text)
        else:
            self._reply.set_text(text)
        self._reply = None
        if sources:
            self.add_sources(sources)

    def add_proposal_notice(
        self, proposal_id: int, target: str, row: CallRow | None = None
    ) -> QLabel:
        """ "…waits for you on the right", changed once the person decides (``decided``);
        ``row``: the call that proposed it (else the last one shown)."""
        notice = self.add_notice(
            f"The assistant proposes a change to {target}; it waits for you on the right."
        )
        if row is None and self._calls:
            row = self._calls[-1]
        self._proposals[proposal_id] = (notice, target, row)
        return notice

    def proposals_shown(self) -> list[int]:
        """The proposals whose lines in the chat wait for a decision."""
        return list(self._proposals)

    def decided(self, proposal_id: int, status: str) -> None:
        """A proposal shown in the chat was approved or rejected: its lines say so."""
        shown = self._proposals.get(proposal_id)
        if shown is None or status == "pending":
            return
        notice, target, row = shown
        if status == "withdrawn":  # a later message replaced what it said
            notice.setText(f"The change to {target} was withdrawn: a later message replaced it.")
            if row is not None:
                row.set_summary("withdrawn")
            del self._proposals[proposal_id]
            return
        verb = "approved" if status == "approved" else "rejected"
        notice.setText(
            f"You {verb} the change to {target}"
            + ("." if verb == "approved" else "; nothing was changed.")
        )
        if row is not None:
            row.set_summary(f"you {verb} it")
        del self._proposals[proposal_id]

    def add_sources(self, sources: tuple[Citation, ...]) -> QLabel:
        """The documents a reply relied on, each a link that opens the file."""
        links = ", ".join(
            f'<a href="{QUrl.fromLocalFile(source.path).toString()}">'
            f"{html.escape(source.label())}</a>"
            for source in sources
        )
        line = label(f"Sources: {links}", "muted")
        line.setObjectName("sources")
        line.setTextFormat(Qt.TextFormat.RichText)
        line.setOpenExternalLinks(True)
        line.setTextInteractionFlags(Qt.TextInteractionFlag.LinksAccessibleByMouse)
        self._add(line)
        return line

    def call_started(self, event: FunctionCalled) -> None:
        self._end_stream()
        row = CallRow(event.name, event.arguments, event.description)
        self._calls.append(row)
        self._add(row)

    def call_returned(self, event: FunctionReturned) -> None:
        open_rows = [row for row in self._calls if row.summary == "…"]
        if open_rows:
            shown = shown_result(event.name, event.result)
            open_rows[-1].set_result(event.ok, event.summary, shown, event.trace)
        else:  # malformed output: no call row was opened for it
            self.add_notice(f"The assistant's output was not a valid call: {event.result}")

    def turn_done(self) -> None:
        self._end_stream()

    def _end_stream(self) -> None:
        if self._reply is not None and self._reply.text:
            self._reply.set_text(self._reply.text + "\n\n*(not finished)*")
        self._reply = None

    def restore(self, hits: list[MessageHit], proposals: Sequence[Proposal] = ()) -> None:
        """Show the end of the stored conversation, as it looked when it was written (in place of
        whatever is shown: after messages were deleted, the chat shows what is left), with what
        the person decided on each proposal a message led to (``proposals``: the newest)."""
        remove_widgets(self.messages, keep=[self.empty])
        self._reply = None
        self._calls = []
        self._proposals = {}
        self.empty.setVisible(not hits)
        caused: dict[str, list[Proposal]] = {}
        for proposal in sorted(proposals, key=lambda p: p.id):
            if proposal.cause_kind == "message" and proposal.cause_ref:
                caused.setdefault(proposal.cause_ref, []).append(proposal)
        row: CallRow | None = None
        said = ""  # the person's last message: what a memory step's proposals came from
        for hit in hits:
            if hit.role == "user":
                said = str(hit.id)
            if hit.role in ("user", "assistant"):
                self.add_message(hit.role, hit.text)
            elif hit.role == "function_call":
                stored = read_call(hit.text)
                if stored is None:
                    row = CallRow("(invalid)", {}, "wrote something that was not a valid call")
                else:
                    name, arguments = stored.name, stored.arguments
                    row = CallRow(name, arguments, describe_call(name, arguments))
                self._add(row)
            elif hit.name == NOTICE:  # why a turn stopped, as it was said at the time
                self.add_notice(hit.text, error=True)
            elif hit.name == CITE:
                cited = read_citations(hit.text)
                if cited is not None:  # a damaged row hides its sources, never the conversation
                    self.add_sources(cited)
            elif hit.role == "function_result" and row is not None:
                # What it told the model then (a proposal "waits" in it even once decided): a
                # memory step is shown by what it kept from the message, not by that.
                summary = {RECALL: RECALL_SUMMARY, REMEMBER: REMEMBERED}.get(
                    hit.name or "", one_line(hit.text, 60)
                )
                row.set_result(result_ok(hit.text), summary, shown_result(hit.name, hit.text))
                for proposal in caused.pop(said, []) if hit.name == REMEMBER else []:
                    self.add_proposal_notice(proposal.id, proposal.target, row)
                    status = "withdrawn" if proposal.withdrawn else proposal.status
                    self.decided(proposal.id, status)
                row = None
        if self.queued is not None:  # still waiting for the model: it stays last
            self.add_message("user", self.queued)

    def bubbles(self) -> list[MessageBubble]:
        return [w for w in widgets_in(self.messages) if isinstance(w, MessageBubble)]

    # -- scrolling: follow new content unless the user scrolled up to read ----------------------

    def _is_at_bottom(self) -> bool:
        bar = self.scroll_area.verticalScrollBar()
        return bar.value() >= bar.maximum() - 8

    def _remember_position(self) -> None:
        self._at_bottom = self._is_at_bottom()

    def _follow(self, _minimum: int, maximum: int) -> None:
        if self._at_bottom:
            self.scroll_area.verticalScrollBar().setValue(maximum)

    # -- input ---------------------------------------------------------------------------------

    def set_ready(self, ready: bool) -> None:
        """Whether a model is loaded, so that a message goes to it at once; a message sent
        before then is sent now."""
        self.ready = ready
        if ready and self.queued is not None:
            text, self.queued = self.queued, None
            self.set_waiting("")
            self.send_requested.emit(text)
        self._update_button()

    def set_busy(self, busy: bool) -> None:
        self.busy = busy
        self.replied = False
        if busy:
            self.set_waiting("Searching memory…")
        else:
            self.turn_done()
            self.set_waiting("")
        self._update_button()

    def step_started(self) -> None:
        if self.busy and not self.replied and self._reply is None:
            self.set_waiting("Thinking…")

    @property
    def can_stop(self) -> bool:
        """A reply is being written (once it is shown, the button sends again)."""
        return self.busy and not self.replied

    def _update_button(self) -> None:
        self.send_button.setText("Stop" if self.can_stop else "Send")
        self.send_button.setEnabled(self.can_stop or self.queued is None)

    def _send_or_stop(self) -> None:
        if self.can_stop:
            self.send_button.setEnabled(False)
            self.send_button.setText("Stopping…")
            self.stop_requested.emit()
        else:
            self._send()

    def _send(self) -> None:
        text = self.input.toPlainText().strip()
        if not text or self.can_stop or self.queued is not None:
            return  # while a reply is written, Enter does not send; once it shows, it does
        self.input.clear()
        if forget.requested(text):  # "forget my passport number": for the person, not the model
            self.add_notice(f"“{text}”: what would be forgotten is shown for you to decide.")
            self.forget_topic_requested.emit(forget.requested(text) or "")
            return
        self.add_message("user", text)
        self._at_bottom = True
        if self.ready:
            self.send_requested.emit(text)
            return
        self.queued = text  # the person need not wait for the model to start typing
        self.set_waiting("Sent as soon as the model is ready…")
        self._update_button()

    def carry_over(self, sent: str | None, draft: str, cursor: int) -> None:
        """Take what the person wrote in the window shown while memory opened: the message
        they sent there (sent as if sent here) and what they were still typing."""
        if sent:
            self.input.setPlainText(sent)
            self._send()
        self.input.setPlainText(draft)
        text_cursor = self.input.textCursor()
        text_cursor.setPosition(min(cursor, len(draft)))
        self.input.setTextCursor(text_cursor)
        if sent or draft:  # the person was typing: they go on where they were
            self.input.setFocus()

    def _search(self) -> None:
        query = self.search.text().strip()
        if query:
            self.search_requested.emit(query)
