"""File → Export… and File → Import…: the whole memory out to a `.mnemo` archive and back in,
on the tasks thread, with progress in the status bar."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QMainWindow,
    QMessageBox,
    QVBoxLayout,
)

from desktop.assistant_memory import AssistantMemory, on_this_computer
from desktop.threads import CORE, FOLDERS, KNOWLEDGE, MESSAGES, PASSAGES, PROPOSALS, Tasks
from desktop.ui import label
from engine.exchange import import_file
from engine.exchange.archive import ImportReport, Offer, Progress, apply_offer, export_archive

ARCHIVES = "Mnemo archives (*.mnemo);;All files (*)"
IMPORTS = "Mnemo archives, ChatGPT and Claude exports (*.mnemo *.json *.zip);;All files (*)"
EVERYTHING = (MESSAGES, PASSAGES, CORE, PROPOSALS, KNOWLEDGE, FOLDERS)


class ExchangeActions(QObject):
    """Signals:
    progressed(str): a line for the status bar, from the tasks thread.
    finished(str): what was done, in a sentence.
    """

    progressed = Signal(str)
    finished = Signal(str)

    def __init__(self, window: QMainWindow, mnemo: AssistantMemory, tasks: Tasks) -> None:
        super().__init__(window)
        self._window = window
        self._mnemo = mnemo
        self._tasks = tasks
        self.progressed.connect(lambda line: window.statusBar().showMessage(line))
        menu = self.menu = window.menuBar().addMenu("&File")
        self.export_action = menu.addAction("Export…")
        self.import_action = menu.addAction("Import…")
        self.export_action.triggered.connect(self._choose_export)
        self.import_action.triggered.connect(self._choose_import)

    def _report(self, verb: str) -> Progress:
        def progress(what: str, done: int, total: int) -> None:
            of = f" of {total:,}" if total else ""  # a chat export's size is not known ahead
            self.progressed.emit(f"{verb} {what}: {done:,}{of}")

        return progress

    def _choose_export(self) -> None:
        path, _filter = QFileDialog.getSaveFileName(
            self._window, "Export your memory", str(Path.home() / "memory.mnemo"), ARCHIVES
        )
        if path:
            self.export_to(Path(path) if Path(path).suffix else Path(path + ".mnemo"))

    def _choose_import(self) -> None:
        path, _filter = QFileDialog.getOpenFileName(self._window, "Import a memory", "", IMPORTS)
        if path:
            self.import_from(Path(path))

    def export_to(self, path: Path) -> None:
        self.progressed.emit(f"Exporting to {path.name}…")

        def done(counts: dict[str, int]) -> None:
            self._say(
                f"Exported {counts['message']:,} messages and {counts['passage']:,} passages to "
                f"{path}."
            )

        self._tasks.submit(
            lambda: export_archive(
                on_this_computer(self._mnemo, "Export"), path, progress=self._report("Exporting")
            ),
            done,
            self._failed,
        )

    def import_from(self, path: Path) -> None:
        self.progressed.emit(f"Importing {path.name}…")

        def done(report: ImportReport) -> None:
            undo = (
                f" Settings → Snapshots has the state before it ({report.snapshot})."
                if report.snapshot
                else ""
            )
            lines = [line for line in report.lines() if not line.startswith("Not applied")]
            self._say(f"Imported {path.name}: " + "; ".join(lines) + "." + undo)
            if report.offered:
                self.offered_dialog = OfferedDialog(self._window, path.name, report.offered)
                self.offered_dialog.chosen.connect(self._apply)
                self.offered_dialog.show()

        self._tasks.submit(
            lambda: import_file(
                on_this_computer(self._mnemo, "Import"), path, progress=self._report("Importing")
            ),
            done,
            self._failed,
            changes=EVERYTHING,
        )

    def _apply(self, offers: list[Offer]) -> None:
        """What the person ticked in the import's report, on the tasks thread."""

        def work() -> int:
            for offer in offers:
                apply_offer(on_this_computer(self._mnemo, "Import"), offer)
            return len(offers)

        self._tasks.submit(
            work,
            lambda count: self._say(f"Applied {count} of the imported file's settings."),
            self._failed,
            changes=EVERYTHING,
        )

    def _say(self, sentence: str) -> None:
        self._window.statusBar().showMessage(sentence, 15000)
        self.finished.emit(sentence)

    def _failed(self, sentence: str) -> None:
        self._window.statusBar().clearMessage()
        self.finished.emit(sentence)
        QMessageBox.warning(self._window, "Mnemo", sentence)


class OfferedDialog(QDialog):
    """The settings and watched folders an imported file carried, none applied: each can be
    ticked and applied here (a crafted file would otherwise choose them for the person).

    Signals:
        chosen(list): the ``Offer``s ticked when Apply was pressed.
    """

    chosen = Signal(list)

    def __init__(self, parent: QMainWindow, name: str, offers: list[Offer]) -> None:
        super().__init__(parent)
        self.setWindowTitle("Settings from the imported file")
        layout = QVBoxLayout(self)
        layout.addWidget(
            label(
                f"{name} also carried these settings. None was applied: an imported file is "
                "memory, not configuration, and a file made to harm you could choose the "
                "model's address or a folder to read. Tick the ones you want.",
                "muted",
            )
        )
        self.boxes: list[tuple[QCheckBox, Offer]] = []
        for offer in offers:
            box = QCheckBox(offer.what[0].upper() + offer.what[1:])
            layout.addWidget(box)
            self.boxes.append((box, offer))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.apply_button = buttons.addButton("Apply", QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.accepted.connect(self._apply)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def _apply(self) -> None:
        self.chosen.emit([offer for box, offer in self.boxes if box.isChecked()])
        self.accept()
