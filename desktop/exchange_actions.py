"""File → Export… and File → Import…: the whole memory out to a `.mnemo` archive and back in.

An export runs on the tasks thread with its progress in the status bar. An import of years of
conversations takes many minutes, so it has a thread of its own and a bar under the chat: how
far it is, about how long is left, and Stop (which takes out what it brought). The chat and the
pages stay usable meanwhile. An import a crash or a kill stopped halfway is offered at the next
start: finish it, or take it out.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
)

from desktop.assistant_memory import AssistantMemory, on_this_computer
from desktop.threads import (
    CORE,
    FOLDERS,
    KNOWLEDGE,
    MESSAGES,
    PASSAGES,
    PROPOSALS,
    Tasks,
    describe_failure,
    start_thread,
)
from desktop.ui import label
from engine.exchange import import_file, unfinished
from engine.exchange.archive import ImportReport, Offer, Progress, apply_offer, export_archive
from engine.llm.download import duration
from engine.mnemo import Mnemo

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
        self.bar = ImportBar()
        self.bar.stop_button.clicked.connect(self.stop_import)
        self.bar.finish_button.clicked.connect(self._finish_unfinished)
        self.bar.undo_button.clicked.connect(self._undo_unfinished)
        self._worker = ImportWorker()
        self._thread = start_thread(self._worker, "mnemo-import")
        self._worker.progressed.connect(self.bar.show_progress)
        self._worker.finished.connect(self._imported)
        self._worker.failed.connect(self._import_failed)
        self._unfinished: unfinished.Unfinished | None = None
        if isinstance(mnemo, Mnemo):
            self._unfinished = unfinished.read(mnemo)
            if self._unfinished is not None and not unfinished.running(mnemo, self._unfinished):
                self.bar.show_unfinished(self._unfinished.describe() + ".")

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
        """Import ``path`` on the import thread, with the bar showing how it goes."""
        try:
            mnemo = on_this_computer(self._mnemo, "Import")
        except Exception as error:
            self._failed(describe_failure(error))
            return
        self._importing = path
        self.import_action.setEnabled(False)
        self.bar.start(path.name)
        self._worker.run_requested.emit(mnemo, path)

    def stop_import(self) -> None:
        self.bar.stopping()
        self._worker.cancel.set()

    def _imported(self, report: ImportReport) -> None:
        path = self._importing
        self.import_action.setEnabled(True)
        for kind in EVERYTHING:
            self._tasks.announce(kind)
        undo = (
            f" Settings → Snapshots has the state before it ({report.snapshot})."
            if report.snapshot
            else ""
        )
        counts = [
            line
            for line in report.lines()
            if line not in report.notes and not line.startswith("Not applied")
        ]
        notes = [note if note.endswith(".") else f"{note}." for note in report.notes]
        sentence = " ".join(
            [f"Imported {path.name}: {'; '.join(counts) or 'nothing new'}.", *notes]
        )
        # The whole report in the bar, until closed (the status line cut it).
        self.bar.show_done(sentence + undo)
        self.finished.emit(sentence + undo)
        if report.offered:
            self.offered_dialog = OfferedDialog(self._window, path.name, report.offered)
            self.offered_dialog.chosen.connect(self._apply)
            self.offered_dialog.show()

    def _import_failed(self, sentence: str) -> None:
        if self._worker.pause.is_set():  # the window closing paused it: offered at next start
            return
        self.bar.hide()
        self.import_action.setEnabled(True)
        for kind in EVERYTHING:
            self._tasks.announce(kind)
        if self._worker.cancel.is_set():  # the person's Stop: said, not warned of
            self._say(sentence)
        else:
            self._failed(sentence)

    def _finish_unfinished(self) -> None:
        if self._unfinished is not None:
            path = Path(self._unfinished.path)
            if not path.exists():
                self._failed(
                    f"{path} is no longer there, so its import cannot be finished; take out what "
                    "it brought, or put the file back."
                )
                return
            self.import_from(path)

    def _undo_unfinished(self) -> None:
        self.bar.hide()

        def done(undone: tuple[str, int] | None) -> None:
            if undone is not None:
                name, removed = undone
                self._say(
                    f"Took out the {removed:,} messages the stopped import of {name} brought."
                )

        self._tasks.submit(
            lambda: unfinished.undo_unfinished(on_this_computer(self._mnemo, "Import")),
            done,
            self._failed,
            changes=EVERYTHING,
        )

    def hold_for_reply(self, busy: bool) -> None:
        """While a reply is written the import waits before its next few vectors (both compete for
        the same cores: a reply during a real import took 63 s)."""
        if busy:
            self._worker.hold.set()
        else:
            self._worker.hold.clear()

    def shutdown(self) -> None:
        """Stop an import within a few seconds (it resumes at the next start) and end its thread."""
        self._worker.pause.set()
        self._thread.quit()
        self._thread.wait()

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


class ImportWorker(QObject):
    """Runs one import at a time on its own thread.

    Signals:
        run_requested(Mnemo, Path): from the GUI thread, to start an import.
        progressed(int, int, float): messages done, the estimated total, seconds so far.
        finished(ImportReport), failed(str): how it ended.
    """

    run_requested = Signal(object, object)
    progressed = Signal(int, int, float)
    finished = Signal(object)
    failed = Signal(str)

    def __init__(self) -> None:
        super().__init__()
        self.cancel = threading.Event()  # Stop: take out what it brought
        self.pause = threading.Event()  # the window closing: leave it to finish at the next start
        self.hold = threading.Event()  # a reply being written: wait, it needs the cores
        self.run_requested.connect(self.run)

    @Slot(object, object)
    def run(self, mnemo: Mnemo, path: Path) -> None:
        self.cancel.clear()
        started = time.monotonic()

        def progress(_what: str, done: int, total: int) -> None:
            self.progressed.emit(done, total, time.monotonic() - started)

        try:
            report = import_file(
                mnemo, path, progress, cancel=self.cancel, pause=self.pause, hold=self.hold
            )
        except Exception as error:
            self.failed.emit(describe_failure(error))
            return
        self.finished.emit(report)


class ImportBar(QFrame):
    """Under the chat while an import runs: what it imports, a bar, the time left, and Stop;
    at a start after an import stopped halfway: finish it, or take it out."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("importBar")
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 4, 8, 4)
        self.text = label("", "muted", wrap=False)
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.setTextVisible(False)  # the text beside it says how far (none on the fill)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the import and take out what it brought so far")
        self.finish_button = QPushButton("Finish it")
        self.undo_button = QPushButton("Take it out")
        self.close_button = QPushButton("Close")
        self.close_button.clicked.connect(self.hide)
        row.addWidget(self.text, 1)
        row.addWidget(self.progress)
        for button in (self.stop_button, self.finish_button, self.undo_button, self.close_button):
            row.addWidget(button)
        self.hide()

    def start(self, name: str) -> None:
        self._name = name
        self.text.setText(f"Importing {name}: reading…")
        self.progress.setRange(0, 0)  # busy until the first batch gives an estimate
        self._show(importing=True)

    def show_progress(self, done: int, total: int, seconds: float) -> None:
        if total > 0:
            self.progress.setRange(0, total)
            self.progress.setValue(min(done, total))
        left = ""
        if total > done > 0 and seconds >= 5:
            remaining = (total - done) * seconds / done
            left = f", about {duration(remaining)} left"
        about = "about " if done < total else ""
        count = f"{done:,} of {about}{total:,} messages" if total else f"{done:,} messages so far"
        self.text.setText(f"Importing {self._name}: {count}{left}. You can go on chatting.")

    def stopping(self) -> None:
        self.stop_button.setEnabled(False)
        self.text.setText(f"Stopping the import of {self._name}, and taking out what it brought…")

    def show_unfinished(self, sentence: str) -> None:
        self.text.setText(sentence)
        self._show(importing=False)

    def show_done(self, report: str) -> None:
        """The import's report, whole, until the person closes it."""
        self.text.setText(report)
        self._show(importing=False, done=True)

    def _show(self, importing: bool, done: bool = False) -> None:
        self.text.setWordWrap(done)  # one line while it runs; the report wraps
        self.stop_button.setEnabled(True)
        self.stop_button.setVisible(importing)
        self.progress.setVisible(importing)
        self.finish_button.setVisible(not importing and not done)
        self.undo_button.setVisible(not importing and not done)
        self.close_button.setVisible(done)
        self.show()
