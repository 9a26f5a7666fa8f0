"""Archival search on S3-compatible object storage (SeaweedFS on 127.0.0.1) against the
profile's folder, on the same passages, measured in the same run.

The same engine code runs on both (``storage.archival_url``); the difference is the object store
under LanceDB: every read is an HTTP request to the S3 server instead of a file read. Medians of
``--queries`` hybrid searches (vector + full text), after one warm-up search each.

    uv run python tests/benchmarks/archival_backends.py [--passages 20000] [--queries 50]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import emit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from engine import Mnemo  # noqa: E402
from tests.s3_server import running_s3_server  # noqa: E402

WORDS = (
    "garden key boiler sister Porto invoice dentist train ticket recipe bread meeting budget "
    "passport holiday school plumber insurance car battery bicycle library concert birthday"
).split()


def note(rng: random.Random, i: int) -> str:
    return f"Note {i}: " + " ".join(rng.choice(WORDS) for _ in range(18)) + "."


def measure(folder: Path, archival_url: str | None, passages: list[str], queries: list[str]):
    with Mnemo.open(folder, archival_url=archival_url) as mnemo:
        started = time.perf_counter()
        mnemo.archival.insert_many(passages)
        insert_s = time.perf_counter() - started
        mnemo.archival.search(queries[0])
        times = []
        for query in queries:
            started = time.perf_counter()
            mnemo.archival.search(query)
            times.append(time.perf_counter() - started)
    return insert_s, times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passages", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    rng = random.Random(7)
    passages = [note(rng, i) for i in range(args.passages)]
    queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(args.queries)]
    with tempfile.TemporaryDirectory() as scratch, running_s3_server(Path(scratch) / "s3") as s3:
        os.environ["AWS_ACCESS_KEY_ID"] = s3.access_key
        os.environ["AWS_SECRET_ACCESS_KEY"] = s3.secret_key
        url = f"s3://{s3.bucket}/bench?endpoint={s3.endpoint}"
        local_insert, local = measure(Path(scratch) / "local", None, passages, queries)
        s3_insert, remote = measure(Path(scratch) / "s3profile", url, passages, queries)
    local_p50, s3_p50 = statistics.median(local), statistics.median(remote)
    emit(
        {
            "benchmark": "archival_backends",
            "passages": args.passages,
            "queries": args.queries,
            "local_search_ms_p50": round(local_p50 * 1000, 1),
            "s3_search_ms_p50": round(s3_p50 * 1000, 1),
            "s3_over_local": round(s3_p50 / local_p50, 2),
            "local_search_ms_p95": round(statistics.quantiles(local, n=20)[18] * 1000, 1),
            "s3_search_ms_p95": round(statistics.quantiles(remote, n=20)[18] * 1000, 1),
            "local_insert_s": round(local_insert, 1),
            "s3_insert_s": round(s3_insert, 1),
        }
    )


if __name__ == "__main__":
    main()
