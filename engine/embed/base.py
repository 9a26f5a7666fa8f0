"""The contract every embedder meets."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors.

    ``name`` and ``dim`` are stored with every vector, so that vectors of different models are
    never mixed in one index. Some models were trained to read a query and a stored text with
    different leading words (EmbeddingGemma's "task: search result | query: "): the searches
    put ``query_prefix`` before a query and ``document_prefix`` before a text they store; both
    are empty for a model that reads them alike.
    """

    name: str
    dim: int
    query_prefix: str
    document_prefix: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return an array of shape ``(len(texts), dim)``, each row L2-normalised."""
        ...
