"""The tidy batch in the real window, driven as a person would, with screenshots to look at.

A person's six months (``months_life.py``, seed 1) are played through the agent on their own
days, the person approving what waits at the end of each day; the replies are a scripted
model's (what is kept is kept by rule, the same with any model). The window then opens, the
person leaves it alone, and memory is tidied behind it. The person reads the batch, approves
one change and rejects another, approves the rest with Approve all, then undoes one change.
Screenshots ``01-batch.png`` … ``04-undone.png`` go to ``--out``; one JSON line says what the
batch held and how long the pass took.

Needs a display: run it under Xvfb (``xvfb-run -a``), not offscreen, to see what a person sees.

    xvfb-run -a uv run python tests/benchmarks/window_tidy.py [--out /tmp/tidy] [--seed 1]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from _common import emit, pump
from months import approve_waiting
from months_life import write_life
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from desktop.main_window import MainWindow
from engine import Mnemo, clock
from engine.agent import Agent
from engine.embed import default_embedder
from engine.llm import ScriptedModel


def live(mnemo: Mnemo, seed: int) -> int:
    """The seed's six months, each conversation on its day; returns what the person approved."""
    model = ScriptedModel(parameter_count=135_000_000, default="Okay.")
    approved = 0
    for lines in write_life(seed).conversations:
        day = lines[0].day
        with clock.travel(datetime(day.year, day.month, day.day, 19)):
            agent = Agent(mnemo, model, conversation_id=mnemo.conversations.start())
            for line in lines:
                agent.send(line.text)
            mnemo.wait_for_background_work()
            approved += approve_waiting(mnemo)
    return approved


def shoot(app: Any, window: MainWindow, path: Path) -> None:
    """A screenshot once the window has laid out what changed (a grab at once caught the
    panel before its cards had their room)."""
    until = time.monotonic() + 0.5
    pump(app, lambda: time.monotonic() > until)
    window.grab().save(str(path))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="", help="where the screenshots go")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="mnemo-tidy-"))
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication(sys.argv)
    with tempfile.TemporaryDirectory() as folder:
        mnemo = Mnemo.open(Path(folder) / "profile", embedder=default_embedder())
        approved = live(mnemo, args.seed)
        window = MainWindow(mnemo, loader=lambda _settings: ScriptedModel(default="Okay."))
        window.show()
        pump(app, lambda: window.model_ready and not window.tasks.pending)
        window._last_activity -= 3600  # the person has been away an hour
        started = time.perf_counter()
        window.tidy_if_idle()
        pump(app, lambda: window.proposals.count > 0 and not window.tasks.pending)
        tidy_s = time.perf_counter() - started
        panel = window.proposals
        heading = panel.batch_heading()
        batch = mnemo.proposals.batch(heading.batch)
        summary = heading.findChild(type(panel.heading)).text()
        shoot(app, window, out / "01-batch.png")

        first, second = batch[0], batch[1]
        QTest.mouseClick(panel.card(first.id).approve_button, Qt.MouseButton.LeftButton)
        pump(app, lambda: mnemo.proposals.get(first.id).status == "approved")
        QTest.mouseClick(panel.card(second.id).reject_button, Qt.MouseButton.LeftButton)
        pump(app, lambda: mnemo.proposals.get(second.id).status == "rejected")
        pump(app, lambda: not window.tasks.pending)
        shoot(app, window, out / "02-part-approved.png")

        QTest.mouseClick(panel.batch_heading().approve_all, Qt.MouseButton.LeftButton)
        pump(app, lambda: panel.count == 0 and not window.tasks.pending)
        shoot(app, window, out / "03-tidied.png")
        done = panel.done_rows()
        undone = done[0].proposal
        QTest.mouseClick(done[0].button, Qt.MouseButton.LeftButton)
        pump(app, lambda: mnemo.proposals.get(undone.id).undone and not window.tasks.pending)
        shoot(app, window, out / "04-undone.png")
        decided = mnemo.proposals.batch(heading.batch)
        emit(
            {
                "benchmark": "window_tidy",
                "seed": args.seed,
                "person_approved_over_months": approved,
                "batch": summary,
                "changes": len(batch),
                "approved": sum(p.status == "approved" for p in decided),
                "rejected": sum(p.status == "rejected" for p in decided),
                "undone": sum(p.undone for p in decided),
                "tidy_s": round(tidy_s, 2),
                "screenshots": str(out),
            }
        )
        window.shutdown()
        mnemo.close()


if __name__ == "__main__":
    main()
