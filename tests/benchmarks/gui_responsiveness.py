"""Does the window stay responsive while the model generates and documents are ingested?

A 5 ms timer on the GUI thread records the gap between its ticks; a gap longer than the interval
is time the event loop could not run (a stall). Measured in the real app window (offscreen), with
the real bundled model and the real ingestion, in four phases: idle (the baseline), generating
(replies streamed from the local model), ingesting (a folder of generated Markdown files dropped
on the window), and both at once. Target: no stall over 50 ms in any phase.

    uv run python tests/benchmarks/gui_responsiveness.py [--turns 3] [--files 300]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
from _common import emit  # noqa: E402
from ingest_throughput import write_markdown  # noqa: E402
from PySide6.QtCore import QCoreApplication, QElapsedTimer, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from desktop.main_window import MainWindow  # noqa: E402
from engine import Mnemo  # noqa: E402

TICK_MS = 5
STALL_MS = 50
MESSAGES = [
    "Hi! I'm Ada. I live in Lisbon and I sail on weekends.",
    "Can you write me a short packing list for a weekend sailing trip?",
    "What do you remember about me?",
    "Give me three ideas for a rainy Sunday.",
]


class StallMeter:
    """Gaps between ticks of a fast GUI-thread timer."""

    def __init__(self) -> None:
        self.clock = QElapsedTimer()
        self.timer = QTimer()
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._tick)
        self.gaps: list[float] = []
        self._last = 0.0

    def start(self) -> None:
        self.gaps = []
        self.started = time.monotonic()
        self.clock.start()
        self._last = self.clock.nsecsElapsed() / 1e6
        self.timer.start()

    def stop(self) -> tuple[list[float], float]:
        self.timer.stop()
        return self.gaps, time.monotonic() - self.started

    def _tick(self) -> None:
        now = self.clock.nsecsElapsed() / 1e6
        self.gaps.append(now - self._last)
        self._last = now


def run_until(condition, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the phase did not finish in time")
        QCoreApplication.processEvents()
        time.sleep(0.001)


def summary(measured: tuple[list[float], float]) -> dict[str, float | int]:
    gaps, seconds = measured
    values = np.array(gaps or [0.0])
    return {
        "seconds": round(seconds, 1),
        "ticks": len(gaps),
        "gap_p50_ms": round(float(np.median(values)), 1),
        "gap_p99_ms": round(float(np.percentile(values, 99)), 1),
        "gap_max_ms": round(float(values.max()), 1),
        "stalls_over_50ms": int((values > STALL_MS).sum()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument(
        "--switch-interval",
        type=float,
        help="override the app's interpreter switch interval (5e-3 is Python's default)",
    )
    args = parser.parse_args()
    app = QApplication([])
    with tempfile.TemporaryDirectory() as workdir:
        root = Path(workdir)
        mnemo = Mnemo.open(root / "profile")
        window = MainWindow(mnemo)
        if args.switch_interval:
            sys.setswitchinterval(args.switch_interval)
        window.show()
        run_until(lambda: window.model_ready, 120)
        meter = StallMeter()
        phases: dict[str, dict[str, float | int]] = {}
        turn = iter(MESSAGES * 10)

        def converse(turns: int) -> None:
            for _ in range(turns):
                window.chat.input.setPlainText(next(turn))
                window.chat.send_button.click()
                run_until(lambda: window.chat.busy, 10)
                run_until(lambda: not window.chat.busy, 300)

        for seed, name in enumerate(("alone", "together")):  # written before any measuring
            (root / name).mkdir()
            write_markdown(root / name, args.files, seed=seed)

        def ingest(name: str) -> None:
            window.ingest([str(root / name)])
            run_until(lambda: window.ingest_meter.isVisible(), 30)

        meter.start()
        started = time.monotonic()
        while time.monotonic() - started < 2.0:
            QCoreApplication.processEvents()
            time.sleep(0.001)
        phases["idle"] = summary(meter.stop())

        meter.start()
        converse(args.turns)
        phases["generating"] = summary(meter.stop())

        meter.start()
        ingest("alone")
        run_until(lambda: not window.ingest_meter.isVisible(), 600)
        phases["ingesting"] = summary(meter.stop())

        meter.start()
        ingest("together")
        converse(args.turns)
        run_until(lambda: not window.ingest_meter.isVisible(), 600)
        phases["generating_and_ingesting"] = summary(meter.stop())

        window.shutdown()
        mnemo.close()
    worst = max(phase["gap_max_ms"] for phase in phases.values())
    emit(
        {
            "benchmark": "gui_responsiveness",
            "tick_ms": TICK_MS,
            "turns": args.turns,
            "files": args.files,
            "switch_interval_s": sys.getswitchinterval(),
            **{
                f"{name}_{key}": value
                for name, data in phases.items()
                for key, value in data.items()
            },
            "worst_gap_ms": worst,
            "target_max_gap_ms": STALL_MS,
            "met": worst <= STALL_MS,
        }
    )
    app.quit()


if __name__ == "__main__":
    main()
