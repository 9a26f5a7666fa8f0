"""The model catalogue (``resources/models/catalog.json``) and what each entry means for this
computer: recommended, will run slowly, or too large, with the reason in words.

The catalogue is data; this module reads it, sizes each model's memory at a context length, and
judges it against ``engine.hardware``. Where downloads go is decided here too (``models_folder``).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from engine.embed.gguf import BATCH_TOKENS
from engine.errors import MnemoError, ModelError
from engine.hardware import Hardware, gib
from engine.modes import Mode, ModeChoice, choose_mode
from engine.resources import resource_path

if TYPE_CHECKING:
    from engine.llm.gguf_file import GgufInfo
    from engine.profile import Profile
    from engine.settings import Settings

Kind = Literal["chat", "embedding", "reranker"]
Status = Literal["recommended", "slow", "too large"]

DEFAULT_CONTEXT = 4096
# What each role is called in words, and the tokens it works on at a time when it is not a chat
# model: a re-ranker one query and hit (engine.llm.rerank.PAIR_TOKENS, a module that loads
# llama.cpp), an embedder a batch of texts.
ROLE_WORDS = {"chat": "chat", "reranker": "re-ranker", "embedding": "embedder"}
# The setting that names the file in use in each role.
ROLE_SETTING = {"chat": "model.path", "reranker": "models.reranker", "embedding": "models.embedder"}
ROLE_CONTEXT = {"reranker": 512, "embedding": BATCH_TOKENS}
LARGER_CONTEXT = 8192
# llama.cpp's working buffers beside the weights and the cache, at a few thousand tokens.
COMPUTE_BUFFER_BYTES = 300 * 2**20
# What the operating system and Mnemo itself (window, embedder, LanceDB: 0.6-0.9 GB in
# tests/benchmarks/ingest_memory.py) keep for themselves.
RESERVED_BYTES = 2 * 2**30
# A CUDA context and its scratch buffers take about this much GPU memory before any layer.
GPU_RESERVED_BYTES = 512 * 2**20
# macOS lets the GPU use about three quarters of the shared memory (Metal's recommended
# working set).
APPLE_GPU_SHARE = 0.75
# Parameters one CPU core gets through per second while writing tokens: the bundled 135M model
# writes 112 tokens/s on this 2-core AMD EPYC (135e6 x 112 / 2). Small models carry more fixed
# cost per token, so this is a cautious figure for larger ones.
PARAMETERS_PER_CORE_SECOND = 7.5e9
# People read about four words a second; a model writing slower than that keeps them waiting.
SLOW_BELOW_WORDS_PER_S = 4.0
WORDS_PER_TOKEN = 0.75  # English text, for the usual 32k-150k vocabularies


class CatalogError(MnemoError):
    """The catalogue file is damaged (a packaging bug, not the user's doing)."""


@dataclass(frozen=True)
class CatalogEntry:
    id: str
    name: str
    kind: Kind
    family: str
    parameters: int
    quantization: str
    size_bytes: int
    layers: int
    kv_bytes_per_token: int
    context_length: int
    license_name: str
    license_url: str
    description: str
    url: str
    sha256: str
    memory_mode: str | None
    released: str = ""  # "2025-07"
    architecture: str = ""  # llama.cpp's name for it, as in a GGUF's general.architecture
    evidence: str = ""  # the public figure behind memory_mode, or why the size rule decides

    @property
    def file_name(self) -> str:
        return self.url.rsplit("/", 1)[-1]

    @property
    def role(self) -> str:
        """ "chat", "re-ranker" or "embedder"."""
        return ROLE_WORDS[self.kind]

    @property
    def working_context(self) -> int:
        """The tokens it is run with at first: a chat's window, or a helper's batch."""
        return ROLE_CONTEXT.get(self.kind, DEFAULT_CONTEXT)

    def ram_bytes(self, context: int = DEFAULT_CONTEXT) -> int:
        """Memory to run at ``context`` tokens: the weights, the f16 cache, llama.cpp's buffers."""
        return self.size_bytes + self.kv_bytes_per_token * context + COMPUTE_BUFFER_BYTES


@dataclass(frozen=True)
class Fit:
    """How one entry suits this computer."""

    status: Status
    reason: str
    gpu_layers: int  # -1: every layer on the GPU
    context: int
    tokens_per_s: float | None  # an estimate on the CPU; None when the GPU runs it all


def load_catalog() -> list[CatalogEntry]:
    path = resource_path("models/catalog.json")
    try:
        models = json.loads(path.read_text("utf-8"))["models"]
        return [
            CatalogEntry(
                **{key: value for key, value in model.items() if key != "license"},
                license_name=model["license"]["name"],
                license_url=model["license"]["url"],
            )
            for model in models
        ]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CatalogError(
            f"Mnemo's model catalogue {path} is damaged ({error}); reinstall Mnemo."
        ) from error


def find_entry(name: str, catalog: list[CatalogEntry] | None = None) -> CatalogEntry | None:
    """The entry whose id, display name or file name is ``name`` (any case)."""
    wanted = name.strip().lower()
    for entry in catalog if catalog is not None else load_catalog():
        if wanted in (entry.id.lower(), entry.name.lower(), entry.file_name.lower()):
            return entry
    return None


def models_folder(settings: Settings, profile: Profile) -> Path:
    """Where downloaded models go: the ``models.folder`` setting, else ``<profile>/models``."""
    chosen = str(settings.get("models.folder"))
    return Path(chosen).expanduser() if chosen else profile.models_path


def _cpu_tokens_per_s(entry: CatalogEntry, hardware: Hardware, share: float = 1.0) -> float:
    """Tokens a second with ``share`` of the weights on the CPU: the slower of reading them from
    memory and computing with them."""
    compute = hardware.cpu_cores * PARAMETERS_PER_CORE_SECOND / (entry.parameters * share)
    if hardware.memory_read_bytes_per_s is None:
        return compute
    return min(compute, hardware.memory_read_bytes_per_s / (entry.size_bytes * share))


def _speed_verdict(tokens_per_s: float, where: str, gpu_layers: int, context: int) -> Fit:
    words = tokens_per_s * WORDS_PER_TOKEN
    rate = f"about {words:.1f}" if words < 10 else f"about {words:.0f}"
    if words < SLOW_BELOW_WORDS_PER_S:
        return Fit(
            "slow",
            f"{rate} words a second {where}: slower than you read",
            gpu_layers,
            context,
            tokens_per_s,
        )
    return Fit(
        "recommended",
        f"{rate} words a second {where}",
        gpu_layers,
        context,
        tokens_per_s,
    )


def assess(entry: CatalogEntry, hardware: Hardware) -> Fit:
    """Recommended, slow or too large on ``hardware``, with the reason, the GPU layers to use and
    the context to start with (8,192 tokens where memory allows, else 4,096)."""
    if hardware.disk_free is not None and entry.size_bytes > hardware.disk_free:
        return Fit(
            "too large",
            f"needs {gib(entry.size_bytes)} of disk; {gib(hardware.disk_free)} is free",
            0,
            DEFAULT_CONTEXT,
            None,
        )
    ram_limit = None if hardware.total_ram is None else hardware.total_ram - RESERVED_BYTES
    if entry.kind != "chat":
        return _helper_fit(entry, ram_limit)
    context = min(LARGER_CONTEXT, entry.context_length)
    if ram_limit is not None and entry.ram_bytes(context) > ram_limit:
        context = min(DEFAULT_CONTEXT, entry.context_length)
    need = entry.ram_bytes(context)
    gpu = hardware.usable_gpu
    if gpu is not None and gpu.kind == "apple":
        if need <= gpu.memory_total * APPLE_GPU_SHARE:
            return Fit("recommended", f"runs on the {gpu.name} GPU", -1, context, None)
        return Fit(
            "too large",
            f"needs {gib(need)}; the GPU may use {gib(gpu.memory_total * APPLE_GPU_SHARE)} of "
            "this Mac's memory",
            0,
            context,
            None,
        )
    if gpu is not None:
        budget = gpu.memory_free - GPU_RESERVED_BYTES
        if need <= budget:
            return Fit("recommended", f"fits entirely on the {gpu.name}", -1, context, None)
        room = budget - entry.kv_bytes_per_token * context - COMPUTE_BUFFER_BYTES
        layers = max(0, min(entry.layers, math.floor(entry.layers * room / entry.size_bytes)))
        if layers > 0:
            on_cpu = 1 - layers / entry.layers
            if ram_limit is not None and entry.size_bytes * on_cpu > ram_limit:
                return _too_large_for_memory(entry, context, ram_limit)
            speed = _cpu_tokens_per_s(entry, hardware, on_cpu)
            where = f"with {layers} of {entry.layers} layers on the {gpu.name}"
            return _speed_verdict(speed, where, layers, context)
    if ram_limit is not None and need > ram_limit:
        return _too_large_for_memory(entry, context, ram_limit)
    fit = _speed_verdict(_cpu_tokens_per_s(entry, hardware), "on this computer's CPU", 0, context)
    if hardware.available_ram is not None and need > hardware.available_ram:
        return Fit(
            fit.status,
            f"{fit.reason}; close other programs first ({gib(need)} needed, "
            f"{gib(hardware.available_ram)} free now)",
            fit.gpu_layers,
            fit.context,
            fit.tokens_per_s,
        )
    return fit


def _helper_fit(entry: CatalogEntry, ram_limit: int | None) -> Fit:
    """A re-ranker or embedder runs on the CPU beside the chat model, in short bursts: what
    matters is that its memory fits."""
    context = entry.working_context
    if ram_limit is not None and entry.ram_bytes(context) > ram_limit:
        return _too_large_for_memory(entry, context, ram_limit)
    use = {
        "reranker": "a search waits at most a second for it, or goes on without it",
        "embedding": "re-embedding a large memory takes a while, once",
    }[entry.kind]
    return Fit(
        "recommended",
        f"{gib(entry.ram_bytes(context))} of memory beside the chat model; {use}",
        0,
        context,
        None,
    )


def _too_large_for_memory(entry: CatalogEntry, context: int, ram_limit: int) -> Fit:
    return Fit(
        "too large",
        f"needs {gib(entry.ram_bytes(context))} of memory; this computer can spare "
        f"{gib(max(ram_limit, 0))}",
        0,
        context,
        None,
    )


def best_chat_entry(catalog: list[CatalogEntry], hardware: Hardware) -> CatalogEntry | None:
    """The largest chat model recommended here: the one a person should try first."""
    recommended = [
        entry
        for entry in catalog
        if entry.kind == "chat" and assess(entry, hardware).status == "recommended"
    ]
    return max(recommended, key=lambda entry: entry.parameters, default=None)


def entry_as_dict(entry: CatalogEntry, fit: Fit | None = None) -> dict[str, object]:
    """An entry (and its fit here) for `mnemo models catalog --json`."""
    values: dict[str, object] = asdict(entry)
    values["file_name"] = entry.file_name
    values["role"] = entry.role
    values["ram_bytes_at_default_context"] = entry.ram_bytes(entry.working_context)
    if fit is not None:
        values["fit"] = asdict(fit)
    return values


def entry_for_file(path: Path, catalog: list[CatalogEntry] | None = None) -> CatalogEntry:
    """The catalogue's entry for a model file, or one read from the file's own header (any GGUF
    a person downloaded by address), so that every local model gets the same suggestions."""
    entry = find_entry(path.name, catalog)
    if entry is not None:
        return entry
    from engine.llm.gguf_file import inspect_gguf  # llama.cpp only when a file must be read

    info = inspect_gguf(path)
    return CatalogEntry(
        id=path.stem,
        name=path.name,
        kind="chat",
        family=info.architecture,
        parameters=info.parameters,
        quantization="",
        size_bytes=path.stat().st_size,
        layers=info.layers or 1,
        kv_bytes_per_token=info.kv_bytes_per_token or 0,
        context_length=info.context_length or DEFAULT_CONTEXT,
        license_name="",
        license_url="",
        description="",
        url="",
        sha256="",
        memory_mode=choose_mode("auto", info.parameters, architecture=info.architecture).mode,
    )


def role_of_file(path: Path) -> str:
    """ "chat", "re-ranker" or "embedder": the catalogue's word for a listed file, else what its
    header says (a re-ranker or embedder names its pooling)."""
    entry = find_entry(path.name)
    if entry is not None:
        return entry.role
    from engine.llm.gguf_file import inspect_gguf

    return inspect_gguf(path).role


def catalogue_mode(file_name: str | None) -> Mode | None:
    """The memory mode the catalogue gives the file ``file_name`` (None: it is not listed), which
    wins over the size rule."""
    entry = find_entry(file_name) if file_name else None
    if entry is None or entry.memory_mode not in ("self", "assisted"):
        return None
    return "self" if entry.memory_mode == "self" else "assisted"


def local_mode(setting: str, path: str | None) -> ModeChoice:
    """The mode the local model at ``path`` (None: the bundled one) will get under ``setting``,
    read from its catalogue entry and its header, without loading it."""
    from engine.llm.gguf_file import bundled_model_path, inspect_gguf

    file = Path(path) if path else bundled_model_path()
    try:
        info: GgufInfo | None = inspect_gguf(file)
    except ModelError:
        info = None
    return choose_mode(
        setting,
        info.parameters if info is not None else None,
        architecture=info.architecture if info is not None else None,
        catalogued=catalogue_mode(file.name),
    )


def use_local_model(
    settings: Settings,
    path: Path,
    hardware: Hardware,
    *,
    context: int | None = None,
    gpu_layers: int | None = None,
) -> Fit:
    """Make ``path`` the model in use, with the context and GPU layers suggested for this
    computer unless given; return the suggestion (the CLI and the Models page both say it)."""
    fit = assess(entry_for_file(path), hardware)
    settings.set("model.backend", "local")
    settings.set("model.path", str(path))
    settings.set("model.context_length", context if context is not None else fit.context)
    settings.set("model.gpu_layers", gpu_layers if gpu_layers is not None else fit.gpu_layers)
    return fit


def hugging_face_endpoint() -> str:
    """Hugging Face's address, or the mirror ``HF_ENDPOINT`` names (as huggingface_hub does)."""
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
