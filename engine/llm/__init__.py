"""Model back-ends behind one small contract (``ChatModel``), and loading the configured one."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.errors import ModelError
from engine.llm.base import ChatMessage, ChatModel, FunctionSchema, Prompt, Step, ToolCall
from engine.llm.scripted import ScriptedModel, ScriptedStep

if TYPE_CHECKING:
    from engine.settings import Settings

# Context windows assumed for API models when the user has not set one.
API_CONTEXT = {"openai": 32768, "anthropic": 200_000}

KeyPrompt = Callable[[str], str | None]  # provider -> a key for this run, or None


@dataclass(frozen=True)
class ModelConfig:
    """The model settings, typed: what ``load_model`` loads and what the CLI and window show."""

    backend: str  # "local", "openai" or "anthropic"
    path: str  # local: the GGUF file; empty for the bundled model
    name: str  # API: the model's name
    base_url: str  # API: the server; empty for the provider's own
    context_length: int
    gpu_layers: int
    threads: int
    seed: int = -1  # the local model's sampling seed; -1: a new one for every reply
    # Whether the person (or the operator) chose the context size; if not, an OpenAI-compatible
    # server of their own is asked for its size.
    context_chosen: bool = True

    @property
    def asks_server(self) -> bool:
        """Whether an OpenAI-compatible server of one's own is asked about its model (what
        decides the memory mode), and its context size too unless one was chosen."""
        return self.backend == "openai" and bool(self.base_url)

    @property
    def needs_api_key(self) -> bool:
        """Anthropic always; an OpenAI-compatible server only at the provider's own address (a
        local server usually takes none)."""
        return self.backend == "anthropic" or (self.backend == "openai" and not self.base_url)

    def describe(self) -> str:
        """How the window names it while it loads: "the bundled model", a path, or "openai:NAME"."""
        if self.backend == "local":
            return self.path or "the bundled model"
        return f"{self.backend}:{self.name}"


def model_settings(settings: Settings, **overrides: Any) -> ModelConfig:
    """The model settings with ``overrides`` (e.g. command-line options; None means not given)
    applied. An API model's context is its provider's usual window unless one was chosen."""
    values = {
        key.removeprefix("model."): value
        for key, value in settings.all().items()
        if key.startswith("model.")
    }
    values.update({key: value for key, value in overrides.items() if value is not None})
    chosen = overrides.get("context_length") is not None or settings.is_set("model.context_length")
    if values["backend"] != "local" and not chosen:
        values["context_length"] = API_CONTEXT[values["backend"]]
    return ModelConfig(
        backend=str(values["backend"]),
        path=str(values["path"]),
        name=str(values["name"]),
        base_url=str(values["base_url"]),
        context_length=int(values["context_length"]),
        gpu_layers=int(values["gpu_layers"]),
        threads=int(values["threads"]),
        seed=int(values["seed"]),
        context_chosen=chosen,
    )


def load_model(settings: Settings, ask_key: KeyPrompt | None = None, **overrides: Any) -> ChatModel:
    """The model the settings name. ``ask_key`` is asked for a missing API key (this run only)."""
    return load_config(model_settings(settings, **overrides), ask_key)


def load_config(config: ModelConfig, ask_key: KeyPrompt | None = None) -> ChatModel:
    """The model ``config`` names (a profile's settings, or a server operator's options)."""
    backend = config.backend
    if backend == "local":
        from engine.llm.local import LlamaModel  # loads llama.cpp only when a model is wanted

        return LlamaModel(
            config.path or None,
            context_length=config.context_length,
            gpu_layers=config.gpu_layers,
            threads=config.threads,
            seed=None if config.seed < 0 else config.seed,
        )
    from engine import keys

    if not config.name:
        raise ModelError(
            f"Choose which {backend} model to use: `mnemo models use {backend}:MODEL-NAME`."
        )
    key = keys.get_key(backend)
    needs_key = config.needs_api_key
    if key is None and needs_key and ask_key is not None:
        key = ask_key(backend)
        if key:
            keys.use_key_for_this_run(backend, key)
    if key is None and needs_key:
        how = (
            f"set one with `mnemo keys set {backend}`"
            if keys.keyring_status()[1]
            else f"this computer has no keyring to save one, so paste one when `mnemo chat` asks "
            f"(it is kept for that run only) or set ${keys.ENVIRONMENT[backend]}"
        )
        raise ModelError(f"There is no API key for {backend}; {how}.")
    if backend == "openai":
        from engine.llm.openai_api import OPENAI_URL, OpenAIModel

        asked_size = config.asks_server and not config.context_chosen  # else the chosen one
        return OpenAIModel(
            config.name,
            base_url=config.base_url or OPENAI_URL,
            api_key=key,
            context_length=None if asked_size else config.context_length,
            ask_server=config.asks_server,
        )
    from engine.llm.anthropic_api import ANTHROPIC_URL, AnthropicModel

    return AnthropicModel(
        config.name,
        base_url=config.base_url or ANTHROPIC_URL,
        api_key=key,
        context_length=config.context_length,
    )


class LoadingAhead:
    """Start loading the configured model now, on a thread of its own; calling the result takes
    that model (or raises its error). The window and `mnemo chat` start this as soon as the
    profile's settings can be read, so that llama.cpp's load (native code, without the GIL) runs
    while the rest of the profile opens instead of after it.

    llama-cpp-python points the process's standard output and error at /dev/null while it loads,
    so whoever prints meanwhile calls ``wait`` first (an error said while it loads is lost)."""

    def __init__(self, settings: Settings, loader: Callable[[Settings], ChatModel]) -> None:
        self._loader = loader
        self._outcome: dict[str, object] = {}
        self._wanted = model_settings(settings)
        self._thread = threading.Thread(
            target=self._work, args=(settings,), name="mnemo-model-ahead", daemon=True
        )
        self._thread.start()

    def _work(self, settings: Settings) -> None:
        try:
            self._outcome["model"] = self._loader(settings)
        except Exception as error:  # raised to whoever takes the model
            self._outcome["error"] = error

    def wait(self) -> None:
        self._thread.join()

    def __call__(self, current: Settings) -> ChatModel:
        if self._outcome or self._thread.is_alive():  # the first call: take what was loaded
            self._thread.join()
            model, error = self._outcome.pop("model", None), self._outcome.pop("error", None)
            if model_settings(current) == self._wanted:
                if error is not None:
                    raise error  # type: ignore[misc]
                return model  # type: ignore[return-value]
            if model is not None and hasattr(model, "close"):
                model.close()  # the settings changed meanwhile
        return self._loader(current)


__all__ = [
    "ChatMessage",
    "ChatModel",
    "FunctionSchema",
    "Prompt",
    "ScriptedModel",
    "ScriptedStep",
    "Step",
    "ToolCall",
    "load_config",
    "load_model",
    "LoadingAhead",
    "ModelConfig",
    "model_settings",
]
