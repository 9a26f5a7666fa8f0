"""Helpers shared by the on-demand benchmarks: synthetic text, timing, one JSON line out."""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # run as a script: `uv run python tests/benchmarks/x.py`
    sys.path.insert(0, str(REPO))

from engine.resources import resource_path  # noqa: E402


def vocabulary() -> list[str]:
    """Real English word pieces from the embedder's tokenizer (no data download needed)."""
    tokenizer = json.loads(resource_path("embedder/minilm-tokenizer.json").read_text())
    vocab = tokenizer["model"]["vocab"]
    return sorted(w for w in vocab if w.isalpha() and w.isascii() and len(w) >= 3)


class TextGenerator:
    """Sentences whose word frequencies follow Zipf's law, like real conversation."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        words = vocabulary()
        self.rng.shuffle(words)
        self.words = np.array(words)
        ranks = np.arange(1, len(words) + 1)
        weights = 1.0 / ranks**1.07
        self.p = weights / weights.sum()

    def sentences(self, count: int, min_words: int = 6, max_words: int = 30) -> list[str]:
        lengths = self.rng.integers(min_words, max_words + 1, size=count)
        picks = self.rng.choice(len(self.words), size=int(lengths.sum()), p=self.p)
        out, start = [], 0
        for length in lengths:
            out.append(" ".join(self.words[picks[start : start + length]]))
            start += length
        return out


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    """Milliseconds per call, for ``repeat`` calls after one warm-up."""
    fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def p50(samples: list[float]) -> float:
    return round(statistics.median(samples), 3)


def emit(result: dict) -> None:
    print(json.dumps(result), flush=True)
