"""The model's proposed memory changes (core-memory edits, facts for knowledge memory, changes
to archival notes), each with a diff, its source and Approve/Edit/Reject.

A tidy pass's changes (``engine.agent.tidying``) come as one batch under a heading that says
what it would do, with Approve all; what was approved of the newest batch is listed below the
cards, each change with Undo.

The panel sits beside the chat, so the conversation goes on while a proposal waits.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from desktop.assistant_memory import AssistantMemory, on_this_computer
from desktop.sources import from_message, note_as_said
from desktop.threads import CORE, KNOWLEDGE, PASSAGES, PROPOSALS, Tasks
from desktop.ui import diff_html, label, remove_widgets, widgets_in
from engine.agent.tidying import batch_summary
from engine.errors import MnemoError
from engine.memory.knowledge import USER_KEY, name_key, said_to_person
from engine.memory.proposals import Proposal

# How often the panel looks for proposals another program made (`mnemo mcp`), in ms.
WATCH_MS = 2000


TIDY_TITLES = {
    "merge": "A note that says the same as another",
    "history": "A note that is out of date",
    "musing": "A musing kept as a note",
    "retract": "A fact that came from a musing or question",
}


def title(proposal: Proposal) -> str:
    """What the assistant (or another program, over MCP, or a tidy pass) wants, in the card's
    heading."""
    if proposal.kind == "tidy":
        return TIDY_TITLES[proposal.change]
    if proposal.batch and proposal.kind == "core":
        return f"Bring the “{proposal.label}” block up to date: short, with current values"
    who = proposal.cause_ref if proposal.cause_kind == "mcp" else "The assistant"
    who = (who or "")[:1].upper() + (who or "")[1:]  # "An MCP program calling itself …"
    if proposal.kind == "note":
        return f"{who} wants to keep a note in archival memory"
    if proposal.kind == "fact":
        about = "you" if name_key(proposal.label) == USER_KEY else f"“{proposal.label}”"
        if proposal.old_content:
            return f"{who} learned something new about {about}"
        return f"{who} wants to remember a fact about {about}"
    if proposal.kind == "passage":
        verb = "delete" if not proposal.new_content else "correct"
        return f"The assistant wants to {verb} a note in archival memory"
    if proposal.kind == "block":
        return f"An imported file wants to add the block “{proposal.label}”"
    verb = "add to" if proposal.action == "append" else "change"
    return f"{who} wants to {verb} “{proposal.label}”"


# What approving or rejecting a proposal of each kind changes, for the pages that show it.
CHANGES = {
    "core": (PROPOSALS, CORE),
    "fact": (PROPOSALS, KNOWLEDGE),
    "passage": (PROPOSALS, PASSAGES),
    "block": (PROPOSALS, CORE),
    "note": (PROPOSALS, PASSAGES),
    "tidy": (PROPOSALS, PASSAGES, KNOWLEDGE),
}
ALL_CHANGES = (PROPOSALS, CORE, KNOWLEDGE, PASSAGES)


def tidy_text(proposal: Proposal) -> str:
    """A tidy change said to the person: the note in their words, and what would become of
    it."""
    old, new = proposal.old_content or "", proposal.new_content
    because = proposal.payload.get("because") or ""
    if because.split(" ", 1)[0] in ("You", "Your", "You're"):  # inside a sentence
        because = because[:1].lower() + because[1:]
    if proposal.change == "merge":
        again = f"says again that {because}" if because else "says the same"
        return (
            f"{note_as_said(old)} It {again}, as the older note does: {note_as_said(new)} "
            "Merging keeps the older one; the message stays in your conversations."
        )
    if proposal.change == "history":
        now = f" Now {because}." if because else ""
        return (
            f"{note_as_said(old)}{now} It would be kept as history: found for questions about "
            "the past, never given as what holds now."
        )
    if proposal.change == "retract":
        return (
            f"“{said_to_person(old)}” was learned from a musing or question; it would no "
            "longer be a fact about you."
        )
    return (
        f"{note_as_said(old)} This was a musing, not a fact about you: the note would go "
        "(the message stays in your conversations)."
    )


class ProposalCard(QFrame):
    """Signals:
    decided(int, str, object): proposal id, "approve" or "reject", the edited text or None.
    """

    decided = Signal(int, str, object)

    def __init__(
        self,
        proposal: Proposal,
        before: str | None,
        after: str | None,
        problem: str,
        cause: str = "",
    ):
        """``cause``: the message it was proposed after, in words ("you said: “…”")."""
        super().__init__()
        self.proposal = proposal
        self.setObjectName("proposal")
        layout = QVBoxLayout(self)
        layout.addWidget(label(title(proposal), "title"))
        when = proposal.created_at.strftime("%Y-%m-%d %H:%M")
        if proposal.cause_kind == "mcp":
            source = f"Sent by {proposal.cause_ref}, {when}"
        elif proposal.batch:
            source = f"Found when tidying your memory, {when}"
        else:
            source = f"Proposed during the conversation, {when}"
            if cause:
                source += f", after {cause}"
        layout.addWidget(label(source, "muted"))
        if not proposal.trusted:
            whose = (
                "another program's text"
                if proposal.cause_kind == "mcp"
                else "text from documents or searches"
            )
            layout.addWidget(
                label(
                    f"Caution: {proposal.untrusted_reason}; {whose} can carry instructions you "
                    "did not give. Check it.",
                    "caution",
                )
            )
        self.diff = label()
        self.diff.setTextFormat(Qt.TextFormat.RichText)
        if proposal.kind == "tidy" and after is not None:
            self.diff.setTextFormat(Qt.TextFormat.PlainText)
            self.diff.setText(tidy_text(proposal))
        elif before is not None and after is not None:
            self.diff.setText(diff_html(before, after))
        else:
            self.diff.setText(f"It no longer applies: {problem}")
        layout.addWidget(self.diff)
        what = (
            "The value to keep:"
            if proposal.kind == "fact"
            else f"Text of the new {proposal.label} block:"
            if proposal.kind == "block"
            else f"Text to add to {proposal.label}:"
            if proposal.action == "append"
            else f"Text to put in place of “{proposal.old_content}”:"
        )
        self.editor_label = label(what, "muted")
        self.editor = QPlainTextEdit(proposal.new_content)
        self.editor.setMinimumHeight(70)
        self.editing = False
        for widget in (self.editor_label, self.editor):
            widget.setVisible(False)
            layout.addWidget(widget)

        buttons = QHBoxLayout()
        self.approve_button = QPushButton("Approve")
        self.edit_button = QPushButton("Edit")
        self.reject_button = QPushButton("Reject")
        self.approve_button.setEnabled(after is not None)
        self.edit_button.setEnabled(after is not None and proposal.kind != "tidy")
        for button in (self.approve_button, self.edit_button, self.reject_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        self.error = label("", "notice_error")
        self.error.setVisible(False)
        layout.addWidget(self.error)
        self.approve_button.clicked.connect(self._approve)
        self.edit_button.clicked.connect(self._toggle_edit)
        self.reject_button.clicked.connect(
            lambda: self.decided.emit(self.proposal.id, "reject", None)
        )

    def _approve(self) -> None:
        edited = self.editor.toPlainText().strip() if self.editing else None
        self.decided.emit(self.proposal.id, "approve", edited)

    def _toggle_edit(self) -> None:
        self.editing = editing = not self.editing
        self.editor.setVisible(editing)
        self.editor_label.setVisible(editing)
        self.diff.setVisible(not editing)
        self.edit_button.setText("Show the change" if editing else "Edit")
        self.approve_button.setText("Approve my text" if editing else "Approve")

    def show_error(self, message: str) -> None:
        self.error.setText(message)
        self.error.setVisible(True)


class ProposalPanel(QWidget):
    """The proposals waiting for the user; it refreshes itself when ``tasks.changed`` says
    proposals changed, and a decision announces proposals and core memory changed.

    Signals:
        count_changed(int): how many proposals wait.
    """

    count_changed = Signal(int)

    def __init__(self, mnemo: AssistantMemory, tasks: Tasks) -> None:
        super().__init__()
        self._mnemo = mnemo
        self._tasks = tasks
        tasks.changed.connect(lambda kind: self.refresh() if kind == PROPOSALS else None)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.heading = label("", "title")
        layout.addWidget(self.heading)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setMinimumWidth(320)
        container = QWidget()
        self.cards = QVBoxLayout(container)
        self.cards.addStretch(1)
        scroll.setWidget(container)
        layout.addWidget(scroll, 1)
        self.count = 0
        self.tidied = False  # the newest tidy batch has changes to undo (shown below the cards)
        self._shown: list[int] = []
        # Another program may propose while the window is open (`mnemo mcp`): look now and then.
        self._watch = QTimer(self)
        self._watch.timeout.connect(self._look_for_new)
        self._watch.start(WATCH_MS)

    def _look_for_new(self) -> None:
        try:
            pending = [proposal.id for proposal in self._mnemo.proposals.pending()]
        except Exception:  # a server away, a locked database: the next look tries again
            return
        if pending != self._shown:
            self.refresh()

    def refresh(self) -> None:
        """Re-read the pending proposals (a quick SQLite read) and rebuild the cards: a tidy
        batch first, under its heading, then the others; then what was tidied, to undo."""
        remove_widgets(self.cards)
        pending = self._mnemo.proposals.pending()
        batches: dict[str, list[Proposal]] = {}
        for proposal in pending:
            if proposal.batch:
                batches.setdefault(proposal.batch, []).append(proposal)
        shown: list[QWidget] = []
        for batch, proposals in batches.items():
            shown.append(TidyBatchHeading(batch, proposals, self._approve_all))
            shown += [self._card(proposal) for proposal in proposals]
        shown += [self._card(proposal) for proposal in pending if not proposal.batch]
        tidied = self._tidied()
        self.tidied = bool(tidied)
        shown += tidied
        for position, widget in enumerate(shown):
            self.cards.insertWidget(position, widget)
        self.count = len(pending)
        self._shown = [proposal.id for proposal in pending]
        self.heading.setText(
            f"{self.count} memory change{'s' if self.count != 1 else ''} waiting for you"
            if self.count
            else "No memory changes are waiting."
        )
        self.count_changed.emit(self.count)

    def _card(self, proposal: Proposal) -> ProposalCard:
        cause = ""
        if proposal.cause_kind == "message" and (proposal.cause_ref or "").isdigit():
            cause = from_message(self._mnemo, int(proposal.cause_ref or 0))
        try:
            before, after = self._mnemo.proposals.preview(proposal.id)
            card = ProposalCard(proposal, before, after, "", cause)
        except MnemoError as error:
            card = ProposalCard(proposal, None, None, str(error), cause)
        card.decided.connect(self._decide)
        return card

    def _tidied(self) -> list[QWidget]:
        """The newest tidy batch's approved changes, each with Undo."""
        try:
            batch = self._mnemo.proposals.latest_batch()
            done = [
                p
                for p in self._mnemo.proposals.batch(batch or "")
                if p.status == "approved" and not p.undone
            ]
        except Exception:  # an assistant on a server: its tidying is done there
            return []
        if not done:
            return []
        rows: list[QWidget] = [label(f"{batch_summary(done)} Undo any change:", "muted")]
        for proposal in done:
            row = TidyDoneRow(proposal)
            row.undo.connect(self._undo)
            rows.append(row)
        return rows

    def card(self, proposal_id: int) -> ProposalCard:
        for widget in widgets_in(self.cards):
            if isinstance(widget, ProposalCard) and widget.proposal.id == proposal_id:
                return widget
        raise KeyError(proposal_id)

    def batch_heading(self) -> TidyBatchHeading:
        return next(w for w in widgets_in(self.cards) if isinstance(w, TidyBatchHeading))

    def done_rows(self) -> list[TidyDoneRow]:
        return [w for w in widgets_in(self.cards) if isinstance(w, TidyDoneRow)]

    def _approve_all(self, ids: list[int]) -> None:
        store = self._mnemo.proposals

        def work() -> None:
            for proposal_id in ids:
                try:
                    store.approve(proposal_id)
                except MnemoError:  # no longer applies: its card stays, saying why
                    continue

        self._tasks.submit(work, changes=ALL_CHANGES)

    def _undo(self, proposal_id: int) -> None:
        memory = self._mnemo

        def work() -> Proposal:
            return on_this_computer(memory, "Undoing a tidy change").proposals.undo(proposal_id)

        def failed(message: str) -> None:
            for row in self.done_rows():
                if row.proposal.id == proposal_id:
                    row.show_error(message)

        self._tasks.submit(work, failed=failed, changes=ALL_CHANGES)

    def _decide(self, proposal_id: int, decision: str, text: str | None) -> None:
        card = self.card(proposal_id)
        card.setEnabled(False)
        store = self._mnemo.proposals

        def work() -> Proposal:
            if decision == "approve":
                return store.approve(proposal_id, text)
            return store.reject(proposal_id)

        def failed(message: str) -> None:
            card.setEnabled(True)
            card.show_error(message)

        self._tasks.submit(work, failed=failed, changes=CHANGES[card.proposal.kind])


class TidyBatchHeading(QFrame):
    """A tidy pass's batch: what it would change, in one sentence, and Approve all."""

    def __init__(
        self, batch: str, proposals: list[Proposal], approve_all: Callable[[list[int]], None]
    ) -> None:
        super().__init__()
        self.setObjectName("proposal")
        self.batch = batch
        layout = QVBoxLayout(self)
        layout.addWidget(label(batch_summary(proposals), "title"))
        layout.addWidget(
            label(
                "Nothing has changed yet. Approve all, or decide each change below; an approved "
                "change can be undone.",
                "muted",
            )
        )
        buttons = QHBoxLayout()
        self.approve_all = QPushButton(f"Approve all {len(proposals)}")
        self.approve_all.clicked.connect(lambda: approve_all([p.id for p in proposals]))
        buttons.addWidget(self.approve_all)
        buttons.addStretch(1)
        layout.addLayout(buttons)


class TidyDoneRow(QFrame):
    """An approved tidy change, said in a line, with Undo.

    Signals:
        undo(int): the proposal's id.
    """

    undo = Signal(int)

    def __init__(self, proposal: Proposal) -> None:
        super().__init__()
        self.proposal = proposal
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        line = QHBoxLayout()
        self.text = label(done_line(proposal))
        self.text.setToolTip(tidy_text(proposal) if proposal.kind == "tidy" else "")
        self.button = QPushButton("Undo")
        self.button.clicked.connect(lambda: self.undo.emit(proposal.id))
        line.addWidget(self.text, 1)
        line.addWidget(self.button)
        layout.addLayout(line)
        self.error = label("", "notice_error")
        self.error.setVisible(False)
        layout.addWidget(self.error)

    def show_error(self, message: str) -> None:
        self.error.setText(message)
        self.error.setVisible(True)


def done_line(proposal: Proposal) -> str:
    """An approved tidy change in a short line: "Merged: You said: “…”"."""
    if proposal.kind == "core":
        return "The human block was brought up to date."
    if proposal.kind == "fact":
        return f"Updated: {proposal.fact_to_person(proposal.applied_content)}."
    what = {"merge": "Merged", "history": "Kept as history", "musing": "Removed"}.get(
        proposal.change, "Removed"
    )
    said = (
        said_to_person(proposal.old_content or "")
        if proposal.change == "retract"
        else note_as_said(proposal.old_content or "")
    )
    return f"{what}: {said}"
