"""The window a person sees at once, while the profile opens behind it.

Qt and this module load in a fraction of a second; the engine (SQLite, LanceDB, the embedder)
and the window's own pages take a second or more. So the app shows this first, on the page the
person left, opens the profile on a thread, and then puts the full window in its place, at the
same size and position and on the page chosen meanwhile. Each page says quietly what it will show
once the memory is open.

The chat page takes a message at once: a person who opens Mnemo to ask something types while
memory opens, and what they sent (or were still typing) goes on in the full window, where it is
answered as soon as the model is ready.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QMainWindow,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop.ui import PAGES, STYLE, MessageInput, app_settings

# What each page shows once the profile is open (the chat then loads its model).
WAITING = {
    "Chat": "your conversation",
    "Core memory": "your core memory",
    "People & things": "the people, places and things Mnemo knows",
    "Browse memory": "your messages and passages",
    "Documents": "your documents and watched folders",
    "Context": "what the model sees",
    "Models": "your models",
    "Settings": "your settings",
}


class OpeningWindow(QMainWindow):
    def __init__(self) -> None:
        super().__init__()
        # Closed by the person before the full window was ready: the app ends once the profile
        # has finished opening (stopping it half-way could leave a migration to redo).
        self.closed_by_user = False
        self._replaced = False
        self.setWindowTitle("Mnemo")
        self.setStyleSheet(STYLE)
        self.resize(1180, 760)
        geometry = app_settings().value("window/geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        body = QWidget()
        layout = QHBoxLayout(body)
        self.nav = QListWidget()
        self.nav.setObjectName("nav")
        self.nav.addItems(list(PAGES))
        self.nav.setFixedWidth(160)
        layout.addWidget(self.nav)
        column = QVBoxLayout()
        self.message = QLabel()
        self.message.setObjectName("muted")
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message.setWordWrap(True)
        self.message.setTextFormat(Qt.TextFormat.PlainText)  # what the person typed, as typed
        column.addWidget(self.message, 1)
        # The chat's input, as the full window has it: what is written here goes on there.
        self.sent: str | None = None
        self.composer = QWidget()
        row = QHBoxLayout(self.composer)
        row.setContentsMargins(0, 0, 0, 0)
        self.input = MessageInput()
        self.input.submitted.connect(self._send)
        row.addWidget(self.input, 1)
        self.send_button = QPushButton("Send")
        self.send_button.clicked.connect(self._send)
        row.addWidget(self.send_button)
        column.addWidget(self.composer)
        layout.addLayout(column, 1)
        self.setCentralWidget(body)
        self.nav.currentRowChanged.connect(self._show_page)
        page = app_settings().value("window/page")
        self.nav.setCurrentRow(PAGES.index(page) if page in PAGES else 0)

    @property
    def page(self) -> str:
        """The page the person is on (the full window opens on it)."""
        return PAGES[self.nav.currentRow()]

    @property
    def draft(self) -> tuple[str, int]:
        """What the person is still typing, and where the cursor is in it."""
        return self.input.toPlainText(), self.input.textCursor().position()

    def _show_page(self, row: int) -> None:
        chat = PAGES[row] == "Chat"
        self.composer.setVisible(chat)
        if chat:
            self.input.setFocus()
        self._say()

    def _say(self) -> None:
        waiting = f"Opening your memory… {WAITING[self.page]} will show here."
        if self.sent is not None and self.page == "Chat":
            waiting = f"You: {self.sent}\n\n{waiting} Your message is answered then."
        self.message.setText(waiting)

    def _send(self) -> None:
        text = self.input.toPlainText().strip()
        if not text or self.sent is not None:
            return  # one message waits at a time, as in the full window
        self.sent = text
        self.input.clear()
        self.send_button.setEnabled(False)
        self._say()

    def replace_with_full_window(self) -> None:
        """Hand over to the full window, already shown at this window's place."""
        self._replaced = True
        self.close()
        self.deleteLater()  # its widgets are not needed again

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt's name)
        self.closed_by_user = not self._replaced
        super().closeEvent(event)
