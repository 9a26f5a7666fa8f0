"""Open the real app on a (virtual) display and save a screenshot of each main view.

    xvfb-run -a -s "-screen 0 1280x800x24" uv run python packaging/screenshots.py OUT_DIR

It uses a fresh profile in a temporary folder (or ``--profile``), fills it with a few notes, a
folder of documents (one of them broken) and a pending core-memory change, loads the configured
model (the bundled one by default), sends one real message, then visits every page.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QTimer
from PySide6.QtWidgets import QApplication

from desktop.main_window import PAGES, MainWindow
from engine import Mnemo


def wait(condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the app did not get there in time")
        QCoreApplication.processEvents()
        time.sleep(0.02)


def settle(seconds: float = 0.4) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        QCoreApplication.processEvents()
        time.sleep(0.02)


def seed(mnemo: Mnemo, documents: Path) -> None:
    mnemo.archival.insert("The spare key is under the blue flowerpot by the door.", tags=["home"])
    mnemo.archival.insert("Ada's passport expires in March 2027; renew it in January.")
    mnemo.core.set("human", "Name: Ada.\nLives in Lisbon; sails on weekends.")
    documents.mkdir(parents=True, exist_ok=True)
    (documents / "garden.md").write_text(
        "# Garden\n\nThe tomatoes need water every second day.\n\n## Roses\n\nPrune in March.\n",
        "utf-8",
    )
    (documents / "recipes.txt").write_text("Pão de ló: eggs, sugar, flour. Bake 40 min.", "utf-8")
    (documents / "scan.pdf").write_bytes(b"%PDF-1.4 damaged")
    with mnemo.recall.transaction() as transaction:
        mnemo.proposals.create_in(
            transaction.session,
            conversation_id="default",
            label="human",
            action="append",
            new_content="Prefers tea to coffee.",
        )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--profile", type=Path)
    parser.add_argument("--message", default="Hi! I'm Ada. Where is my spare key?")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="mnemo-shots-"))
    app = QApplication(sys.argv[:1])
    app.setApplicationName("Mnemo")
    print(f"platform: {app.platformName()}", flush=True)
    mnemo = Mnemo.open(args.profile or work / "profile")
    seed(mnemo, work / "documents")
    window = MainWindow(mnemo)
    window.resize(1240, 780)
    window.show()
    wait(lambda: window.model_ready or window.banner_row.isVisible())
    window.ingest([str(work / "documents")])
    wait(lambda: not window.ingest_bar.isVisible() and window.documents.documents, 60)
    window.chat.input.setPlainText(args.message)
    window.chat.send_button.click()
    wait(lambda: window.chat.busy, 10)
    wait(lambda: not window.chat.busy, 300)
    for number, page in enumerate(PAGES, start=1):
        window.show_page(page)
        settle(1.0)
        path = args.out / f"{number:02d}-{page.lower().replace(' ', '-')}.png"
        window.grab().save(str(path))
        print(path, flush=True)
    window.browser.setCurrentWidget(window.browser.conversations)
    window.browser.conversations.search_for("key")
    window.show_page("Browse memory")
    settle(1.0)
    window.grab().save(str(args.out / f"{len(PAGES) + 1:02d}-conversation-search.png"))
    QTimer.singleShot(0, window.close)
    settle(0.5)
    window.shutdown()
    mnemo.close()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("QT_QPA_PLATFORM", "xcb")
    sys.exit(main())
