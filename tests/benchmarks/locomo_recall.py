"""LoCoMo evidence recall: does `conversation_search` find the turns that answer a question?

For each of the 10 LoCoMo conversations, every turn goes into a fresh profile's recall memory
through the public API (the session's date as the timestamp, "Speaker: text" as the text; the
first speaker as the user, the second as the assistant). Each question of categories 1-4 is run
through exactly the search `conversation_search` runs (``engine.tools.search_conversation``), and
we measure the share of its evidence turns in the top 5 and 10 (frac@k, mean over questions) and
the share of questions with all evidence in the top 10 (all@10). One JSON line out.

``ceiling@20`` and ``ceiling@40`` say how far re-ranking alone could go: the frac@10 that a
perfect re-ranker of the first 20 or 40 hits of the same search, asked for 40 hits (so it fuses
80 vector candidates, not 60), would reach: the evidence among them, at most 10, moved to the top.
The gap between frac@10 and these is ranking, not recall.

Baseline (plain BM25 over turns, from the data's README): frac@10 58.6 overall. Target >= 80.

    uv run python tests/benchmarks/locomo_recall.py [--data ../shared/data] [--conversations 10]
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from _common import REPO, emit, percentages, postgres_if

from engine import Mnemo
from engine.memory.recall import NewMessage
from engine.tools import search_conversation

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def session_date(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")


def evidence_ids(raw: list[str]) -> list[str]:
    """'D8:6; D9:17', 'D:11:26', 'D30:05' -> ['D8:6', 'D9:17', 'D11:26', 'D30:5']."""
    ids = []
    for item in raw:
        for part in item.split(";"):
            numbers = re.findall(r"\d+", part)
            if len(numbers) >= 2:
                ids.append(f"D{int(numbers[-2])}:{int(numbers[-1])}")
    return ids


def load_conversation(mnemo: Mnemo, sample: dict[str, Any]) -> dict[int, str]:
    """Store every turn; return message id -> dia_id."""
    conversation = sample["conversation"]
    first = conversation["speaker_a"]
    messages, dia_ids = [], []
    number = 1
    while f"session_{number}" in conversation:
        start = session_date(conversation[f"session_{number}_date_time"])
        for offset, turn in enumerate(conversation[f"session_{number}"]):
            messages.append(
                NewMessage(
                    role="user" if turn["speaker"] == first else "assistant",
                    text=f"{turn['speaker']}: {turn['text']}",
                    created_at=start + timedelta(seconds=30 * offset),
                )
            )
            dia_ids.append(turn["dia_id"])
        number += 1
    ids = mnemo.recall.add_many(messages)
    return dict(zip(ids, dia_ids, strict=True))


def share(wanted: set[str], found: list[str], slots: int = 10) -> float:
    """The share of ``wanted`` that the best ``slots`` of ``found`` can hold."""
    return min(len(wanted & set(found)), slots) / len(wanted)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--postgres", action="store_true", help="tables in PostgreSQL")
    args = parser.parse_args()
    with postgres_if(args.postgres) as database_url:
        run(args, database_url)


def run(args: argparse.Namespace, database_url: str | None) -> None:
    samples = json.loads((args.data / "locomo" / "locomo10.json").read_text())
    scores: dict[str, list[tuple[float, ...]]] = defaultdict(list)
    started = time.perf_counter()
    search_ms: list[float] = []
    for sample in samples[: args.conversations]:
        with (
            tempfile.TemporaryDirectory() as folder,
            Mnemo.open(folder, database_url=database_url) as mnemo,
        ):
            dia_of = load_conversation(mnemo, sample)
            mnemo.wait_for_background_work()
            for qa in sample["qa"]:
                category = qa.get("category")
                evidence = evidence_ids(qa.get("evidence", []))
                if category not in CATEGORIES or not evidence:
                    continue
                began = time.perf_counter()
                hits = search_conversation(mnemo, qa["question"], limit=10)
                search_ms.append((time.perf_counter() - began) * 1000)
                found = [dia_of[hit.id] for hit in hits]
                deeper = [dia_of[hit.id] for hit in search_conversation(mnemo, qa["question"], 40)]
                wanted = set(evidence)
                at10 = share(wanted, found[:10])
                scores[CATEGORIES[category]].append(
                    (
                        share(wanted, found[:5]),
                        at10,
                        float(at10 == 1.0),
                        share(wanted, deeper[:20]),
                        share(wanted, deeper[:40]),
                    )
                )

    def summary(rows: list[tuple[float, ...]]) -> dict[str, float]:
        return percentages(rows, ("frac@5", "frac@10", "all@10", "ceiling@20", "ceiling@40"))

    everything = [row for rows in scores.values() for row in rows]
    search_ms.sort()
    emit(
        {
            "benchmark": "locomo_recall",
            "tables": "postgresql" if database_url else "sqlite",
            "conversations": min(args.conversations, len(samples)),
            "overall": summary(everything),
            **{name: summary(scores[name]) for name in CATEGORIES.values() if scores[name]},
            "baseline_bm25_frac@10": 58.6,
            "search_ms_p50": round(search_ms[len(search_ms) // 2], 1),
            "seconds": round(time.perf_counter() - started, 1),
        }
    )


if __name__ == "__main__":
    main()
