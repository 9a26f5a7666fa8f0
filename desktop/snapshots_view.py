"""The Snapshots section of Settings: take, restore and delete snapshots of the whole memory.

Restoring replaces what every page shows, so the window does it while it closes (its workers
stopped at a safe point) and then starts again on the restored memory.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QInputDialog,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop import ui
from desktop.assistant_memory import AssistantMemory
from desktop.threads import Tasks
from desktop.ui import label
from engine.memory.snapshots import Snapshot


class SnapshotsView(QWidget):
    """Signals:
    restore_requested(str): the user confirmed restoring this snapshot.
    """

    restore_requested = Signal(str)

    def __init__(self, mnemo: AssistantMemory, tasks: Tasks) -> None:
        super().__init__()
        self._mnemo = mnemo
        self._tasks = tasks
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(
            label(
                "A snapshot keeps your whole memory as it is now. Mnemo also takes one by itself "
                "before risky changes (re-embedding, large deletions, removing a watched folder, "
                "upgrading the database) and keeps the newest ten of those.",
                "muted",
            )
        )
        self.list = QListWidget()
        self.list.setMinimumHeight(120)
        self.list.currentItemChanged.connect(lambda *_: self._enable())
        layout.addWidget(self.list)
        buttons = QHBoxLayout()
        self.create_button = QPushButton("Take a snapshot…")
        self.restore_button = QPushButton("Restore…")
        self.delete_button = QPushButton("Delete")
        self.create_button.clicked.connect(self._create)
        self.restore_button.clicked.connect(self._restore)
        self.delete_button.clicked.connect(self._delete)
        for button in (self.create_button, self.restore_button, self.delete_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        self.status = label("", "muted")
        layout.addWidget(self.status)
        self.refresh()

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 (Qt's name)
        """Mnemo takes snapshots by itself too: list them anew when the section shows."""
        self.refresh()
        super().showEvent(event)

    def refresh(self) -> None:
        self.list.clear()
        for snapshot in self._mnemo.snapshots.all():
            item = QListWidgetItem(snapshot.describe())
            item.setData(Qt.ItemDataRole.UserRole, snapshot.id)
            self.list.addItem(item)
        if not self.list.count():
            self.status.setText("No snapshots yet.")
        self._enable()

    def chosen(self) -> str | None:
        item = self.list.currentItem()
        return item.data(Qt.ItemDataRole.UserRole) if item is not None else None

    def _enable(self) -> None:
        chosen = self.chosen() is not None
        self.restore_button.setEnabled(chosen and not self._mnemo.read_only)
        self.delete_button.setEnabled(chosen)
        self.create_button.setEnabled(not self._mnemo.read_only)

    def _create(self) -> None:
        note, accepted = QInputDialog.getText(self, "Take a snapshot", "What is it for? (optional)")
        if not accepted:
            return
        self.status.setText("Taking a snapshot…")

        def done(snapshot: Snapshot) -> None:
            self.refresh()
            self.status.setText(f"Snapshot {snapshot.id} taken.")

        self._tasks.submit(lambda: self._mnemo.snapshots.create(note), done, self.status.setText)

    def _restore(self) -> None:
        snapshot_id = self.chosen()
        if snapshot_id is None:
            return
        snapshot = self._mnemo.snapshots.get(snapshot_id)
        if ui.confirm(
            self,
            "Restore a snapshot",
            f"Bring your whole memory back to {snapshot.describe()}? What changed since is kept "
            "in a snapshot taken first. Mnemo restarts to show it.",
        ):
            self.restore_requested.emit(snapshot_id)

    def _delete(self) -> None:
        snapshot_id = self.chosen()
        if snapshot_id is not None and ui.confirm(
            self, "Delete a snapshot", f"Delete snapshot {snapshot_id}? It cannot be brought back."
        ):
            self._tasks.submit(
                lambda: self._mnemo.snapshots.delete(snapshot_id),
                lambda _none: self.refresh(),
                self.status.setText,
            )
