"""Forget in the real window, as a person does it: File → Forget…, the words, the preview, Forget.

A profile after a day of use (a PIN in a note and a document, a passport number in the chat and
in core memory, a snapshot) is opened in the window. File → Forget… is chosen, "zebra 7741
quartz" typed into its box, and the preview shown (``forget-preview.png``); Forget is pressed
and the window shows the outcome (``forget-done.png``). Then People & things → Forget
everything about… for a person (``forget-person.png``). Prints one JSON line: what the previews
listed, the outcomes, and the files of the profile that still hold any of the three texts
(none is the goal).

    xvfb-run -a uv run python tests/benchmarks/forget_drive.py [--out /tmp/forget]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _common import emit, pump
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QInputDialog

from desktop.main_window import MainWindow
from engine import Mnemo
from engine.ingest.ingestor import Ingestor

PIN, PASSPORT, PERSON = "zebra-7741-quartz", "QX-55123-LM", "Jordan"


def held_in(folder: Path, *needles: str) -> list[str]:
    return sorted(
        str(path.relative_to(folder))
        for path in folder.rglob("*")
        if path.is_file() and any(n.encode() in path.read_bytes() for n in needles)
    )


def a_day_of_use(mnemo: Mnemo, folder: Path) -> None:
    (folder / "bank.md").write_text(f"# Bank\n\nThe card PIN is {PIN}.\n", encoding="utf-8")
    Ingestor(mnemo).ingest_file(folder / "bank.md")
    mnemo.archival.insert(f"My bank PIN is {PIN}.")
    mnemo.recall.add("user", f"My passport number is {PASSPORT}, please remember it.")
    mnemo.recall.add("user", f"My ex {PERSON} lives in Bristol.")
    mnemo.core.append("human", f"Passport {PASSPORT}.")
    mnemo.knowledge.add("user", "partner", PERSON)
    mnemo.knowledge.add(PERSON, "lives_in", "Bristol")
    mnemo.snapshots.create("after a day")
    mnemo.wait_for_background_work()


def preview_lines(window: MainWindow) -> list[str]:
    dialog = window.property("forget_dialog")
    return [dialog.places.topLevelItem(i).text(0) for i in range(dialog.places.topLevelItemCount())]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="mnemo-forget-"))
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="mnemo-forget-profile-"))
    app = QApplication.instance() or QApplication([])
    with Mnemo.open(work / "profile") as mnemo:
        a_day_of_use(mnemo, work)
        window = MainWindow(mnemo)
        window.resize(1280, 800)
        window.show()
        pump(app, lambda: window.model_ready)

        def type_the_words() -> None:
            box = next(w for w in app.topLevelWidgets() if isinstance(w, QInputDialog))
            box.setTextValue("zebra 7741 quartz")
            box.accept()

        QTimer.singleShot(300, type_the_words)
        window.forget_action.trigger()  # File → Forget…
        pump(app, lambda: window.property("forget_dialog") is not None)
        dialog = window.property("forget_dialog")
        pump(app, dialog.isVisible, 10)
        app.processEvents()
        dialog.grab().save(str(out / "forget-preview.png"))
        listed = {"text": preview_lines(window)}
        dialog.forget_button.click()
        pump(app, lambda: "Forgotten" in window.statusBar().currentMessage())
        outcome = {"text": window.statusBar().currentMessage()}
        window.grab().save(str(out / "forget-done.png"))

        window.setProperty("forget_dialog", None)
        window.show_page("People & things")
        page = window.knowledge
        page.refresh()
        names = [page.entities.item(r).data(256) for r in range(page.entities.count())]
        page.entities.setCurrentRow(names.index(PERSON))
        page.forget_entity_button.click()
        pump(app, lambda: window.property("forget_dialog") is not None)
        dialog = window.property("forget_dialog")
        pump(app, dialog.isVisible, 10)
        app.processEvents()
        dialog.grab().save(str(out / "forget-person.png"))
        listed["person"] = preview_lines(window)
        dialog.forget_button.click()
        pump(app, lambda: "Forgotten" in page.notice.text())
        outcome["person"] = page.notice.text()
        window.close()
        mnemo.wait_for_background_work()
    emit(
        {
            "benchmark": "forget_drive",
            "previews": listed,
            "outcomes": outcome,
            "still_holding_pin_or_person": held_in(work / "profile", PIN, PERSON),
            "out": str(out),
        }
    )


if __name__ == "__main__":
    main()
