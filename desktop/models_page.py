"""Models: the catalogue judged for this computer, downloads with progress that pause, resume
and cancel, and "Use": a chat model with the suggested context and GPU layers, a re-ranker on the
searches, an embedder in MiniLM's place (memory is re-embedded, after the person agrees).

Downloads run one at a time on their own thread (``DownloadWorker``); the engine's
``engine.llm.download`` does the work and this page follows its progress. A download that was
stopped, even by quitting Mnemo, shows as paused and resumes where it stopped.
"""

from __future__ import annotations

import html
import threading
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QUrl, Signal, Slot
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from desktop import ui
from desktop.assistant_memory import AssistantMemory, on_this_computer
from desktop.threads import Tasks, describe_failure
from desktop.ui import label
from engine import hardware
from engine.errors import MnemoError
from engine.hardware import Hardware, gib
from engine.llm.catalog import (
    ROLE_SETTING,
    CatalogEntry,
    Fit,
    assess,
    best_chat_entry,
    load_catalog,
    models_folder,
    role_of_file,
    use_local_model,
)
from engine.llm.download import (
    DownloadPaused,
    DownloadProgress,
    DownloadSource,
    discard_partial,
    download,
    partial_download,
    resolve_source,
    source_for_entry,
)
from engine.modes import parameters_text

USE_TEXT = {
    "chat": "Use this model",
    "reranker": "Use this re-ranker",
    "embedding": "Use this embedder",
}
STATUS_TEXT = {"recommended": "Recommended", "slow": "Will run slowly", "too large": "Too large"}
STATUS_STYLE = {"recommended": "title", "slow": "caution", "too large": "notice_error"}


@dataclass
class DownloadJob:
    source: DownloadSource
    folder: Path
    stop: threading.Event = field(default_factory=threading.Event)
    cancelled: bool = False  # set with ``stop`` from the GUI thread: discard, do not pause


class DownloadWorker(QObject):
    """Runs downloads in order on the download thread.

    Signals:
        progressed(DownloadProgress): bytes, speed and time left, a few times a second.
        finished(str, str): file name, the verified file's path.
        stopped(str, bool): file name, and whether it was cancelled (else paused).
        failed(str, str): file name, the reason in words.
    """

    progressed = Signal(object)
    finished = Signal(str, str)
    stopped = Signal(str, bool)
    failed = Signal(str, str)

    @Slot(object)
    def run(self, job: DownloadJob) -> None:
        name = job.source.file_name
        try:
            if job.stop.is_set():
                raise DownloadPaused("stopped while waiting")
            path = download(job.source, job.folder, stop=job.stop, on_progress=self.progressed.emit)
        except DownloadPaused:
            if job.cancelled:
                discard_partial(job.folder, name)
            self.stopped.emit(name, job.cancelled)
        except Exception as error:
            self.failed.emit(name, describe_failure(error))
        else:
            self.finished.emit(name, str(path))


class ModelCard(QFrame):
    """One catalogue entry: what it is, how it suits this computer, and its download."""

    def __init__(self, entry: CatalogEntry, page: ModelsPage) -> None:
        super().__init__()
        self.entry = entry
        self.setObjectName("card")
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        top.addWidget(label(entry.name, "title"), 1)
        self.verdict = label("", "muted", wrap=False)
        top.addWidget(self.verdict)
        layout.addLayout(top)
        mode = f" · {entry.memory_mode} memory" if entry.memory_mode else ""
        facts = (
            f"{entry.role.capitalize()} · {html.escape(entry.family)} ({entry.released}) · "
            f"{parameters_text(entry.parameters)} parameters · "
            f"{entry.size_bytes / 1e9:.1f} GB download · "
            f"{gib(entry.ram_bytes(entry.working_context))} memory at "
            f"{entry.working_context:,} tokens · context up to "
            f"{entry.context_length:,} tokens{mode} · licence "
            f'<a href="{html.escape(entry.license_url)}">{html.escape(entry.license_name)}</a>'
        )
        self.about = about = label(facts, "muted")
        # The file's details are for those who ask (the tooltip), not the card's reader.
        tip = f"{entry.file_name}, {entry.quantization} quantization."
        if entry.memory_mode:
            tip += f" Memory under auto: {entry.memory_mode}. Evidence: {entry.evidence}."
        about.setToolTip(tip)
        about.setTextFormat(Qt.TextFormat.RichText)
        about.setOpenExternalLinks(True)
        about.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        layout.addWidget(about)
        layout.addWidget(label(entry.description))
        self.reason = label("", "muted")
        layout.addWidget(self.reason)

        row = QHBoxLayout()
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(False)
        self.progress_text = label("", "muted", wrap=False)
        row.addWidget(self.progress, 4)
        row.addWidget(self.progress_text)
        row.addStretch(1)
        self.download_button = QPushButton("Download")
        self.pause_button = QPushButton("Pause")
        self.cancel_button = QPushButton("Cancel")
        self.use_text = USE_TEXT[entry.kind]
        self.use_button = QPushButton(self.use_text)
        self.remove_button = QPushButton("Remove")
        for button in (
            self.download_button,
            self.pause_button,
            self.cancel_button,
            self.use_button,
            self.remove_button,
        ):
            button.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
            row.addWidget(button)
        layout.addLayout(row)
        self.download_button.clicked.connect(lambda: page.start(self.entry))
        self.pause_button.clicked.connect(lambda: page.stop(self.entry.file_name, cancel=False))
        self.cancel_button.clicked.connect(lambda: page.stop(self.entry.file_name, cancel=True))
        self.use_button.clicked.connect(lambda: page.use(page.folder / self.entry.file_name))
        self.remove_button.clicked.connect(lambda: page.remove(self.entry.file_name))

    def show_fit(self, fit: Fit, best: bool) -> None:
        first = " · try this one first" if best else ""
        self.verdict.setText(STATUS_TEXT[fit.status] + first)
        self.verdict.setObjectName(STATUS_STYLE[fit.status])
        self.verdict.setStyleSheet("")  # re-read the style for the new name
        layers = {0: "", -1: "; all layers on the GPU"}.get(
            fit.gpu_layers, f"; {fit.gpu_layers} layers on the GPU"
        )
        self.reason.setText(f"On this computer: {fit.reason}{layers}.")

    def show_state(self, state: str, in_use: bool, text: str = "") -> None:
        """``state``: available, downloading (or waiting to), paused or downloaded."""
        moving = state == "downloading"
        self.download_button.setVisible(state in ("available", "paused"))
        self.download_button.setText("Resume" if state == "paused" else "Download")
        self.pause_button.setVisible(moving)
        self.cancel_button.setVisible(moving or state == "paused")
        self.use_button.setVisible(state == "downloaded")
        self.use_button.setEnabled(not in_use)
        self.use_button.setText("In use" if in_use else self.use_text)
        self.remove_button.setVisible(state == "downloaded")
        self.remove_button.setEnabled(not in_use)
        self.progress.setVisible(moving or state == "paused")
        self.progress_text.setVisible(bool(text))
        self.progress_text.setText(text)

    def show_progress(self, progress: DownloadProgress) -> None:
        if progress.checking:
            self.progress.setRange(0, 0)  # busy: the file is being checked
        else:
            self.progress.setRange(0, 1000)
            self.progress.setValue(round(1000 * (progress.fraction or 0)))
        self.progress_text.setText(progress.describe())


class ModelsPage(QWidget):
    """Signals:
    model_chosen(): a downloaded model was made the one in use; load it.
    """

    model_chosen = Signal()
    run_requested = Signal(object)  # a DownloadJob, for the worker on the download thread

    def __init__(self, mnemo: AssistantMemory, tasks: Tasks) -> None:
        super().__init__()
        self._mnemo = mnemo
        self._tasks = tasks
        self.catalog = load_catalog()  # chat models first, then the re-ranker and embedder
        self.hardware: Hardware | None = None
        self.jobs: dict[str, DownloadJob] = {}
        self.worker = DownloadWorker()

        outer = QVBoxLayout(self)
        outer.addWidget(label("Models", "title"))
        self.machine = label("Looking at this computer…", "muted")
        outer.addWidget(self.machine)
        folder_row = QHBoxLayout()
        self.folder_label = label("", "muted")
        open_folder = QPushButton("Open folder")
        open_folder.clicked.connect(
            lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.folder)))
        )
        change_folder = QPushButton("Change…")
        change_folder.setToolTip("Keep downloaded models in another folder (a larger disk)")
        change_folder.clicked.connect(self._choose_folder)
        folder_row.addWidget(self.folder_label, 1)
        folder_row.addWidget(open_folder)
        folder_row.addWidget(change_folder)
        outer.addLayout(folder_row)
        address_row = QHBoxLayout()
        self.address = QLineEdit()
        self.address.setPlaceholderText(
            "Or paste a .gguf address, or a Hugging Face owner/repo/file.gguf"
        )
        self.address.returnPressed.connect(self._download_address)
        fetch = QPushButton("Download")
        fetch.clicked.connect(self._download_address)
        address_row.addWidget(self.address, 1)
        address_row.addWidget(fetch)
        outer.addLayout(address_row)
        self.message = label("", "muted")
        outer.addWidget(self.message)

        self.card_area = scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        content = QWidget()
        self.cards_layout = QVBoxLayout(content)
        self.cards = {entry.file_name: ModelCard(entry, self) for entry in self.catalog}
        for card in self.cards.values():
            self.cards_layout.addWidget(card)
        self.cards_layout.addStretch(1)
        scroll.setWidget(content)
        outer.addWidget(scroll, 1)
        outer.addWidget(
            label(
                "Nothing is downloaded until you press Download; Mnemo makes no other network "
                "connection for local models.",
                "muted",
            )
        )

        self.run_requested.connect(self.worker.run)
        self.worker.progressed.connect(self._progressed)
        self.worker.finished.connect(self._finished)
        self.worker.stopped.connect(self._stopped)
        self.worker.failed.connect(self._failed)
        self.refresh()

    @property
    def folder(self) -> Path:
        return models_folder(self._mnemo.settings, self._mnemo.profile)

    def _choose_folder(self) -> None:
        chosen = QFileDialog.getExistingDirectory(self, "Folder for models", str(self.folder))
        if chosen:
            self._mnemo.settings.set("models.folder", chosen)
            self.hardware = None  # its free disk is another disk's now
            self.refresh()

    # -- what is where -------------------------------------------------------------------------

    def refresh(self) -> None:
        """Each card's state from the models folder, and (once) this computer's verdicts."""
        self.folder_label.setText(f"Downloaded models are kept in {self.folder}")
        settings = self._mnemo.settings
        in_use = {kind: str(settings.get(key)) for kind, key in ROLE_SETTING.items()}
        for name, card in self.cards.items():
            path = self.folder / name
            if name in self.jobs:
                card.show_state("downloading", False, card.progress_text.text() or "Waiting…")
                continue
            if path.is_file():
                used = in_use[card.entry.kind]
                card.show_state("downloaded", bool(used) and Path(used) == path)
                continue
            partial = partial_download(self.folder, name)
            if partial is not None:
                done, total = partial
                card.progress.setRange(0, 1000)
                card.progress.setValue(round(1000 * done / total) if total else 0)
                share = f" ({done / total:.0%})" if total else ""
                card.show_state("paused", False, f"Paused{share}")
            else:
                card.progress.setValue(0)
                card.show_state("available", False)
        if self.hardware is None:
            self._tasks.submit(lambda: hardware.detect(self.folder), self._show_hardware)

    def _show_hardware(self, machine: Hardware) -> None:
        self.hardware = machine
        self.machine.setText(f"This computer: {machine.summary()}.")
        best = best_chat_entry(self.catalog, machine)
        for card in self.cards.values():
            card.show_fit(assess(card.entry, machine), card.entry is best)

    # -- downloads -----------------------------------------------------------------------------

    def start(self, entry: CatalogEntry) -> None:
        self._start(source_for_entry(entry))

    def _download_address(self) -> None:
        text = self.address.text().strip()
        if not text:
            return
        try:
            source = resolve_source(text)
        except Exception as error:
            self.message.setText(describe_failure(error))
            return
        self.address.clear()
        self._start(source)

    def _start(self, source: DownloadSource) -> None:
        name = source.file_name
        if name in self.jobs:
            return
        job = DownloadJob(source, self.folder)
        self.jobs[name] = job
        self.message.setText(f"Downloading {source.label}…")
        card = self.cards.get(name)
        if card is not None:
            card.progress.setValue(0)
            card.show_state("downloading", False, "Starting…")
        self.run_requested.emit(job)

    def stop(self, file_name: str, *, cancel: bool) -> None:
        job = self.jobs.get(file_name)
        if job is not None:
            job.cancelled = cancel
            job.stop.set()
        elif cancel:  # a download paused in an earlier session
            discard_partial(self.folder, file_name)
            self.refresh()

    def _progressed(self, progress: DownloadProgress) -> None:
        card = self.cards.get(progress.file_name)
        if card is not None:
            card.show_progress(progress)
        else:
            self.message.setText(f"{progress.file_name}: {progress.describe()}")

    def _finished(self, file_name: str, path: str) -> None:
        job = self.jobs.pop(file_name)
        self.message.setText(f"{job.source.label} is downloaded and checked; it is ready to use.")
        if file_name not in self.cards:
            self.use(Path(path))  # a file by address has no card to press "Use" on
        self.refresh()

    def _stopped(self, file_name: str, cancelled: bool) -> None:
        job = self.jobs.pop(file_name)
        verb = "Cancelled" if cancelled else "Paused"
        self.message.setText(f"{verb} {job.source.label}.")
        self.refresh()

    def _failed(self, file_name: str, message: str) -> None:
        self.jobs.pop(file_name, None)
        self.message.setText(message)
        self.refresh()

    # -- using and removing ----------------------------------------------------------------------

    def use(self, path: Path) -> None:
        """Put ``path`` to use in its role. A chat model becomes the model in use with this
        computer's suggested settings, and is loaded; the suggestion may read the file's header
        and this computer, so it runs as a task."""
        folder, settings, known = self.folder, self._mnemo.settings, self.hardware
        try:
            role = role_of_file(path)  # the catalogue's, or the file header's
        except MnemoError as error:
            self.message.setText(str(error))
            return
        if role == "re-ranker":
            from engine.llm.rerank import choose_reranker  # llama.cpp's low-level API: now

            self.message.setText(f"Trying {path.name}…")
            self._tasks.submit(
                lambda: choose_reranker(settings, path),
                lambda _: self._helper_chosen(
                    f"Search hits are ordered again by {path.name} from the next message on; "
                    "a search waits at most a second for it."
                ),
                self.message.setText,
            )
            return
        if role == "embedder":
            self._use_embedder(path)
            return

        def choose() -> Fit:
            return use_local_model(settings, path, known or hardware.detect(folder))

        self.message.setText(f"Choosing settings for {path.name}…")
        self._tasks.submit(choose, lambda fit: self._chosen(path, fit), self.message.setText)

    def _chosen(self, path: Path, fit: Fit) -> None:
        layers = {0: "no GPU layers", -1: "all layers on the GPU"}.get(
            fit.gpu_layers, f"{fit.gpu_layers} GPU layers"
        )
        self.message.setText(
            f"Loading {path.name} with a {fit.context:,}-token context and {layers}."
        )
        self.refresh()
        card = self.cards.get(path.name)
        if card is not None:
            self.card_area.ensureWidgetVisible(card)
        self.model_chosen.emit()

    def _use_embedder(self, path: Path) -> None:
        """Re-embed memory with the embedder at ``path``, once the person agrees."""
        try:
            mnemo = on_this_computer(self._mnemo, "Changing the embedder")
        except MnemoError as error:
            self.message.setText(str(error))
            return
        total = mnemo.archival.count() + mnemo.recall.count()
        if not ui.confirm(
            self,
            "Use this embedder",
            f"Search by meaning will use {path.name}. Mnemo re-embeds up to {total:,} passages "
            "and messages with it now, which can take a while; a snapshot is taken first, so that "
            "it can be undone. Continue?",
        ):
            return
        self.message.setText(f"Re-embedding memory with {path.name}…")
        self._tasks.submit(
            lambda: mnemo.reembed(embedder_path=str(path)),
            lambda count: self._helper_chosen(
                f"Re-embedded {count:,} items: search by meaning now uses {path.name}."
            ),
            self.message.setText,
        )

    def _helper_chosen(self, text: str) -> None:
        self.message.setText(text)
        self.refresh()

    def remove(self, file_name: str) -> None:
        path = self.folder / file_name
        size = gib(path.stat().st_size) if path.exists() else "already gone"
        if not ui.confirm(self, "Remove model", f"Delete {file_name} ({size}) from this computer?"):
            return
        path.unlink(missing_ok=True)
        self.message.setText(f"Removed {file_name}.")
        self.refresh()

    def stop_all(self) -> None:
        """Pause every download (on quitting: they resume next time)."""
        for job in self.jobs.values():
            job.stop.set()
