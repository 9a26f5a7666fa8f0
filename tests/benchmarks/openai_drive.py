"""An OpenAI client chats with the assistant that the open window holds, through `mnemo serve
--local`, as a person who uses Open WebUI beside Mnemo would.

The real window opens on an assistant in a fresh data folder, with the bundled model, holding
the assistant as the app does, and the person tells it something. Then `mnemo serve --local`
starts in a second process, and the `openai` package streams a question to it. The window must
answer each in its own conversation, and the client must get the same reply; the screenshot
(``openai-turn.png``) is there to be looked at. Also measured: how soon a question shows in the
window after the client sent it, with the window's folder watch against looking every 500 ms
(turns alternate; medians). One JSON line out.

    QT_QPA_PLATFORM=offscreen uv run python tests/benchmarks/openai_drive.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import emit
from PySide6.QtWidgets import QApplication
from window_drive import Driver

from desktop.handed_turns import LOOK_MS

FACT = "I keep bees on the roof of my flat in Lisbon."
QUESTIONS = [
    "What do I keep on my roof?",
    "Where is my flat?",
    "Which city do I live in?",
    "What animals do I keep?",
    "What is on my roof?",
    "Do I live in a house or a flat?",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="where the screenshot goes")
    args = parser.parse_args()
    out: Path = args.out or Path(tempfile.mkdtemp(prefix="mnemo-openai-drive-"))
    out.mkdir(parents=True, exist_ok=True)
    os.environ["MNEMO_DATA"] = str(out / "data")  # `mnemo serve --local` serves this folder

    from engine.assistants import Assistants
    from engine.profile import WINDOW
    from tests.mnemo_server import serve_local

    profile = Assistants(out / "data").create("home")
    app = QApplication.instance() or QApplication(sys.argv)
    drive = Driver(app, profile, out)  # type: ignore[arg-type]
    mnemo, window = drive.open()
    held = mnemo.profile.hold_assistant(WINDOW)  # as desktop.app does
    held.__enter__()
    drive.say(window, FACT)
    handed = window.handed_turns
    rows: list[dict[str, Any]] = []
    with serve_local() as local:
        for number, question in enumerate(QUESTIONS):
            # Every other question as first built (a look every 500 ms, no folder watch): the
            # baseline, measured in the same run.
            watched = number % 2 == 0
            handed._timer.setInterval(LOOK_MS if watched else 500)
            connect = handed._watch.directoryChanged.connect
            disconnect = handed._watch.directoryChanged.disconnect
            (connect if watched else disconnect)(handed._look)
            row: dict[str, Any] = {"question": question, "folder_watch": watched}
            began = time.monotonic()

            def ask(
                question: str = question, row: dict[str, Any] = row, began: float = began
            ) -> None:
                pieces = []
                for chunk in local.chat.completions.create(
                    model="mnemo:home",
                    messages=[{"role": "user", "content": question}],
                    stream=True,
                ):
                    if chunk.choices and chunk.choices[0].delta.content:
                        row.setdefault("first_piece_s", time.monotonic() - began)
                        pieces.append(chunk.choices[0].delta.content)
                row["reply"] = "".join(pieces)
                row["whole_s"] = time.monotonic() - began

            def shown(
                question: str = question, row: dict[str, Any] = row, began: float = began
            ) -> bool:
                if "in_window_s" not in row and any(
                    bubble.text == question for bubble in window.chat.bubbles()
                ):
                    row["in_window_s"] = time.monotonic() - began
                return "whole_s" in row

            client = threading.Thread(target=ask)
            client.start()
            drive.wait(shown, timeout=300)
            client.join()
            drive.wait(lambda: not window.chat.busy, timeout=60)
            texts = [bubble.text for bubble in window.chat.bubbles()]
            row["window_reply"] = texts[-1]
            row["same_reply_in_window"] = bool(row["reply"]) and texts[-1] == row["reply"]
            rows.append(row)
            print(f"> {question}\n< {row['reply']}\n", file=sys.stderr, flush=True)
    drive.shoot(window, "openai-turn.png")
    said = [(m.role, m.text) for m in mnemo.recall.recent(50, window.conversation_id)]
    (out / "turns.json").write_text(json.dumps(rows, indent=1, ensure_ascii=False), "utf-8")

    def median(key: str, watched: bool) -> float:
        return round(statistics.median(r[key] for r in rows if r["folder_watch"] == watched), 3)

    result: dict[str, Any] = {
        "benchmark": "openai_drive",
        "turns": len(rows),
        "all_in_window_with_the_same_reply": all(r["same_reply_in_window"] for r in rows),
        "each_question_stored_once": all(said.count(("user", q)) == 1 for q in QUESTIONS),
        "in_window_s_p50": {
            "folder_watch": median("in_window_s", True),
            "every_500ms": median("in_window_s", False),
        },
        "first_piece_s_p50": {
            "folder_watch": median("first_piece_s", True),
            "every_500ms": median("first_piece_s", False),
        },
        "first_reply": rows[0]["reply"],
        "screenshot": str(out / "openai-turn.png"),
    }
    window.close()
    drive.pump(0.5)
    held.__exit__(None, None, None)
    mnemo.close()
    emit(result)


if __name__ == "__main__":
    main()
