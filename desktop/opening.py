"""The window a person sees at once, while the profile opens behind it.

Qt and this module load in a fraction of a second; the engine (SQLite, LanceDB, the embedder)
and the window's own pages take a second or more. So the app shows this first, with the pages'
names and a quiet "Opening your memory…", opens the profile on a thread, and then puts the full
window in its place, at the same size and position.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QListWidget, QMainWindow, QWidget

from desktop.ui import PAGES, STYLE, app_settings


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
        nav = QListWidget()
        nav.setObjectName("nav")
        nav.addItems(list(PAGES))
        nav.setFixedWidth(160)
        nav.setEnabled(False)
        layout.addWidget(nav)
        self.message = QLabel("Opening your memory…")
        self.message.setObjectName("muted")
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout.addWidget(self.message, 1)
        self.setCentralWidget(body)

    def replace_with_full_window(self) -> None:
        """Hand over to the full window, already shown at this window's place."""
        self._replaced = True
        self.close()
        self.deleteLater()  # its widgets are not needed again

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt's name)
        self.closed_by_user = not self._replaced
        super().closeEvent(event)
