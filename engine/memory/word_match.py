"""Re-ranking the best hits of a conversation or archival search by how closely they match each
word of the question.

A message's vector averages all it says, and the keyword side needs the question's very words
(stemmed). Neither asks whether *each* word of the question has a close counterpart in the
message: "How many weddings did I attend?" against "I went to my cousin's wedding in June". So
the first RERANK_DEPTH hits are scored again: for each content word piece of the question, its
best cosine to a piece of the message (static word vectors, ``MiniLMEmbedder.piece_vectors``),
averaged over the question's pieces ("late interaction" as in ColBERT, with static vectors of
the app's own embedder, so no second model and a few milliseconds a search). That score, in
standard deviations among those hits, is added to the fused score with RERANK_WEIGHT.

Held folds (docs/benchmarks.md), without it: LongMemEval dev all@10 -3.6, LoCoMo frac@10 -1.0;
RERANK_WEIGHT 0.5 is what LoCoMo's folds choose and LongMemEval's do not (-1.0 there). The
model's contextual vectors of each piece did a little better but cost ~1 s a search on 2 cores.
Archival notes asked for in other words (paraphrase_search.py): recall@5 0.781 -> 0.812, for
~2 ms a search at 200k passages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from engine.memory.search import _STOPWORDS

T = TypeVar("T")

RERANK_DEPTH = 20
RERANK_WEIGHT = 1.0

PieceVectors = Callable[[Sequence[str]], list[tuple[list[str], np.ndarray]]]


def piece_vectors_of(embedder: Any) -> PieceVectors | None:
    """The embedder's static word-piece vectors, when it has them."""
    return getattr(embedder, "piece_vectors", None)


def _content(pieces: list[str], vectors: np.ndarray) -> np.ndarray:
    keep = [
        i
        for i, piece in enumerate(pieces)
        if piece.lstrip("#").isalnum() and piece.lower() not in _STOPWORDS
    ]
    return vectors[keep]


def matches(query: str, texts: Sequence[str], piece_vectors: PieceVectors) -> np.ndarray:
    """For each text, the mean over the query's content pieces of the best cosine to one of the
    text's content pieces (0 when either has none)."""
    encoded = piece_vectors([query, *texts])
    question = _content(*encoded[0])
    scores = np.zeros(len(texts))
    if not len(question):
        return scores
    for i, (pieces, vectors) in enumerate(encoded[1:]):
        content = _content(pieces, vectors)
        if len(content):
            scores[i] = float((question @ content.T).max(axis=1).mean())
    return scores


def rerank(
    ranked: list[tuple[T, float]],
    texts: dict[T, str],
    query: str,
    piece_vectors: PieceVectors,
) -> list[tuple[T, float]]:
    """``ranked`` (best first) with its first RERANK_DEPTH re-ordered by fused score plus
    RERANK_WEIGHT times their word match in standard deviations; the rest stays as it was."""
    head = [item for item in ranked[:RERANK_DEPTH] if item[0] in texts]
    if len(head) < 2:
        return ranked
    found = matches(query, [texts[key] for key, _ in head], piece_vectors)
    spread = float(found.std())
    if spread < 1e-9:
        return ranked
    z = (found - found.mean()) / spread
    rescored = sorted(
        (
            (key, score + RERANK_WEIGHT * float(lift))
            for (key, score), lift in zip(head, z, strict=True)
        ),
        key=lambda item: item[1],
        reverse=True,
    )
    chosen = {key for key, _ in head}
    return rescored + [item for item in ranked if item[0] not in chosen]
