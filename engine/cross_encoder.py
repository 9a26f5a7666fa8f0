"""A re-ranker on the searches: a cross-encoder reads the query and each of the best hits of a
hybrid search together and orders them again by its own scores. It is given to the stores from
above (``engine.llm.rerank.attach``), since running a model is not memory's business.

This is the protocol between the two, so it sits below both: the stores (``engine.memory``) order
their hits with it, and the model back-end (``engine.llm.rerank``) makes one from a GGUF's
scores, and neither imports the other.

It never makes a search wait longer than ``budget_s``: its cost per text is measured when it is
attached and on every run, and a head it could not score in time is left as fused.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

Scorer = Callable[[str, Sequence[str]], list[float]]
K = TypeVar("K", bound=Hashable)

CROSS_DEPTH = 20  # the best hits it orders again (as the word re-rank before it)
BUDGET_S = 1.0  # the most it may add to a search: a turn does not wait longer for it


@dataclass
class CrossEncoder:
    score: Scorer
    budget_s: float = BUDGET_S
    depth: int = CROSS_DEPTH
    seconds_per_text: float = 0.0  # measured

    def measure(self) -> None:
        """Learn its cost per text on a short pair, before any search waits for it."""
        started = time.perf_counter()
        self.score("a question", ["a short passage of text to weigh against it"])
        self.seconds_per_text = time.perf_counter() - started

    def reorder(
        self, ranked: list[tuple[K, float]], texts: Mapping[K, str], query: str
    ) -> list[tuple[K, float]]:
        """``ranked`` (best first) with its head ordered by the cross-encoder's scores; each hit
        keeps its fused score. Unchanged when the head could not be scored within the budget."""
        head = [item for item in ranked[: self.depth] if item[0] in texts]
        if len(head) < 2 or self.seconds_per_text * len(head) > self.budget_s:
            return ranked
        started = time.perf_counter()
        scores = self.score(query, [texts[key] for key, _ in head])
        self.seconds_per_text = (time.perf_counter() - started) / len(head)
        order = sorted(range(len(head)), key=lambda i: -scores[i])  # stable among equals
        chosen = {key for key, _ in head}
        return [head[i] for i in order] + [item for item in ranked if item[0] not in chosen]
