"""A backup of a profile where facts changed, imported into a new assistant through the window.

The old profile learns a move ("Lisbon", then "Madrid") and a friend's ("Porto", then "Lyon") by
`mnemo kg`, and is exported with `mnemo export`. A new assistant is opened in the real window,
the archive is imported as File → Import does, and People & things is shown for you and for
Lena; the screenshots (``people-you.png``, ``people-lena.png``) go to ``--out``, to be looked at.
Prints one JSON line: the facts and history the window shows.

    xvfb-run -a uv run python tests/benchmarks/exchange_drive.py [--out /tmp/exchange]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _common import emit, pump
from PySide6.QtWidgets import QApplication

from desktop.main_window import MainWindow
from engine import Mnemo
from engine.cli import main as mnemo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="mnemo-exchange-"))
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="mnemo-exchange-profiles-"))
    old = ["--profile", str(work / "laptop")]
    for fact in (["user", "lives_in", "Lisbon"], ["Lena", "lives_in", "Porto"]):
        mnemo([*old, "kg", "add", *fact])
    for fact in (["user", "lives_in", "Madrid"], ["Lena", "lives_in", "Lyon"]):
        mnemo([*old, "kg", "add", *fact, "--replace"])
    mnemo([*old, "export", str(work / "laptop.mnemo")])

    app = QApplication.instance() or QApplication([])
    with Mnemo.open(work / "new-assistant") as new:
        window = MainWindow(new)
        window.resize(1280, 800)
        window.show()
        finished: list[str] = []
        window.exchange.finished.connect(finished.append)
        window.exchange.import_from(work / "laptop.mnemo")  # what File → Import… runs
        pump(app, lambda: bool(finished))
        window.show_page("People & things")
        page = window.knowledge
        shown = {}
        for name, shot in (("User", "people-you.png"), ("Lena", "people-lena.png")):
            page.refresh()
            for row in range(page.entities.count()):
                if page.current_entity() == name:
                    break
                page.entities.setCurrentRow(row)
            pump(app, lambda name=name: page.current_entity() == name, 10)
            app.processEvents()
            window.grab().save(str(out / shot))
            facts = [page.facts.item(r, 1).text() for r in range(page.facts.rowCount())]
            shown[name] = {"facts": facts, "history": page.history.text()}
        window.close()
    emit({"benchmark": "exchange_drive", "imported": finished[0], "shown": shown, "out": str(out)})


if __name__ == "__main__":
    main()
