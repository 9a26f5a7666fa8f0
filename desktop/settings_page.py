"""Settings: the model (a local GGUF file or an API), API keys (through the keyring), the
confirmation policy, other programs' access over MCP, watched folders and where the profile
lives."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, cast

from PySide6.QtCore import QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from desktop import ui
from desktop.assistant_memory import AssistantMemory
from desktop.documents import WatchedFoldersList
from desktop.snapshots_view import SnapshotsView
from desktop.ui import PROFILE_SETTING, app_settings, label
from engine import keys
from engine.errors import MnemoError
from engine.mnemo import Mnemo
from engine.modes import ModeChoice
from engine.server.mcp_config import client_config

if TYPE_CHECKING:
    from engine.server.client import RemoteMnemo

BACKENDS = {
    "local": "Local model (a GGUF file, runs on this computer)",
    "openai": "OpenAI-compatible server (OpenAI, llama.cpp server, Ollama, LM Studio…)",
    "anthropic": "Anthropic (Claude)",
}
CLIENT_NOTES = {
    "ask": "Wait for my approval, like core-memory changes",
    "apply": "Keep them at once (core-memory changes still wait)",
}
POLICIES = {
    "ask": "Ask me before every change the assistant makes",
    "auto": "Apply changes from our conversation; ask about ones made after reading documents",
}
MODES = {
    "auto": "Automatic: assisted for small local models, self-managed otherwise",
    "self": "Self-managed: the model pages its memory with functions",
    "assisted": "Assisted: Mnemo recalls for each message; the model just replies",
}


class SettingsPage(QWidget):
    """Signals:
    apply_requested(): the model settings were saved; load the model they name.
    policy_changed(): the confirmation policy, the memory mode or the step limit changed.
    models_requested(): show the model catalogue.
    """

    apply_requested = Signal()
    policy_changed = Signal()
    models_requested = Signal()

    def __init__(
        self, mnemo: AssistantMemory, watched: WatchedFoldersList, snapshots: SnapshotsView
    ) -> None:
        super().__init__()
        self._mnemo = mnemo
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        outer.addWidget(scroll)
        content = QWidget()
        scroll.setWidget(content)
        layout = QVBoxLayout(content)
        on_server = None if isinstance(mnemo, Mnemo) else cast("RemoteMnemo", mnemo)
        if on_server is not None:
            layout.addWidget(self._server_group(on_server))
        model = self._model_group()
        layout.addWidget(model)
        layout.addWidget(self._memory_group())
        if on_server is None:  # a server's assistants are reached through the server
            layout.addWidget(self._mcp_group())
        folders = QGroupBox("Watched folders")
        QVBoxLayout(folders).addWidget(watched)
        layout.addWidget(folders)
        snapshots_group = QGroupBox("Snapshots")
        QVBoxLayout(snapshots_group).addWidget(snapshots)
        layout.addWidget(snapshots_group)
        layout.addWidget(self._profile_group())
        layout.addStretch(1)
        if on_server is not None:  # the server's model, folders and backups
            for group in (model, folders, snapshots_group):
                group.setVisible(False)
        self.load()

    # -- building ------------------------------------------------------------------------------

    def _model_group(self) -> QGroupBox:
        group = QGroupBox("Model")
        form = QFormLayout(group)
        self.backend = QComboBox()
        for key, text in BACKENDS.items():
            self.backend.addItem(text, key)
        form.addRow("Runs on", self.backend)

        self.local = QWidget()
        local = QFormLayout(self.local)
        local.setContentsMargins(0, 0, 0, 0)
        path_row = QHBoxLayout()
        self.path = QLineEdit()
        self.path.setPlaceholderText("the bundled SmolLM2-135M-Instruct (small and quick)")
        choose = QPushButton("Choose…")
        choose.clicked.connect(self._choose_model)
        browse = QPushButton("Download a model…")
        browse.setToolTip("Models sized for this computer, ready in one click")
        browse.clicked.connect(self.models_requested)
        path_row.addWidget(self.path, 1)
        path_row.addWidget(choose)
        path_row.addWidget(browse)
        local.addRow("GGUF file", path_row)
        self.gpu_layers = QSpinBox()
        self.gpu_layers.setRange(-1, 999)
        self.gpu_layers.setSpecialValueText("all")
        self.gpu_layers.setToolTip("Layers to run on the GPU: 0 for none, 'all' (-1) for every one")
        local.addRow("GPU layers", self.gpu_layers)
        self.threads = QSpinBox()
        self.threads.setRange(0, 256)
        self.threads.setSpecialValueText(f"all cores ({os.cpu_count()})")
        local.addRow("CPU threads", self.threads)
        form.addRow(self.local)
        reranker_row = QHBoxLayout()
        self.reranker = QLineEdit()
        self.reranker.setPlaceholderText("none: search orders its hits by words and meaning")
        self.reranker.setToolTip(
            "A re-ranker GGUF (Qwen3-Reranker, BGE) orders the best hits of conversation and "
            "archival search again; it never makes a turn wait more than a second for it"
        )
        choose_reranker = QPushButton("Choose…")
        choose_reranker.clicked.connect(self._choose_reranker)
        reranker_row.addWidget(self.reranker, 1)
        reranker_row.addWidget(choose_reranker)
        form.addRow("Re-ranker", reranker_row)

        self.api = QWidget()
        api = QFormLayout(self.api)
        api.setContentsMargins(0, 0, 0, 0)
        self.model_name = QLineEdit()
        self.model_name.setPlaceholderText("e.g. gpt-4o-mini or claude-sonnet-4-5")
        api.addRow("Model name", self.model_name)
        self.base_url = QLineEdit()
        self.base_url.setPlaceholderText("empty: the provider's own (http://127.0.0.1:8080/v1 …)")
        api.addRow("Server address", self.base_url)
        self.key = QLineEdit()
        self.key.setEchoMode(QLineEdit.EchoMode.Password)
        self.key.setPlaceholderText("paste a new key to save it in the system keyring")
        key_row = QHBoxLayout()
        key_row.addWidget(self.key, 1)
        self.forget_key = QPushButton("Forget key")
        self.forget_key.clicked.connect(self._forget_key)
        key_row.addWidget(self.forget_key)
        api.addRow("API key", key_row)
        self.key_status = label("", "muted")
        api.addRow("", self.key_status)
        form.addRow(self.api)

        self.context = QSpinBox()
        self.context.setRange(0, 2_000_000)
        self.context.setSingleStep(1024)
        self.context.setSuffix(" tokens")
        # 0: not chosen. A local model gets Mnemo's default; a server of one's own is asked.
        self.context.setSpecialValueText("Automatic")
        self.context.setToolTip(
            "Automatic: a local model gets 4,096 tokens, an OpenAI-compatible server of your "
            "own is asked for its size, and a provider's model gets its usual window."
        )
        form.addRow("Context size", self.context)
        apply_row = QHBoxLayout()
        self.apply_button = QPushButton("Apply and load")
        self.apply_button.clicked.connect(self.apply)
        self.loading = QProgressBar()
        self.loading.setRange(0, 0)  # llama.cpp reports no progress: a busy bar and the time
        self.loading.setMaximumWidth(160)
        self.loading.setVisible(False)
        self._loading_clock = QTimer(self)
        self._loading_clock.setInterval(1000)
        self._loading_clock.timeout.connect(self._show_loading)
        self._loading_what, self._loading_since = "", 0.0
        apply_row.addWidget(self.apply_button)
        apply_row.addWidget(self.loading)
        apply_row.addStretch(1)
        form.addRow(apply_row)
        self.model_status = label("")
        form.addRow(self.model_status)
        self.backend.currentIndexChanged.connect(self._show_backend)
        return group

    def _memory_group(self) -> QGroupBox:
        group = QGroupBox("Memory")
        form = QFormLayout(group)
        self.policy = QComboBox()
        for key, text in POLICIES.items():
            self.policy.addItem(text, key)
        self.policy.currentIndexChanged.connect(self._save_memory)
        form.addRow("Core-memory changes", self.policy)
        self.mode = QComboBox()
        for key, text in MODES.items():
            self.mode.addItem(text, key)
        self.mode.currentIndexChanged.connect(self._save_memory)
        form.addRow("Memory mode", self.mode)
        self.mode_status = label("", "muted")
        form.addRow(self.mode_status)
        self.step_limit = QSpinBox()
        self.step_limit.setRange(1, 100)
        self.step_limit.setToolTip("The most steps the assistant may take for one message")
        self.step_limit.valueChanged.connect(self._save_memory)
        form.addRow("Steps per message", self.step_limit)
        self.memory_status = label("", "notice_error")
        form.addRow(self.memory_status)
        return group

    def _mcp_group(self) -> QGroupBox:
        group = QGroupBox("Other programs (MCP)")
        form = QFormLayout(group)
        form.addRow(
            label(
                "Claude Desktop, LM Studio, Jan and Cursor can search this assistant's memory "
                "and propose changes, which wait here for you. Paste this into their MCP "
                "settings (claude_desktop_config.json, mcp.json):",
                "muted",
            )
        )
        self.mcp_config = QPlainTextEdit(client_config(self._mnemo.profile.root))
        self.mcp_config.setReadOnly(True)
        self.mcp_config.setFixedHeight(150)
        form.addRow(self.mcp_config)
        copy = QPushButton("Copy")
        copy.clicked.connect(self._copy_mcp_config)
        row = QHBoxLayout()
        row.addWidget(copy)
        row.addStretch(1)
        form.addRow(row)
        self.client_notes = QComboBox()
        for key, text in CLIENT_NOTES.items():
            self.client_notes.addItem(text, key)
        self.client_notes.currentIndexChanged.connect(self._save_memory)
        form.addRow("Notes they send", self.client_notes)
        return group

    def _copy_mcp_config(self) -> None:
        QGuiApplication.clipboard().setText(self.mcp_config.toPlainText())

    def _server_group(self, mnemo: RemoteMnemo) -> QGroupBox:
        group = QGroupBox("Server")
        form = QFormLayout(group)
        form.addRow("Address", label(mnemo.connection.url))
        form.addRow("Assistant", label(mnemo.connection.assistant))
        form.addRow(
            label(
                "The server's model answers and its memory is kept there; the model, the "
                "folders and the backups are set on the server. To use one of this "
                "computer's assistants again, choose it in the assistant switcher.",
                "muted",
            )
        )
        return group

    def _profile_group(self) -> QGroupBox:
        group = QGroupBox("Profile")
        form = QFormLayout(group)
        profile = self._mnemo.profile
        form.addRow("Location", label(str(profile.root)))
        form.addRow("Log", label(str(profile.log_path)))
        buttons = QHBoxLayout()
        open_button = QPushButton("Open folder")
        open_button.clicked.connect(
            lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(str(profile.root)))
        )
        move = QPushButton("Use another folder…")
        move.clicked.connect(self._choose_profile)
        buttons.addWidget(open_button)
        buttons.addWidget(move)
        buttons.addStretch(1)
        form.addRow(buttons)
        self.profile_status = label("", "muted")
        form.addRow(self.profile_status)
        return group

    # -- values --------------------------------------------------------------------------------

    def load(self) -> None:
        """Show the stored settings."""
        settings = self._mnemo.settings
        self.backend.setCurrentIndex(self.backend.findData(settings.get("model.backend")))
        self.path.setText(settings.get("model.path"))
        self.reranker.setText(settings.get("models.reranker"))
        self.gpu_layers.setValue(settings.get("model.gpu_layers"))
        self.threads.setValue(settings.get("model.threads"))
        self.model_name.setText(settings.get("model.name"))
        self.base_url.setText(settings.get("model.base_url"))
        chosen = settings.is_set("model.context_length")
        self.context.setValue(settings.get("model.context_length") if chosen else 0)
        notes = getattr(self, "client_notes", None)  # not for a server's assistant
        for widget in (self.policy, self.mode, self.step_limit, notes):
            if widget is not None:
                widget.blockSignals(True)
        if notes is not None:
            notes.setCurrentIndex(notes.findData(settings.get("mcp.notes")))
        self.policy.setCurrentIndex(self.policy.findData(settings.core_write_policy))
        self.mode.setCurrentIndex(self.mode.findData(settings.memory_mode))
        self.step_limit.setValue(settings.step_limit)
        for widget in (self.policy, self.mode, self.step_limit, notes):
            if widget is not None:
                widget.blockSignals(False)
        self._show_backend()

    def _backend_key(self) -> str:
        return str(self.backend.currentData())

    def _show_backend(self) -> None:
        backend = self._backend_key()
        self.local.setVisible(backend == "local")
        self.api.setVisible(backend != "local")
        self._show_key_status()

    def _show_key_status(self) -> None:
        backend = self._backend_key()
        if backend == "local":
            return
        source = keys.key_source(backend)
        name, secure = keys.keyring_status()
        text = f"Key: {source}." if source != "none" else "No key yet."
        if not secure:
            text += " This computer has no secure keyring; a key can be used for this run only."
        self.key_status.setText(text)
        self.forget_key.setEnabled(source != "none")

    def apply(self) -> None:
        """Save the model settings (and a new key) and ask for the model to be loaded."""
        backend = self._backend_key()
        settings = self._mnemo.settings
        try:
            if backend != "local" and self.key.text().strip():
                self._store_key(backend, self.key.text())
            settings.set("model.backend", backend)
            settings.set("model.path", self.path.text().strip())
            settings.set("models.reranker", self.reranker.text().strip())
            settings.set("model.gpu_layers", self.gpu_layers.value())
            settings.set("model.threads", self.threads.value())
            settings.set("model.name", self.model_name.text().strip())
            settings.set("model.base_url", self.base_url.text().strip())
            if self.context.value():
                settings.set("model.context_length", self.context.value())
            else:
                settings.reset("model.context_length")
        except MnemoError as error:
            self.model_status.setText(str(error))
            self.model_status.setObjectName("notice_error")
            self.model_status.setStyleSheet("")
            return
        self.key.clear()
        self._show_key_status()
        self.apply_requested.emit()

    def _store_key(self, backend: str, key: str) -> None:
        try:
            keys.save_key(backend, key)
        except keys.KeyringUnavailableError as error:
            if not ui.confirm(self, "No keyring", f"{error}\n\nUse the key for this run only?"):
                raise MnemoError("The key was not saved.") from None
            keys.use_key_for_this_run(backend, key)

    def _forget_key(self) -> None:
        backend = self._backend_key()
        if ui.confirm(self, "Forget key", f"Forget the {backend} API key?"):
            keys.delete_key(backend)
            self._show_key_status()

    def _save_memory(self) -> None:
        try:
            self._mnemo.settings.set("memory.core_write_policy", self.policy.currentData())
            self._mnemo.settings.set("agent.mode", self.mode.currentData())
            self._mnemo.settings.set("agent.step_limit", self.step_limit.value())
            if hasattr(self, "client_notes"):
                self._mnemo.settings.set("mcp.notes", self.client_notes.currentData())
            self.memory_status.setText("")
        except MnemoError as error:
            self.memory_status.setText(str(error))
        self.policy_changed.emit()

    def _choose_model(self) -> None:
        path, _filter = QFileDialog.getOpenFileName(
            self, "Choose a model", "", "GGUF models (*.gguf);;All files (*)"
        )
        if path:
            self.path.setText(path)

    def _choose_reranker(self) -> None:
        path, _filter = QFileDialog.getOpenFileName(
            self, "Choose a re-ranker", "", "GGUF models (*.gguf);;All files (*)"
        )
        if path:
            self.reranker.setText(path)

    def _choose_profile(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Folder for Mnemo's profile")
        if folder:
            app_settings().setValue(PROFILE_SETTING, folder)
            self.profile_status.setText(
                f"Mnemo will use {folder} from its next start (a new, empty profile if the folder "
                "holds none). Your current profile stays where it is."
            )

    # -- model state ---------------------------------------------------------------------------

    def model_loading(self, what: str) -> None:
        self.apply_button.setEnabled(False)
        self.loading.setVisible(True)
        self.model_status.setObjectName("muted")
        self.model_status.setStyleSheet("")
        self._loading_what = what
        self._loading_since = time.monotonic()
        self._show_loading()
        self._loading_clock.start()

    def _show_loading(self) -> None:
        seconds = time.monotonic() - self._loading_since
        self.model_status.setText(f"Loading {self._loading_what}… {seconds:.0f} s")

    def model_loaded(self, name: str, context_length: int) -> None:
        self._loading_clock.stop()
        self.apply_button.setEnabled(True)
        self.loading.setVisible(False)
        self.model_status.setObjectName("muted")
        self.model_status.setStyleSheet("")
        self.model_status.setText(f"Using {name} with a {context_length:,}-token context.")

    def show_mode(self, mode: ModeChoice) -> None:
        self.mode_status.setText(f"In use: {mode.label} ({mode.reason}).")

    def model_failed(self, message: str) -> None:
        self._loading_clock.stop()
        self.apply_button.setEnabled(True)
        self.loading.setVisible(False)
        self.model_status.setObjectName("notice_error")
        self.model_status.setStyleSheet("")
        self.model_status.setText(message)
