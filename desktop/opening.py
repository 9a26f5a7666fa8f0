"""The window a person sees at once, while the profile opens behind it.

Qt and this module load in a fraction of a second; the engine (SQLite, LanceDB, the embedder)
and the window's own pages take a second or more. So the app shows this first, on the page the
person left, opens the profile on a thread, and then puts the full window in its place, at the
same size and position and on the page chosen meanwhile. Each page says quietly what it will show
once the memory is open.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QListWidget, QMainWindow, QWidget

from desktop.ui import PAGES, STYLE, app_settings

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
        self.message = QLabel()
        self.message.setObjectName("muted")
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout.addWidget(self.message, 1)
        self.setCentralWidget(body)
        self.nav.currentRowChanged.connect(self._show_page)
        page = app_settings().value("window/page")
        self.nav.setCurrentRow(PAGES.index(page) if page in PAGES else 0)

    @property
    def page(self) -> str:
        """The page the person is on (the full window opens on it)."""
        return PAGES[self.nav.currentRow()]

    def _show_page(self, row: int) -> None:
        self.message.setText(f"Opening your memory… {WAITING[PAGES[row]]} will show here.")

    def replace_with_full_window(self) -> None:
        """Hand over to the full window, already shown at this window's place."""
        self._replaced = True
        self.close()
        self.deleteLater()  # its widgets are not needed again

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt's name)
        self.closed_by_user = not self._replaced
        super().closeEvent(event)
