"""LongMemEval_S evidence recall: does `conversation_search` find the user turns that answer?

The twin of ``locomo_recall.py`` for a history of a person talking with an assistant (long
assistant turns). For each question of the development half, its haystack (about 50 sessions,
500 turns) goes into a fresh profile through ``recall.add_many``, as the app stores a chat: one
conversation, each turn with its role and its session's date (turns 30 s apart). The question is
run through exactly the search ``conversation_search`` runs
(``engine.functions.search_conversation``).

Gold turns are the user turns marked ``has_answer`` in the answer sessions (questions without any,
and the ``_abs`` abstention questions, are skipped). Per question type and overall:
- all@5, all@10: the share of questions with every gold turn in the top 5 / 10;
- sessions@10: the share with a turn of every answer session in the top 10;
- ceiling@20, ceiling@40: all@10 for a perfect re-ranker of the search's first 20 / 40 hits;
- bm25_all@10: plain BM25 over the user turns (query = question), computed in this run.

Vectors come from the app's embedder through a cache on disk (``vector_cache.py``): the first run
embeds the ~104,000 turns and the ~60,000 sentences of user turns that get vectors of their own
once (about an hour on 2 cores); later runs take a few minutes.

``--folds K`` splits the questions into K folds by a hash of their id and scores every
configuration of ``retrieval_folds`` (the rules switched off one at a time, the tunables at other
values) on every question: the held-fold all@10 and all@5 per fold and their mean, BM25's on the
same questions, and each configuration's held-fold effect (``retrieval_folds.report``).
``--build-without neighbours`` stores the turns without their neighbours' words.

    uv run python tests/benchmarks/longmemeval_recall.py [--data ../shared/data] [--questions N]
        [--sample N] [--folds 5 [--ablations-only]] [--build-without neighbours]
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import re
import tempfile
import time
from collections import Counter, defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import retrieval_folds
from _common import REPO, emit, percentages, postgres_if
from vector_cache import DEFAULT_CACHE, CachedEmbedder

from engine import Mnemo
from engine.embed import embedder_for
from engine.functions import search_conversation
from engine.llm.rerank import attach
from engine.memory.recall import NewMessage
from engine.memory.recall.vectors import sentence_parts

_WORD = re.compile(r"\w+")


def session_date(text: str) -> datetime:
    """'2023/05/20 (Sat) 02:21' -> datetime(2023, 5, 20, 2, 21)."""
    return datetime.strptime(re.sub(r"\s*\(\w+\)\s*", " ", text), "%Y/%m/%d %H:%M")


def load_questions(data: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    with gzip.open(data / "longmemeval_s_dev" / "longmemeval_s_dev.json.gz", "rt") as file:
        raw = json.load(file)
    return raw["sessions"], raw["questions"]


def haystack(sessions: dict[str, Any], question: dict[str, Any]) -> list[tuple[str, int, dict]]:
    """(session id, turn index, turn) for every turn of the question's haystack, in order."""
    return [
        (session_id, index, turn)
        for session_id in question["haystack_session_ids"]
        for index, turn in enumerate(sessions[session_id]["turns"])
    ]


def gold_turns(question: dict[str, Any], turns: list[tuple[str, int, dict]]) -> set[tuple]:
    answers = set(question["answer_session_ids"])
    return {
        (session_id, index)
        for session_id, index, turn in turns
        if session_id in answers and turn["role"] == "user" and turn.get("has_answer")
    }


def bm25_top(query: str, documents: list[str], k: int, k1: float = 1.5, b: float = 0.75) -> list:
    """Indices of the ``k`` best documents by plain Okapi BM25 (lower-cased words, no stemming)."""
    tokens = [_WORD.findall(document.lower()) for document in documents]
    average = sum(map(len, tokens)) / max(1, len(tokens))
    frequency = Counter(word for words in tokens for word in set(words))
    terms = set(_WORD.findall(query.lower()))
    scores = []
    for words in tokens:
        counts = Counter(words)
        score = 0.0
        for term in terms:
            if counts[term]:
                idf = math.log((len(tokens) - frequency[term] + 0.5) / (frequency[term] + 0.5) + 1)
                tf = counts[term]
                score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(words) / average))
        scores.append(score)
    return sorted(range(len(documents)), key=lambda i: -scores[i])[:k]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--questions", type=int, default=0, help="only the first N (0: all)")
    parser.add_argument("--sample", type=int, default=0, help="N questions chosen by a hash")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--postgres", action="store_true", help="tables in PostgreSQL")
    parser.add_argument("--folds", type=int, default=0, help="held-fold tables (0: none)")
    parser.add_argument("--ablations-only", action="store_true", help="with --folds: no tunables")
    parser.add_argument("--build-without", choices=["neighbours"], help="an index-time ablation")
    parser.add_argument("--reranker", metavar="PATH", help="a re-ranker GGUF on the searches")
    parser.add_argument("--embedder", metavar="PATH", help="an embedding GGUF in MiniLM's place")
    args = parser.parse_args()
    with postgres_if(args.postgres) as database_url:
        run(args, database_url)


def run(args: argparse.Namespace, database_url: str | None) -> None:
    started = time.perf_counter()
    sessions, questions = load_questions(args.data)
    questions = [q for q in questions if not q["question_id"].endswith("_abs")]
    questions = [q for q in questions if gold_turns(q, haystack(sessions, q))]
    if args.questions:
        questions = questions[: args.questions]
    if args.sample:  # every type in its share, for a shorter run (fewer turns to embed)
        chosen = retrieval_folds.sample([q["question_id"] for q in questions], args.sample)
        questions = [q for q in questions if q["question_id"] in chosen]
    embedder = CachedEmbedder(embedder_for(args.embedder or "", strict=True), args.cache)
    embedder.fill(
        [
            embedder.document_prefix + text
            for q in questions
            for _, _, turn in haystack(sessions, q)
            for text in [turn["content"], *sentence_parts(turn["role"], turn["content"])]
        ]
    )
    scores: dict[str, list[tuple[float, ...]]] = defaultdict(list)
    search_ms: list[float] = []
    fold_of = retrieval_folds.folds_of([q["question_id"] for q in questions], args.folds or 1)
    configs = (
        retrieval_folds.configurations(args.ablations_only, bool(database_url))
        if args.folds
        else {}
    )
    by_config: dict[str, list] = defaultdict(list)
    bm25_rows: list = []
    other_words: list[bool] = []  # the paraphrase set: gold turns share at most a word with it
    for question in questions:
        fold = fold_of[question["question_id"]]
        turns = haystack(sessions, question)
        gold = gold_turns(question, turns)
        answer_sessions = set(question["answer_session_ids"])
        with (
            tempfile.TemporaryDirectory() as folder,
            Mnemo.open(folder, embedder=embedder, database_url=database_url) as m,
        ):
            if args.reranker:  # no time limit here: its gain is what is measured
                attach(m, args.reranker, budget_s=float("inf"))
            messages = [
                NewMessage(
                    role=turn["role"],
                    text=turn["content"],
                    created_at=session_date(sessions[session_id]["date"])
                    + timedelta(seconds=30 * index),
                )
                for session_id, index, turn in turns
            ]
            with retrieval_folds.build_without(args.build_without):
                where = dict(zip(m.recall.add_many(messages), turns, strict=True))
                m.wait_for_background_work()
            began = time.perf_counter()
            hits = search_conversation(m, question["question"], limit=10)
            search_ms.append((time.perf_counter() - began) * 1000)
            deeper = search_conversation(m, question["question"], limit=40)
            for name, switch in configs.items():
                with switch():
                    top = search_conversation(m, question["question"], limit=10)
                found_here = [where[hit.id][:2] for hit in top]
                by_config[name].append(
                    (fold, (float(gold <= set(found_here)), float(gold <= set(found_here[:5]))))
                )
        found = [where[hit.id][:2] for hit in hits]
        deep = [where[hit.id][:2] for hit in deeper]
        user_turns = [(s, i, t["content"]) for s, i, t in turns if t["role"] == "user"]
        bm25 = [
            user_turns[i][:2]
            for i in bm25_top(question["question"], [u[2] for u in user_turns], 10)
        ]
        bm25_rows.append((fold, (float(gold <= set(bm25)), float(gold <= set(bm25[:5])))))
        said = {(s, i): t["content"] for s, i, t in turns}
        other_words.append(
            retrieval_folds.paraphrased(question["question"], [said[key] for key in gold])
        )
        fits = len(gold) <= 10
        scores[question["question_type"]].append(
            (
                float(gold <= set(found[:5])),
                float(gold <= set(found)),
                float(answer_sessions <= {session for session, _ in found}),
                float(fits and gold <= set(deep[:20])),
                float(fits and gold <= set(deep[:40])),
                float(gold <= set(bm25)),
            )
        )

    def summary(rows: list[tuple[float, ...]]) -> dict[str, float]:
        return percentages(
            rows, ("all@5", "all@10", "sessions@10", "ceiling@20", "ceiling@40", "bm25_all@10")
        )

    everything = [row for rows in scores.values() for row in rows]
    search_ms.sort()
    emit(
        {
            "benchmark": "longmemeval_recall",
            "tables": "postgresql" if database_url else "sqlite",
            "embedder": embedder.name,
            "reranker": args.reranker,
            "questions": len(everything),
            "overall": summary(everything),
            **{name: summary(rows) for name, rows in sorted(scores.items())},
            "search_ms_p50": round(search_ms[len(search_ms) // 2], 1),
            "built_without": args.build_without,
            **retrieval_folds.tables(
                by_config, ("all@10", "all@5"), args.folds, bm25_rows, other_words
            ),
            "seconds": round(time.perf_counter() - started, 1),
        }
    )


if __name__ == "__main__":
    main()
