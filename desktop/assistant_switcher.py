"""The assistant switcher at the top of the sidebar: every assistant in the data folder, and
"New assistant…". Choosing one closes this window and the app opens that one (``app.run``).
Beside it, a menu renames, duplicates (memory included, or the persona only) and deletes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import regex
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QInputDialog,
    QMenu,
    QMessageBox,
    QToolButton,
    QWidget,
)

from desktop import ui
from desktop.ui import PROFILE_SETTING, app_settings
from engine.assistants import Assistants
from engine.errors import MnemoError
from engine.profile import data_folder
from engine.text import CAPITAL

NEW = "New assistant…"
# "I am Mnemo, …", "My name is Ada.": the name an assistant's persona gives itself.
_PERSONA_NAME = regex.compile(rf"\b(?:I am|I'm|My name is|You are)\s+({CAPITAL}[\w'-]{{0,30}})")


def persona_name(persona: str, folder: Path) -> str:
    """How a profile opened by its path (--profile, $MNEMO_HOME) is named in the switcher: the
    name its persona gives (its folder's name, "profile", meant nothing to the person), with
    the folder's when the persona gives none."""
    found = _PERSONA_NAME.search(persona)
    return found[1] if found else folder.name


class AssistantSwitcher(QComboBox):
    """Signals:
    switch_requested(object): the profile folder to open instead of this one.
    """

    switch_requested = Signal(object)

    def __init__(
        self, current: Path, parent: QWidget | None = None, current_label: str | None = None
    ) -> None:
        super().__init__(parent)
        self.setToolTip("Each assistant has a memory of its own")
        self.current = current
        self._current_label = current_label or current.name  # "home @ server:8765"
        self.assistants = Assistants(data_folder())
        self.refresh()
        self.activated.connect(self._chosen)

    def refresh(self) -> None:
        self.blockSignals(True)
        self.clear()
        for assistant in self.assistants.all():
            self.addItem(assistant.name, assistant.path)
        paths = [self.itemData(i) for i in range(self.count())]
        if self.current not in paths:  # a profile outside the data folder (--profile)
            self.insertItem(0, self._current_label, self.current)
        self.setCurrentIndex([self.itemData(i) for i in range(self.count())].index(self.current))
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
                path = self.assistants.create(name)
            except MnemoError as error:
                QMessageBox.warning(self, NEW, str(error))
                self.refresh()
                return
        if path == self.current:
            return
        self.switch_to(path)

    def switch_to(self, path: Path) -> None:
        if path.parent == self.assistants.folder:
            self.assistants.use(path.name)  # it opens next time too
            app_settings().remove(PROFILE_SETTING)
        else:
            app_settings().setValue(PROFILE_SETTING, str(path))
        self.switch_requested.emit(path)


class AssistantMenu(QToolButton):
    """Rename, duplicate and delete assistants (the one on screen is renamed by switching away
    first: its folder is open)."""

    def __init__(self, switcher: AssistantSwitcher) -> None:
        super().__init__()
        self.setText("⋯")
        self.setToolTip("Rename, duplicate or delete an assistant")
        self.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self._switcher = switcher
        menu = QMenu(self)
        self.duplicate_actions = [
            menu.addAction("Duplicate…", lambda: self.duplicate(memory=True)),
            menu.addAction("Duplicate the persona only…", lambda: self.duplicate(memory=False)),
        ]
        menu.addAction("Rename another…", self.rename)
        menu.addAction("Delete another…", self.delete)
        menu.addSeparator()
        menu.addAction("Connect to a Mnemo server…", self.connect_to_server)
        self.setMenu(menu)

    def connect_to_server(self) -> None:
        """Use an assistant on a Mnemo server from now on (the app remembers it)."""
        from desktop.remote import ConnectDialog  # the client only when asked for

        dialog = ConnectDialog(self.window())
        if dialog.exec() and dialog.choice is not None:
            remembered = dialog.choice.remembered()
            app_settings().setValue(PROFILE_SETTING, remembered)
            self._switcher.switch_requested.emit(remembered)

    def _others(self) -> list[str]:
        current = self._switcher.current
        return [a.name for a in self._switcher.assistants.all() if a.path != current]

    def _run(self, title: str, work: Callable[[], object]) -> None:
        try:
            work()
        except MnemoError as error:
            QMessageBox.warning(self, title, str(error))
        self._switcher.refresh()

    def duplicate(self, memory: bool) -> None:
        source = self._switcher.current.name
        name, accepted = QInputDialog.getText(
            self, "Duplicate", f"Name of the copy of {source}:", text=f"{source} copy"
        )
        if accepted and name.strip():
            self._run(
                "Duplicate",
                lambda: self._switcher.assistants.duplicate(source, name, memory=memory),
            )

    def rename(self) -> None:
        others = self._others()
        if not others:
            QMessageBox.information(self, "Rename", "There is no other assistant to rename.")
            return
        old, accepted = QInputDialog.getItem(self, "Rename", "Which assistant?", others, 0, False)
        if not accepted:
            return
        new, accepted = QInputDialog.getText(self, "Rename", f"New name for {old}:", text=old)
        if accepted and new.strip() and new != old:
            self._run("Rename", lambda: self._switcher.assistants.rename(old, new))

    def delete(self) -> None:
        others = self._others()
        if not others:
            QMessageBox.information(
                self, "Delete", "The assistant on screen cannot be deleted; switch first."
            )
            return
        name, accepted = QInputDialog.getItem(self, "Delete", "Which assistant?", others, 0, False)
        if accepted and ui.confirm(
            self,
            "Delete an assistant",
            f"Delete {name} and everything it remembers? It is moved to the data folder's "
            "trash, where it can still be recovered by hand.",
        ):
            self._run("Delete", lambda: self._switcher.assistants.delete(name))


def switcher_row(
    current: Path, current_label: str | None = None, *, on_server: bool = False
) -> tuple[QWidget, AssistantSwitcher, AssistantMenu]:
    """The switcher and its menu, side by side, for the sidebar; ``current_label``: how the
    assistant is named when it is not one of the data folder's."""
    row = QWidget()
    layout = QHBoxLayout(row)
    layout.setContentsMargins(0, 0, 0, 0)
    switcher = AssistantSwitcher(current, current_label=current_label)
    switcher.setToolTip(f"{switcher.toolTip()}; this one is in {current}")
    menu = AssistantMenu(switcher)
    if on_server:  # an assistant elsewhere (a server's) is not copied here
        for action in menu.duplicate_actions:
            action.setEnabled(False)
    layout.addWidget(switcher, 1)
    layout.addWidget(menu)
    return row, switcher, menu
