"""What a forget costs at scale: one text forgotten in 100k messages and 100k passages.

A profile is filled through the public API (vectors from ``ClusteredVectors``, which loads it in
minutes instead of hours; a forget's cost does not depend on what the vectors mean). One text
is held in a message, a passage, core memory and a fact. Measured in one run: searches of both
stores before the forget (p50 over ``--queries``), the preview and the forget itself (with its
scrub: Lance compaction and keyword index, SQLite's index merge and VACUUM), and the same
searches after. One JSON line.

    uv run python tests/benchmarks/forget_cost.py [--messages 100000] [--passages 100000]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from _common import ClusteredVectors, TextGenerator, emit

from engine import Mnemo, forget
from engine.embed import default_embedder
from engine.memory.recall.messages import NewMessage

SECRET = "zebra-7741-quartz"
CHUNK = 5000


def searches(mnemo: Mnemo, queries: list[str]) -> dict[str, float]:
    timings: dict[str, list[float]] = {"recall": [], "archival": []}
    for query in queries:
        for name, store in (("recall", mnemo.recall), ("archival", mnemo.archival)):
            started = time.perf_counter()
            store.search(query, 10)
            timings[name].append((time.perf_counter() - started) * 1000)
    return {name: round(statistics.median(values), 1) for name, values in timings.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=30)
    args = parser.parse_args()
    real = default_embedder()
    vectors = ClusteredVectors(real.name, real.dim)
    generator = TextGenerator(seed=3)
    queries = generator.sentences(args.queries, 3, 8)
    with (
        tempfile.TemporaryDirectory() as folder,
        Mnemo.open(Path(folder) / "p", embedder=vectors) as mnemo,
    ):
        started = time.perf_counter()
        for start in range(0, args.messages, CHUNK):
            texts = generator.sentences(min(CHUNK, args.messages - start), 8, 40)
            mnemo.recall.add_many(
                NewMessage("user" if i % 2 else "assistant", text, 1.7e9 + start + i)
                for i, text in enumerate(texts)
            )
        for start in range(0, args.passages, CHUNK):
            mnemo.archival.insert_many(
                generator.sentences(min(CHUNK, args.passages - start), 20, 80)
            )
        mnemo.recall.add("user", f"My bank PIN is {SECRET}, keep it safe.")
        mnemo.archival.insert(f"Bank: the PIN is {SECRET}.")
        mnemo.core.append("human", f"PIN {SECRET}.")
        mnemo.knowledge.add("user", "pin", SECRET, literal=True)
        mnemo.wait_for_background_work()
        filled_s = time.perf_counter() - started
        database = mnemo.profile.database_path
        size_before = database.stat().st_size
        before = searches(mnemo, queries)
        started = time.perf_counter()
        plan = forget.plan_text(mnemo, SECRET)
        preview_s = time.perf_counter() - started
        started = time.perf_counter()
        result = forget.forget(mnemo, plan)
        forget_s = time.perf_counter() - started
        mnemo.wait_for_background_work()
        after = searches(mnemo, queries)
        emit(
            {
                "benchmark": "forget_cost",
                "messages": args.messages,
                "passages": args.passages,
                "fill_s": round(filled_s, 1),
                "preview_s": round(preview_s, 2),
                "forget_s": round(forget_s, 2),
                "forgotten": result.forgotten,
                "search_ms_p50_before": before,
                "search_ms_p50_after": after,
                "database_mb": {
                    "before": round(size_before / 2**20, 1),
                    "after": round(database.stat().st_size / 2**20, 1),
                },
            }
        )


if __name__ == "__main__":
    main()
