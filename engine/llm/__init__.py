"""Model backends behind one small contract (``ChatModel``), and loading the configured one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.llm.base import ChatMessage, ChatModel, FunctionSchema, Prompt, Step, ToolCall
from engine.llm.scripted import ScriptedModel, ScriptedStep

if TYPE_CHECKING:
    from engine.settings import Settings


def load_model(settings: Settings, **overrides: Any) -> ChatModel:
    """The model the settings name (``overrides`` win, e.g. from command-line options)."""
    from engine.llm.local import LlamaModel  # loads llama.cpp only when a model is wanted

    values = {key.removeprefix("model."): value for key, value in settings.all().items()}
    values.update({key: value for key, value in overrides.items() if value is not None})
    return LlamaModel(
        values["path"] or None,
        context_length=int(values["context_length"]),
        gpu_layers=int(values["gpu_layers"]),
        threads=int(values["threads"]),
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
]
