"""The retrieval trace: why each hit of a search was found, and which fell below the floor.

Every search of recall or archival memory records, per hit, its keyword score (BM25 after the
word-coverage weighting) and rank among the keyword candidates, its vector similarity (cosine)
and rank among the meaning candidates, the fused score and its final rank, and whether it only
loosely fits ("weak match"; the assisted mode drops those); and the meaning candidates that fell
below the relevance floor and were left out.
The last ``KEPT`` traces are kept in memory only, never on disk: ``recent_traces()``.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

KEPT = 200


@dataclass(frozen=True)
class TracedHit:
    key: str  # the message or passage id
    text: str  # the start of its text
    keyword_score: float | None
    keyword_rank: int | None  # 1 = best among the keyword candidates; None: not among them
    # How far the cosine similarity stands above what unrelated text scores for the same
    # query (engine.memory.search.relevance), which is what ranks the meaning candidates.
    vector_relevance: float | None
    vector_rank: int | None
    fused_score: float
    rank: int
    weak: bool

    def line(self) -> str:
        """ "#2 fused 1.23 · words 4.1 (#1) · meaning 0.62 (#3) · weak match"."""
        words = (
            f"words {self.keyword_score:.2f} (#{self.keyword_rank})"
            if self.keyword_score is not None
            else "no word match"
        )
        meaning = (
            f"meaning {self.vector_relevance:.2f} above unrelated (#{self.vector_rank})"
            if self.vector_relevance is not None
            else "not among the meaning candidates"
        )
        # Weak: kept, but neither clearly close in meaning nor holding half the query's words
        # (search.is_weak); "below the relevance floor" is for candidates left out.
        weak = " · weak match" if self.weak else ""
        return f"#{self.rank} fused {self.fused_score:.2f} · {words} · {meaning}{weak}"


@dataclass
class SearchTrace:
    store: str  # "recall" or "archival"
    query: str
    mode: str
    keyword_candidates: int
    vector_candidates: int
    hits: list[TracedHit]
    # Meaning candidates dropped below the relevance floor: (id, start of text, relevance).
    below_floor: list[tuple[str, str, float]] = field(default_factory=list)
    at: float = field(default_factory=time.time)
    by: str = "user"  # who searched: the user, the model, or the engine (assisted recall)

    def lines(self) -> list[str]:
        head = (
            f"{self.store} search for {self.query!r} by {self.by} ({self.mode}): "
            f"{self.keyword_candidates} word and {self.vector_candidates} meaning candidates"
        )
        dropped = [
            f"below the relevance floor: {relevance:.2f} — {text or key}"
            for key, text, relevance in self.below_floor[:5]
        ]
        return [head, *(f"{hit.line()} — {hit.text}" for hit in self.hits), *dropped]


_traces: deque[SearchTrace] = deque(maxlen=KEPT)
_lock = threading.Lock()


def record(
    store: str,
    query: str,
    mode: str,
    keyword: dict[Hashable, float],
    semantic: dict[Hashable, float],
    ranked: Sequence[tuple[Hashable, float]],
    chosen: Sequence[tuple[Hashable, str, bool]],  # key, text, weak
    first_rank: int = 1,
    dropped: Sequence[tuple[dict[str, Any], float]] = (),  # rows below the floor, relevance
) -> SearchTrace:
    """Keep how this search ranked the hits it returned (``chosen``, in order)."""
    keyword_rank = _ranks(keyword)
    vector_rank = _ranks(semantic)
    fused = dict(ranked)
    hits = [
        TracedHit(
            key=str(key),
            text=" ".join(text.split())[:80],
            keyword_score=keyword.get(key),
            keyword_rank=keyword_rank.get(key),
            vector_relevance=semantic.get(key),
            vector_rank=vector_rank.get(key),
            fused_score=fused.get(key, 0.0),
            rank=first_rank + position,
            weak=weak,
        )
        for position, (key, text, weak) in enumerate(chosen)
    ]
    below = []
    listed = set(semantic)  # a message's other parts (its sentences) may stand above the floor
    for row, score in sorted(dropped, key=lambda item: item[1], reverse=True):
        if row.get("id") not in listed:
            listed.add(row.get("id"))
            below.append(
                (str(row.get("id")), " ".join(str(row.get("text", "")).split())[:80], score)
            )
    trace = SearchTrace(store, query, mode, len(keyword), len(semantic), hits, below)
    with _lock:
        _traces.append(trace)
    return trace


def recent_traces() -> list[SearchTrace]:
    """The kept traces, newest last."""
    with _lock:
        return list(_traces)


def clear() -> None:
    """Drop every kept trace (a forget: their queries and hits may hold the text)."""
    with _lock:
        _traces.clear()


def _ranks(scores: dict[Hashable, float]) -> dict[Hashable, int]:
    ordered = sorted(scores, key=lambda key: scores[key], reverse=True)
    return {key: position for position, key in enumerate(ordered, start=1)}
