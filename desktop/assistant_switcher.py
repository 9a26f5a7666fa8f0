"""The assistant switcher at the top of the sidebar: every assistant in the data folder, and
"New assistant…". Choosing one closes this window and the app opens that one (``app.run``)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QInputDialog, QMessageBox, QWidget

from desktop.ui import PROFILE_SETTING, app_settings
from engine.assistants import Assistants
from engine.errors import MnemoError
from engine.profile import data_folder

NEW = "New assistant…"


class AssistantSwitcher(QComboBox):
    """Signals:
    switch_requested(object): the profile folder to open instead of this one.
    """

    switch_requested = Signal(object)

    def __init__(self, current: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setToolTip("Each assistant has a memory of its own")
        self._current = current
        self._assistants = Assistants(data_folder())
        self.refresh()
        self.activated.connect(self._chosen)

    def refresh(self) -> None:
        self.blockSignals(True)
        self.clear()
        for assistant in self._assistants.all():
            self.addItem(assistant.name, assistant.path)
        paths = [self.itemData(i) for i in range(self.count())]
        if self._current not in paths:  # a profile outside the data folder (--profile)
            self.insertItem(0, self._current.name, self._current)
        self.setCurrentIndex([self.itemData(i) for i in range(self.count())].index(self._current))
        self.addItem(NEW, None)
        self.blockSignals(False)

    def _chosen(self, index: int) -> None:
        path = self.itemData(index)
        if path is None:
            name, accepted = QInputDialog.getText(self, NEW, "Name of the new assistant:")
            if not accepted or not name.strip():
                self.refresh()
                return
            try:
                path = self._assistants.create(name)
            except MnemoError as error:
                QMessageBox.warning(self, NEW, str(error))
                self.refresh()
                return
        if path == self._current:
            return
        self.switch_to(path)

    def switch_to(self, path: Path) -> None:
        if path.parent == self._assistants.folder:
            self._assistants.use(path.name)  # it opens next time too
            app_settings().remove(PROFILE_SETTING)
        else:
            app_settings().setValue(PROFILE_SETTING, str(path))
        self.switch_requested.emit(path)
