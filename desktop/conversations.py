"""The conversations beside the chat: "New conversation" on top, then the earlier ones, newest
first, each reopened with a click (as ChatGPT, GPT4All and Jan list them). Memory is the
profile's: a new conversation starts with an empty window and everything remembered."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QListWidget, QListWidgetItem, QPushButton, QVBoxLayout, QWidget

from desktop.threads import MESSAGES, Tasks
from engine.memory.recall.conversations import ConversationInfo
from engine.mnemo import Mnemo

WHEN = "%d %b %H:%M"


class ConversationList(QWidget):
    """Signals:
    new_requested(): the person asked for a new conversation.
    open_requested(str): the person chose an earlier conversation (its id).
    """

    new_requested = Signal()
    open_requested = Signal(str)

    def __init__(self, mnemo: Mnemo | None, tasks: Tasks) -> None:
        super().__init__()
        self._mnemo = mnemo  # None: a server's assistant keeps one conversation, no list
        self._tasks = tasks
        self.current = ""
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.new_button = QPushButton("New conversation")
        self.new_button.setToolTip("Start afresh; Mnemo keeps what it remembers (Ctrl+N)")
        self.new_button.clicked.connect(self.new_requested)
        layout.addWidget(self.new_button)
        self.list = QListWidget()
        self.list.setObjectName("conversations")
        self.list.setWordWrap(True)
        self.list.itemClicked.connect(self._clicked)
        layout.addWidget(self.list, 1)
        self.setMinimumWidth(170)
        self.setMaximumWidth(260)
        tasks.changed.connect(lambda kind: self.refresh() if kind == MESSAGES else None)

    def refresh(self, current: str | None = None) -> None:
        if current is not None:
            self.current = current
        if self._mnemo is not None:
            self._tasks.submit(self._mnemo.conversations.all, self._show)

    def _show(self, conversations: list[ConversationInfo]) -> None:
        self.list.clear()
        if self.current and self.current not in {c.id for c in conversations}:
            item = QListWidgetItem("New conversation\n(empty)")  # started, nothing said yet
            item.setData(Qt.ItemDataRole.UserRole, self.current)
            self.list.addItem(item)
        for info in conversations:
            when = f"{info.last_at:{WHEN}}" if info.last_at else "empty"
            item = QListWidgetItem(f"{info.label}\n{when}")
            item.setToolTip(f"{info.label} · {info.messages} messages")
            item.setData(Qt.ItemDataRole.UserRole, info.id)
            self.list.addItem(item)
        for row in range(self.list.count()):
            item = self.list.item(row)
            if item.data(Qt.ItemDataRole.UserRole) == self.current:
                self.list.setCurrentItem(item)
                font = item.font()
                font.setBold(True)
                item.setFont(font)

    def titles(self) -> list[str]:
        """The titles as listed (first lines), for tests and screenshots."""
        return [self.list.item(row).text().split("\n")[0] for row in range(self.list.count())]

    def _clicked(self, item: QListWidgetItem) -> None:
        chosen = str(item.data(Qt.ItemDataRole.UserRole))
        if chosen != self.current:
            self.open_requested.emit(chosen)

    def set_enabled_for_turn(self, busy: bool) -> None:
        """A conversation is not changed while a reply is being written."""
        self.new_button.setEnabled(not busy)
        self.list.setEnabled(not busy)
