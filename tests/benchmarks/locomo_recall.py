"""LoCoMo evidence recall: does `conversation_search` find the turns that answer a question?

For each of the 10 LoCoMo conversations, every turn goes into a fresh profile's recall memory
through the public API (the session's date as the timestamp, "Speaker: text" as the text; the
first speaker as the user, the second as the assistant). Each question of categories 1-4 is run
through exactly the search `conversation_search` runs
(``engine.functions.search_conversation``), and we measure the share of its evidence turns in
the top 5 and 10 (frac@k, mean over questions) and the share of questions with all evidence in
the top 10 (all@10). One JSON line out.

``ceiling@20`` and ``ceiling@40`` say how far re-ranking alone could go: the frac@10 that a
perfect re-ranker of the first 20 or 40 hits of the same search, asked for 40 hits (so it fuses
80 vector candidates, not 60), would reach: the evidence among them, at most 10, moved to the top.
The gap between frac@10 and these is ranking, not recall.

Baseline (plain BM25 over turns, from the data's README): frac@10 58.6 overall. Target >= 80.

``--folds K`` splits the conversations into K folds and scores every configuration of
``retrieval_folds`` (the rules switched off one at a time, the tunables at other values) on
every question: the held-fold table, with BM25 over "[date] speaker: text" on the same
questions, and each configuration's held-fold effect (``retrieval_folds.report``).
``--build-without neighbours`` stores the turns without their neighbours' words.
``--in-person`` asks each question as the app's user would: a question about the first speaker
(the user) in the first person ("When did I go to the support group?"), one about the second
(the assistant) in the second person; questions that name both speakers or neither are kept.
LoCoMo's own questions name the speakers in the third person, which no rule about the asker's
"I" and "you" can read; this is how those rules are measured on LoCoMo.

    uv run python tests/benchmarks/locomo_recall.py [--data ../shared/data] [--conversations 10]
        [--folds 5 [--ablations-only]] [--build-without neighbours] [--in-person]
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

import retrieval_folds
from _common import REPO, emit, percentages, postgres_if
from longmemeval_recall import bm25_top

from engine import Mnemo
from engine.embed import embedder_for
from engine.functions import search_conversation
from engine.llm.rerank import attach
from engine.memory.recall import NewMessage

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


def turns_of(sample: dict[str, Any]) -> list[tuple[str, str, datetime]]:
    """(dia_id, "Speaker: text", when) of every turn, in order."""
    conversation = sample["conversation"]
    found = []
    number = 1
    while f"session_{number}" in conversation:
        start = session_date(conversation[f"session_{number}_date_time"])
        for offset, turn in enumerate(conversation[f"session_{number}"]):
            said = f"{turn['speaker']}: {turn['text']}"
            found.append((turn["dia_id"], said, start + timedelta(seconds=30 * offset)))
        number += 1
    return found


def load_conversation(mnemo: Mnemo, sample: dict[str, Any]) -> dict[int, str]:
    """Store every turn (the first speaker as the user); return message id -> dia_id."""
    first = sample["conversation"]["speaker_a"]
    turns = turns_of(sample)
    messages = [
        NewMessage(
            role="user" if said.startswith(f"{first}: ") else "assistant",
            text=said,
            created_at=when,
        )
        for _, said, when in turns
    ]
    ids = mnemo.recall.add_many(messages)
    return dict(zip(ids, [dia_id for dia_id, _, _ in turns], strict=True))


_PERSONS = {
    "user": {"'s": "my", "": "I", "she": "I", "he": "I", "her": "my", "his": "my", "him": "me",
             "herself": "myself", "himself": "myself"},
    "assistant": {"'s": "your", "": "you", "she": "you", "he": "you", "her": "your",
                  "his": "your", "him": "you", "herself": "yourself", "himself": "yourself"},
}  # fmt: skip


def in_person(question: str, user: str, assistant: str) -> str:
    """The question as the user asks it: "When did Caroline go..." -> "When did I go..." when
    Caroline is the user; "you" for the assistant. Unchanged if it names both or neither."""
    named = [
        (name, role)
        for name, role in ((user, "user"), (assistant, "assistant"))
        if re.search(rf"\b{re.escape(name)}\b", question)
    ]
    if len(named) != 1:
        return question
    name, role = named[0]
    words = _PERSONS[role]
    question = re.sub(rf"\b{re.escape(name)}('s)?\b", lambda m: words[m.group(1) or ""], question)
    pronouns = "|".join(word for word in words if word.isalpha())
    return re.sub(rf"\b({pronouns})\b", lambda m: words[m.group(1).lower()], question)


def share(wanted: set[str], found: list[str], slots: int = 10) -> float:
    """The share of ``wanted`` that the best ``slots`` of ``found`` can hold."""
    return min(len(wanted & set(found)), slots) / len(wanted)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--postgres", action="store_true", help="tables in PostgreSQL")
    parser.add_argument("--folds", type=int, default=0, help="held-fold tables (0: none)")
    parser.add_argument("--ablations-only", action="store_true", help="with --folds: no tunables")
    parser.add_argument("--build-without", choices=["neighbours"], help="an index-time ablation")
    parser.add_argument("--in-person", action="store_true", help="questions in the first person")
    parser.add_argument("--reranker", metavar="PATH", help="a re-ranker GGUF on the searches")
    parser.add_argument("--embedder", metavar="PATH", help="an embedding GGUF in MiniLM's place")
    args = parser.parse_args()
    with postgres_if(args.postgres) as database_url:
        run(args, database_url)


def run(args: argparse.Namespace, database_url: str | None) -> None:
    samples = json.loads((args.data / "locomo" / "locomo10.json").read_text())
    scores: dict[str, list[tuple[float, ...]]] = defaultdict(list)
    started = time.perf_counter()
    search_ms: list[float] = []
    samples = samples[: args.conversations]
    fold_of = retrieval_folds.folds_of([s["sample_id"] for s in samples], args.folds or 1)
    configs = (
        retrieval_folds.configurations(args.ablations_only, bool(database_url))
        if args.folds
        else {}
    )
    by_config: dict[str, list] = defaultdict(list)
    bm25: list = []
    other_words: list[bool] = []  # the paraphrase set: evidence shares at most a word with it
    embedder = embedder_for(args.embedder or "", strict=True)
    for sample in samples:
        fold = fold_of[sample["sample_id"]]
        turns = turns_of(sample)
        documents = [f"[{when:%d %B %Y}] {said}" for _, said, when in turns]
        with (
            tempfile.TemporaryDirectory() as folder,
            Mnemo.open(folder, embedder=embedder, database_url=database_url) as mnemo,
        ):
            with retrieval_folds.build_without(args.build_without):
                dia_of = load_conversation(mnemo, sample)
                mnemo.wait_for_background_work()
            if args.reranker:  # no time limit here: its gain is what is measured
                attach(mnemo, args.reranker, budget_s=float("inf"))
            speakers = sample["conversation"]["speaker_a"], sample["conversation"]["speaker_b"]
            for qa in sample["qa"]:
                category = qa.get("category")
                evidence = evidence_ids(qa.get("evidence", []))
                if category not in CATEGORIES or not evidence:
                    continue
                if args.in_person:
                    qa = {**qa, "question": in_person(qa["question"], *speakers)}
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
                for name, switch in configs.items():
                    with switch():
                        hits = search_conversation(mnemo, qa["question"], limit=10)
                    top = [dia_of[hit.id] for hit in hits]
                    by_config[name].append((fold, (share(wanted, top), share(wanted, top[:5]))))
                if configs:
                    best = [turns[i][0] for i in bm25_top(qa["question"], documents, 10)]
                    bm25.append((fold, (share(wanted, best), share(wanted, best[:5]))))
                    texts = [said for dia_id, said, _ in turns if dia_id in wanted]
                    other_words.append(retrieval_folds.paraphrased(qa["question"], texts))

    def summary(rows: list[tuple[float, ...]]) -> dict[str, float]:
        return percentages(rows, ("frac@5", "frac@10", "all@10", "ceiling@20", "ceiling@40"))

    everything = [row for rows in scores.values() for row in rows]
    search_ms.sort()
    emit(
        {
            "benchmark": "locomo_recall",
            "tables": "postgresql" if database_url else "sqlite",
            "embedder": embedder.name,
            "reranker": args.reranker,
            "conversations": min(args.conversations, len(samples)),
            "overall": summary(everything),
            **{name: summary(scores[name]) for name in CATEGORIES.values() if scores[name]},
            "baseline_bm25_frac@10": 58.6,
            "search_ms_p50": round(search_ms[len(search_ms) // 2], 1),
            "built_without": args.build_without,
            "in_person": args.in_person,
            **retrieval_folds.tables(
                by_config, ("frac@10", "frac@5"), args.folds, bm25, other_words
            ),
            "seconds": round(time.perf_counter() - started, 1),
        }
    )


if __name__ == "__main__":
    main()
