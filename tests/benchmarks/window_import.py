"""A person brings their ChatGPT history into the real window, and looks at it.

With the bundled model, under Xvfb: the real ChatGPT export (``../shared/data/real/
chatgpt_2026``) imported from File → Import (the file already chosen), screenshots while it
runs (``01-importing.png``), while the person chats meanwhile (``02-chatting-meanwhile.png``)
and when it is done (``03-imported.png``); then another import stopped with Stop
(``04-stopped.png``); then one left halfway by closing the window, and the next start
(``05-offered-at-start.png``) and its Finish (``06-finished.png``). Prints one JSON line: the
import's time and messages, a reply's time while importing against one before (the import
waits while a reply is written), and what the bar said.

    xvfb-run -a -s "-screen 0 1280x800x24" uv run python tests/benchmarks/window_import.py \
        [--out /tmp/import-drive]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO, emit
from PySide6.QtWidgets import QApplication
from window_drive import Driver

from engine.exchange import unfinished

REAL = REPO.parent / "shared" / "data" / "real" / "chatgpt_2026"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="where screenshots go")
    parser.add_argument("--real", type=Path, default=REAL, help="the real export")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="mnemo-import-"))
    out.mkdir(parents=True, exist_ok=True)
    export = out / "chatgpt-export"
    shutil.copytree(args.real, export, dirs_exist_ok=True)
    app = QApplication.instance() or QApplication(sys.argv)
    drive = Driver(app, out / "profile", out)  # type: ignore[arg-type]
    figures: dict[str, object] = {"benchmark": "window_import"}

    mnemo, window = drive.open()
    bar, exchange = window.exchange.bar, window.exchange
    drive.say(window, "Hello! What can you do?")  # the baseline: a reply with no import running
    figures["reply_idle_s"] = drive.log[-1]["reply_shown_s"]
    said: list[str] = []
    exchange.finished.connect(said.append)
    started = time.monotonic()
    exchange.import_from(export)
    drive.wait(lambda: "of about" in bar.text.text(), 300)
    drive.shoot(window, "01-importing.png")
    figures["bar_first_estimate"] = bar.text.text()
    drive.say(window, "Hi! Can you suggest a name for a grey cat?")
    figures["reply_while_importing_s"] = drive.log[-1]["reply_shown_s"]
    idle, busy = float(figures["reply_idle_s"]), float(figures["reply_while_importing_s"])  # type: ignore[arg-type]
    figures["reply_ratio"] = round(busy / max(idle, 0.01), 2)
    drive.shoot(window, "02-chatting-meanwhile.png")
    drive.wait(lambda: bool(said), 1800)
    figures["import_s"] = round(time.monotonic() - started, 1)
    figures["import_said"] = said[-1]
    figures["messages"] = mnemo.recall.count()
    drive.shoot(window, "03-imported.png")

    copy = out / "second-export"  # the same conversations under other ids: a new import
    copy.mkdir()
    for shard in export.glob("conversations-*.json"):
        items = json.loads(shard.read_text(encoding="utf-8"))
        for item in items:
            item["conversation_id"] = item["id"] = "second-" + str(item.get("id"))
        (copy / shard.name).write_text(json.dumps(items), encoding="utf-8")
    before = mnemo.recall.count()
    exchange.import_from(copy)
    drive.wait(lambda: "of about" in bar.text.text(), 300)
    exchange.stop_import()
    drive.pump(0.3)
    drive.shoot(window, "04-stopping.png")
    drive.wait(lambda: "was stopped" in said[-1], 300)
    drive.shoot(window, "04-stopped.png")
    figures["stop_said"] = said[-1]
    figures["messages_after_stop_equal_before"] = mnemo.recall.count() == before

    exchange.import_from(copy)  # closing the window mid-way leaves it to finish later
    drive.wait(lambda: "of about" in bar.text.text(), 300)
    window.close()
    drive.pump(0.5)
    mnemo.close()
    mnemo, window = drive.open()
    bar, exchange = window.exchange.bar, window.exchange
    figures["offered_at_start"] = bar.text.text()
    drive.shoot(window, "05-offered-at-start.png")
    said.clear()
    exchange.finished.connect(said.append)
    bar.finish_button.click()
    drive.wait(lambda: bool(said), 1800)
    drive.shoot(window, "06-finished.png")
    figures["finish_said"] = said[-1]
    figures["unfinished_after"] = unfinished.read(mnemo) is not None
    window.close()
    drive.pump(0.3)
    mnemo.close()
    emit(figures)


if __name__ == "__main__":
    main()
