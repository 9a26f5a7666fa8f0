"""The installed (frozen) Mnemo against `uv run mnemo`, measured in the same run, interleaved.

- the window: when it is first painted ("shown") and when the chat takes a message ("ready",
  the bundled model loaded), on Xvfb, from a fresh profile each time (see startup.py);
- the first reply: `mnemo chat -m hello` on a fresh profile, wall time;
- `mnemo --version`;
- the artefacts' sizes.

Warm: one untimed start of each first, so both read their files from the page cache. Medians of
``--runs``; the ratio is frozen / uv run. Target (issue: installers): ready <= 1.5 s frozen.

    uv run python packaging/build.py && uv run python tests/benchmarks/frozen_app.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from _common import emit
from startup import one_start

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"


def timed(command: list[str]) -> float:
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "MNEMO_HOME": str(Path(home) / "profile")}
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, env=env, cwd=ROOT)
        return time.perf_counter() - started


def size_mib(path: Path) -> float:
    if path.is_dir():
        total = sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())
    else:
        total = path.stat().st_size
    return round(total / 2**20)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    frozen = [str(DIST / "mnemo" / "mnemo")]
    uv_run = [shutil.which("uv") or "uv", "run", "--project", str(ROOT), "mnemo"]
    commands = {"frozen": frozen, "uv_run": uv_run}

    xvfb = subprocess.Popen(["Xvfb", ":96", "-screen", "0", "1280x800x24", "-nolisten", "tcp"])
    time.sleep(1.0)
    display = {"DISPLAY": ":96", "QT_QPA_PLATFORM": "xcb"}
    results: dict[str, dict[str, list[float]]] = {
        name: {"shown": [], "ready": [], "reply": [], "version": []} for name in commands
    }
    try:
        for command in commands.values():  # warm the page cache
            one_start(display, command, None)
        for _ in range(args.runs):
            for name, command in commands.items():
                shown, ready, _rss = one_start(display, command, None)
                results[name]["shown"].append(shown)
                results[name]["ready"].append(ready)
                results[name]["reply"].append(timed([*command, "chat", "-m", "hello"]))
                results[name]["version"].append(timed([*command, "--version"]))
    finally:
        xvfb.terminate()

    medians = {
        name: {f"{what}_s_p50": round(statistics.median(values), 2) for what, values in r.items()}
        for name, r in results.items()
    }
    frozen, uv = medians["frozen"], medians["uv_run"]
    ratios = {what: round(frozen[what] / uv[what], 2) for what in frozen}
    sizes = {path.name: size_mib(path) for path in sorted(DIST.glob("mnemo*")) if path.exists()}
    emit(
        {
            "benchmark": "frozen_app",
            "runs": args.runs,
            **{f"{name}": values for name, values in medians.items()},
            "frozen_over_uv_run": ratios,
            "sizes_mib": sizes,
            "targets": {"frozen_ready_s": 1.5},
        }
    )


if __name__ == "__main__":
    main()
