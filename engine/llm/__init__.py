"""Model back-ends behind one small contract (``ChatModel``), and loading the configured one."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.errors import ModelError
from engine.llm.base import ChatMessage, ChatModel, FunctionSchema, Prompt, Step, ToolCall
from engine.llm.scripted import ScriptedModel, ScriptedStep

if TYPE_CHECKING:
    from engine.settings import Settings

# Context windows assumed for API models when the user has not set one.
API_CONTEXT = {"openai": 32768, "anthropic": 200_000}

KeyPrompt = Callable[[str], str | None]  # provider -> a key for this run, or None


def model_settings(settings: Settings, **overrides: Any) -> dict[str, Any]:
    """The model settings with ``overrides`` (e.g. command-line options) applied."""
    values = {
        key.removeprefix("model."): value
        for key, value in settings.all().items()
        if key.startswith("model.")
    }
    values.update({key: value for key, value in overrides.items() if value is not None})
    backend = values["backend"]
    chosen = overrides.get("context_length") is not None or settings.is_set("model.context_length")
    if backend != "local" and not chosen:
        values["context_length"] = API_CONTEXT[backend]
    return values


def needs_api_key(values: dict[str, Any]) -> bool:
    """Whether these model settings need an API key: Anthropic always, an OpenAI-compatible
    server only at the provider's own address (a local server usually takes none)."""
    return values["backend"] == "anthropic" or (
        values["backend"] == "openai" and not values["base_url"]
    )


def load_model(settings: Settings, ask_key: KeyPrompt | None = None, **overrides: Any) -> ChatModel:
    """The model the settings name. ``ask_key`` is asked for a missing API key (this run only)."""
    values = model_settings(settings, **overrides)
    backend = values["backend"]
    if backend == "local":
        from engine.llm.local import LlamaModel  # loads llama.cpp only when a model is wanted

        return LlamaModel(
            values["path"] or None,
            context_length=int(values["context_length"]),
            gpu_layers=int(values["gpu_layers"]),
            threads=int(values["threads"]),
        )
    from engine import keys

    if not values["name"]:
        raise ModelError(
            f"Choose which {backend} model to use: `mnemo models use {backend}:MODEL-NAME`."
        )
    key = keys.get_key(backend)
    needs_key = needs_api_key(values)
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

        return OpenAIModel(
            values["name"],
            base_url=values["base_url"] or OPENAI_URL,
            api_key=key,
            context_length=int(values["context_length"]),
        )
    from engine.llm.anthropic_api import ANTHROPIC_URL, AnthropicModel

    return AnthropicModel(
        values["name"],
        base_url=values["base_url"] or ANTHROPIC_URL,
        api_key=key,
        context_length=int(values["context_length"]),
    )


__all__ = [
    "ChatMessage",
    "ChatModel",
    "FunctionSchema",
    "Prompt",
    "ScriptedModel",
    "ScriptedStep",
    "Step",
    "ToolCall",
    "load_model",
    "model_settings",
    "needs_api_key",
]
