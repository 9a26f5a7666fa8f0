"""Starting the desktop app: open the profile, show the window, close everything cleanly."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING

from engine.errors import MnemoError
from engine.mnemo import Mnemo
from engine.profile import WINDOW, Profile, ProfileBusyError, log_to_profile

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

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
    args = parser.parse_args(argv)
    if not has_display():
        print(f"mnemo: {NO_DISPLAY}", file=sys.stderr)
        return 1
    from PySide6.QtWidgets import QApplication, QMessageBox  # Qt only for the window

    from desktop.main_window import MainWindow
    from desktop.settings_page import PROFILE_SETTING, app_settings
    from desktop.threads import describe_failure

    app = QApplication.instance() or QApplication([sys.argv[0]])
    app.setApplicationName("Mnemo")
    app.setOrganizationName("Mnemo")
    chosen = args.profile
    if chosen is None and not os.environ.get("MNEMO_HOME"):
        chosen = app_settings().value(PROFILE_SETTING) or None
    try:
        mnemo = Mnemo.open(chosen)
    except MnemoError as error:
        QMessageBox.critical(None, "Mnemo cannot start", str(error))
        return 1
    with ExitStack() as stack:
        stack.callback(mnemo.close)
        try:
            stack.enter_context(mnemo.profile.hold_assistant(WINDOW))
        except ProfileBusyError as busy:
            if busy.holder.get("program") == WINDOW and bring_forward(mnemo.profile):
                return 0  # the window that is open came to the front instead
            QMessageBox.critical(None, "Mnemo is already open", str(busy))
            return 1
        log_to_profile(mnemo.profile)
        window = MainWindow(mnemo)
        window.restore_layout()
        listen_for_second_starts(window, mnemo.profile)
        # A bug in a slot must not pass silently: log it and say so in the window.
        sys.excepthook = lambda kind, error, trace: window.show_error(describe_failure(error))
        window.show()
        if mnemo.read_only:  # reading works; say at once why nothing can be changed
            window.show_error(mnemo.read_only)
        return int(app.exec())
    return 1  # not reached: the block returns


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
