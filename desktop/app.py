"""Starting the desktop app: a window at once, the profile opened behind it, then the full window;
and everything closed cleanly at the end.

Only Qt and the light ``desktop.opening`` load before the first window is painted. The engine and
the full window's modules load on a thread while that window shows "Opening your memory…".
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Callable, Sequence
from contextlib import ExitStack, suppress
from typing import TYPE_CHECKING

from desktop.server_choice import ServerChoice
from engine import moments
from engine.errors import MnemoError
from engine.profile import WINDOW, Profile, ProfileBusyError, log_to_profile
from engine.startup import resume_collection

if TYPE_CHECKING:
    from PySide6.QtCore import QCoreApplication
    from PySide6.QtWidgets import QWidget

    from desktop.workers import ModelLoader
    from engine.mnemo import Mnemo
    from engine.server.client import RemoteMnemo
    from engine.settings import Settings


NO_DISPLAY = (
    "Mnemo's window needs a desktop session, and none was found (DISPLAY and WAYLAND_DISPLAY "
    "are not set). In a terminal, use `mnemo chat`; `mnemo --help` lists everything else."
)


def has_display() -> bool:
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def run(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="mnemo", description="Open Mnemo's window.")
    parser.add_argument("--profile", metavar="PATH", help="profile folder")
    parser.add_argument(
        "--server",
        metavar="URL",
        help="use an assistant on a Mnemo server (`mnemo serve`); the token comes from the "
        "keyring (saved when you connect from the window) or MNEMO_SERVER_TOKEN",
    )
    parser.add_argument("--assistant", default="home", help="the assistant on --server")
    args = parser.parse_args(argv)
    if not has_display():
        print(f"mnemo: {NO_DISPLAY}", file=sys.stderr)
        return 1
    from PySide6.QtWidgets import QApplication  # Qt only for the window

    lighten_pyside_import_check()
    from desktop.ui import PROFILE_SETTING, app_icon, app_settings

    app = QApplication.instance() or QApplication([sys.argv[0]])
    app.setApplicationName("Mnemo")
    app.setOrganizationName("Mnemo")
    QApplication.setDesktopFileName("mnemo")  # the installed mnemo.desktop: its icon and name
    QApplication.setWindowIcon(app_icon())
    chosen: str | None = args.profile
    if args.server:
        chosen = ServerChoice(args.server.rstrip("/"), args.assistant).remembered()
    if chosen is None and not os.environ.get("MNEMO_HOME"):
        chosen = app_settings().value(PROFILE_SETTING) or None
    # One window after another in this process: the next opens when one closes asking for it
    # (another assistant was chosen, or a snapshot was restored), once the last let go.
    while True:
        code, chosen = _run_window(app, chosen)
        if chosen is None:
            return code


def lighten_pyside_import_check() -> None:
    """PySide6 replaces ``import`` with a hook that, for its opt-in ``__feature__``s, reads each
    newly imported module's whole source through ``inspect`` to see whether it names PySide6:
    ~0.15 s of the engine's imports before the chat is ready (tests/benchmarks/felt_speed.py).
    The same answer, from the source file's bytes; PySide's own check stays if its internals
    are not the ones this was written for."""
    feature = sys.modules.get("shibokensupport.feature")
    if not callable(getattr(feature, "_mod_uses_pyside", None)):
        return

    def uses_pyside(module: object) -> bool:
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or not path.endswith(".py"):
            return False  # no source to read (built in, compiled, frozen): PySide's says False
        try:
            with open(path, "rb") as source:
                return b"PySide6" in source.read()
        except OSError:
            return False

    feature._mod_uses_pyside = uses_pyside  # type: ignore[union-attr]


def _run_window(app: QCoreApplication, chosen: str | None) -> tuple[int, str | None]:
    """Open ``chosen`` (None: the default profile) in a window until it closes; the exit
    code, and the profile the next window opens (None: none, the app ends)."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QMessageBox

    from desktop.opening import OpeningWindow

    server = ServerChoice.read(chosen)
    with ExitStack() as stack:
        try:
            profile = server.local_folder if server else Profile.resolve(chosen)
            stack.enter_context(profile.hold_assistant(WINDOW))
        except ProfileBusyError as busy:
            if busy.holder.get("program") == WINDOW and bring_forward(profile):
                return 0, None  # the window that is open came to the front instead
            QMessageBox.critical(None, "Mnemo is already open", str(busy))
            return 1, None
        except MnemoError as error:
            QMessageBox.critical(None, "Mnemo cannot start", str(error))
            return 1, None
        opening = OpeningWindow()
        opening.show()
        QTimer.singleShot(0, lambda: moments.mark("shown"))  # after the first paint
        try:
            mnemo, loader = open_behind(profile, server)
        except MnemoError as error:
            opening.close()
            QMessageBox.critical(None, "Mnemo cannot start", str(error))
            return 1, None
        stack.callback(mnemo.close)
        moments.mark("opened")
        if opening.closed_by_user:
            return 0, None
        from desktop.main_window import MainWindow  # loaded already, behind the first window
        from desktop.threads import describe_failure

        log_to_profile(profile)
        window = MainWindow(mnemo, loader)
        window.restore_layout()
        window.show_page(opening.page)  # where the person went while it opened
        window.chat.carry_over(opening.sent, *opening.draft)  # and what they wrote meanwhile
        listen_for_second_starts(window, mnemo.profile)
        # A bug in a slot must not pass silently: log it and say so in the window.
        sys.excepthook = lambda kind, error, trace: window.show_error(describe_failure(error))
        window.show()
        opening.replace_with_full_window()
        resume_collection()  # the start is over (paused by desktop.launcher)
        window.chat_ready.connect(lambda: moments.mark("ready"))  # it can take a message
        if mnemo.read_only:  # reading works; say at once why nothing can be changed
            window.show_error(mnemo.read_only)
        code = int(app.exec())
        return code, str(window.next_profile) if window.next_profile else None


def open_behind(
    profile: Profile, server: ServerChoice | None = None
) -> tuple[Mnemo | RemoteMnemo, ModelLoader]:
    """Open the profile and load the full window's modules on a thread, while the first window
    stays painted and responsive; errors are raised here, on the GUI thread. The model starts
    loading as soon as the profile is open (its settings name it), beside the window's modules
    (chat ready 2.3 -> ~2.1 s), and the returned loader hands it to the chat."""
    from PySide6.QtCore import QEventLoop, QTimer

    outcome: dict[str, object] = {}

    def work() -> None:
        try:
            if server is not None:  # the server's memory, embedder and model
                from desktop.remote import open_remote
                from desktop.workers import load_configured_model

                outcome["mnemo"] = open_remote(server, while_away=True)
                outcome["loader"] = load_configured_model  # not used: the server answers
                import desktop.main_window  # noqa: F401

                return
            from engine.embed import default_embedder

            # ONNX Runtime is imported and MiniLM's session starts building (C++, on a thread
            # of its own) while LanceDB's Python is imported (the chat is ready sooner,
            # startup.py); a failure is reported when Mnemo.open or the first embedding asks again.
            threading.Thread(target=_quietly(default_embedder), daemon=True).start()
            from desktop.workers import load_configured_model
            from engine.llm import LoadingAhead
            from engine.mnemo import Mnemo

            def load_model_ahead(settings: Settings) -> None:
                outcome["loader"] = LoadingAhead(settings, load_configured_model)

            outcome["mnemo"] = Mnemo.open(profile.root, on_settings=load_model_ahead)
            import desktop.main_window  # noqa: F401 (its modules load here, beside the model)
        except BaseException as error:  # handed to the GUI thread as it is
            outcome["error"] = error

    thread = threading.Thread(target=work, name="mnemo-open", daemon=True)
    thread.start()
    loop = QEventLoop()
    poll = QTimer()
    poll.timeout.connect(lambda: None if thread.is_alive() else loop.quit())
    poll.start(15)
    loop.exec()
    poll.stop()
    if "error" in outcome:
        if "mnemo" in outcome:
            outcome["mnemo"].close()  # type: ignore[attr-defined]
        raise outcome["error"]  # type: ignore[misc]
    return outcome["mnemo"], outcome["loader"]  # type: ignore[return-value]


def _quietly(work: Callable[[], object]) -> Callable[[], None]:
    def run() -> None:
        with suppress(Exception):
            work()

    return run


def bring_forward(profile: Profile) -> bool:
    """Ask the window already open on ``profile`` to come to the front; whether it answered."""
    from PySide6.QtNetwork import QLocalSocket

    socket = QLocalSocket()
    socket.connectToServer(profile.instance_name)
    if not socket.waitForConnected(2000):
        return False
    socket.write(b"front")
    socket.waitForBytesWritten(1000)
    socket.disconnectFromServer()
    return True


def listen_for_second_starts(window: QWidget, profile: Profile) -> None:
    """A second start on this profile brings this window forward (see ``bring_forward``)."""
    from PySide6.QtCore import Qt
    from PySide6.QtNetwork import QLocalServer

    server = QLocalServer(window)
    QLocalServer.removeServer(profile.instance_name)  # a crashed window's leftover
    if not server.listen(profile.instance_name):
        return  # a second start then says the profile is open, which is still true

    def come_forward() -> None:
        while (connection := server.nextPendingConnection()) is not None:
            connection.disconnectFromServer()
        window.setWindowState(window.windowState() & ~Qt.WindowState.WindowMinimized)
        window.show()
        window.raise_()
        window.activateWindow()

    server.newConnection.connect(come_forward)
