"""The window's memory at rest: idle resident memory (VmRSS) with the bundled model when fresh,
and again after ``--turns`` chat turns and an ingest of ``--files`` generated Markdown files.

Target (issue: start-up and scale): after 50 turns and a 300-file ingest, idle RSS within 20% of
the fresh figure. The real window (offscreen), the real bundled model and the real ingestion;
"idle" is two seconds with nothing to do. Prints one JSON line.

    uv run python tests/benchmarks/memory_at_rest.py [--turns 50] [--files 300]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from _common import emit  # noqa: E402
from gui_responsiveness import MESSAGES, run_until  # noqa: E402
from ingest_throughput import write_markdown  # noqa: E402
from PySide6.QtCore import QCoreApplication  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from desktop.main_window import MainWindow  # noqa: E402
from engine import Mnemo  # noqa: E402


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def idle(seconds: float = 2.0) -> float:
    """Let the window idle (its collector runs on its timer), then read the resident memory."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        QCoreApplication.processEvents()
        time.sleep(0.005)
    return rss_mb()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--files", type=int, default=300)
    args = parser.parse_args()
    app = QApplication([])
    with tempfile.TemporaryDirectory() as workdir:
        root = Path(workdir)
        window = MainWindow(Mnemo.open(root / "profile"))
        window.show()
        run_until(lambda: window.model_ready, 120)
        fresh = idle()
        messages = iter(MESSAGES * (args.turns // len(MESSAGES) + 1))
        for _ in range(args.turns):
            window.chat.input.setPlainText(next(messages))
            window.chat.send_button.click()
            run_until(lambda: window.chat.busy, 10)
            run_until(lambda: not window.chat.busy, 300)
        after_turns = idle()
        (root / "documents").mkdir()
        write_markdown(root / "documents", args.files)
        window.ingest([str(root / "documents")])
        run_until(lambda: window.ingest_meter.isVisible(), 30)
        run_until(lambda: not window.ingest_meter.isVisible(), 1800)
        after_ingest = idle()
        window.shutdown()
    app.quit()
    emit(
        {
            "benchmark": "memory_at_rest",
            "turns": args.turns,
            "files": args.files,
            "fresh_idle_rss_mb": round(fresh),
            "after_turns_rss_mb": round(after_turns),
            "after_ingest_rss_mb": round(after_ingest),
            "growth": round(after_ingest / fresh - 1, 3),
            "target_growth": 0.2,
        }
    )


if __name__ == "__main__":
    main()
