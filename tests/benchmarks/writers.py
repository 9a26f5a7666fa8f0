"""Writers on one profile at once, one of them killed now and then: is anything lost?

Six processes write one profile for ``--seconds`` (``tests/profile_writer.py``): the chat (turns
through the agent, the person's facts kept), an import of real ChatGPT conversations again and
again, forgets of fresh texts, the tidy pass, an MCP client writing notes through `mnemo mcp`,
and a second process adding messages. Every ``--kill-every`` seconds or so one of them, chosen at
random, is killed with SIGKILL and started again. Then the profile is opened afresh and checked:

- lost / doubled: acknowledged messages, imported messages and notes not there exactly once;
- forgotten_held: texts a writer forgot that some file of the profile still holds;
- locked / conflicts: writes that failed with "database is locked" or a Lance commit conflict;
- errors: every other write that failed;
- check: what `mnemo check` finds (an import a kill cut short is undone first, as its repair).

Then, unless ``--no-latency``, a chat turn's time (the scripted model: the engine's own work)
idle, while a forget runs, and while an import runs in another process: medians and ratios.
One JSON line.

    uv run python tests/benchmarks/writers.py [--seconds 600] [--seed 1] [--kill-every 20]
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # run as a script: `uv run python tests/benchmarks/writers.py`
    sys.path.insert(0, str(REPO))

from sqlalchemy import text  # noqa: E402

from engine import Mnemo, forget, health  # noqa: E402
from engine.exchange import unfinished  # noqa: E402

KINDS = ("chat", "import", "forget", "tidy", "mcp", "messages")
LOCKED = "database is locked"
CONFLICT = "conflict"


def start(kind: str, profile: Path, seconds: float, logs: Path, seed: int) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.profile_writer",
            kind,
            str(profile),
            f"{seconds:.1f}",
            str(logs / f"{kind}.jsonl"),
            str(seed),
        ],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=(logs / f"{kind}.stderr").open("a"),
    )


def stress(root: Path, seconds: float, seed: int, kill_every: float) -> dict[str, Any]:
    """Run the writers for ``seconds`` in ``root`` and check the profile afterwards."""
    profile, logs = root / "profile", root / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with Mnemo.open(profile) as mnemo:
        for number in range(40):
            mnemo.recall.add("user", f"An earlier message {number}: apples and pears, the orchard.")
        mnemo.knowledge.add("user", "has a cat called", "Olive")
        mnemo.wait_for_background_work()
    rng = random.Random(seed)
    end = time.monotonic() + seconds
    running = {kind: start(kind, profile, seconds, logs, rng.randrange(10**6)) for kind in KINDS}
    kills: Counter[str] = Counter()
    while (left := end - time.monotonic()) > 1:
        time.sleep(min(left, kill_every * rng.uniform(0.5, 1.5)))
        left = end - time.monotonic()
        if left <= 1:
            break
        victim = rng.choice(KINDS)
        process = running[victim]
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait()
            kills[victim] += 1
        running[victim] = start(victim, profile, left, logs, rng.randrange(10**6))
    for process in running.values():
        try:
            process.wait(timeout=300)
        except subprocess.TimeoutExpired:  # a writer that does not stop is a finding too
            process.send_signal(signal.SIGKILL)
            process.wait()
            kills["hung"] += 1
    result = verify(profile, logs)
    result.update(seconds=round(seconds), kills=sum(kills.values()), killed=dict(kills))
    return result


def read_logs(logs: Path) -> dict[str, list[dict[str, Any]]]:
    entries: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(logs.glob("*.jsonl")):
        lines = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                lines.append(json.loads(line))
            except ValueError:  # the line a kill cut short was never acknowledged
                continue
        entries[path.stem] = lines
    return entries


def held_in(folder: Path, needles: list[str]) -> set[str]:
    """The needles some file under ``folder`` holds (each file read once)."""
    wanted = {needle: needle.encode() for needle in needles}
    found: set[str] = set()
    for path in folder.rglob("*"):
        if path.is_file() and len(found) < len(wanted):
            data = path.read_bytes()
            found |= {needle for needle, raw in wanted.items() if raw in data}
    return found


def verify(profile: Path, logs: Path) -> dict[str, Any]:
    entries = read_logs(logs)
    expected_messages: Counter[str] = Counter()
    expected_notes: Counter[str] = Counter()
    forgotten: list[str] = []
    errors: list[str] = []
    operations = 0
    for lines in entries.values():
        for entry in lines:
            operations += 1
            if "text" in entry:
                expected_messages[entry["text"]] += 1
            elif entry.get("op") == "import":
                expected_messages.update(entry["texts"])
            elif "note" in entry:
                expected_notes[entry["note"]] += 1
            elif "forgotten" in entry:
                forgotten.append(entry["forgotten"])
            elif "error" in entry:
                errors.append(entry["error"])
    with Mnemo.open(profile) as mnemo:  # finishes a forget a kill cut short, as any open does
        left_unfinished = unfinished.undo_unfinished(mnemo) is not None
        mnemo.wait_for_background_work()
        with mnemo.database.connect() as connection:
            rows = connection.execute(text("SELECT text, count(*) FROM message GROUP BY text"))
            stored = Counter({row[0]: int(row[1]) for row in rows})
        notes = Counter(
            row["text"] for row in mnemo.passage_vectors.rows(None, ["text"]) if row["text"]
        )
        problems = [problem.sentence for problem in health.check(mnemo, forgotten=True)]
        searchable = bool(mnemo.recall.search("garden shed roof", limit=3).hits)
        forgotten_listed = len(mnemo.tombstones.all())
    lost = sum(max(0, n - stored.get(t, 0)) for t, n in expected_messages.items())
    lost += sum(max(0, n - notes.get(t, 0)) for t, n in expected_notes.items())
    doubled = sum(max(0, stored.get(t, 0) - n) for t, n in expected_messages.items())
    doubled += sum(max(0, notes.get(t, 0) - n) for t, n in expected_notes.items())
    still_held = held_in(profile, forgotten)
    locked = [error for error in errors if LOCKED in error]
    conflicts = [error for error in errors if CONFLICT in error.lower()]
    others = [error for error in errors if error not in locked and error not in conflicts]
    return {
        "benchmark": "writers",
        "writers": len(KINDS),
        "operations": operations,
        "messages_acknowledged": sum(expected_messages.values()),
        "notes_acknowledged": sum(expected_notes.values()),
        "forgets": len(forgotten),
        "tombstones": forgotten_listed,
        "lost": lost,
        "doubled": doubled,
        "forgotten_held": len(still_held),
        "locked": len(locked),
        "conflicts": len(conflicts),
        "errors": len(others),
        "error_examples": sorted(set(others))[:5],
        "import_left_unfinished": left_unfinished,
        "searchable": searchable,
        "check": problems or "clean",
    }


# -- a chat turn's time beside a forget and an import ---------------------------------------------


def turn_times(root: Path, turns: int, bundled: bool = False) -> dict[str, Any]:
    """A chat turn's time (median ms) idle, while forgets run, and while another process
    imports. With the scripted model, the engine's own share of a turn (storing, recall,
    keeping), which is what another writer can slow; with ``bundled``, the bundled model's
    whole turn, as the person waits for it."""
    from engine.agent import Agent
    from engine.llm import ScriptedModel, load_model

    profile = root / "latency"
    mnemo = Mnemo.open(profile)
    for number in range(300):
        mnemo.recall.add("user", f"Message {number}: the ferry to the island leaves at nine.")
    mnemo.wait_for_background_work()
    model = (
        load_model(mnemo.settings)
        if bundled
        else ScriptedModel(parameter_count=135_000_000, default=lambda _prompt: "Noted, thanks.")
    )
    agent = Agent(mnemo, model)

    def timed(count: int) -> list[float]:
        times = []
        for _ in range(count):
            started = time.perf_counter()
            agent.send(f"My neighbour {uuid.uuid4().hex[:6]} waters the plants on Sundays.")
            times.append((time.perf_counter() - started) * 1000)
        return times

    timed(3)  # warm
    idle = timed(turns)
    stop = threading.Event()

    def forgetting() -> None:
        while not stop.is_set():
            token = f"zq{uuid.uuid4().hex[:10]}"
            mnemo.recall.add("user", f"The gate code is {token}.")
            forget.forget(mnemo, forget.plan_text(mnemo, token))

    forgetter = threading.Thread(target=forgetting)
    forgetter.start()
    during_forget = timed(turns)
    stop.set()
    forgetter.join()
    logs = root / "latency-logs"
    logs.mkdir(exist_ok=True)
    importer = start("import", profile, 600, logs, 7)
    time.sleep(5)  # opened, and importing
    during_import = timed(turns)
    importer.send_signal(signal.SIGKILL)
    importer.wait()
    mnemo.close()
    medians = {
        "idle": statistics.median(idle),
        "during_forget": statistics.median(during_forget),
        "during_import": statistics.median(during_import),
    }
    return {
        "turn_ms": {name: round(value, 1) for name, value in medians.items()},
        "forget_ratio": round(medians["during_forget"] / medians["idle"], 2),
        "import_ratio": round(medians["during_import"] / medians["idle"], 2),
        "turns": turns,
        "model": "bundled" if bundled else "scripted",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kill-every", type=float, default=20)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--no-latency", action="store_true")
    parser.add_argument("--latency-only", action="store_true", help="no writers: turn times only")
    parser.add_argument("--bundled", action="store_true", help="turn times with the bundled model")
    parser.add_argument("--keep", type=Path, help="work in this folder, and leave it there")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        folder = args.keep or Path(temporary)
        result: dict[str, Any] = {"benchmark": "writers"}
        if not args.latency_only:
            result = stress(folder, args.seconds, args.seed, args.kill_every)
        result["seed"] = args.seed
        if not args.no_latency:
            result.update(turn_times(folder, args.turns, args.bundled))
    print(json.dumps(result, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
