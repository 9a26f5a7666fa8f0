"""Core memory as cards: one per block, edited in place, with history and undo."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from desktop import ui
from desktop.assistant_memory import AssistantMemory
from desktop.forget_dialog import ask_for_text
from desktop.threads import CORE, Tasks
from desktop.ui import diff_html, label, ok_cancel
from engine.memory.core import DEFAULT_BLOCKS, DEFAULT_CHAR_LIMIT, Block, BlockVersion
from engine.text import one_line

AUTHORS = {"user": "you", "model": "the assistant", "system": "Mnemo"}


def describe_version(version: BlockVersion) -> str:
    when = version.created_at.strftime("%Y-%m-%d %H:%M")
    who = AUTHORS.get(version.author, version.author)
    how = {"proposal": "approved proposal", "version": "undo"}.get(version.cause_kind or "", "")
    text = one_line(version.new_value or "(removed)", 70)
    return f"{when}  {version.action} by {who}{f' ({how})' if how else ''}: {text}"


class HistoryDialog(QDialog):
    """A block's versions, newest first; "Restore" puts back the text from before one."""

    def __init__(self, parent: QWidget, label_: str, versions: list[BlockVersion]) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"History of {label_}")
        self.resize(720, 520)
        layout = QVBoxLayout(self)
        self.list = QListWidget()
        self._versions = {version.id: version for version in versions}
        for version in reversed(versions):
            item = QListWidgetItem(describe_version(version))
            item.setData(Qt.ItemDataRole.UserRole, version.id)
            self.list.addItem(item)
        layout.addWidget(self.list, 2)
        # The chosen version beside the one before it, word by word: two versions that start
        # alike are told apart by what changed, not by their first 70 characters.
        self.diff = QTextBrowser()
        layout.addWidget(label("What this change did (removed struck out, added in green):"))
        layout.addWidget(self.diff, 3)
        self.list.currentItemChanged.connect(self._show_diff)
        if self.list.count():
            self.list.setCurrentRow(0)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.restore_button = buttons.addButton(
            "Undo this change", QDialogButtonBox.ButtonRole.AcceptRole
        )
        buttons.rejected.connect(self.reject)
        buttons.accepted.connect(self.accept)
        layout.addWidget(buttons)

    def _show_diff(self, item: QListWidgetItem | None) -> None:
        version = self._versions.get(int(item.data(Qt.ItemDataRole.UserRole))) if item else None
        if version is None:
            self.diff.clear()
            return
        self.diff.setHtml(diff_html(version.old_value or "", version.new_value or ""))

    def chosen_version(self) -> int | None:
        item = self.list.currentItem()
        return int(item.data(Qt.ItemDataRole.UserRole)) if item else None


class CoreCard(QFrame):
    """Signals:
    save_requested(str, str): label, new text.
    undo_requested(str, object): label, version id (None: the latest change).
    history_requested(str) / remove_requested(str): label.
    forget_requested(str): the words selected in the card (or none: the person types them).
    """

    forget_requested = Signal(str)
    save_requested = Signal(str, str)
    undo_requested = Signal(str, object)
    history_requested = Signal(str)
    remove_requested = Signal(str)

    def __init__(self, block: Block) -> None:
        super().__init__()
        self.setObjectName("card")
        self.block = block
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        top.addWidget(label(block.label, "title"))
        top.addStretch(1)
        self.usage = label("", "muted", wrap=False)
        top.addWidget(self.usage)
        layout.addLayout(top)
        if block.description:
            layout.addWidget(label(block.description, "muted"))
        self.editor = QPlainTextEdit(block.value)
        self.editor.setReadOnly(True)
        self.editor.setMinimumHeight(80)
        self.editor.textChanged.connect(self._show_usage)
        layout.addWidget(self.editor)
        self.error = label("", "notice_error")
        self.error.setVisible(False)
        layout.addWidget(self.error)

        buttons = QHBoxLayout()
        self.edit_button = QPushButton("Edit")
        self.save_button = QPushButton("Save")
        self.cancel_button = QPushButton("Cancel")
        self.undo_button = QPushButton("Undo")
        self.undo_button.setToolTip("Put back the text from before the latest change")
        self.history_button = QPushButton("History…")
        self.remove_button = QPushButton("Remove")
        self.forget_button = QPushButton("Forget…")
        self.forget_button.setToolTip(
            "Select words in the card, then forget them everywhere, every version included"
        )
        for button in (
            self.edit_button,
            self.save_button,
            self.cancel_button,
            self.undo_button,
            self.history_button,
            self.forget_button,
        ):
            buttons.addWidget(button)
        buttons.addStretch(1)
        if block.label not in DEFAULT_BLOCKS:
            buttons.addWidget(self.remove_button)
        layout.addLayout(buttons)
        self.edit_button.setEnabled(not block.read_only)
        if block.read_only:
            self.edit_button.setToolTip("This block is read-only.")
        self.edit_button.clicked.connect(lambda: self.set_editing(True))
        self.cancel_button.clicked.connect(self._cancel)
        self.save_button.clicked.connect(
            lambda: self.save_requested.emit(block.label, self.editor.toPlainText())
        )
        self.undo_button.clicked.connect(lambda: self.undo_requested.emit(block.label, None))
        self.history_button.clicked.connect(lambda: self.history_requested.emit(block.label))
        self.remove_button.clicked.connect(lambda: self.remove_requested.emit(block.label))
        self.forget_button.clicked.connect(
            lambda: self.forget_requested.emit(self.editor.textCursor().selectedText())
        )
        self.set_editing(False)

    @property
    def editing(self) -> bool:
        return not self.editor.isReadOnly()

    def set_editing(self, editing: bool) -> None:
        self.editor.setReadOnly(not editing)
        self.edit_button.setVisible(not editing)
        self.save_button.setVisible(editing)
        self.cancel_button.setVisible(editing)
        self.undo_button.setVisible(not editing)
        if editing:
            self.editor.setFocus()
        self.error.setVisible(False)
        self._show_usage()

    def _cancel(self) -> None:
        self.editor.setPlainText(self.block.value)
        self.set_editing(False)

    def _show_usage(self) -> None:
        used = len(self.editor.toPlainText())
        self.usage.setText(f"{used} / {self.block.char_limit} characters")
        self.usage.setObjectName("notice_error" if used > self.block.char_limit else "muted")
        self.usage.setStyleSheet("")  # re-apply the style for the new object name

    def show_error(self, message: str) -> None:
        self.error.setText(message)
        self.error.setVisible(True)


class AddBlockDialog(QDialog):
    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setWindowTitle("Add a core-memory block")
        form = QFormLayout(self)
        self.name = QLineEdit()
        self.name.setPlaceholderText("e.g. projects")
        self.description = QLineEdit()
        self.description.setPlaceholderText("What the block is for (the assistant reads this)")
        self.limit = QSpinBox()
        self.limit.setRange(50, 20000)
        self.limit.setValue(DEFAULT_CHAR_LIMIT)
        form.addRow("Label", self.name)
        form.addRow("Description", self.description)
        form.addRow("Character limit", self.limit)
        form.addRow(ok_cancel(self))


class CoreMemoryPage(QWidget):
    """Core memory as cards; it refreshes itself when ``tasks.changed`` says core memory changed
    (an edit here, a decision on a proposal, an edit the model applied)."""

    def __init__(self, mnemo: AssistantMemory, tasks: Tasks) -> None:
        super().__init__()
        self._mnemo = mnemo
        self._tasks = tasks
        tasks.changed.connect(lambda kind: self.refresh() if kind == CORE else None)
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        top.addWidget(
            label(
                "Core memory is always in the assistant's view. Edit it freely; every change "
                "is kept and can be undone.",
                "muted",
            ),
            1,
        )
        self.add_button = QPushButton("Add block…")
        self.add_button.clicked.connect(self._add)
        top.addWidget(self.add_button)
        layout.addLayout(top)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        container = QWidget()
        self.cards_layout = QVBoxLayout(container)
        self.cards_layout.addStretch(1)
        scroll.setWidget(container)
        layout.addWidget(scroll, 1)
        self.cards: dict[str, CoreCard] = {}

    def refresh(self) -> None:
        """Rebuild the cards from the store; a card being edited keeps the user's text."""
        blocks = self._mnemo.core.blocks()
        for name, card in list(self.cards.items()):
            if not card.editing or name not in {block.label for block in blocks}:
                self.cards_layout.removeWidget(card)
                card.deleteLater()
                del self.cards[name]
        for position, block in enumerate(blocks):
            if block.label in self.cards:
                self.cards[block.label].block = block
                self.cards_layout.insertWidget(position, self.cards[block.label])
                continue
            card = CoreCard(block)
            card.save_requested.connect(self._save)
            card.undo_requested.connect(self._undo)
            card.history_requested.connect(self._history)
            card.remove_requested.connect(self._remove)
            card.forget_requested.connect(
                lambda words: ask_for_text(self, self._mnemo, self._tasks, self._said, words)
            )
            self.cards[block.label] = card
            self.cards_layout.insertWidget(position, card)

    def _said(self, sentence: str) -> None:
        window = self.window()
        if isinstance(window, QMainWindow):
            window.statusBar().showMessage(sentence, 15000)

    def _run(self, name: str, work: Callable[[], Any]) -> None:
        card = self.cards.get(name)

        def failed(message: str) -> None:
            if card is not None:
                card.setEnabled(True)
                card.show_error(message)

        if card is not None:
            card.setEnabled(False)
        self._tasks.submit(work, lambda _result: self._done(name), failed, changes=(CORE,))

    def _done(self, name: str) -> None:
        card = self.cards.get(name)
        if card is not None:
            card.setEnabled(True)
            card.set_editing(False)

    def _save(self, name: str, text: str) -> None:
        self._run(name, lambda: self._mnemo.core.set(name, text))

    def _undo(self, name: str, version_id: int | None) -> None:
        self._run(name, lambda: self._mnemo.core.undo(name, version_id))

    def _history(self, name: str) -> None:
        dialog = HistoryDialog(self, name, self._mnemo.core.history(name))
        if dialog.exec() and dialog.chosen_version() is not None:
            self._undo(name, dialog.chosen_version())

    def _remove(self, name: str) -> None:
        if ui.confirm(
            self,
            "Remove block",
            f"Remove the {name} block from core memory? Its history is kept.",
        ):
            self._run(name, lambda: self._mnemo.core.remove_block(name))

    def _add(self) -> None:
        dialog = AddBlockDialog(self)
        if not dialog.exec():
            return
        name = dialog.name.text().strip()
        self._tasks.submit(
            lambda: self._mnemo.core.add_block(
                name, description=dialog.description.text().strip(), char_limit=dialog.limit.value()
            ),
            lambda _block: self._done(name),
            changes=(CORE,),
        )
