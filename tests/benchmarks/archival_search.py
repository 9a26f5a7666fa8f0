"""Archival search at 1M passages: ANN latency and recall@10 against exact search, and the
latency of a full hybrid search (query embedding + BM25 + ANN + fetching the passages).

Targets: ANN p50 <= 20 ms with recall@10 >= 0.95. Passages get clustered synthetic vectors
(embedding 1M texts would take hours here and does not change search cost) and Zipf-distributed
English text, written through the archival table with the app's schema; the ANN index and
compaction are the app's own background upkeep. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np
import pyarrow as pa
from _common import ClusteredVectors, TextGenerator, emit, p50

from engine import Mnemo
from engine.embed import default_embedder


def load(m: Mnemo, vectors: ClusteredVectors, count: int, batch: int = 50_000) -> np.ndarray:
    generator = TextGenerator(seed=5)
    table = m._passage_vectors
    all_vectors = np.empty((count, vectors.dim), dtype=np.float32)
    now = time.time()
    for start in range(0, count, batch):
        size = min(batch, count - start)
        block = vectors.sample(size)
        all_vectors[start : start + size] = block
        table.add(
            pa.table(
                {
                    "id": [f"p{i:08d}" for i in range(start, start + size)],
                    "text": generator.sentences(size, 8, 40),
                    "vector": pa.FixedSizeListArray.from_arrays(
                        pa.array(block.reshape(-1)), vectors.dim
                    ),
                    "source_path": [f"/docs/file{i // 50}.md" for i in range(start, start + size)],
                    "source_section": pa.nulls(size, pa.string()),
                    "source_chunk": pa.array(
                        [i % 50 for i in range(start, start + size)], pa.int32()
                    ),
                    "source_message_id": pa.nulls(size, pa.int64()),
                    "origin": ["document"] * size,
                    "tags": [["bench"]] * size,
                    "created_at": pa.array(np.full(size, now)),
                    "embedder": [vectors.name] * size,
                    "dim": pa.array(np.full(size, vectors.dim, dtype=np.int32)),
                    "expires_at": pa.nulls(size, pa.float64()),
                },
                schema=table.table.schema,
            )
        )
    return all_vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--passages", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--keep", metavar="PATH", help="build the profile here and keep it")
    args = parser.parse_args()

    real = default_embedder()
    synthetic = ClusteredVectors(real.name, real.dim, seed=11)
    with (
        tempfile.TemporaryDirectory() as scratch,
        Mnemo.open(args.keep or scratch, embedder=real) as m,
    ):
        started = time.perf_counter()
        data = load(m, synthetic, args.passages)
        load_s = time.perf_counter() - started
        m._passage_vectors.maintain()  # the background upkeep, run here to time it
        upkeep_s = time.perf_counter() - started - load_s
        indexes = [
            f"{i.name}: {i.num_indexed_rows} rows, {i.num_segments} segment(s)"
            for i in m._passage_vectors.table.list_indices()
        ]

        queries = synthetic.sample(args.queries)
        exact = np.argsort(-(queries @ data.T), axis=1)[:, :10]
        latencies, recalls = [], []
        table = m._passage_vectors
        table.vector_search(queries[0], 10, None, ["id"])  # warm-up
        for query, truth in zip(queries, exact, strict=True):
            start = time.perf_counter()
            rows = table.vector_search(query, 10, None, ["id"])
            latencies.append((time.perf_counter() - start) * 1000)
            found = {int(row["id"][1:]) for row in rows}
            recalls.append(len(found & set(truth.tolist())) / 10)

        texts = TextGenerator(seed=6).sentences(args.queries // 2, 2, 8)
        m.archival.search(texts[0])  # warm-up
        hybrid, filtered = [], []
        for text in texts:
            start = time.perf_counter()
            m.archival.search(text, limit=10)
            hybrid.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            m.archival.search(text, limit=10, source="/docs/file123.md")
            filtered.append((time.perf_counter() - start) * 1000)
    emit(
        {
            "benchmark": "archival_search",
            "passages": args.passages,
            "queries": args.queries,
            "vectors": "clustered synthetic",
            "indexes": indexes,
            "load_s": round(load_s, 1),
            "index_and_compact_s": round(upkeep_s, 1),
            "ann_p50_ms": p50(latencies),
            "ann_p90_ms": round(float(np.percentile(latencies, 90)), 3),
            "ann_recall_at_10": round(float(np.mean(recalls)), 4),
            "hybrid_search_p50_ms": p50(hybrid),
            "hybrid_search_with_source_filter_p50_ms": p50(filtered),
            "targets": {"ann_p50_ms": 20, "ann_recall_at_10": 0.95},
        }
    )


if __name__ == "__main__":
    main()
