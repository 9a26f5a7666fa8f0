"""Questions in other words: does archival search find a note asked for without its words?

A fresh profile holds 2,000 everyday notes (``paraphrases.distractors``) and 64 target notes; each
target is asked for by a query that shares no content word with it (``paraphrases.PAIRS``). We
run each query through exactly what `archival_memory_search` runs
(``engine.functions.search_archival``) and report recall@1 and recall@5 of the target, and, for
questions about things no note mentions (``ABSENT``), how many hits come back and how many of
them are marked weak. ``fixed_floor`` is the same search with the old rule (vector hits kept
above a fixed cosine of 0.25), in this run.

    uv run python tests/benchmarks/paraphrase_search.py
"""

from __future__ import annotations

import tempfile
import time
from typing import Any

from _common import emit
from paraphrases import ABSENT, PAIRS, distractors

from engine import Mnemo
from engine.functions import search_archival
from engine.memory import vectors

OLD_FLOOR = 0.25


def measure(mnemo: Mnemo, ids: list[str]) -> dict[str, Any]:
    ranks = []
    for (_, query), target in zip(PAIRS, ids, strict=True):
        found = [hit.id for hit in search_archival(mnemo, query, limit=5)]
        ranks.append(found.index(target) if target in found else None)
    absent = [search_archival(mnemo, query, limit=5) for query in ABSENT]
    return {
        "recall@1": round(sum(r == 0 for r in ranks) / len(ranks), 3),
        "recall@5": round(sum(r is not None for r in ranks) / len(ranks), 3),
        "absent_hits": sum(len(page) for page in absent),
        "absent_strong_hits": sum(
            1 for page in absent for hit in page if not getattr(hit, "weak", False)
        ),
    }


def main() -> None:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder, Mnemo.open(folder) as mnemo:
        mnemo.archival.insert_many(distractors())
        ids = mnemo.archival.insert_many([note for note, _ in PAIRS])
        mnemo.wait_for_background_work()
        now = measure(mnemo, ids)
        # The old rule: a vector hit counts when its cosine similarity is at least 0.25.
        rule = vectors.relevance, vectors.RELEVANCE_FLOOR
        vectors.relevance, vectors.RELEVANCE_FLOOR = (lambda sims, _: sims), OLD_FLOOR
        try:
            before = measure(mnemo, ids)
        finally:
            vectors.relevance, vectors.RELEVANCE_FLOOR = rule
    emit(
        {
            "benchmark": "paraphrase_search",
            "notes": 2000 + len(PAIRS),
            "queries": len(PAIRS),
            "absent_queries": len(ABSENT),
            "search": now,
            "fixed_floor": before,
            "seconds": round(time.perf_counter() - started, 1),
        }
    )


if __name__ == "__main__":
    main()
