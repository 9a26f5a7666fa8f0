"""Ingestion throughput against the raw embedder, and the cost of re-scanning unchanged files.

1. ~1,000 generated Markdown files (headings, paragraphs) are ingested through ``Ingestor``; the
   same passages (same chunker) are embedded by the bare embedder in the same run. Target:
   ingestion passages/s >= 0.8 x raw embedder passages/s.
2. 10,000 unchanged files are re-scanned (`mnemo ingest FOLDER` a second time). Their index
   rows are written directly (with each file's real size and mtime) instead of embedding 10,000
   passages first; the re-scan itself runs the normal path. Target: <= 2 s.

    uv run python tests/benchmarks/ingest_throughput.py [--files 1000] [--rescan 10000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import TextGenerator, emit

from engine import Mnemo
from engine.db.schema import DocumentRow
from engine.ingest.chunking import chunk_sections
from engine.ingest.ingestor import Ingestor
from engine.loaders import load


def write_markdown(folder: Path, count: int, seed: int = 0) -> None:
    text = TextGenerator(seed)
    rng = np.random.default_rng(seed)
    for number in range(count):
        parts = [f"# Note {number}: {' '.join(text.sentences(1, 2, 5))}"]
        for section in range(int(rng.integers(1, 4))):
            parts.append(f"## Part {section}")
            parts += [". ".join(text.sentences(int(rng.integers(2, 6)))) + "." for _ in range(2)]
        (folder / f"note-{number:05d}.md").write_text("\n\n".join(parts))


def raw_embedding_rate(mnemo: Mnemo, folder: Path) -> tuple[int, float]:
    """Passages/s of the bare embedder on exactly the passages ingestion makes."""
    passages = [
        chunk.text for path in sorted(folder.glob("*.md")) for chunk in chunk_sections(load(path))
    ]
    ordered = sorted(passages, key=len)  # as the archival store batches them
    started = time.perf_counter()
    for start in range(0, len(ordered), 1024):
        mnemo.embedder.embed(ordered[start : start + 1024])
    return len(passages), len(passages) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--rescan", type=int, default=10000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as workdir:
        root = Path(workdir)
        docs = root / "docs"
        docs.mkdir()
        write_markdown(docs, args.files)
        with Mnemo.open(root / "profile") as mnemo:
            passages, raw_rate = raw_embedding_rate(mnemo, docs)
            started = time.perf_counter()
            progress = Ingestor(mnemo).ingest([docs])
            ingest_seconds = time.perf_counter() - started
            assert progress.errors == 0 and progress.chunks == passages, progress.chunks
            ingest_rate = passages / ingest_seconds
            # Raw again after ingestion, so that machine noise hits both sides alike.
            raw_rate = (raw_rate + raw_embedding_rate(mnemo, docs)[1]) / 2

            many = root / "many"
            many.mkdir()
            rows = []
            for number in range(args.rescan):
                path = many / f"file-{number:05d}.txt"
                path.write_text(f"Small file number {number}.")
                stat = path.stat()
                rows.append(
                    DocumentRow(
                        path=str(path),
                        size=stat.st_size,
                        mtime=stat.st_mtime,
                        status="done",
                        chunk_count=1,
                        embedder=mnemo.embedder.name,
                        updated_at=time.time(),
                    )
                )
            from sqlmodel import Session

            with Session(mnemo.database) as session:
                session.add_all(rows)
                session.commit()
            timings = []
            for _ in range(3):
                started = time.perf_counter()
                rescan = Ingestor(mnemo).ingest([many])
                timings.append(time.perf_counter() - started)
                assert {r.outcome for r in rescan.results} == {"unchanged"}
    emit(
        {
            "benchmark": "ingest_throughput",
            "files": args.files,
            "passages": passages,
            "ingest_s": round(ingest_seconds, 2),
            "ingest_passages_per_s": round(ingest_rate, 1),
            "raw_embedder_passages_per_s": round(raw_rate, 1),
            "ratio": round(ingest_rate / raw_rate, 3),
            "rescan_files": args.rescan,
            "rescan_s_p50": round(sorted(timings)[1], 3),
        }
    )


if __name__ == "__main__":
    main()
