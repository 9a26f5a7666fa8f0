"""Starting the desktop app: open the profile, show the window, close everything cleanly."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from engine.cli import log_to_profile
from engine.errors import MnemoError
from engine.mnemo import Mnemo

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
    from desktop.workers import describe_failure

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
    try:
        log_to_profile(mnemo)
        window = MainWindow(mnemo)
        window.restore_layout()
        # A bug in a slot must not pass silently: log it and say so in the window.
        sys.excepthook = lambda kind, error, trace: window.show_error(describe_failure(error))
        window.show()
        return int(app.exec())
    finally:
        mnemo.close()
