"""Helpers shared by the on-demand benchmarks: synthetic text, timing, one JSON line out."""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # run as a script: `uv run python tests/benchmarks/x.py`
    sys.path.insert(0, str(REPO))

from engine.memory.search import _STOPWORDS  # noqa: E402
from engine.resources import resource_path  # noqa: E402


def vocabulary() -> list[str]:
    """Real English word pieces from the embedder's tokenizer (no data download needed)."""
    tokenizer = json.loads(resource_path("embedder/minilm-tokenizer.json").read_text())
    vocab = tokenizer["model"]["vocab"]
    return sorted(w for w in vocab if w.isalpha() and w.isascii() and len(w) >= 3)


class TextGenerator:
    """Sentences whose word frequencies follow Zipf's law, like real conversation.

    As in English, the most frequent ranks are function words ("the", "and", "you"...), and the
    rest are content words drawn from a real vocabulary.
    """

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        function_words = sorted(_STOPWORDS)
        self.rng.shuffle(function_words)
        content = [w for w in vocabulary() if w not in _STOPWORDS]
        self.rng.shuffle(content)
        self.words = np.array(function_words + content)
        words = self.words
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


class ClusteredVectors:
    """Unit vectors around topic centres, as sentence embeddings are; fast to make in bulk.

    An ``Embedder`` look-alike: with the real embedder's name and size it loads large profiles
    through the public API in seconds instead of hours. Search cost does not depend on what the
    vectors mean, only on how they are spread.
    """

    def __init__(self, name: str, dim: int, seed: int = 0, topics: int = 2000) -> None:
        self.name, self.dim = name, dim
        self.query_prefix = self.document_prefix = ""
        self.rng = np.random.default_rng(seed)
        self.centres = self.rng.normal(size=(topics, dim)).astype(np.float32)

    def sample(self, count: int) -> np.ndarray:
        centres = self.centres[self.rng.integers(0, len(self.centres), count)]
        vectors = centres + self.rng.normal(scale=0.9, size=(count, self.dim)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.sample(len(texts))


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


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, nearest rank; 0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)


def percentages(rows: list[tuple[float, ...]], names: tuple[str, ...]) -> dict[str, float]:
    """``n`` and the mean of each column of ``rows`` (each a 0..1 score), in percent."""
    return {
        "n": len(rows),
        **{
            name: round(100 * sum(row[i] for row in rows) / len(rows), 1)
            for i, name in enumerate(names)
        },
    }


def use_model(settings: Any, spec: str, base_url: str = "") -> None:
    """Point a profile's settings at ``--model``: ``PATH.gguf``, ``openai:NAME`` (with
    ``base_url``) or ``anthropic:NAME``; empty keeps the bundled model."""
    if spec.startswith(("openai:", "anthropic:")):
        backend, name = spec.split(":", 1)
        settings.set("model.backend", backend)
        settings.set("model.name", name)
        settings.set("model.base_url", base_url)
    elif spec:
        settings.set("model.path", spec)


def emit(result: dict) -> None:
    print(json.dumps(result), flush=True)


@contextmanager
def postgres_if(wanted: bool) -> Iterator[str | None]:
    """A PostgreSQL with pgvector for the run (pgserver's, in a temporary folder) when wanted:
    its address for ``Mnemo.open(database_url=…)``; else None (each profile's SQLite file)."""
    if not wanted:
        yield None
        return
    import pgserver

    with tempfile.TemporaryDirectory() as folder:
        server = pgserver.get_server(Path(folder), cleanup_mode="stop")
        try:
            yield server.get_uri()
        finally:
            server.cleanup()


def pump(app: Any, until: Callable[[], bool], timeout: float = 120) -> None:
    """Let a Qt window run (``app`` is its QApplication) until ``until()`` holds: the drives
    under Xvfb wait so for what a person would wait for."""
    end = time.monotonic() + timeout
    while not until():
        if time.monotonic() > end:
            raise TimeoutError("the window did not get there in time")
        app.processEvents()
        time.sleep(0.02)
