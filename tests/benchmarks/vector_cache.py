"""An embedder that remembers: vectors of texts already embedded come from a file on disk.

The LongMemEval haystacks hold about 104,000 distinct turns, half of them several hundred words
long; MiniLM embeds them in about an hour on 2 cores, far more than a benchmark run may take. The
vectors of a text never change for one embedder, so they are computed once (by the app's own
embedder) and kept under ``~/.cache/mnemo-benchmarks``. Everything after the embedding (storage,
search, fusion) is the app's own code path on every run.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engine.embed import Embedder

DEFAULT_CACHE = Path.home() / ".cache" / "mnemo-benchmarks"
SAVE_EVERY_S = 120.0


def _key(text: str) -> bytes:
    return hashlib.sha1(text.encode("utf-8")).digest()


class CachedEmbedder:
    """Wraps an embedder; same name and size, so stored vectors look exactly like its own."""

    def __init__(self, inner: Embedder, folder: Path = DEFAULT_CACHE) -> None:
        self.inner = inner
        self.name, self.dim = inner.name, inner.dim
        self.query_prefix, self.document_prefix = inner.query_prefix, inner.document_prefix
        if hasattr(inner, "piece_vectors"):  # MiniLM's word pieces (the app's word matching)
            self.piece_vectors = inner.piece_vectors
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{inner.name.replace('/', '_')}-{inner.dim}.npz"
        self._index: dict[bytes, int] = {}
        self._vectors = np.zeros((0, self.dim), dtype=np.float32)
        self._pending_keys: list[bytes] = []
        self._pending: list[np.ndarray] = []
        if self.path.exists():
            data = np.load(self.path)
            self._vectors = data["vectors"]
            # Digests are stored as rows of 20 bytes (a bytes column would drop trailing zeros).
            keys = data["keys"]
            self._index = {
                key.tobytes() if keys.ndim == 2 else bytes(key).ljust(20, b"\0"): row
                for row, key in enumerate(keys)
            }
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._index) + len(self._pending_keys)

    def missing(self, texts: Sequence[str]) -> list[str]:
        seen = set(self._index)
        out = []
        for text in dict.fromkeys(texts):
            if _key(text) not in seen:
                out.append(text)
        return out

    def fill(self, texts: Sequence[str], batch: int = 2048, log=print) -> None:
        """Embed every text not cached yet, saving as it goes (an interrupted fill resumes)."""
        todo = self.missing(texts)
        if not todo:
            return
        started = saved = time.perf_counter()
        for start in range(0, len(todo), batch):
            chunk = todo[start : start + batch]
            self._remember(chunk, self.inner.embed(chunk))
            now = time.perf_counter()
            done = min(start + batch, len(todo))
            log(f"embedded {done}/{len(todo)} texts, {done / (now - started):.0f}/s")
            if now - saved > SAVE_EVERY_S:
                self.save()
                saved = now
        self.save()

    def _remember(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        for text, vector in zip(texts, vectors, strict=True):
            key = _key(text)
            if key not in self._index:
                # The next row of the file (not the count of keys: a file may hold a row whose
                # key another row's overwrote, and then every later text got its neighbour's).
                self._index[key] = len(self._vectors) + len(self._pending)
                self._pending_keys.append(key)
                self._pending.append(vector)

    def save(self) -> None:
        if not self._pending_keys:
            return
        self._vectors = np.concatenate([self._vectors, np.stack(self._pending)])
        self._pending_keys, self._pending = [], []
        keys = np.zeros((len(self._index), 20), dtype=np.uint8)
        for key, row in self._index.items():
            keys[row] = np.frombuffer(key, dtype=np.uint8)
        temporary = self.path.with_suffix(".tmp.npz")
        np.savez(temporary, keys=keys, vectors=self._vectors)
        temporary.replace(self.path)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.save()
        rows = [self._index.get(_key(text)) for text in texts]
        unknown = [text for text, row in zip(texts, rows, strict=True) if row is None]
        self.hits += len(texts) - len(unknown)
        self.misses += len(unknown)
        if unknown:  # queries and texts outside the data: embedded now, not kept
            fresh = dict(zip(unknown, self.inner.embed(unknown), strict=True))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, (text, row) in enumerate(zip(texts, rows, strict=True)):
            out[i] = self._vectors[row] if row is not None else fresh[text]
        return out
