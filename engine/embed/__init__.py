"""Sentence embeddings: the ``Embedder`` protocol and the default offline model."""

from engine.embed.base import Embedder
from engine.embed.minilm import MiniLMEmbedder, default_embedder

__all__ = ["Embedder", "MiniLMEmbedder", "default_embedder"]
