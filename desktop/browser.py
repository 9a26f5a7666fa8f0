"""The memory browser: archival passages (search, filter, correct, delete) and past conversations
(search by words and by date)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import Any

from PySide6.QtCore import QDate, QDateTime
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDateEdit,
    QDateTimeEdit,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QPlainTextEdit,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from desktop import ui
from desktop.assistant_memory import AssistantMemory, on_this_computer
from desktop.forget_dialog import ask_to_forget
from desktop.sources import note_as_said, passage_source
from desktop.threads import MESSAGES, PASSAGES, Tasks
from desktop.ui import cell, label, table
from engine import forget
from engine.memory.archival import Passage
from engine.memory.recall import MessageHit
from engine.memory.search import Page, hit_line
from engine.memory.snapshots import BULK_DELETE
from engine.text import one_line

BROWSE_LIMIT = 200
ORIGINS = {
    "All sources": None,
    "Documents": "document",
    "Saved by the assistant": "model",
    "Added by you": "user",
}
ROLES = {"user": "you", "assistant": "Mnemo", "function_call": "call", "function_result": "result"}


def delete_in_background(
    mnemo: AssistantMemory,
    tasks: Tasks,
    status: QLabel,
    delete: Callable[[Any], None],
    keys: list[Any],
    noun: str,
    refresh: Callable[[str], None],
    kind: str,
) -> None:
    """Delete items one by one on the tasks thread (after a snapshot, when there are more
    than ``BULK_DELETE``), then show the list again with a note, and announce that ``kind``
    changed."""

    def work() -> int:
        if len(keys) > BULK_DELETE:
            mnemo.snapshot_before(f"deleting {len(keys)} {noun}s")
        for key in keys:
            delete(key)
        return len(keys)

    tasks.submit(
        work,
        lambda count: refresh(f"Deleted {count} {noun}{'s' if count != 1 else ''}."),
        status.setText,
        changes=(kind,),
    )


class PassageDialog(QDialog):
    """Correct a passage's text or tags."""

    def __init__(self, parent: QWidget, passage: Passage, source: str) -> None:
        super().__init__(parent)
        self.setWindowTitle("Edit passage")
        self.resize(560, 360)
        form = QFormLayout(self)
        form.addRow(label(f"From: {source}", "muted"))
        self.text = QPlainTextEdit(passage.text)
        self.tags = QLineEdit(", ".join(passage.tags))
        self.tags.setPlaceholderText("comma-separated")
        form.addRow("Text", self.text)
        form.addRow("Tags", self.tags)
        # A note can stop mattering ("until tonight"); a document's passages leave with the file.
        self.expires = QCheckBox("Leaves search at")
        start = passage.expires_at.astimezone() if passage.expires_at else None
        tomorrow = datetime.now().replace(second=0, microsecond=0) + timedelta(days=1)
        self.expires_at = QDateTimeEdit(
            QDateTime.fromSecsSinceEpoch(int((start or tomorrow).timestamp()))
        )
        self.expires_at.setDisplayFormat("yyyy-MM-dd HH:mm")
        self.expires_at.setCalendarPopup(True)
        self.expires.setChecked(passage.expires_at is not None)
        self.expires_at.setEnabled(passage.expires_at is not None)
        self.expires.toggled.connect(self.expires_at.setEnabled)
        expiry = QHBoxLayout()
        expiry.addWidget(self.expires)
        expiry.addWidget(self.expires_at, 1)
        if passage.origin == "document":
            self.expires.setEnabled(False)
            self.expires.setToolTip("A document's passages leave when the file does.")
        form.addRow("Expiry", expiry)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def values(self) -> tuple[str, list[str], datetime | None]:
        tags = [tag.strip() for tag in self.tags.text().split(",") if tag.strip()]
        expires = None
        if self.expires.isChecked():
            expires = datetime.fromtimestamp(self.expires_at.dateTime().toSecsSinceEpoch())
        return self.text.toPlainText(), tags, expires


class DuplicatesDialog(QDialog):
    """Notes that say the same, one group per row; merging keeps the oldest of each group with
    every tag, and deletes the others."""

    def __init__(self, parent: QWidget, clusters: list[list[Passage]]) -> None:
        super().__init__(parent)
        self.setWindowTitle("Duplicate notes")
        self.resize(640, 380)
        layout = QVBoxLayout(self)
        self.clusters = clusters
        layout.addWidget(
            label(
                f"{len(clusters)} groups of notes say the same (same words, in the same order). "
                "Merging keeps the oldest of each group, with all their tags."
                if clusters
                else "No duplicate notes.",
                "muted",
            )
        )
        self.list = QListWidget()
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        for cluster in clusters:
            self.list.addItem(f"{len(cluster)}×  {one_line(cluster[0].text, 110)}")
        self.list.selectAll()
        layout.addWidget(self.list, 1)
        buttons = QDialogButtonBox()
        self.merge_button = buttons.addButton(
            "Merge selected", QDialogButtonBox.ButtonRole.AcceptRole
        )
        buttons.addButton(QDialogButtonBox.StandardButton.Close)
        self.merge_button.setEnabled(bool(clusters))
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def chosen(self) -> list[list[Passage]]:
        return [self.clusters[index.row()] for index in self.list.selectedIndexes()]


class ArchivalBrowser(QWidget):
    def __init__(self, mnemo: AssistantMemory, tasks: Tasks) -> None:
        super().__init__()
        self._mnemo = mnemo
        self._tasks = tasks
        layout = QVBoxLayout(self)
        filters = QHBoxLayout()
        self.query = QLineEdit()
        self.query.setPlaceholderText("Search archival memory (empty: newest first)")
        self.query.setClearButtonEnabled(True)
        self.origin = QComboBox()
        self.origin.addItems(list(ORIGINS))
        self.source = QLineEdit()
        self.source.setPlaceholderText("file or folder")
        self.tag = QLineEdit()
        self.tag.setPlaceholderText("tag")
        self.tag.setMaximumWidth(120)
        search = QPushButton("Search")
        self.show_expired = QCheckBox("Expired")
        self.show_expired.setToolTip(
            "Passages past their expiry: out of search, kept a week, and restorable"
        )
        filters.addWidget(self.query, 3)
        filters.addWidget(self.origin)
        filters.addWidget(self.source, 2)
        filters.addWidget(self.tag)
        filters.addWidget(self.show_expired)
        filters.addWidget(search)
        layout.addLayout(filters)
        self.status = label("", "muted")
        layout.addWidget(self.status)
        self.table = table(["Passage", "Source", "Tags", "Added", "Expires"])
        self.table.setColumnWidth(1, 240)
        self.table.setColumnWidth(2, 100)
        self.table.setColumnWidth(3, 125)  # "2026-12-01 18:00" whole
        self.table.setColumnWidth(4, 125)
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.doubleClicked.connect(self.edit_selected)
        layout.addWidget(self.table, 1)
        actions = QHBoxLayout()
        self.edit_button = QPushButton("Edit…")
        self.delete_button = QPushButton("Delete")
        self.restore_button = QPushButton("Restore")
        self.restore_button.setToolTip("Keep the selected expired passages for good")
        self.restore_button.setVisible(False)
        self.duplicates_button = QPushButton("Find duplicates…")
        self.duplicates_button.clicked.connect(self.find_duplicates)
        self.forget_button = QPushButton("Forget…")
        self.forget_button.setToolTip("Remove the selected passages for good, from every store")
        self.forget_button.clicked.connect(self.forget_selected)
        actions.addWidget(self.edit_button)
        actions.addWidget(self.delete_button)
        actions.addWidget(self.forget_button)
        actions.addWidget(self.restore_button)
        actions.addWidget(self.duplicates_button)
        actions.addStretch(1)
        self.previous_button = QPushButton("‹ Previous")
        self.next_button = QPushButton("Next ›")
        actions.addWidget(self.previous_button)
        actions.addWidget(self.next_button)
        layout.addLayout(actions)
        self.passages: list[Passage] = []
        self.sources: list[str] = []  # where each came from, in words
        self.page = 1
        self.previous_button.clicked.connect(lambda: self.refresh(self.page - 1))
        self.next_button.clicked.connect(lambda: self.refresh(self.page + 1))

        for field in (self.query, self.source, self.tag):
            field.returnPressed.connect(lambda: self.refresh())
        search.clicked.connect(lambda: self.refresh())
        self.origin.currentIndexChanged.connect(lambda: self.refresh())
        self.show_expired.toggled.connect(lambda: self.refresh())
        self.restore_button.clicked.connect(self.restore_selected)
        self.edit_button.clicked.connect(self.edit_selected)
        self.delete_button.clicked.connect(self.delete_selected)

    def refresh(self, page: int = 1, note: str = "") -> None:
        """Show page ``page`` of the passages matching the search and filters (``note`` goes
        before the count)."""
        query = self.query.text().strip()
        tags = [self.tag.text().strip()] if self.tag.text().strip() else None
        source = self.source.text().strip() or None
        origin: Any = ORIGINS[self.origin.currentText()]
        archival = self._mnemo.archival

        expired = self.show_expired.isChecked()
        self.restore_button.setVisible(expired)

        def work() -> tuple[list[Passage], str, bool]:
            if expired:
                passages = archival.expired(BROWSE_LIMIT)
                status = (
                    f"{len(passages)} expired passages, out of search and purged a week after "
                    "they expire; select one and Restore to keep it."
                    if passages
                    else "No expired passages."
                )
                return passages, f"{note} {status}".strip(), False
            if query:
                found = archival.search(
                    query, BROWSE_LIMIT, page, tags=tags, source=source, origin=origin
                )
                total = found.total
                matches = "1 passage matches" if total == 1 else f"{total} passages match"
                status = f"{matches}, best first; {found.describe()}."
                return (
                    found.hits,
                    " ".join([note, status, *found.notes]).strip(),
                    page < found.pages,
                )
            passages = archival.recent(
                BROWSE_LIMIT, (page - 1) * BROWSE_LIMIT, tags=tags, source=source, origin=origin
            )
            first = (page - 1) * BROWSE_LIMIT + 1
            status = (
                f"Passages {first}–{first + len(passages) - 1}, newest first "
                f"({archival.count()} in archival memory)."
                if passages
                else "No passages here."
            )
            return passages, f"{note} {status}".strip(), len(passages) == BROWSE_LIMIT

        self.page = page
        self.status.setText("Searching…")

        def with_sources() -> tuple[list[Passage], str, bool, list[str]]:
            passages, status, more = work()
            sources = [passage_source(self._mnemo, passage.source) for passage in passages]
            return passages, status, more, sources

        self._tasks.submit(
            with_sources, lambda found: self._show(found, query), self.status.setText
        )

    def _show(self, found: tuple[list[Passage], str, bool, list[str]], query: str) -> None:
        self.passages, status, more, self.sources = found
        self.status.setText(status)
        self.previous_button.setEnabled(self.page > 1)
        self.next_button.setEnabled(more)
        self.table.setRowCount(len(self.passages))
        for row, passage in enumerate(self.passages):
            shown = note_as_said(passage.text)
            self.table.setItem(row, 0, cell(hit_line(shown, query, 160, passage.weak), shown))
            self.table.setItem(row, 1, cell(self.sources[row], passage.source.describe()))
            self.table.setItem(row, 2, cell(", ".join(passage.tags)))
            self.table.setItem(row, 3, cell(passage.created_at.strftime("%Y-%m-%d %H:%M")))
            expires = passage.expires_at.strftime("%Y-%m-%d %H:%M") if passage.expires_at else ""
            self.table.setItem(row, 4, cell(expires))

    def selected(self) -> list[Passage]:
        rows = sorted({index.row() for index in self.table.selectionModel().selectedRows()})
        return [self.passages[row] for row in rows]

    def edit_selected(self) -> None:
        chosen = self.selected()
        if len(chosen) != 1:
            self.status.setText("Select one passage to edit.")
            return
        dialog = PassageDialog(self, chosen[0], self.sources[self.passages.index(chosen[0])])
        if dialog.exec():
            self.save(chosen[0].id, *dialog.values())

    def find_duplicates(self) -> None:
        self.status.setText("Looking for duplicate notes…")
        self._tasks.submit(
            self._mnemo.archival.duplicate_clusters, self._show_duplicates, self.status.setText
        )

    def _show_duplicates(self, clusters: list[list[Passage]]) -> None:
        self.status.setText("")
        dialog = DuplicatesDialog(self, clusters)
        if dialog.exec():
            self.merge(dialog.chosen())

    def merge(self, clusters: list[list[Passage]]) -> None:
        archival = self._mnemo.archival

        def work() -> int:
            gone = sum(len(cluster) - 1 for cluster in clusters)
            if gone > BULK_DELETE:
                self._mnemo.snapshot_before(f"merging {gone} duplicate notes")
            for cluster in clusters:
                archival.merge([passage.id for passage in cluster])
            return gone

        self._tasks.submit(
            work,
            lambda gone: self.refresh(1, f"Merged {len(clusters)} groups; {gone} copies removed."),
            self.status.setText,
            changes=(PASSAGES,),
        )

    def restore_selected(self) -> None:
        chosen = [passage.id for passage in self.selected()]
        if not chosen:
            self.status.setText("Select the expired passages to keep.")
            return

        def work() -> None:
            for passage_id in chosen:
                self._mnemo.archival.set_expiry(passage_id, None)

        self._tasks.submit(
            work,
            lambda _none: self.refresh(1, f"Restored {len(chosen)} passages."),
            self.status.setText,
            changes=(PASSAGES,),
        )

    def save(
        self, passage_id: str, text: str, tags: list[str], expires: datetime | None = None
    ) -> None:
        archival = self._mnemo.archival

        def work() -> Passage:
            archival.update(passage_id, text, tags)
            if expires != archival.get(passage_id).expires_at:
                return archival.set_expiry(passage_id, expires)
            return archival.get(passage_id)

        self._tasks.submit(
            work,
            lambda _passage: self.refresh(self.page),
            self.status.setText,
            changes=(PASSAGES,),
        )

    def forget_selected(self) -> None:
        chosen = [passage.id for passage in self.selected()]
        if not chosen:
            self.status.setText("Select the passages to forget.")
            return

        def plan() -> forget.ForgetPlan:
            local = on_this_computer(self._mnemo, "Forgetting")
            return forget.plan_items(local, "passage", chosen)

        ask_to_forget(self, self._mnemo, self._tasks, plan, lambda note: self.refresh(1, note))

    def delete_selected(self) -> None:
        chosen = self.selected()
        if not chosen:
            self.status.setText("Select the passages to delete.")
            return
        if len(chosen) > 1 and not ui.confirm(
            self,
            "Delete passages",
            f"Delete {len(chosen)} passages from archival memory?"
            + (
                " A snapshot is taken first."
                if len(chosen) > BULK_DELETE
                else " This cannot be undone."
            ),
        ):
            return
        delete_in_background(
            self._mnemo,
            self._tasks,
            self.status,
            self._mnemo.archival.delete,
            [passage.id for passage in chosen],
            "passage",
            lambda note: self.refresh(self.page, note),
            PASSAGES,
        )


class ConversationBrowser(QWidget):
    """Past conversations: search by words and dates, and delete (announced as ``MESSAGES``)."""

    def __init__(self, mnemo: AssistantMemory, tasks: Tasks) -> None:
        super().__init__()
        self._mnemo = mnemo
        self._tasks = tasks
        layout = QVBoxLayout(self)
        filters = QHBoxLayout()
        self.query = QLineEdit()
        self.query.setPlaceholderText("Words to find (empty: everything in the dates)")
        self.query.setClearButtonEnabled(True)
        self.use_dates = QCheckBox("From")
        today = QDate.currentDate()
        self.start = QDateEdit(today.addDays(-7))
        self.end = QDateEdit(today)
        for edit in (self.start, self.end):
            edit.setCalendarPopup(True)
            edit.setDisplayFormat("yyyy-MM-dd")
        self.with_calls = QCheckBox("include function calls")
        search = QPushButton("Search")
        filters.addWidget(self.query, 3)
        filters.addWidget(self.use_dates)
        filters.addWidget(self.start)
        filters.addWidget(label("to", wrap=False))
        filters.addWidget(self.end)
        filters.addWidget(self.with_calls)
        filters.addWidget(search)
        layout.addLayout(filters)
        self.status = label("", "muted")
        layout.addWidget(self.status)
        self.table = table(["When", "Who", "Message", "Conversation"])
        self.table.setColumnWidth(0, 130)
        self.table.setColumnWidth(1, 70)
        self.table.setColumnWidth(2, 520)
        self.titles: dict[str, str] = {}
        self.table.horizontalHeader().setStretchLastSection(True)
        layout.addWidget(self.table, 1)
        actions = QHBoxLayout()
        self.delete_button = QPushButton("Delete")
        self.delete_button.setToolTip("Delete the selected messages from the history")
        self.forget_button = QPushButton("Forget…")
        self.forget_button.setToolTip(
            "Remove the selected messages for good: they are never kept again from an import"
        )
        self.forget_button.clicked.connect(self.forget_selected)
        actions.addWidget(self.delete_button)
        actions.addWidget(self.forget_button)
        actions.addStretch(1)
        layout.addLayout(actions)
        self.hits: list[MessageHit] = []
        self.query.returnPressed.connect(lambda: self.refresh())
        search.clicked.connect(lambda: self.refresh())
        self.delete_button.clicked.connect(self.delete_selected)

    def search_for(self, query: str) -> None:
        self.query.setText(query)
        self.refresh()

    def refresh(self, note: str = "") -> None:
        query = self.query.text().strip()
        start = end = None
        if self.use_dates.isChecked():
            start = date.fromisoformat(self.start.date().toString("yyyy-MM-dd"))
            end = date.fromisoformat(self.end.date().toString("yyyy-MM-dd"))
        roles = None if self.with_calls.isChecked() else ["user", "assistant"]
        recall = self._mnemo.recall

        def work() -> Page[MessageHit]:
            if query:
                page = recall.search(query, BROWSE_LIMIT, start=start, end=end, roles=roles)
            else:
                page = recall.search_by_date(start, end, BROWSE_LIMIT, roles=roles)
            self.titles = recall.titles({hit.conversation_id for hit in page})
            return page

        if start and end and start > end:
            self.status.setText("The start date is after the end date; swap them.")
            return
        self.status.setText("Searching…")
        order = "best first" if query else "oldest first"
        self._tasks.submit(
            work, lambda page: self._show(page, note, order, query), self.status.setText
        )

    def _show(self, page: Page[MessageHit], note: str, order: str, query: str) -> None:
        self.hits = list(page)
        found = "1 message found" if page.total == 1 else f"{page.total} messages found"
        self.status.setText(f"{note} {found}; {len(self.hits)} shown, {order}.".strip())
        self.table.setRowCount(len(self.hits))
        for row, hit in enumerate(self.hits):
            self.table.setItem(row, 0, cell(hit.created_at.strftime("%Y-%m-%d %H:%M")))
            self.table.setItem(row, 1, cell(ROLES.get(hit.role, hit.role)))
            self.table.setItem(row, 2, cell(hit_line(hit.text, query, 200, hit.weak), hit.text))
            title = self.titles.get(hit.conversation_id, "")  # imported from ChatGPT or Claude
            self.table.setItem(row, 3, cell(title))

    def forget_selected(self) -> None:
        rows = sorted({index.row() for index in self.table.selectionModel().selectedRows()})
        chosen = [str(self.hits[row].id) for row in rows]
        if not chosen:
            self.status.setText("Select the messages to forget.")
            return

        def plan() -> forget.ForgetPlan:
            local = on_this_computer(self._mnemo, "Forgetting")
            return forget.plan_items(local, "message", chosen)

        ask_to_forget(self, self._mnemo, self._tasks, plan, self.refresh)

    def delete_selected(self) -> None:
        rows = sorted({index.row() for index in self.table.selectionModel().selectedRows()})
        chosen = [self.hits[row] for row in rows if self.hits[row].role in ("user", "assistant")]
        if not chosen:
            self.status.setText("Select your messages or Mnemo's replies to delete.")
            return
        count = len(chosen)
        if not ui.confirm(
            self,
            "Delete messages",
            f"Delete {count} message{'s' if count != 1 else ''} from the conversation history? "
            "Mnemo will no longer find or see them."
            + (" A snapshot is taken first." if count > BULK_DELETE else " This cannot be undone."),
        ):
            return
        delete_in_background(
            self._mnemo,
            self._tasks,
            self.status,
            self._mnemo.recall.delete,
            [hit.id for hit in chosen],
            "message",
            self.refresh,
            MESSAGES,
        )


class MemoryBrowser(QTabWidget):
    def __init__(self, mnemo: AssistantMemory, tasks: Tasks) -> None:
        super().__init__()
        self.archival = ArchivalBrowser(mnemo, tasks)
        self.conversations = ConversationBrowser(mnemo, tasks)
        self.addTab(self.archival, "Archival memory")
        self.addTab(self.conversations, "Conversations")
        self.archival.table.setAlternatingRowColors(True)
        self.conversations.table.setAlternatingRowColors(True)
        self.setDocumentMode(True)
        self.currentChanged.connect(self._refresh_shown)

    def _refresh_shown(self) -> None:
        page = self.currentWidget()
        if isinstance(page, ArchivalBrowser | ConversationBrowser):
            page.refresh()
