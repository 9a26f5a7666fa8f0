"""An embedding model in a GGUF file (EmbeddingGemma, Qwen3-Embedding, BERT-style ones), run by
llama.cpp with the pooling its file names, in place of the bundled MiniLM.

A person chooses one with ``mnemo reembed --embedder`` (or "Use" on the Models page), which
re-embeds what is stored; the ``models.embedder`` setting names it from then on.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engine.errors import ModelError
from engine.hardware import keep_llama_off_amx

log = logging.getLogger("mnemo.embed")

# Longer texts are cut (as MiniLM cuts at 256 pieces): about 512 tokens of English. A text of
# more tokens than a batch holds is cut there by llama-cpp-python.
TEXT_CHARACTERS = 2048
BATCH_TOKENS = 2048  # tokens evaluated together: several short texts in one pass
# The leading words a model was trained to read before a query and before a stored text, by its
# GGUF architecture (EmbeddingGemma's model card); none for the others.
PREFIXES = {"gemma-embedding": ("task: search result | query: ", "title: none | text: ")}


class GgufEmbedder:
    """Unit-length vectors from a GGUF embedding model; one call at a time (llama.cpp's context
    is not shared between threads)."""

    deterministic = True  # the same text always gets the same vector: vectors may be kept

    def __init__(self, path: str | os.PathLike[str], *, threads: int | None = None) -> None:
        import llama_cpp

        self.path = Path(path)
        if not self.path.is_file():
            raise ModelError(f"There is no embedding model file {self.path}.")
        logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)  # as Llama(verbose=False)
        architecture, trained = _read_header(self.path)
        window = min(BATCH_TOKENS, trained or BATCH_TOKENS)  # BERT's positions end at 512
        keep_llama_off_amx()
        try:
            self._llama = llama_cpp.Llama(
                str(self.path),
                embedding=True,
                n_ctx=window,
                n_batch=window,  # a text longer than this is cut here
                n_ubatch=window,  # a text is read whole (BERT-style models need it)
                n_threads=threads or os.cpu_count() or 1,
                verbose=False,
            )
        except (ValueError, RuntimeError) as error:
            raise _not_loaded(self.path) from error
        if self._llama.pooling_type() in (
            llama_cpp.LLAMA_POOLING_TYPE_NONE,
            llama_cpp.LLAMA_POOLING_TYPE_RANK,
        ):
            self._llama.close()
            raise ModelError(
                f"{self.path.name} is not an embedding model (it gives no vector per text)."
            )
        self.name = f"gguf:{self.path.stem}"
        self.dim = self._llama.n_embd()
        self.query_prefix, self.document_prefix = PREFIXES.get(architecture, ("", ""))
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        cut = [text[:TEXT_CHARACTERS] for text in texts]
        with self._lock:  # llama-cpp-python packs the texts into batches of BATCH_TOKENS
            vectors = np.asarray(self._llama.embed(cut, truncate=True), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)

    def close(self) -> None:
        self._llama.close()


def _read_header(path: Path) -> tuple[str, int | None]:
    """The file's architecture and training context, read as ``engine.llm.gguf_file.inspect_gguf``
    reads a chat model's: its header and vocabulary only."""
    import llama_cpp
    from llama_cpp._internals import LlamaModel as LoadedWeights

    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    try:
        weights = LoadedWeights(path_model=str(path), params=params, verbose=False)
    except (ValueError, RuntimeError) as error:
        raise _not_loaded(path) from error
    try:
        metadata = weights.metadata()
    finally:
        weights.close()
    architecture = metadata.get("general.architecture", "")
    trained = metadata.get(f"{architecture}.context_length", "")
    return architecture, int(trained) if trained.isdigit() else None


def _not_loaded(path: Path) -> ModelError:
    return ModelError(
        f"llama.cpp could not load {path.name} as an embedding model; the file may be damaged, "
        "or not an embedding model."
    )
