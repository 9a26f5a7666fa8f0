"""Sentence embeddings: the ``Embedder`` protocol, the default offline model, and the GGUF
embedding model a person may choose instead (``models.embedder``)."""

from engine.embed.base import Embedder
from engine.embed.chosen import embedder_for
from engine.embed.minilm import MiniLMEmbedder, default_embedder

__all__ = ["Embedder", "MiniLMEmbedder", "default_embedder", "embedder_for"]
