"""Round trips that cannot lose data: random profiles exported, imported and compared.

Each seed makes a profile as weeks of use leave it (``tests/profiles.py``: titled conversations,
deleted messages, notes with tags and expiries, core edits and new blocks, fact chains
superseded and retracted, merged people, proposals of every kind and state, a document, a
watched folder). It is exported, then imported into an empty profile (which must come back
exactly: every table, every message and passage) and into a profile in use made from another
seed (which must keep all of its own and gain all of the archive's, what contradicts it as a
proposal). One JSON line: profiles, how many had a difference each way, the first few
differences, and the median seconds per profile.

    uv run python tests/benchmarks/round_trip.py [--profiles 200] [--first-seed 0]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from _common import emit

from engine import Mnemo
from engine.embed import default_embedder
from engine.exchange.archive import export_archive, import_archive
from tests.profiles import contents, fill_randomly, merged_differences, restored_differences


def one(seed: int, folder: Path, embedder: object) -> tuple[list[str], list[str]]:
    with Mnemo.open(folder / "old", embedder=embedder) as old:
        fill_randomly(old, random.Random(seed), folder / "files")
        export_archive(old, folder / "memory.mnemo")
        with Mnemo.open(folder / "new", embedder=embedder) as new:
            import_archive(new, folder / "memory.mnemo")
            new.wait_for_background_work()
            restored = restored_differences(old, new)
        with Mnemo.open(folder / "in-use", embedder=embedder) as in_use:
            fill_randomly(in_use, random.Random(seed + 10_000), folder / "other-files")
            before = contents(in_use)
            import_archive(in_use, folder / "memory.mnemo")
            in_use.wait_for_background_work()
            merged = merged_differences(old, before, in_use)
    return restored, merged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", type=int, default=200)
    parser.add_argument("--first-seed", type=int, default=0)
    args = parser.parse_args()
    embedder = default_embedder()
    restored_bad, merged_bad, examples, seconds = 0, 0, [], []
    for seed in range(args.first_seed, args.first_seed + args.profiles):
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as folder:
            restored, merged = one(seed, Path(folder), embedder)
        seconds.append(time.perf_counter() - started)
        restored_bad += bool(restored)
        merged_bad += bool(merged)
        examples += [f"seed {seed}: {difference}" for difference in restored + merged][:3]
    emit(
        {
            "benchmark": "round_trip",
            "profiles": args.profiles,
            "restored_with_differences": restored_bad,
            "merged_with_differences": merged_bad,
            "examples": examples[:5],
            "seconds_per_profile_p50": round(statistics.median(seconds), 2),
        }
    )


if __name__ == "__main__":
    main()
