"""People & things: what knowledge memory holds about each person, place and thing.

The list on the left holds every entity with its number of current facts; the right side shows
the chosen one's current facts, to edit, retract or add to, and its whole history, superseded and
retracted facts struck through, each with its dates and the message it came from. Changes the
model proposes wait in the chat's proposal panel, with core-memory edits.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QInputDialog,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from desktop import ui
from desktop.assistant_memory import AssistantMemory, on_this_computer
from desktop.forget_dialog import ask_to_forget
from desktop.sources import from_message
from desktop.threads import KNOWLEDGE, PROPOSALS, Tasks
from desktop.ui import cell, label, ok_cancel, table
from engine import forget
from engine.ingest.facts import propose_facts_from
from engine.memory.knowledge import (
    USER,
    Conflict,
    Fact,
    fact_sentence,
    relation_words,
    said_to_person,
)
from engine.memory.proposals import Proposal
from engine.mnemo import Mnemo

COMMON_RELATIONS = ["lives_in", "works_at", "birthday", "job_title", "sister", "brother", "likes"]


def fact_source(mnemo: AssistantMemory, fact: Fact) -> str:
    """Where a fact came from, for a person: "you said: “I live in Porto”"."""
    who = {"user": "you", "model": "the assistant", "document": "a document"}.get(
        fact.asserted_by, fact.asserted_by
    )
    if fact.source_kind == "message" and fact.source_ref and fact.source_ref.isdigit():
        return from_message(mnemo, int(fact.source_ref))
    if fact.source_kind == "document" and fact.source_ref:
        return f"{who}: {fact.source_ref}"
    return "you, by hand" if fact.source_kind == "user" else who


class AddFactDialog(QDialog):
    def __init__(self, parent: QWidget, subject: str) -> None:
        super().__init__(parent)
        self.setWindowTitle("Add a fact")
        form = QFormLayout(self)
        self.subject = QLineEdit(subject)
        self.relation = QComboBox()
        self.relation.setEditable(True)
        self.relation.addItems(COMMON_RELATIONS)
        self.value = QLineEdit()
        self.value.setPlaceholderText("Lyon, Lisbon City Council, 12 May…")
        self.since = QLineEdit()
        self.since.setPlaceholderText("YYYY-MM-DD (optional)")
        form.addRow("Who or what", self.subject)
        form.addRow("Relation", self.relation)
        form.addRow("Value", self.value)
        form.addRow("Since", self.since)
        form.addRow(ok_cancel(self))


class KnowledgePage(QWidget):
    """Refreshes itself when ``tasks.changed`` says knowledge changed; its own edits run as
    tasks that announce it."""

    def __init__(self, mnemo: AssistantMemory, tasks: Tasks) -> None:
        super().__init__()
        self._mnemo = mnemo
        self._tasks = tasks
        tasks.changed.connect(lambda kind: self.refresh() if kind == KNOWLEDGE else None)
        layout = QVBoxLayout(self)
        layout.addWidget(label("People & things", "title"))
        layout.addWidget(
            label(
                "What Mnemo knows about the people, places and things in your life. A change "
                "the assistant proposes waits for you in the chat's proposal panel.",
                "muted",
            )
        )
        splitter = QSplitter(Qt.Orientation.Horizontal)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Find a name…")
        self.filter.textChanged.connect(self._filter)
        self.entities = QListWidget()
        self.entities.currentItemChanged.connect(lambda *_: self._show_current())
        add = QPushButton("Add a fact…")
        add.clicked.connect(self._add)
        from_file = QPushButton("Facts from a file…")
        from_file.setToolTip(
            "Read a document for facts about people, places and things; each waits for you"
        )
        from_file.clicked.connect(self._from_file)
        if not isinstance(mnemo, Mnemo):  # a server's: the file is here, its model there
            from_file.setEnabled(False)
            from_file.setToolTip("Drop the file on the window instead: the server reads it")
        self.notice = label("", "muted")
        left_layout.addWidget(self.filter)
        left_layout.addWidget(self.entities, 1)
        left_layout.addWidget(add)
        left_layout.addWidget(from_file)
        left_layout.addWidget(self.notice)

        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        self.heading = label("", "title")
        self.facts = table(["Relation", "Value", "Since", "Came from"])
        self.facts.itemSelectionChanged.connect(self._enable)
        buttons = QHBoxLayout()
        self.edit_button = QPushButton("Edit…")
        self.retract_button = QPushButton("Retract")
        self.merge_button = QPushButton("Merge with…")
        self.forget_fact_button = QPushButton("Forget…")
        self.forget_fact_button.setToolTip("Remove this fact for good, history and all")
        self.forget_entity_button = QPushButton("Forget everything about…")
        self.forget_entity_button.setToolTip(
            "Remove this person or thing, its facts and its names wherever written, for good"
        )
        self.edit_button.clicked.connect(self._edit)
        self.retract_button.clicked.connect(self._retract)
        self.merge_button.clicked.connect(self._merge)
        self.forget_fact_button.clicked.connect(self._forget_fact)
        self.forget_entity_button.clicked.connect(self._forget_entity)
        for button in (
            self.edit_button,
            self.retract_button,
            self.merge_button,
            self.forget_fact_button,
            self.forget_entity_button,
        ):
            buttons.addWidget(button)
        buttons.addStretch(1)
        self.error = label("", "notice_error")
        self.error.setVisible(False)
        self.history = label()
        self.history.setTextFormat(Qt.TextFormat.RichText)
        self.history.setAlignment(Qt.AlignmentFlag.AlignTop)
        right_layout.addWidget(self.heading)
        right_layout.addWidget(self.facts, 2)
        right_layout.addLayout(buttons)
        right_layout.addWidget(self.error)
        right_layout.addWidget(label("History", "title"))
        right_layout.addWidget(self.history, 1)
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setSizes([260, 640])
        layout.addWidget(splitter, 1)
        self._shown: list[Fact] = []
        self._enable()

    # -- reading (a few SQLite rows by key: on the GUI thread) -------------------------------

    def refresh(self) -> None:
        chosen = self.current_entity()
        self.entities.blockSignals(True)
        self.entities.clear()
        entities = self._mnemo.knowledge.entities()
        # Those with no current fact (Ghent, after the move) come last, greyed: their history
        # stays to read, but they no longer say "Ghent · 0 facts" among the rest.
        for entity, count in sorted(entities, key=lambda pair: pair[1] == 0):
            shown = "You" if entity.name == USER else entity.name
            facts = f"{count} fact{'s' * (count != 1)}" if count else "no current facts"
            item = QListWidgetItem(f"{shown} · {facts}")
            if not count:
                item.setForeground(self.palette().placeholderText())
            item.setData(Qt.ItemDataRole.UserRole, entity.name)
            item.setToolTip(
                f"{entity.kind}"
                + (f"; also called {', '.join(entity.aliases)}" if entity.aliases else "")
            )
            self.entities.addItem(item)
            if entity.name == chosen:
                self.entities.setCurrentItem(item)
        self.entities.blockSignals(False)
        if self.entities.currentItem() is None and self.entities.count():
            self.entities.setCurrentRow(0)
        self._filter(self.filter.text())
        self._show_current()

    def current_entity(self) -> str | None:
        item = self.entities.currentItem()
        return item.data(Qt.ItemDataRole.UserRole) if item is not None else None

    def _filter(self, text: str) -> None:
        needle = text.strip().casefold()
        for row in range(self.entities.count()):
            item = self.entities.item(row)
            item.setHidden(bool(needle) and needle not in item.text().casefold())

    def _show_current(self) -> None:
        name = self.current_entity()
        self.error.setVisible(False)
        self.facts.setRowCount(0)
        self._shown = []
        if name is None:
            self.heading.setText("Nothing known yet")
            self.history.setText(
                "Tell the assistant where you live or work, or add a fact by hand."
            )
            self._enable()
            return
        knowledge = self._mnemo.knowledge
        self.heading.setText("You" if name == USER else name)
        self._shown = list(knowledge.facts(name, limit=200))
        for fact in self._shown:
            row = self.facts.rowCount()
            self.facts.insertRow(row)
            relation, value = relation_words(fact.predicate), fact.object
            if fact.subject != name:  # someone else's, with this one as its value:
                # "Your sister is | Ines", "Tom works at | Fabrikam" (not "User sister | Ines")
                sentence = said_to_person(fact_sentence(fact.subject, fact.predicate, "\0"))
                relation = sentence.split("\0")[0].strip()
            since = f"{fact.valid_from:%Y-%m-%d}" if fact.valid_from else ""
            for column, text in enumerate((relation, value, since, fact_source(self._mnemo, fact))):
                self.facts.setItem(row, column, cell(text))
        self.facts.resizeColumnsToContents()
        self.history.setText(self._history_html(knowledge.history(name)))
        self._enable()

    def _history_html(self, facts: list[Fact]) -> str:
        lines = []
        for fact in reversed(facts):  # newest first
            text = html.escape(fact.to_person())
            if fact.status != "current":
                text = f"<s>{text}</s> <i>({fact.status})</i>"
            held = ""
            if fact.valid_from or fact.valid_to:
                start = f"from {fact.valid_from:%Y-%m-%d} " if fact.valid_from else ""
                end = f"until {fact.valid_to:%Y-%m-%d}" if fact.valid_to else "until now"
                held = f" · held {start}{end}"
            source = html.escape(fact_source(self._mnemo, fact))
            lines.append(
                f"{text}<br><span style='color:#6b7280'>learned {fact.learned_at:%Y-%m-%d}"
                f"{held} · {source}</span>"
            )
        return "<br><br>".join(lines) or "No facts yet."

    def _selected(self) -> Fact | None:
        rows = {index.row() for index in self.facts.selectedIndexes()}
        return self._shown[min(rows)] if rows else None

    def _enable(self) -> None:
        chosen = self._selected() is not None
        self.edit_button.setEnabled(chosen)
        self.retract_button.setEnabled(chosen)
        self.forget_fact_button.setEnabled(chosen)
        self.merge_button.setEnabled(self.current_entity() is not None)
        self.forget_entity_button.setEnabled(self.current_entity() not in (None, USER))

    # -- changing (as tasks) -------------------------------------------------------------------

    def _forget_fact(self) -> None:
        fact = self._selected()
        if fact is not None:
            ask_to_forget(
                self,
                self._mnemo,
                self._tasks,
                lambda: forget.plan_item(
                    on_this_computer(self._mnemo, "Forgetting"), "fact", str(fact.id)
                ),
                self._said,
            )

    def _forget_entity(self) -> None:
        name = self.current_entity()
        if name is not None:
            ask_to_forget(
                self,
                self._mnemo,
                self._tasks,
                lambda: forget.plan_entity(on_this_computer(self._mnemo, "Forgetting"), name),
                self._said,
            )

    def _said(self, sentence: str) -> None:
        self.notice.setText(sentence)

    def _run(self, work: Callable[[], Any], done: Callable[[Any], None] | None = None) -> None:
        def failed(message: str) -> None:
            self.error.setText(message)
            self.error.setVisible(True)

        self._tasks.submit(work, done, failed, changes=(KNOWLEDGE, PROPOSALS))

    def _edit(self) -> None:
        fact = self._selected()
        if fact is None:
            return
        value, accepted = QInputDialog.getText(
            self,
            "Edit fact",
            f"{fact.subject} {relation_words(fact.predicate)}… (the old value stays in history)",
            text=fact.object,
        )
        if accepted and value.strip() and value.strip() != fact.object:
            self._run(lambda: self._mnemo.knowledge.correct(fact.id, value.strip()))

    def _retract(self) -> None:
        fact = self._selected()
        if fact is not None and ui.confirm(
            self,
            "Retract fact",
            f"Retract “{fact.sentence()}”? The assistant will no longer use it; it stays in the "
            "history.",
        ):
            self._run(lambda: self._mnemo.knowledge.retract(fact.id))

    def _merge(self) -> None:
        keep = self.current_entity()
        if keep is None:
            return
        knowledge = self._mnemo.knowledge
        close = [entity.name for entity, _ in knowledge.similar(keep, 10) if entity.name != keep]
        others = [entity.name for entity, _ in knowledge.entities() if entity.name != keep]
        choices = close + [name for name in others if name not in close]
        if not choices:
            self.error.setText("There is no one and nothing else to merge with.")
            self.error.setVisible(True)
            return
        other, accepted = QInputDialog.getItem(
            self, "Merge", f"Which entry is the same as {keep}?", choices, 0, False
        )
        if accepted and ui.confirm(
            self,
            "Merge",
            f"Merge “{other}” into “{keep}”? Its facts move over and its name becomes another "
            f"name for {keep}.",
        ):
            self._run(lambda: knowledge.merge(keep, other))

    def _from_file(self) -> None:
        path, _filter = QFileDialog.getOpenFileName(self, "Facts from a file")
        if path:
            self.extract_from(Path(path))

    def extract_from(self, path: Path) -> None:
        """Propose the facts a document states; they wait in the chat's proposal panel."""
        self.notice.setText(f"Reading {path.name} for facts…")

        def done(result: tuple[list[Proposal], int]) -> None:
            proposals, more = result
            if not proposals:
                self.notice.setText(f"No new facts were found in {path.name}.")
                return
            self.notice.setText(
                f"{len(proposals)} facts from {path.name} wait for you in the chat's proposal "
                "panel"
                + (f" ({more} more were found; extract again after reviewing)." if more else ".")
            )

        def work() -> tuple[list[Proposal], int]:
            local = on_this_computer(self._mnemo, "Reading a file for facts")
            return propose_facts_from(local, path)

        self._run(work, done)

    def _add(self) -> None:
        dialog = AddFactDialog(self, self.current_entity() or USER)
        if not dialog.exec():
            return
        subject, relation = dialog.subject.text().strip(), dialog.relation.currentText().strip()
        value, since = dialog.value.text().strip(), dialog.since.text().strip() or None
        knowledge = self._mnemo.knowledge

        def add(supersede: bool = False) -> Fact | Conflict:
            return knowledge.add(subject, relation, value, valid_from=since, supersede=supersede)

        def done(result: Fact | Conflict) -> None:
            if isinstance(result, Conflict):
                current = "; ".join(fact.sentence() for fact in result.current)
                if ui.confirm(
                    self,
                    "Replace a fact",
                    f"Mnemo knows: {current}. Replace it with “{value}”? The old fact stays in "
                    "the history.",
                ):
                    self._run(lambda: add(supersede=True))

        self._run(add, done)
