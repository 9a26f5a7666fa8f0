"""Help → About Mnemo: the version, the model in use, where the memory lives, and the licences of
everything Mnemo ships (collected at build time in a frozen build, read from the installed
packages in a checkout)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from desktop.ui import app_icon, label
from engine import __version__
from engine.notices import notices_text


class AboutDialog(QDialog):
    def __init__(self, parent: QWidget | None, *, model: str, profile: Path) -> None:
        super().__init__(parent)
        self.setObjectName("about")
        self.setWindowTitle("About Mnemo")
        self.resize(640, 560)
        layout = QVBoxLayout(self)

        header = QHBoxLayout()
        icon = QLabel()
        icon.setPixmap(app_icon().pixmap(72, 72))
        header.addWidget(icon, 0, Qt.AlignmentFlag.AlignTop)
        title = QVBoxLayout()
        name = QLabel(f"Mnemo {__version__}")
        font = QFont(name.font())
        font.setPointSizeF(font.pointSizeF() * 1.6)
        font.setBold(True)
        name.setFont(font)
        title.addWidget(name)
        tagline = "A personal assistant that remembers, on your own computer."
        title.addWidget(label(tagline, "muted"))
        self.model_line = label(f"Model: {model}")
        self.profile_line = label(f"Memory: {profile}")
        title.addWidget(self.model_line)
        title.addWidget(self.profile_line)
        header.addLayout(title, 1)
        layout.addLayout(header)

        layout.addWidget(label("Third-party licences", "title"))
        self.notices = QPlainTextEdit()
        self.notices.setReadOnly(True)
        self.notices.setPlainText(notices_text())
        layout.addWidget(self.notices, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
