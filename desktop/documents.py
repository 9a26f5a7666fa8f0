"""Documents: add files and folders (or drop them on the window), watched folders, and how
indexing went for each file."""

from __future__ import annotations

import time

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QListWidget,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop import ui
from desktop.assistant_memory import AssistantMemory
from desktop.threads import FOLDERS, Tasks
from desktop.ui import cell, label, table
from engine.db.schema import DocumentRow
from engine.ingest.ingestor import FileResult, IngestProgress
from engine.ingest.watch import WatchedFolders
from engine.mnemo import Mnemo

STATUS_WORDS = {
    "queued": "waiting",
    "indexing": "reading…",
    "done": "done",
    "error": "problem",
    "skipped": "skipped",
}

OUTCOME_STATUS = {
    "done": "done",
    "unchanged": "done",
    "error": "error",
    "skipped": "skipped",
    "cancelled": "queued",
}


class WatchedFoldersList(QWidget):
    """The watched folders with Add and Remove (shown in Documents and in Settings).

    Signals:
        add_requested(str): a folder to watch.
        remove_requested(str, bool): a folder to stop watching; whether to keep its passages.
    """

    add_requested = Signal(str)
    remove_requested = Signal(str, bool)

    def __init__(self, mnemo: AssistantMemory, tasks: Tasks | None = None) -> None:
        super().__init__()
        self._mnemo = mnemo
        if tasks is not None:
            tasks.changed.connect(lambda kind: self.refresh() if kind == FOLDERS else None)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.list = QListWidget()
        self.list.setMaximumHeight(84)
        layout.addWidget(self.list)
        buttons = QHBoxLayout()
        self.add_button = add = QPushButton("Watch a folder…")
        self.remove_button = QPushButton("Stop watching")
        buttons.addWidget(add)
        buttons.addWidget(self.remove_button)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        add.clicked.connect(self._choose)
        self.remove_button.clicked.connect(self._remove)
        self.refresh()

    def refresh(self) -> None:
        self.list.clear()
        if not isinstance(self._mnemo, Mnemo):  # folders are on this computer, memory is not
            self.list.addItem("Watched folders are for assistants on this computer; drop files")
            self.list.addItem("instead, and they are sent to the server.")
            self.remove_button.setEnabled(False)
            self.add_button.setEnabled(False)
            return
        folders = WatchedFolders(self._mnemo).all()
        for folder in folders:
            missing = "" if folder.path.is_dir() else "  (missing)"
            self.list.addItem(f"{folder.path}{missing}")
        if not folders:
            self.list.addItem("No watched folders: files you add stay as they were read.")
        self.remove_button.setEnabled(bool(folders))

    def _choose(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Watch a folder")
        if folder:
            self.add_requested.emit(folder)

    def _remove(self) -> None:
        item = self.list.currentItem()
        if item is None:
            return
        path = item.text().removesuffix("  (missing)")
        if ui.confirm(
            self,
            "Stop watching",
            f"Stop watching {path}? Its passages are removed from archival memory too.",
        ):
            self.remove_requested.emit(path, False)


class DocumentsPage(QWidget):
    """Signals:
    ingest_requested(list): files and folders to read.
    cancel_requested(): the user pressed Cancel during ingestion.
    """

    ingest_requested = Signal(list)
    cancel_requested = Signal()

    def __init__(self, mnemo: AssistantMemory, tasks: Tasks) -> None:
        super().__init__()
        self._mnemo = mnemo
        self._tasks = tasks
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        top.addWidget(
            label(
                "Drop files or folders anywhere on this window to add them to archival memory "
                "(text, Markdown, PDF, Word, HTML and source files).",
                "muted",
            ),
            1,
        )
        add_files = QPushButton("Add files…")
        add_folder = QPushButton("Add a folder…")
        top.addWidget(add_files)
        top.addWidget(add_folder)
        layout.addLayout(top)

        progress_row = QHBoxLayout()
        self.progress = QProgressBar()
        self.progress_text = label("", "muted")
        self.cancel_button = QPushButton("Cancel")
        progress_row.addWidget(self.progress, 1)
        progress_row.addWidget(self.cancel_button)
        layout.addLayout(progress_row)
        layout.addWidget(self.progress_text)

        layout.addWidget(label("Watched folders (kept in sync while Mnemo runs)", "title"))
        self.watched = WatchedFoldersList(mnemo, tasks)
        layout.addWidget(self.watched)

        header = QHBoxLayout()
        header.addWidget(label("Files", "title"))
        header.addStretch(1)
        self.only_problems = QCheckBox("only files with problems")
        header.addWidget(self.only_problems)
        layout.addLayout(header)
        self.table = table(["File", "Status", "Passages", "Problem"])
        self.table.setColumnWidth(0, 420)
        self.table.setColumnWidth(1, 80)
        self.table.setColumnWidth(2, 70)
        self.table.horizontalHeader().setStretchLastSection(True)
        layout.addWidget(self.table, 1)
        self.documents: list[DocumentRow] = []
        self._rows: dict[str, int] = {}

        add_files.clicked.connect(self._choose_files)
        add_folder.clicked.connect(self._choose_folder)
        self.cancel_button.clicked.connect(self._cancel)
        self.only_problems.toggled.connect(self.refresh)
        self._refresh_soon = QTimer(self)
        self._refresh_soon.setSingleShot(True)
        self._refresh_soon.setInterval(500)
        self._refresh_soon.timeout.connect(self.refresh)
        self.set_running(False)
        self._started = 0.0

    # -- progress ------------------------------------------------------------------------------

    def set_running(self, running: bool) -> None:
        self.progress.setVisible(running)
        self.cancel_button.setVisible(running)
        self.cancel_button.setEnabled(True)

    def batch_started(self, files: int) -> None:
        self._started = time.monotonic()
        self.set_running(True)
        self.progress.setRange(0, max(files, 1))
        self.progress.setValue(0)
        self.progress_text.setText(f"Reading {files} files…")

    def batch_progress(self, done: int, total: int, current: str) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        where = f": {current}" if current else ""
        self.progress_text.setText(f"{done} of {total} files{where}")

    def batch_finished(self, final: IngestProgress) -> None:
        self.set_running(False)
        seconds = time.monotonic() - self._started
        unchanged = sum(result.outcome == "unchanged" for result in final.results)
        cancelled = final.files_done < final.files_total
        words = [f"{final.files_done} of {final.files_total} files read in {seconds:.0f} s"]
        if unchanged:
            words.append(f"{unchanged} unchanged")
        if final.errors:
            words.append(f"{final.errors} with problems (listed below)")
        if cancelled:
            words.append("the rest was cancelled")
        self.progress_text.setText("; ".join(words) + ".")  # the rows were updated file by file

    def file_done(self, result: FileResult) -> None:
        """Update the file's row in place (re-reading the whole index per file would compete
        with the ingestion for the interpreter and stall the window)."""
        if result.outcome == "removed":
            if not self._refresh_soon.isActive():
                self._refresh_soon.start()
            return
        status = OUTCOME_STATUS[result.outcome]
        row = DocumentRow(
            path=result.path,
            status=status,
            chunk_count=result.chunks,
            error=result.error,
            updated_at=time.time(),
        )
        index = self._rows.get(result.path)
        if index is None:
            if self.only_problems.isChecked() and status not in ("error", "skipped"):
                return
            index = self._rows[result.path] = len(self.documents)
            self.documents.append(row)
            self.table.setRowCount(len(self.documents))
        else:
            self.documents[index] = row
        self._fill(index, row)

    def _cancel(self) -> None:
        self.cancel_button.setEnabled(False)
        self.progress_text.setText("Cancelling after the current file…")
        self.cancel_requested.emit()

    # -- the file list -------------------------------------------------------------------------

    def refresh(self) -> None:
        self._tasks.submit(self._mnemo.documents, self._show)

    def _show(self, documents: list[DocumentRow]) -> None:
        if self.only_problems.isChecked():
            documents = [row for row in documents if row.status in ("error", "skipped")]
        self.documents = documents
        self._rows = {document.path: index for index, document in enumerate(documents)}
        self.table.setRowCount(len(documents))
        for index, document in enumerate(documents):
            self._fill(index, document)

    def _fill(self, index: int, document: DocumentRow) -> None:
        self.table.setItem(index, 0, cell(document.path))
        self.table.setItem(index, 1, cell(STATUS_WORDS.get(document.status, document.status)))
        self.table.setItem(index, 2, cell(str(document.chunk_count)))
        self.table.setItem(index, 3, cell(document.error or ""))

    def status_of(self, path: str) -> str | None:
        for document in self.documents:
            if document.path == path:
                return document.status
        return None

    def _choose_files(self) -> None:
        files, _filter = QFileDialog.getOpenFileNames(self, "Add files to archival memory")
        if files:
            self.ingest_requested.emit(files)

    def _choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Add a folder to archival memory")
        if folder:
            self.ingest_requested.emit([folder])
