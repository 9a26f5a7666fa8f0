"""Recall search latency at 100k messages: keyword (FTS5/BM25) and fused (keyword + vectors).

Targets: keyword p50 <= 5 ms, fused p50 <= 25 ms. Messages are Zipf-distributed English words
stored through the public API (the user's of two sentences, so that their sentence
vectors are in the table too). Embedding 100k messages for real takes minutes and does not change
search cost, so by default they get clustered synthetic vectors from a stand-in with the real
embedder's name and size; queries are embedded by the real model, as in the app
(``--real-vectors`` embeds everything for real). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import datetime, timedelta

import numpy as np
from _common import ClusteredVectors, TextGenerator, emit, p50, timed

from engine import Mnemo
from engine.embed import default_embedder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--real-vectors", action="store_true")
    parser.add_argument("--profile", help="keep the loaded profile here and reuse it next time")
    args = parser.parse_args()
    if args.profile:
        run(args, args.profile)
    else:
        with tempfile.TemporaryDirectory() as folder:
            run(args, folder)


def run(args: argparse.Namespace, folder: str) -> None:

    generator = TextGenerator(seed=3)
    real = default_embedder()
    loader = real if args.real_vectors else ClusteredVectors(real.name, real.dim)
    start_time = datetime(2020, 1, 1)
    started = time.perf_counter()
    with Mnemo.open(folder, embedder=loader) as m:
        for offset in range(m.recall.count(), args.messages, 10_000):
            count = min(10_000, args.messages - offset)
            texts = generator.sentences(count, 4, 40)
            asides = generator.sentences(count, 8, 20)
            m.recall.add_many(
                {
                    "role": ("user", "assistant")[i % 2],
                    # The user's messages say two things, as people do (recall_vectors.
                    # sentence_parts gives each sentence a vector of its own as well).
                    "text": f"{text}. {asides[i]}." if i % 2 == 0 else text,
                    "created_at": start_time + timedelta(minutes=offset + i),
                }
                for i, text in enumerate(texts)
            )
        m.wait_for_background_work()
    load_s = time.perf_counter() - started
    queries = TextGenerator(seed=4).sentences(args.queries, 2, 8)
    with Mnemo.open(folder, embedder=real) as m:
        m.wait_for_background_work()
        indexed = any("vector" in i.columns for i in m._message_vectors.table.list_indices())
        rows = m._message_vectors.count()
        results = {}
        for mode in ("keyword", "semantic", "hybrid"):
            samples = []
            for query in queries:
                samples += timed(lambda q=query, mo=mode: m.recall.search(q, 10, mode=mo), 1)
            results[mode] = samples
        date_samples = timed(
            lambda: m.recall.search_by_date("2020-01-10", "2020-01-20", limit=10), 50
        )
        embed_samples = timed(lambda: real.embed([queries[0]]), 50)
    emit(
        {
            "benchmark": "recall_search",
            "messages": args.messages,
            "profile_reused": load_s < 5,
            "queries": args.queries,
            "vectors": "real" if args.real_vectors else "clustered synthetic",
            "ann_index": indexed,
            "vector_rows": rows,
            "load_s": round(load_s, 1),
            "keyword_p50_ms": p50(results["keyword"]),
            "semantic_p50_ms": p50(results["semantic"]),
            "fused_p50_ms": p50(results["hybrid"]),
            "fused_p90_ms": round(float(np.percentile(results["hybrid"], 90)), 3),
            "by_date_p50_ms": p50(date_samples),
            "query_embedding_p50_ms": p50(embed_samples),
            "targets_ms": {"keyword_p50": 5, "fused_p50": 25},
        }
    )


if __name__ == "__main__":
    main()
