"""Bulk insert throughput (archival.insert_many, recall.add_many) as a ratio to the raw embedder.

Target: ratio >= 0.8. Both are measured in the same run on the same texts, so machine noise
largely cancels. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from _common import TextGenerator, emit

from engine import Mnemo
from engine.embed import default_embedder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=4000, help="texts per measurement")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; medians kept")
    args = parser.parse_args()

    texts = TextGenerator(seed=1).sentences(args.count, 20, 80)  # passage-sized texts
    embedder = default_embedder()
    embedder.embed(texts[:64])  # warm-up
    raw, archival, recall = [], [], []
    for round_number in range(args.rounds):
        start = time.perf_counter()
        embedder.embed(texts)
        raw.append(args.count / (time.perf_counter() - start))
        with tempfile.TemporaryDirectory() as folder, Mnemo.open(folder, embedder=embedder) as m:
            start = time.perf_counter()
            m.archival.insert_many(texts)
            archival.append(args.count / (time.perf_counter() - start))
            start = time.perf_counter()
            m.recall.add_many({"role": "user", "text": text} for text in texts)
            recall.append(args.count / (time.perf_counter() - start))
            assert m.archival.count() == m.recall.count() == args.count, round_number

    def median(values: list[float]) -> float:
        return sorted(values)[len(values) // 2]

    emit(
        {
            "benchmark": "bulk_insert",
            "texts": args.count,
            "rounds": args.rounds,
            "raw_embedder_per_s": round(median(raw), 1),
            "archival_insert_many_per_s": round(median(archival), 1),
            "recall_add_many_per_s": round(median(recall), 1),
            "archival_ratio": round(median(archival) / median(raw), 3),
            "recall_ratio": round(median(recall) / median(raw), 3),
            "target_ratio": 0.8,
        }
    )


if __name__ == "__main__":
    main()
