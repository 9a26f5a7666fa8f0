"""Validation folds and ablations for the conversation-search benchmarks.

Conversation search gained its rules on the data that measures it, so a figure that counts is one
measured on questions the choice never saw. The questions (LongMemEval) or conversations (LoCoMo)
are split into folds by a hash of their id. Every candidate configuration is scored on every
question in the same run, on the same stored profile:
- ``as built``: the code as it is;
- each rule with ``-`` before its name: that rule switched off, the rest as built (an ablation);
- each tunable at another value (``ROLE_PRIOR=1``), the rest as built.

For each held fold the configuration with the best mean on the *other* folds is chosen and scored
on the held fold; that held-fold mean is the figure to quote. An ablation's effect is its held
fold's score minus ``as built``'s on the same fold (nothing is chosen there).

The switches patch module attributes for the length of one search; index-time rules (the
neighbours' words in a message's indexed text) need a profile built without them
(``build_without``).
"""

from __future__ import annotations

import hashlib
import statistics
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any
from unittest import mock

from engine.memory import search, vectors, word_match
from engine.memory.recall import keyword_text
from engine.memory.recall import search as recall_search
from engine.memory.recall.vectors import WHOLE_MESSAGES
from engine.memory.search import _STOPWORDS, _WORD, STEM
from engine.memory.vectors.postgres import PgVectorTable

Switch = Callable[[], AbstractContextManager[Any]]
AS_BUILT = "as built"


def _set(target: Any, name: str, value: Any) -> Switch:
    return lambda: mock.patch.object(target, name, value)


def _tuned(target: Any, name: str, value: Any) -> Switch:
    """A tunable at ``value`` in its module and wherever it was imported by name."""

    @contextmanager
    def switch() -> Iterator[None]:
        original = getattr(target, name)
        with ExitStack() as stack:
            for module in {target, recall_search, vectors}:
                if getattr(module, name, None) is original:
                    stack.enter_context(mock.patch.object(module, name, value))
            yield

    return switch


@contextmanager
def _whole_messages_only() -> Iterator[None]:
    """Search by meaning with each message's own vector, not its sentences'."""
    original = vectors.VectorTable.similar

    def similar(self: Any, query: str, limit: int, where: str | None, *rest: Any) -> Any:
        if isinstance(self, PgVectorTable) or "part" in self.table.schema.names:
            where = f"{where} AND {WHOLE_MESSAGES}" if where else WHOLE_MESSAGES
        return original(self, query, limit, where, *rest)

    with mock.patch.object(vectors.VectorTable, "similar", similar):
        yield


def _rank_fusion(k: int) -> Switch:
    """Reciprocal rank fusion: no weights and no score scales to fit."""

    def fuse(keyword: dict, semantic: dict, keyword_weight: float = 0.0) -> list:
        fused: dict[Any, float] = {}
        for side in (keyword, semantic):
            ranked = sorted(side.items(), key=lambda item: item[1], reverse=True)
            for rank, (key, _) in enumerate(ranked, 1):
                fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
        return sorted(fused.items(), key=lambda item: item[1], reverse=True)

    return lambda: mock.patch.object(recall_search, "fuse", fuse)


# Each rule conversation search gained after plain hybrid search, and how to switch it off.
RULES: dict[str, Switch] = {
    "role prior": _set(search, "ROLE_PRIOR", 0.0),
    "sentence vectors": _whole_messages_only,
    "word-piece re-rank": _set(word_match, "RERANK_WEIGHT", 0.0),
    # PostgreSQL only (--postgres): each query word's rank weighed alike, not by its BM25 idf.
    "idf weighting": _set(recall_search.RecallSearch, "_idf", lambda self, terms, n: [1.0] * n),
}

# The tunables and the other values tried (as built: ROLE_PRIOR 3, KEYWORD_WEIGHT 0.6, ...).
TUNABLES: dict[str, tuple[Any, str, tuple[float, ...]]] = {
    "ROLE_PRIOR": (search, "ROLE_PRIOR", (1.0, 2.0, 5.0)),
    "KEYWORD_WEIGHT": (search, "KEYWORD_WEIGHT", (0.4, 0.5, 0.7)),
    "RERANK_WEIGHT": (word_match, "RERANK_WEIGHT", (0.5, 1.5)),
    "RERANK_DEPTH": (word_match, "RERANK_DEPTH", (10, 30)),
    "RELEVANCE_FLOOR": (vectors, "RELEVANCE_FLOOR", (1.0, 3.0)),
}

LEVERS: dict[str, Switch] = {
    "rank fusion k=10": _rank_fusion(10),
    "rank fusion k=60": _rank_fusion(60),
}


POSTGRES_ONLY = {"idf weighting"}


def configurations(ablations_only: bool = False, postgres: bool = False) -> dict[str, Switch]:
    """Every configuration a run scores, ``as built`` first."""
    found: dict[str, Switch] = {AS_BUILT: lambda: ExitStack()}
    found.update(
        {f"-{name}": on for name, on in RULES.items() if postgres or name not in POSTGRES_ONLY}
    )
    if not ablations_only:
        for name, (target, attribute, values) in TUNABLES.items():
            for value in values:
                found[f"{name}={value:g}"] = _tuned(target, attribute, value)
        found.update(LEVERS)
    return found


@contextmanager
def build_without(rule: str | None) -> Iterator[None]:
    """Store a profile without an index-time rule: ``neighbours`` (no neighbour words)."""
    if rule is None:
        yield
    elif rule == "neighbours":
        with mock.patch.object(keyword_text, "NEIGHBOURS", 0):
            yield
    else:
        raise SystemExit(f"no index-time rule {rule!r}; the one there is: neighbours")


def _hashed(keys: Sequence[str]) -> list[str]:
    """Keys in the order of a hash of their own (not the one that chose the development half)."""
    return sorted(set(keys), key=lambda key: hashlib.md5(f"fold:{key}".encode()).hexdigest())


def folds_of(keys: Sequence[str], count: int) -> dict[str, int]:
    """A fold for each key: keys in hash order dealt out in turn, so folds differ in size by one
    at most."""
    return {key: index % count for index, key in enumerate(_hashed(keys))}


def sample(keys: Sequence[str], count: int) -> set[str]:
    """``count`` keys chosen by the hash: a random sample that every run draws alike."""
    return set(_hashed(keys)[:count])


def _mean(values: Sequence[float]) -> float:
    return 100 * sum(values) / len(values) if values else 0.0


def report(
    scores: dict[str, list[tuple[int, tuple[float, ...]]]],
    metrics: Sequence[str],
    folds: int,
    baseline: list[tuple[int, tuple[float, ...]]] | None = None,
) -> dict[str, Any]:
    """The fold table and the ablation table from per-question scores.

    ``scores``: configuration -> [(fold, (metric values...))], one per question, same order for
    every configuration; the first metric chooses. ``baseline``: BM25's per question (optional).
    """

    def mean_on(config: str, fold: int, metric: int, held: bool) -> float:
        rows = [m[metric] for f, m in scores[config] if (f == fold) == held]
        return _mean(rows)

    table = []
    for fold in range(folds):
        chosen = max(scores, key=lambda c: (round(mean_on(c, fold, 0, False), 6), c == AS_BUILT))
        row: dict[str, Any] = {
            "fold": fold,
            "n": sum(f == fold for f, _ in scores[AS_BUILT]),
            "chosen": chosen,
            **{
                f"held_{m}": round(mean_on(chosen, fold, i, True), 1) for i, m in enumerate(metrics)
            },
            **{
                f"as_built_{m}": round(mean_on(AS_BUILT, fold, i, True), 1)
                for i, m in enumerate(metrics)
            },
        }
        if baseline is not None:
            row["bm25_" + metrics[0]] = round(_mean([m[0] for f, m in baseline if f == fold]), 1)
        table.append(row)
    summary: dict[str, Any] = {
        key: round(statistics.mean(row[key] for row in table), 1)
        for key in table[0]
        if key.startswith(("held_", "as_built_", "bm25_"))
    }
    effects = {}
    for config in scores:
        if config == AS_BUILT:
            continue
        deltas = [
            mean_on(config, fold, 0, True) - mean_on(AS_BUILT, fold, 0, True)
            for fold in range(folds)
        ]
        effects[config] = {
            "mean": round(statistics.mean(deltas), 1),
            "min": round(min(deltas), 1),
            "max": round(max(deltas), 1),
        }
    return {"folds": table, "held_fold_mean": summary, "effect_of_" + metrics[0]: effects}


# A question whose answering turns each share at most this many of its content words is asked in
# other words than they were said in: the paraphrase set, drawn from the data's own questions.
PARAPHRASED_WORDS = 1


def _stems(text: str) -> set[str]:
    return {word[:STEM] for word in _WORD.findall(text.lower()) if word not in _STOPWORDS}


def paraphrased(question: str, answers: Sequence[str]) -> bool:
    """Whether every answering turn shares at most PARAPHRASED_WORDS content words with the
    question (words compared by their first STEM letters)."""
    asked = _stems(question)
    return all(len(asked & _stems(text)) <= PARAPHRASED_WORDS for text in answers)


def subset(
    scores: dict[str, list[tuple[int, tuple[float, ...]]]],
    keep: Sequence[bool],
    order: Sequence[int],
) -> dict[str, list[tuple[int, tuple[float, ...]]]]:
    """The questions ``keep`` marks, each score's metrics in ``order``."""
    return {
        name: [
            (fold, tuple(m[i] for i in order))
            for (fold, m), kept in zip(rows, keep, strict=True)
            if kept
        ]
        for name, rows in scores.items()
    }


def tables(
    scores: dict[str, list[tuple[int, tuple[float, ...]]]],
    metrics: tuple[str, str],
    folds: int,
    baseline: list[tuple[int, tuple[float, float]]],
    other_words: Sequence[bool],
) -> dict[str, Any]:
    """What a benchmark run with ``--folds`` adds to its line: the fold and ablation tables
    (``report``, choosing on ``metrics[0]``), and the same for the paraphrase set (choosing on
    ``metrics[1]``); nothing without folds. Scores and baseline hold both metrics, in order."""
    if not folds:
        return {}
    other = (metrics[1], metrics[0])
    return {
        **report(scores, metrics, folds, baseline),
        "paraphrased": report(
            subset(scores, other_words, (1, 0)),
            other,
            folds,
            subset({"": baseline}, other_words, (1,))[""],
        ),
    }
