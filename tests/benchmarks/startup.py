"""Start-up: how soon the window shows and the chat is ready, `mnemo --help`, the heaviest
imports, and the window's memory at rest.

Each run starts the real `mnemo` console script on a fresh profile, on Xvfb when there is one
(else Qt's offscreen platform), with ``MNEMO_STARTUP_TRACE`` set: the app writes the wall-clock
time when its window has first been painted ("shown") and when the model is loaded ("ready").
Times are from the moment the process was started. After "ready" the process idles two seconds
and its resident memory (VmRSS) is read. Medians of ``--runs``.

Targets (issue: start-up and scale): shown <= 1.0 s, `mnemo --help` <= 0.5 s, ready no later
than before.

    uv run python tests/benchmarks/startup.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from _common import emit

MNEMO = [str(Path(sys.executable).parent / "mnemo")]


@contextmanager
def launched(
    display_env: dict[str, str], command: list[str], tree: str | None, until: str
) -> Iterator[tuple[dict[str, float], int]]:
    """Start the window's ``command`` on a fresh profile and read its moments (seconds from the
    start) up to ``until``; the moments and its process id while it still runs, then it ends."""
    with tempfile.TemporaryDirectory() as home:
        env = {
            **os.environ,
            **display_env,
            "MNEMO_HOME": str(Path(home) / "profile"),
            "XDG_CONFIG_HOME": str(Path(home) / "config"),
            "MNEMO_STARTUP_TRACE": "1",
            **({"PYTHONPATH": tree} if tree else {}),
        }
        started = time.time()
        process = subprocess.Popen(
            command, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, cwd=tree
        )
        moments: dict[str, float] = {}
        assert process.stderr is not None
        try:
            for line in process.stderr:
                if line.startswith("mnemo-startup "):
                    _, moment, when = line.split()
                    moments[moment] = float(when) - started
                    if moment == until:
                        break
            if until not in moments:
                raise SystemExit(f"the window never reached {until!r}")
            yield moments, process.pid
        finally:
            process.terminate()
            process.wait(timeout=30)


def one_start(
    display_env: dict[str, str], command: list[str], tree: str | None
) -> tuple[float, float, int]:
    with launched(display_env, command, tree, "ready") as (moments, pid):
        time.sleep(2.0)
        rss = 0
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
    return moments["shown"], moments["ready"], rss


def help_seconds(command: list[str], tree: str | None) -> float:
    env = {**os.environ, **({"PYTHONPATH": tree} if tree else {})}
    started = time.perf_counter()
    subprocess.run([*command, "--help"], check=True, capture_output=True, env=env, cwd=tree)
    return time.perf_counter() - started


def import_top(count: int = 10) -> list[list[object]]:
    """The heaviest imports (cumulative) of opening the window's modules, in milliseconds."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import desktop.main_window"],
        capture_output=True,
        text=True,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
    )
    rows = []
    for line in done.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].strip()))
    return [[name, round(micros / 1000)] for micros, name in sorted(rows, reverse=True)[:count]]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--tree",
        help="another checkout to measure the same way (e.g. the code before a change); it "
        "runs as `python -m desktop.launcher` from there, with this environment's packages",
    )
    args = parser.parse_args()
    command = [sys.executable, "-m", "desktop.launcher"] if args.tree else MNEMO
    display = {"QT_QPA_PLATFORM": "offscreen"}
    xvfb = None
    if shutil.which("Xvfb") and not os.environ.get("DISPLAY"):
        xvfb = subprocess.Popen(["Xvfb", ":97", "-screen", "0", "1280x800x24"])
        time.sleep(1.0)
        display = {"DISPLAY": ":97", "QT_QPA_PLATFORM": "xcb"}
    try:
        starts = [one_start(display, command, args.tree) for _ in range(args.runs)]
    finally:
        if xvfb is not None:
            xvfb.terminate()
    helps = [help_seconds(command, args.tree) for _ in range(args.runs)]
    emit(
        {
            "benchmark": "startup",
            "runs": args.runs,
            "tree": args.tree or "this checkout",
            "platform": display["QT_QPA_PLATFORM"],
            "window_shown_s_p50": round(statistics.median(s[0] for s in starts), 2),
            "chat_ready_s_p50": round(statistics.median(s[1] for s in starts), 2),
            "idle_rss_mb_p50": round(statistics.median(s[2] for s in starts) / 2**20),
            "help_s_p50": round(statistics.median(helps), 2),
            "targets": {"window_shown_s": 1.0, "help_s": 0.5},
            "import_top_ms": import_top(),
        }
    )


if __name__ == "__main__":
    main()
