"""The first-run check of the assisted mode, as a new user meets it, with a screenshot.

    xvfb-run -a -s "-screen 0 1280x800x24" uv run python packaging/first_run.py OUT.png

A fresh profile, the configured model (the bundled one by default), and the two messages of the
first-run story: a fact told, then asked for. Prints the replies and the memory mode, and saves
the window with the recall rows opened.
"""

from __future__ import annotations

import sys
import tempfile

from PySide6.QtWidgets import QApplication
from screenshots import settle, wait

from desktop.chat import CallRow
from desktop.main_window import MainWindow
from engine import Mnemo

MESSAGES = [
    "Hi! My name is Priya and I live in Porto. I am allergic to peanuts.",
    "What am I allergic to?",
]


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else "first_run.png"
    app = QApplication([])
    with tempfile.TemporaryDirectory() as folder:
        window = MainWindow(Mnemo.open(folder))
        window.resize(1200, 800)
        window.show()
        wait(lambda: window.model_ready, 180)
        for text in MESSAGES:
            window.chat.input.setPlainText(text)
            window.chat.send_button.click()
            settle(1.0)
            wait(lambda: not window.chat.busy, 300)
        for row in window.chat.findChildren(CallRow):
            row.toggle.setChecked(True)
        settle(1.0)
        window.grab().save(out)
        for bubble in window.chat.bubbles():
            print(f"{bubble.role}: {bubble.text}")
        print(f"memory mode: {window.mode_label.text()} ({window.mode_label.toolTip()})")
        window.shutdown()
    app.quit()


if __name__ == "__main__":
    main()
