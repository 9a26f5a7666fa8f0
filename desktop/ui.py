"""Small pieces every view uses: asking before destructive actions, showing errors, the look."""

from __future__ import annotations

import difflib
import html
import re
from collections.abc import Callable, Collection

from PySide6.QtCore import QEvent, QObject, QSettings, Qt, Signal
from PySide6.QtGui import QIcon, QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QAbstractSpinBox,
    QApplication,
    QBoxLayout,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPlainTextEdit,
    QProgressBar,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from engine.resources import resource_path

# The window's pages, in the sidebar's order (the window that shows while the profile opens has
# the same sidebar).
PAGES = (
    "Chat",
    "Core memory",
    "People & things",
    "Browse memory",
    "Documents",
    "Context",
    "Models",
    "Settings",
)
PROFILE_SETTING = "profile"


def app_settings() -> QSettings:
    """Where the app keeps what must be known before a profile is open (its location, the
    window's size and page)."""
    return QSettings("Mnemo", "Mnemo")


STYLE = """
QFrame#bubble_user { background: #e8f0fe; border-radius: 8px; }
QFrame#bubble_assistant { background: #f4f4f5; border-radius: 8px; }
QFrame#card { border: 1px solid #d4d4d8; border-radius: 8px; background: palette(base); }
QFrame#proposal { border: 1px solid #f59e0b; border-radius: 8px; background: #fffbeb; }
QLabel#muted { color: #6b7280; }
QLabel#notice { color: #6b7280; font-style: italic; }
QLabel#notice_error { color: #b91c1c; }
QLabel#caution { color: #b45309; }
QLabel#title { font-weight: bold; }
QLabel#error_banner { background: #fee2e2; color: #991b1b; padding: 6px; border-radius: 4px; }
QPushButton#pending { color: #b45309; font-weight: bold; }
QListWidget#nav { border: none; background: transparent; font-size: 11pt; }
QListWidget#nav::item { padding: 8px 10px; border-radius: 6px; }
QListWidget#nav::item:selected { background: #dbeafe; color: #1e3a8a; }
"""


def confirm(parent: QWidget, title: str, text: str) -> bool:
    """Ask before something that cannot be undone (tests replace this function)."""
    answer = QMessageBox.question(
        parent,
        title,
        text,
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
        QMessageBox.StandardButton.Cancel,
    )
    return answer == QMessageBox.StandardButton.Yes


def ok_cancel(
    dialog: QDialog, ok: str | None = None, on_ok: Callable[[], None] | None = None
) -> QDialogButtonBox:
    """A dialog's OK and Cancel buttons: OK (named ``ok``) accepts, or calls ``on_ok`` to check
    first; Cancel rejects."""
    buttons = QDialogButtonBox(
        QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
    )
    if ok:
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText(ok)
    buttons.accepted.connect(on_ok or dialog.accept)
    buttons.rejected.connect(dialog.reject)
    return buttons


def label(text: str = "", name: str | None = None, *, wrap: bool = True) -> QLabel:
    widget = QLabel(text)
    widget.setWordWrap(wrap)
    widget.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    if name:
        widget.setObjectName(name)
    return widget


class Meter(QWidget):
    """A short text beside a slim bar: the text never sits on the bar's fill, which hid its
    letters ("c|ontext 57%")."""

    def __init__(self, width: int, widest: str) -> None:
        """``widest``: the longest text it will say, so that it never shifts or is cut."""
        super().__init__()
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        self.text = label("", "muted", wrap=False)
        self.text.setMinimumWidth(self.text.fontMetrics().horizontalAdvance(widest) + 4)
        self.bar = QProgressBar()
        self.bar.setTextVisible(False)
        self.bar.setFixedSize(width, 8)
        row.addWidget(self.text)
        row.addWidget(self.bar)

    def show_value(self, value: int, maximum: int, text: str) -> None:
        self.bar.setRange(0, max(maximum, 1))
        self.bar.setValue(min(value, maximum))
        self.text.setText(text)


def app_icon() -> QIcon:
    """The window and task-bar icon; an empty icon if the file is missing (never an error)."""
    try:
        return QIcon(str(resource_path("icons/mnemo.png")))
    except FileNotFoundError:
        return QIcon()


class WheelGuard(QObject):
    """The mouse wheel scrolls the page, and changes a spin box or a combo box only once it has
    focus: scrolling over Settings had set "Steps per message" from 10 to 1, and saved it."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if (
            event.type() == QEvent.Type.Wheel
            and isinstance(watched, QAbstractSpinBox | QComboBox)
            and not watched.hasFocus()
        ):
            parent = watched.parentWidget()
            if parent is not None:
                QApplication.sendEvent(parent, event)  # the page around it scrolls instead
            return True
        return False


def guard_wheels(widget: QWidget) -> None:
    """Install the ``WheelGuard`` on every spin box and combo box inside ``widget``."""
    guard = WheelGuard(widget)
    for child in widget.findChildren(QAbstractSpinBox) + widget.findChildren(QComboBox):
        child.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # a wheel does not give focus
        child.installEventFilter(guard)


def diff_html(old: str, new: str) -> str:
    """Word-level differences: removed words struck through in red, added ones in green."""
    old_words, new_words = re.findall(r"\S+|\s+", old), re.findall(r"\S+|\s+", new)
    parts = []
    matcher = difflib.SequenceMatcher(a=old_words, b=new_words, autojunk=False)
    opcodes = matcher.get_opcodes()
    kept = sum(a2 - a1 for op, a1, a2, _, _ in opcodes if op == "equal" and old_words[a1].strip())
    if kept * 2 < max(1, sum(1 for word in old_words if word.strip())):
        # Less than half the words in common ("Nothing is known about the user yet." -> "My
        # name is Sam."): word by word it read "NothingMy name is knownSam.". The old text is
        # struck whole, and the new one follows on its own line.
        opcodes = [("replace", 0, len(old_words), 0, len(new_words))]
    for operation, a1, a2, b1, b2 in opcodes:
        removed = html.escape("".join(old_words[a1:a2]))
        added = html.escape("".join(new_words[b1:b2]))
        if operation == "equal":
            parts.append(removed)
            continue
        if removed.strip():
            parts.append(
                f'<span style="background:#fecaca;text-decoration:line-through">{removed}</span>'
            )
        if removed.strip() and added.strip():  # never run the two together
            parts.append("\n" if len(opcodes) == 1 else " ")
        if added.strip():
            parts.append(f'<span style="background:#bbf7d0">{added}</span>')
    return "<div style='white-space:pre-wrap'>" + "".join(parts).replace("\n", "<br>") + "</div>"


def table(headers: list[str]) -> QTableWidget:
    widget = QTableWidget(0, len(headers))
    widget.setHorizontalHeaderLabels(headers)
    widget.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    widget.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    widget.verticalHeader().setVisible(False)
    widget.setWordWrap(False)
    header = widget.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    header.setStretchLastSection(False)
    return widget


def cell(text: str, tooltip: str | None = None) -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    item.setToolTip(tooltip or text)
    return item


def widgets_in(layout: QBoxLayout) -> list[QWidget]:
    items = (layout.itemAt(index) for index in range(layout.count()))
    return [widget for item in items if item is not None and (widget := item.widget())]


def remove_widgets(layout: QBoxLayout, keep: Collection[QWidget] = ()) -> None:
    """Delete a list's widgets but those in ``keep`` (its stretch stays)."""
    for widget in widgets_in(layout):
        if widget in keep:
            continue
        layout.removeWidget(widget)
        widget.deleteLater()


class MessageInput(QPlainTextEdit):
    """Enter sends; Shift+Enter starts a new line.

    Signals:
        submitted(): the user pressed Enter.
    """

    submitted = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.setPlaceholderText("Message Mnemo (Enter sends, Shift+Enter for a new line)")
        self.setFixedHeight(64)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt's name)
        enter = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if enter and not event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.submitted.emit()
            return
        super().keyPressEvent(event)
