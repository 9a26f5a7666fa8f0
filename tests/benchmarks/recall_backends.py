"""Recall search on SQLite against PostgreSQL, on the same messages (default 1M).

The same generated messages (Zipf-distributed English words, clustered synthetic vectors with the
real embedder's name and size) are stored through the public API in a SQLite profile and in a
profile on PostgreSQL with pgvector (a real server from the ``pgserver`` package, or
``--database-url``); then the same queries, embedded by the real model as in the app, are timed
in each mode, alternating between the two back-ends so that the machine's noise falls on both.
Prints one JSON line: p50 per mode and back-end, and PostgreSQL's ratio to SQLite.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

from _common import ClusteredVectors, TextGenerator, emit, p50

from engine import Mnemo
from engine.embed import default_embedder

MODES = ("keyword", "semantic", "hybrid")


def load(folder: Path, database_url: str | None, messages: int, loader) -> float:
    """Store ``messages`` messages in one ``add_many`` (as an import of a long history does);
    returns the seconds. A profile loaded before (``--keep``) is reused as it is."""
    texts = TextGenerator(seed=3).sentences(messages, 4, 40)
    start_time = datetime(2020, 1, 1)
    started = time.perf_counter()
    with Mnemo.open(folder, embedder=loader, database_url=database_url) as m:
        if m.recall.count() == 0:
            m.recall.add_many(
                {
                    "role": ("user", "assistant")[i % 2],
                    "text": text,
                    "created_at": start_time + timedelta(minutes=i),
                }
                for i, text in enumerate(texts)
            )
        m.wait_for_background_work()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--database-url", help="a PostgreSQL server (default: start pgserver)")
    parser.add_argument("--keep", help="keep both profiles (and pgserver's data) here, to reuse")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(args.keep or scratch)
        folder.mkdir(parents=True, exist_ok=True)
        server = None
        url = args.database_url
        if url is None:
            import pgserver

            server = pgserver.get_server(folder / "postgres", cleanup_mode="stop")
            url = server.get_uri()
        try:
            run(args, folder, url)
        finally:
            if server is not None:
                server.cleanup()


def run(args: argparse.Namespace, folder: Path, url: str) -> None:
    real = default_embedder()
    loader = ClusteredVectors(real.name, real.dim)
    backends = {"sqlite": None, "postgresql": url}
    load_s = {
        name: round(load(folder / name, database, args.messages, loader), 1)
        for name, database in backends.items()
    }
    queries = TextGenerator(seed=4).sentences(args.queries, 2, 8)
    samples: dict[str, dict[str, list[float]]] = {name: {m: [] for m in MODES} for name in backends}
    opened = {name: Mnemo.open(folder / name, embedder=real) for name in backends}
    try:
        for m in opened.values():
            m.wait_for_background_work()
            m.recall.search(queries[0], 10)  # warm caches and connections
        for query in queries:
            for mode in MODES:
                for name, m in opened.items():
                    started = time.perf_counter()
                    m.recall.search(query, 10, mode=mode)
                    samples[name][mode].append((time.perf_counter() - started) * 1000)
    finally:
        for m in opened.values():
            m.close()
    result: dict[str, object] = {
        "benchmark": "recall_backends",
        "messages": args.messages,
        "queries": args.queries,
        "vectors": "clustered synthetic (queries embedded for real)",
        "load_s": load_s,
    }
    for mode in MODES:
        sqlite, postgres = p50(samples["sqlite"][mode]), p50(samples["postgresql"][mode])
        result[f"{mode}_p50_ms"] = {"sqlite": sqlite, "postgresql": postgres}
        result[f"{mode}_postgres_ratio"] = round(postgres / sqlite, 2) if sqlite else None
    emit(result)


if __name__ == "__main__":
    main()
