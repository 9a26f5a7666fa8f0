"""Drive the real window as a person would, with the bundled model, and take screenshots.

Twenty turns: ten in a first conversation (statements, a correction about the person and one
about their sister, questions), a new one by Ctrl+N with five questions (one about a lease the
person dropped in), a restart with five more, then the first conversation reopened from the
list; then a forget from Browse memory and a tour of every page (``tour``). Each turn's
message, the reply as the window shows it and the time until the reply showed are written to
``log.json``; the screenshots (``01-first.png`` … ``19-browse-passages.png``) go beside it, to
be looked at. Prints one JSON line: turns, reply-shown p50/p95,
and how long after the reply's last token the person could send again (Send enabled; target
0.2 s, issue "speed as felt"), measured from the moment the window received that token.

Needs a display: run it under Xvfb (``xvfb-run -a``), not offscreen, to see what a person sees.

    xvfb-run -a uv run python tests/benchmarks/window_drive.py [--out /tmp/drive]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import emit, percentile
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from desktop.main_window import MainWindow
from engine import Mnemo
from engine.ingest.ingestor import Ingestor

FIRST = [
    "Hi there!",
    "I work as a nurse at St. Mary's hospital.",
    "My sister Ines lives in Ghent.",
    "I'm allergic to peanuts, so I have to be careful.",
    "Can you suggest a quick dinner I could cook tonight?",
    "Actually, Ines moved to Antwerp last month.",  # a correction about another person
    "My dentist appointment is on Tuesday.",
    "Actually it's Thursday, not Tuesday.",
    "What am I allergic to?",
    "Where does Ines live?",
]
NEW = [
    "Where do I work?",
    "How much is my monthly rent?",  # in the lease the person dropped in
    "What is my favourite movie?",  # never said: the reply should say so
    "When is my dentist appointment?",
    "Where does my sister live now?",
]
RESTARTED = [
    "What am I allergic to?",
    "How long does my lease run?",
    "Where does Ines live?",
    "Tell me something cheerful, it's grey out.",
    "Goodbye!",
]
LEASE = (
    "# Lease\n\nThe monthly rent is 1,200 euros, due on the first day of each month. The lease "
    "runs for 12 months from 1 September. Pets are allowed with the landlord's written consent.\n"
)


class Driver:
    def __init__(self, app: QApplication, profile: Path, out: Path) -> None:
        self.app, self.profile, self.out = app, profile, out
        self.log: list[dict[str, object]] = []

    def pump(self, seconds: float = 0.05) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.app.processEvents()
            time.sleep(0.01)

    def wait(self, condition: Callable[[], bool], timeout: float = 240) -> None:
        end = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > end:
                raise TimeoutError("the window did not get there in time")
            self.pump()

    def open(self) -> tuple[Mnemo, MainWindow]:
        mnemo = Mnemo.open(self.profile)
        window = MainWindow(mnemo)
        window.resize(1280, 800)
        window.show()
        self.wait(lambda: window.model_ready)
        return mnemo, window

    def shoot(self, window: MainWindow, name: str) -> None:
        self.pump(0.5)
        window.grab().save(str(self.out / name))

    def say(self, window: MainWindow, text: str) -> None:
        """Type and send as a person does; wait until the reply shows and the turn is over."""

        def replies() -> list:
            return [bubble for bubble in window.chat.bubbles() if bubble.role == "assistant"]

        before = len(replies())
        tokens: list[float] = []

        def token_arrived(_text: str) -> None:
            tokens.append(time.monotonic())

        window.bridge.text_streamed.connect(token_arrived)
        window.chat.input.setFocus()
        QTest.keyClicks(window.chat.input, text)
        QTest.keyClick(window.chat.input, Qt.Key.Key_Return)
        started = time.monotonic()
        button = window.chat.send_button

        def can_send() -> bool:
            return button.isEnabled() and button.text() == "Send"

        self.wait(lambda: len(replies()) > before and not window.chat.can_stop)
        shown = time.monotonic() - started
        self.wait(can_send)
        send_after = time.monotonic() - tokens[-1] if tokens else None
        window.bridge.text_streamed.disconnect(token_arrived)
        reply = replies()[-1].text
        self.wait(lambda: not window.chat.busy)
        self.log.append(
            {
                "conversation": window.conversation_id,
                "you": text,
                "mnemo": reply,
                "reply_shown_s": round(shown, 2),
                "send_enabled_after_last_token_s": (
                    round(send_after, 3) if send_after is not None else None
                ),
            }
        )
        print(f"> {text}\n< {reply}\n", file=sys.stderr, flush=True)


def tour(drive: Driver, window: MainWindow, mnemo: Mnemo) -> None:
    """After the turns, as a person looks around: forget the dentist message from Browse
    memory (its preview shot), then every page at the window's own size (``10-…`` to
    ``19-…``)."""
    window.resize(1180, 760)  # the window's default size
    browser = window.browser.conversations
    window.show_page("Browse memory")
    window.browser.setCurrentWidget(browser)
    browser.query.setText("dentist")
    browser.hits = []  # the page's first listing is not the search's
    browser.refresh()
    drive.wait(lambda: bool(browser.hits), 30)
    rows = [i for i, hit in enumerate(browser.hits) if hit.role == "user" and "dentist" in hit.text]
    browser.table.selectRow(rows[0])
    browser.forget_selected()
    drive.wait(lambda: window.property("forget_dialog") is not None, 30)
    dialog = window.property("forget_dialog")
    drive.pump(0.5)
    dialog.grab().save(str(drive.out / "10-forget-preview.png"))
    dialog.forget_button.click()
    drive.wait(lambda: "Forgotten" in browser.status.text(), 120)
    drive.shoot(window, "11-forgotten.png")
    for number, page in enumerate(
        ("Chat", "Core memory", "People & things", "Documents", "Context", "Models", "Settings"),
        start=12,
    ):
        window.show_page(page)
        drive.pump(1.0)
        drive.shoot(window, f"{number}-{page.lower().replace(' & ', '-').replace(' ', '-')}.png")
    window.show_page("Browse memory")
    window.browser.setCurrentWidget(window.browser.archival)
    window.browser.archival.refresh()
    drive.pump(1.0)
    drive.shoot(window, "19-browse-passages.png")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="where screenshots and log go")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="mnemo-drive-"))
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication(sys.argv)
    drive = Driver(app, out / "profile", out)  # type: ignore[arg-type]

    lease = out / "lease.md"
    lease.write_text(LEASE, encoding="utf-8")
    with Mnemo.open(out / "profile") as dropped:  # as if dropped on the window
        Ingestor(dropped).ingest_file(lease)
    mnemo, window = drive.open()
    first = window.conversation_id
    for text in FIRST:
        drive.say(window, text)
    drive.shoot(window, "01-first.png")
    window.activateWindow()
    drive.pump(0.3)
    QTest.keyClick(window.chat.input, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    drive.wait(lambda: window.conversation_id != first and not window.chat.bubbles(), 10)
    drive.shoot(window, "02-new-empty.png")
    for text in NEW:
        drive.say(window, text)
    drive.shoot(window, "03-new.png")
    window.close()
    drive.pump(0.5)
    mnemo.close()

    mnemo, window = drive.open()  # a restart: where the person left off
    drive.shoot(window, "04-restarted.png")
    for text in RESTARTED:
        drive.say(window, text)
    drive.shoot(window, "05-after-restart.png")
    listed = window.conversation_list.list
    item = listed.item(listed.count() - 1)  # the oldest, the first conversation
    QTest.mouseClick(
        listed.viewport(), Qt.MouseButton.LeftButton, pos=listed.visualItemRect(item).center()
    )
    drive.wait(lambda: window.conversation_id == first, 10)
    drive.shoot(window, "06-reopened-first.png")
    tour(drive, window, mnemo)
    window.close()
    drive.pump(0.3)
    mnemo.close()

    (out / "log.json").write_text(json.dumps(drive.log, indent=1, ensure_ascii=False))
    shown = [float(turn["reply_shown_s"]) for turn in drive.log]  # type: ignore[arg-type]
    send = [
        float(turn["send_enabled_after_last_token_s"])  # type: ignore[arg-type]
        for turn in drive.log
        if turn["send_enabled_after_last_token_s"] is not None
    ]
    emit(
        {
            "benchmark": "window_drive",
            "turns": len(drive.log),
            "reply_shown_s": {"p50": percentile(shown, 0.5), "p95": percentile(shown, 0.95)},
            "send_enabled_after_last_token_s": {
                "p50": percentile(send, 0.5),
                "p95": percentile(send, 0.95),
                "target": 0.2,
            },
            "out": str(out),
        }
    )


if __name__ == "__main__":
    main()
