"""The main window: pages on the left (chat, core memory, people & things, browser, documents,
context, models, settings), the
model, pending proposals and work in progress always visible in the status bar."""

from __future__ import annotations

import sys
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QThread, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QListWidget,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from desktop.assistant_memory import AssistantMemory, on_this_computer
from desktop.assistant_switcher import persona_name, switcher_row
from desktop.bridge import EngineBridge
from desktop.browser import MemoryBrowser
from desktop.chat import ChatView, stored_chat
from desktop.context_view import ContextView
from desktop.conversations import ConversationList
from desktop.core_cards import CoreMemoryPage
from desktop.documents import DocumentsPage, WatchedFoldersList
from desktop.exchange_actions import ExchangeActions
from desktop.forget_dialog import ask_for_text, ask_to_forget
from desktop.handed_turns import HandedTurns
from desktop.knowledge_page import KnowledgePage
from desktop.models_page import ModelsPage
from desktop.proposals import ProposalPanel
from desktop.settings_page import SettingsPage
from desktop.snapshots_view import SnapshotsView
from desktop.threads import (
    CORE,
    FOLDERS,
    KNOWLEDGE,
    MESSAGES,
    PASSAGES,
    PROPOSALS,
    GuiThreadCollector,
    Tasks,
    start_thread,
)
from desktop.ui import PAGES, STYLE, Meter, app_settings, guard_wheels, label
from desktop.workers import ChatWorker, IngestWorker, ModelLoader, load_configured_model
from engine import forget, health
from engine.agent import tidying
from engine.context.window import ContextStats
from engine.errors import MnemoError
from engine.events import (
    ContextEvicted,
    MemoryPressure,
    MessageSent,
    Notice,
    ProposalApplied,
    ProposalCreated,
    StepStarted,
)
from engine.hardware import return_freed_memory
from engine.ingest.ingestor import FileResult, IngestProgress
from engine.memory.recall.messages import DEFAULT_CONVERSATION
from engine.mnemo import Mnemo

if TYPE_CHECKING:
    from desktop.remote import ConnectionWatch
    from engine.server.client import RemoteMnemo
from engine.modes import choose_mode
from engine.text import one_line

SWITCH_INTERVAL_S = 0.001
TIDY_IDLE_S = 600  # the person away this long: memory is tidied behind the window
TIDY_LOOK_MS = 60_000  # how often the window looks whether it is idle


class MainWindow(QMainWindow):
    """Signals (the workers' slots are driven through these, so they run on their threads):
    send_requested(str), open_conversation_requested(str), new_conversation_requested(),
    load_requested(), stats_requested(),
    ingest_requested(list), watch_requested(), add_watched_requested(str),
    remove_watched_requested(str, bool).
    Its own: chat_ready(): a model is loaded and the chat takes messages.
    """

    chat_ready = Signal()
    send_requested = Signal(str)
    open_conversation_requested = Signal(str)
    new_conversation_requested = Signal()
    load_requested = Signal()
    stats_requested = Signal()
    ingest_requested = Signal(list)
    watch_requested = Signal()
    add_watched_requested = Signal(str)
    remove_watched_requested = Signal(str, bool)

    def __init__(
        self, opened: Mnemo | RemoteMnemo, loader: ModelLoader = load_configured_model
    ) -> None:
        super().__init__()
        # Workers run Python between their C calls (chunking, SQL rows, tokenizing); with the
        # default switch interval the GUI thread waited long for the interpreter while three of
        # them were busy (gui_responsiveness.py). A shorter one hands it over sooner, at little
        # cost to them.
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        self.collector = GuiThreadCollector(self)  # before any worker thread starts
        # The pages take either (AssistantMemory); what only an assistant on this computer has
        # (its conversations, forgetting, the chat's own model) goes through ``local``.
        self.mnemo: AssistantMemory = opened
        self.local = opened if isinstance(opened, Mnemo) else None
        self._restore_on_close: str | None = None
        # The profile the app opens once this window has closed: another assistant, or this
        # one again after a snapshot was restored; None: the app ends.
        self.next_profile: Path | str | None = None
        # An assistant on a Mnemo server: its client (httpx) is imported only for one.
        self.mnemo_on_server = None if isinstance(opened, Mnemo) else opened
        where = opened.profile.root if isinstance(opened, Mnemo) else opened.where
        self.setWindowTitle(f"Mnemo — {where}")
        self.resize(1180, 760)
        self.setStyleSheet(STYLE)
        self.setAcceptDrops(True)
        self.bridge = EngineBridge()
        self.tasks = Tasks(self)
        if not isinstance(opened, Mnemo):
            from desktop.remote import ConnectionWatch, RemoteChatWorker, RemoteIngestWorker

            self.chat_worker: ChatWorker = RemoteChatWorker(opened, self.bridge)
            self.ingest_worker: IngestWorker = RemoteIngestWorker(opened)
            self.connection_watch: ConnectionWatch | None = ConnectionWatch(
                opened, self.tasks, self
            )
        else:
            self.chat_worker = ChatWorker(opened, self.bridge, loader)
            self.ingest_worker = IngestWorker(opened)
            self.connection_watch = None
        self._threads: list[QThread] = []
        self._last_activity = time.monotonic()
        self._idle_look = QTimer(self)
        self._idle_look.timeout.connect(self.tidy_if_idle)
        self._idle_look.start(TIDY_LOOK_MS)
        self.model_ready = False
        self._reload_chat_after_turn = False

        # The conversation in view: where the person left off (a server's assistant has one).
        self.conversation_id = (
            opened.conversations.current() if isinstance(opened, Mnemo) else DEFAULT_CONVERSATION
        )
        self._build()
        self._connect()
        guard_wheels(self)
        if self.remote:  # the server may be away: the window opens all the same, and retries
            self._reload_chat()
        else:
            self.chat.restore(*stored_chat(opened, self.conversation_id))
            self.conversation_list.refresh(self.conversation_id)
        self.proposals.refresh()
        self.core.refresh()
        self.knowledge.refresh()
        self.documents.refresh()
        self._threads = [
            start_thread(self.chat_worker, "mnemo-chat"),
            start_thread(self.ingest_worker, "mnemo-ingest"),
            start_thread(self.models.worker, "mnemo-downloads"),
        ]
        self.load_requested.emit()
        self.check_health()
        self.watch_requested.emit()

    @property
    def remote(self) -> bool:
        """Whether this window shows an assistant on a Mnemo server."""
        return self.mnemo_on_server is not None

    # -- building ------------------------------------------------------------------------------

    def _build(self) -> None:
        mnemo, tasks = self.mnemo, self.tasks
        self.chat = ChatView()
        self.conversation_list = ConversationList(self.local, tasks)
        self.proposals = ProposalPanel(mnemo, tasks)
        self.core = CoreMemoryPage(mnemo, tasks)
        self.knowledge = KnowledgePage(mnemo, tasks)
        self.browser = MemoryBrowser(mnemo, tasks)
        self.documents = DocumentsPage(mnemo, tasks)
        self.context = ContextView()
        self.models = ModelsPage(mnemo, tasks)
        self.settings_watched = WatchedFoldersList(mnemo, tasks)
        self.snapshots = SnapshotsView(mnemo, tasks)
        self.settings = SettingsPage(mnemo, self.settings_watched, self.snapshots)

        chat_page = QSplitter(Qt.Orientation.Horizontal)
        chat_page.addWidget(self.conversation_list)
        chat_page.addWidget(self.chat)
        chat_page.addWidget(self.proposals)
        chat_page.setStretchFactor(0, 1)
        chat_page.setStretchFactor(1, 3)
        chat_page.setStretchFactor(2, 2)
        chat_page.setSizes([190, 620, 360])
        self.conversation_list.setVisible(not self.remote)  # the server keeps one per assistant
        chat_page.setChildrenCollapsible(False)

        on_server = self.mnemo_on_server
        switcher_box, self.switcher, self.assistant_menu = switcher_row(
            mnemo.profile.root,
            f"{on_server.connection.assistant} (server)"
            if on_server
            else persona_name(mnemo.core.get("persona"), mnemo.profile.root),
            on_server=on_server is not None,
        )
        self.switcher.switch_requested.connect(self.switch_to)
        self.nav = QListWidget()
        self.nav.setObjectName("nav")
        self.nav.addItems(list(PAGES))
        self.nav.setFixedWidth(160)
        self.pages = QStackedWidget()
        for page in (
            chat_page,
            self.core,
            self.knowledge,
            self.browser,
            self.documents,
            self.context,
            self.models,
            self.settings,
        ):
            self.pages.addWidget(page)
        self.nav.currentRowChanged.connect(self._show_page)
        self.nav.setCurrentRow(0)
        if self.remote:  # the server's model answers, with a context window of its own
            self.nav.item(PAGES.index("Models")).setHidden(True)
            self.nav.item(PAGES.index("Context")).setHidden(True)

        self.banner = label("", "error_banner")
        self.banner.setVisible(False)
        dismiss = QPushButton("Dismiss")
        dismiss.clicked.connect(lambda: self.show_error(""))
        self.repair_button = QPushButton("Repair")
        self.repair_button.setToolTip("Fix what can be fixed; a snapshot is taken first")
        self.repair_button.setVisible(False)
        self.repair_button.clicked.connect(self._repair)
        self.banner_row = QWidget()
        banner_layout = QHBoxLayout(self.banner_row)
        banner_layout.setContentsMargins(0, 0, 0, 0)
        banner_layout.addWidget(self.banner, 1)
        banner_layout.addWidget(self.repair_button)
        banner_layout.addWidget(dismiss)
        self.banner_row.setVisible(False)

        body = QWidget()
        layout = QHBoxLayout(body)
        sidebar = QVBoxLayout()
        sidebar.addWidget(switcher_box)
        sidebar.addWidget(self.nav, 1)
        switcher_box.setFixedWidth(160)
        layout.addLayout(sidebar)
        right = QVBoxLayout()
        right.addWidget(self.banner_row)
        right.addWidget(self.pages, 1)
        self._right = right  # the import's bar goes under the pages (``_connect``)
        layout.addLayout(right, 1)
        self.setCentralWidget(body)

        status = self.statusBar()
        self.model_label = label("Starting…", "muted", wrap=False)
        status.addWidget(self.model_label, 1)
        self.mode_label = label("", "muted", wrap=False)
        self._model_size: int | None = None
        status.addPermanentWidget(self.mode_label)
        self.ingest_meter = Meter(80, "documents 9999/9999")
        self.ingest_meter.setVisible(False)
        status.addPermanentWidget(self.ingest_meter)
        self.context_meter = Meter(80, "context 100%")
        self.context_meter.show_value(0, 100, "context 0%")
        status.addPermanentWidget(self.context_meter)
        self.pending_button = QPushButton()
        self.pending_button.setFlat(True)
        self.pending_button.clicked.connect(lambda: self.nav.setCurrentRow(0))
        status.addPermanentWidget(self.pending_button)

    def _connect(self) -> None:
        chat, bridge, worker = self.chat, self.bridge, self.chat_worker
        chat.send_requested.connect(self._send)
        chat.stop_requested.connect(worker.cancel.set)
        chat.search_requested.connect(self._search_conversations)
        self.send_requested.connect(worker.send)
        self.open_conversation_requested.connect(worker.open_conversation)
        if not self.remote:  # a server's assistant keeps one conversation
            self.new_conversation_requested.connect(worker.new_conversation)
            worker.conversation_started.connect(self._show_conversation)
        self.conversation_list.new_requested.connect(self.new_conversation)
        self.conversation_list.open_requested.connect(self.open_conversation)
        worker.busy.connect(self.conversation_list.set_enabled_for_turn)
        self.load_requested.connect(worker.load_model)
        self.stats_requested.connect(worker.refresh_stats)
        worker.loading.connect(self._model_loading)
        worker.loaded.connect(self._model_loaded)
        worker.load_failed.connect(self._model_failed)
        worker.busy.connect(chat.set_busy)
        worker.busy.connect(self._turn_busy)
        worker.failed.connect(self._turn_failed)
        worker.stats.connect(self._show_stats)

        bridge.text_streamed.connect(chat.stream)
        bridge.reply_withdrawn.connect(chat.withdraw_reply)
        bridge.message_sent.connect(self._reply_done)
        bridge.function_called.connect(chat.call_started)
        bridge.function_returned.connect(chat.call_returned)
        bridge.step_started.connect(self._step_started)
        bridge.proposal_created.connect(self._proposal_created)
        bridge.proposal_applied.connect(self._proposal_applied)
        bridge.memory_pressure.connect(self._memory_pressure)
        bridge.context_evicted.connect(self._evicted)
        bridge.notice.connect(self._notice)
        bridge.core_changed.connect(lambda: self.tasks.announce(CORE))
        bridge.knowledge_changed.connect(lambda: self.tasks.announce(KNOWLEDGE))
        self.snapshots.restore_requested.connect(self.restore_and_restart)
        self.exchange = ExchangeActions(self, self.mnemo, self.tasks)
        worker.busy.connect(self.exchange.hold_for_reply)
        self._right.addWidget(self.exchange.bar)
        file_menu = self.exchange.menu
        self.new_action = QAction("New conversation", self)
        self.new_action.setShortcut(QKeySequence.StandardKey.New)
        # The application's, not the window's: after a dialog closed without a window manager
        # to activate the window again, a window shortcut did nothing.
        self.new_action.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)
        self.new_action.triggered.connect(self.new_conversation)
        self.new_action.setEnabled(not self.remote)
        file_menu.insertAction(self.exchange.export_action, self.new_action)
        file_menu.insertSeparator(self.exchange.export_action)
        file_menu.addSeparator()
        self.forget_action = file_menu.addAction("Forget…")
        self.forget_action.setToolTip("Remove words from everything Mnemo holds, for good")
        self.forget_action.triggered.connect(
            lambda: ask_for_text(self, self.mnemo, self.tasks, self.say)
        )
        self.forget_action.setEnabled(not self.remote)
        for local_only in (self.exchange.export_action, self.exchange.import_action):
            local_only.setEnabled(not self.remote)  # they read and write the assistant's files
        if (local := self.local) is not None:
            self.chat.forget_requested.connect(
                lambda words: ask_for_text(self, local, self.tasks, self.say, words)
            )
            self.chat.forget_topic_requested.connect(
                lambda topic: ask_to_forget(
                    self, local, self.tasks, partial(forget.plan_topic, local, topic), self.say
                )
            )
        file_menu.addSeparator()
        self.quit_action = file_menu.addAction("Quit")
        quit_keys = QKeySequence(QKeySequence.StandardKey.Quit)  # Cmd+Q on macOS
        self.quit_action.setShortcut(quit_keys if not quit_keys.isEmpty() else "Ctrl+Q")
        self.quit_action.setMenuRole(QAction.MenuRole.QuitRole)
        self.quit_action.triggered.connect(self.close)
        help_menu = self.menuBar().addMenu("&Help")
        self.about_action = help_menu.addAction("About Mnemo")
        self.about_action.triggered.connect(self.show_about)

        if self.connection_watch is not None:  # on a server: its worker is a RemoteChatWorker
            from desktop.remote import RemoteChatWorker

            assert isinstance(self.chat_worker, RemoteChatWorker)
            self.chat_worker.connection_lost.connect(self._connection_lost)
            self.connection_watch.back.connect(self._connection_back)
            for action in (self.exchange.export_action, self.exchange.import_action):
                action.setEnabled(False)
                action.setToolTip("Export and import run on the server (`mnemo export`)")

        if not self.remote:  # messages sent through `mnemo serve --local` are answered here
            self.handed_turns = HandedTurns(
                on_this_computer(self.mnemo, "Answering other programs"),
                self.chat,
                self.chat_worker,
                lambda: self.conversation_id,
                self,
            )

        self.proposals.count_changed.connect(self._show_pending)
        self.tasks.changed.connect(self._on_changed)
        self.tasks.error.connect(self._task_failed)

        ingest = self.ingest_worker
        self.documents.ingest_requested.connect(self.ingest)
        self.documents.cancel_requested.connect(ingest.cancel.set)
        self.ingest_requested.connect(ingest.ingest)
        self.watch_requested.connect(ingest.watch)
        self.add_watched_requested.connect(ingest.add_watched)
        self.remove_watched_requested.connect(ingest.remove_watched)
        ingest.started.connect(self._ingest_started)
        ingest.progress.connect(self._ingest_progress)
        ingest.file_done.connect(self._file_done)
        ingest.finished.connect(self._ingest_finished)
        ingest.failed.connect(self.show_error)
        ingest.waiting.connect(self.documents.progress_text.setText)
        ingest.folders_changed.connect(lambda: self.tasks.announce(FOLDERS))
        for watched in (self.documents.watched, self.settings_watched):
            watched.add_requested.connect(self.add_watched_requested)
            watched.remove_requested.connect(self.remove_watched_requested)

        self.settings.apply_requested.connect(self.load_requested)
        self.settings.models_requested.connect(lambda: self.show_page("Models"))
        self.models.model_chosen.connect(self.settings.load)
        self.models.model_chosen.connect(self.load_requested)
        self.chat.models_requested.connect(lambda: self.show_page("Models"))
        self.settings.policy_changed.connect(self.stats_requested)
        self.settings.policy_changed.connect(self._show_mode)

    # -- chat ----------------------------------------------------------------------------------

    def _send(self, text: str) -> None:
        self._last_activity = time.monotonic()
        self.chat_worker.cancel.clear()
        self.send_requested.emit(text)

    def tidy_if_idle(self) -> None:
        """Tidy memory behind the window when the person has left it alone a while (at most
        once a day, ``tidying.due``): its batch waits in the proposals panel."""
        local = self.local
        if (
            local is None
            or self.chat.busy
            or time.monotonic() - self._last_activity < TIDY_IDLE_S
            or self.tasks.pending
        ):
            return

        def work() -> str | None:
            return tidying.tidy(local)[1] if tidying.due(local) else None

        self.tasks.submit(work, changes=(PROPOSALS,))

    def new_conversation(self) -> None:
        """Start a new conversation (the current one when it is still empty), on the chat's
        thread: a message typed right after goes into it."""
        if self.local is None or self.chat.busy:
            return
        self.new_conversation_requested.emit()

    def open_conversation(self, conversation_id: str) -> None:
        if (local := self.local) is None or self.chat.busy:
            return
        self.tasks.submit(
            lambda: local.conversations.open(conversation_id), self._show_conversation
        )

    def _show_conversation(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        self.open_conversation_requested.emit(conversation_id)
        self.conversation_list.refresh(conversation_id)
        self._reload_chat()
        self.chat.input.setFocus()

    def _reply_done(self, event: MessageSent) -> None:
        self.chat.reply_done(event.text, event.sources)

    def _step_started(self, event: StepStarted) -> None:
        self._show_stats(event.stats)
        self.chat.step_started()

    def _turn_failed(self, message: str) -> None:
        self.chat.add_notice(message, error=True)

    def _notice(self, event: Notice) -> None:
        self.chat.add_notice(event.text, error=event.kind == "error")

    def _proposal_created(self, event: ProposalCreated) -> None:
        self.chat.add_proposal_notice(event.proposal.id, event.proposal.target)
        self.tasks.announce(PROPOSALS)

    def _follow_decisions(self) -> None:
        """The chat's lines about proposals follow the person's decisions on them."""
        waiting = self.chat.proposals_shown()
        if not waiting or self.remote:
            return
        store = self.mnemo.proposals

        def statuses() -> list[tuple[int, str]]:
            found = [store.get(proposal_id) for proposal_id in waiting]
            return [(p.id, "withdrawn" if p.withdrawn else p.status) for p in found]

        def show(found: list[tuple[int, str]]) -> None:
            for proposal_id, status in found:
                self.chat.decided(proposal_id, status)

        self.tasks.submit(statuses, show)

    def _proposal_applied(self, event: ProposalApplied) -> None:
        what = "Core memory" if event.proposal.kind == "core" else "Memory"
        self.chat.add_notice(f"{what} updated: {one_line(event.proposal.describe(), 120)}")

    def _memory_pressure(self, event: MemoryPressure) -> None:
        self.chat.add_notice(
            f"The context is {round(100 * event.stats.fraction)}% full; the assistant was told "
            "to save what matters before older messages are summarised."
        )

    def _evicted(self, event: ContextEvicted) -> None:
        self.chat.add_notice(
            f"{event.evicted} older messages were moved into the summary (still searchable)."
        )

    def _reload_chat(self) -> None:
        """Show the stored conversation again after messages were deleted, so that a deleted
        message does not stay on screen; during a turn, once it ends."""
        if self.chat.busy:
            self._reload_chat_after_turn = True
            return
        self._reload_chat_after_turn = False
        memory, conversation = self.mnemo, self.conversation_id
        self.tasks.submit(
            lambda: stored_chat(memory, conversation), lambda found: self.chat.restore(*found)
        )

    def _turn_busy(self, busy: bool) -> None:
        if busy:
            return
        if self._reload_chat_after_turn:
            self._reload_chat()
        self.conversation_list.refresh()  # its title and place follow what was said

    def _search_conversations(self, query: str) -> None:
        self.nav.setCurrentRow(PAGES.index("Browse memory"))
        self.browser.setCurrentWidget(self.browser.conversations)
        self.browser.conversations.search_for(query)

    def _show_pending(self, count: int) -> None:
        self.proposals.setVisible(bool(count) or self.proposals.tidied)
        self.pending_button.setText(
            f"{count} change{'s' if count != 1 else ''} to approve"
            if count
            else "No changes waiting"
        )
        self.pending_button.setObjectName("pending" if count else "")
        self.pending_button.setStyleSheet("")

    def _on_changed(self, kind: str) -> None:
        """What the window itself shows of a change (the pages refresh themselves): the chat
        after messages were deleted, and the context's size after core memory changed."""
        if kind == MESSAGES:
            self._reload_chat()
        elif kind == CORE:
            self.stats_requested.emit()
        if kind == PROPOSALS:
            self._follow_decisions()

    def _show_stats(self, stats: ContextStats) -> None:
        self.context.show_stats(stats)
        share = min(100, round(100 * stats.fraction))
        self.context_meter.show_value(share, 100, f"context {share}%")
        self.context_meter.setToolTip(f"{stats.total:,} of {stats.limit:,} usable tokens")

    # -- the model -----------------------------------------------------------------------------

    def _model_loading(self, what: str) -> None:
        self.model_ready = False
        self.chat.set_ready(False)
        self.model_label.setText(f"Loading {what}…")
        self.settings.model_loading(what)

    def _show_mode(self) -> None:
        """The memory mode in the status bar, and why (it follows the model and the setting)."""
        if not self.model_ready:
            return
        mode = choose_mode(self.mnemo.settings.memory_mode, self._model_size)
        self.mode_label.setText(mode.label)
        self.mode_label.setToolTip(mode.reason)
        self.settings.show_mode(mode)

    def _model_loaded(self, name: str, context_length: int, parameters: int | None) -> None:
        self._model_size = parameters
        self.model_ready = True
        self.chat.set_ready(True)
        if self.remote:  # the server chose the model, the memory mode and the context size
            self.model_label.setText(f"Connected: {name}")
            self.mode_label.setText("memory and model on the server")
            self.context_meter.setVisible(False)
            self.chat.offer_better_model(False)
            self.settings.model_loaded(name, 0)  # its clock stops (the group is hidden)
            self.chat_ready.emit()
            return
        self.model_label.setText(f"{name} · {context_length:,}-token context")
        self.settings.model_loaded(name, context_length)
        settings = self.mnemo.settings
        bundled = settings.get("model.backend") == "local" and not settings.get("model.path")
        self.chat.offer_better_model(bundled)
        self.chat_ready.emit()
        self._show_mode()
        return_freed_memory()  # what the load (and the opening) freed, on their threads too

    def show_about(self) -> QDialog:
        from desktop.about import AboutDialog  # its licence texts only when asked for

        about = AboutDialog(self, model=self.model_label.text(), profile=self.mnemo.profile.root)
        about.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        about.show()
        return about

    def _model_failed(self, message: str) -> None:
        self.chat.set_ready(False)
        self.model_label.setText("No model loaded")
        self.settings.model_failed(message)
        self.show_error(f"The model could not be loaded: {message}")

    # -- documents -----------------------------------------------------------------------------

    def ingest(self, paths: list[str]) -> None:
        self.ingest_requested.emit(paths)

    def _ingest_started(self, files: int) -> None:
        self.documents.batch_started(files)
        self.ingest_meter.show_value(0, files, f"documents 0/{files}")
        self.ingest_meter.setVisible(True)

    def _ingest_progress(self, done: int, total: int, current: str) -> None:
        self.documents.batch_progress(done, total, current)
        self.ingest_meter.show_value(done, total, f"documents {done}/{total}")

    def _file_done(self, result: FileResult) -> None:
        self.documents.file_done(result)

    def _ingest_finished(self, final: IngestProgress) -> None:
        self.ingest_meter.setVisible(False)
        self.documents.batch_finished(final)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 (Qt's name)
        if event.mimeData().hasUrls() and any(url.isLocalFile() for url in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 (Qt's name)
        paths = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            names = ", ".join(Path(path).name for path in paths[:3])
            more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
            self.statusBar().showMessage(f"Adding {names}{more} to archival memory…", 5000)
            self.ingest(paths)

    # -- the connection to a server -----------------------------------------------------------

    def _connection_lost(self, text: str, why: str) -> None:
        """A message could not be sent: it goes back in the box, and the window retries."""
        if text and not self.chat.input.toPlainText().strip():
            self.chat.input.setPlainText(text)
        if text:
            self.chat.add_notice(
                "Not sent: the server could not be reached. Your message is back "
                "in the box; send it again once the connection is back.",
                error=True,
            )
        self._maybe_connection_lost(why)

    def _task_failed(self, message: str) -> None:
        if self.connection_watch is not None:  # on a server: its client is loaded
            from engine.server.client import UNREACHABLE

            if message.startswith(UNREACHABLE):
                self._maybe_connection_lost(message)
                return
        self.show_error(message)

    def _maybe_connection_lost(self, message: str) -> None:
        if self.connection_watch is None:
            return
        self.show_error(f"Lost the connection. {message} Trying again every few seconds…")
        self.model_label.setText("Reconnecting…")
        self.chat.set_ready(False)
        self.connection_watch.start()

    def _connection_back(self) -> None:
        self.show_error("")
        if self.model_ready:
            self.chat.set_ready(True)
        else:  # it was away when the window opened
            self.load_requested.emit()
        on_server = self.mnemo_on_server
        if on_server is not None:
            self.model_label.setText(f"Connected: {on_server.where}")
        self.statusBar().showMessage("Connected to the Mnemo server again.", 10000)
        for kind in (PROPOSALS, CORE, KNOWLEDGE, PASSAGES, MESSAGES):
            self.tasks.announce(kind)

    # -- pages and errors ----------------------------------------------------------------------

    def _show_page(self, row: int) -> None:
        self.pages.setCurrentIndex(row)
        if PAGES[row] == "Browse memory":
            self.browser.currentWidget().refresh()  # type: ignore[attr-defined]
        elif PAGES[row] == "Context":
            self.stats_requested.emit()
        elif PAGES[row] == "Models":
            self.models.refresh()

    def say(self, sentence: str) -> None:
        """A short outcome (a forget's) in the status bar."""
        self.statusBar().showMessage(sentence, 15000)

    def show_page(self, name: str) -> None:
        self.nav.setCurrentRow(PAGES.index(name))

    def show_error(self, message: str) -> None:
        self.banner.setText(message)
        self.banner.setVisible(bool(message))
        self.banner_row.setVisible(bool(message))
        if not message:
            self.repair_button.setVisible(False)

    # -- the health check ------------------------------------------------------------------------

    def check_health(self) -> None:
        """Run the health check behind the window; the banner shows only when it finds something.
        An assistant on a server is the server's to check (`mnemo doctor` there)."""
        if (local := self.local) is not None:
            self.tasks.submit(lambda: health.check(local), self._show_health)

    def _show_health(self, problems: list[health.Problem]) -> None:
        # An import stopped halfway has the import bar's choice (finish it, or take it out).
        problems = [problem for problem in problems if problem.check != "import"]
        if not problems:
            return
        self.show_error(
            "Mnemo found a problem with your memory: " + " ".join(f"{p.sentence}" for p in problems)
        )
        self.repair_button.setEnabled(True)
        self.repair_button.setVisible(any(p.repairable for p in problems))

    def _repair(self) -> None:
        self.repair_button.setEnabled(False)

        def repaired(result: tuple[list[str], list[health.Problem]]) -> None:
            done, left = result
            self.show_error("")
            if left:
                self._show_health(left)
            self.statusBar().showMessage("Repaired: " + " ".join(done), 15000)

        self.tasks.submit(
            lambda: health.repair(on_this_computer(self.mnemo, "Repair")),
            repaired,
            self.show_error,
            changes=(MESSAGES, PASSAGES, PROPOSALS),
        )

    # -- closing -------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stop the work in progress at its next safe point and end the worker threads."""
        self.chat_worker.cancel.set()
        self.ingest_worker.cancel.set()
        self.exchange.shutdown()
        self.models.stop_all()  # paused, not lost: they resume from the Models page
        for thread in self._threads:
            thread.quit()
        for thread in self._threads:
            thread.wait()
        self._threads = []
        if (agent := self.chat_worker.agent) is not None:  # the next start's first reply
            agent.model.keep_state()  # begins where this window's model stands
        self.ingest_worker.stop_watching()
        self.tasks.stop()
        self.collector.stop()

    def restore_layout(self) -> None:
        """Size, position and page as the user left them."""
        stored = app_settings()
        geometry = stored.value("window/geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        page = stored.value("window/page")
        if page in PAGES:
            self.show_page(str(page))

    def switch_to(self, profile: Path | str) -> None:
        """Close, and let the app open ``profile`` in a new window (see ``app.run``): a folder,
        or an assistant on a server (``remote.ServerChoice.remembered``)."""
        self.next_profile = profile
        self.close()

    def restore_and_restart(self, snapshot_id: str) -> None:
        """Restore a snapshot while the window closes, then start again on it (``app.run``
        starts the new window once this one has let go of the profile)."""
        self._restore_on_close = snapshot_id
        self.close()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt's name)
        stored = app_settings()
        stored.setValue("window/geometry", self.saveGeometry())
        stored.setValue("window/page", PAGES[self.nav.currentRow()])
        self.shutdown()
        if self._restore_on_close:  # every worker has stopped: nothing writes meanwhile
            self.setCursor(Qt.CursorShape.WaitCursor)
            try:
                self.mnemo.snapshots.restore(self._restore_on_close)
                self.next_profile = self.mnemo.profile.root
            except MnemoError as error:
                QMessageBox.critical(self, "Restore failed", str(error))
        super().closeEvent(event)
