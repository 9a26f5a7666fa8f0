"""Anthropic's Messages API with tool use and streaming.

Messages must alternate user/assistant and start with the user, tool results travel as
``tool_result`` blocks in the next user message, and the stable prefix (tools and system text) is
marked for prompt caching, the API's counterpart of a local model's KV-cache reuse.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from typing import Any

from engine.errors import ModelError, register_secret
from engine.llm.api import ApiChatModel, api_parameters, function_description, streamed_step
from engine.llm.base import (
    ChatMessage,
    FunctionSchema,
    MessageStream,
    Prompt,
    Step,
    StepStats,
    TextCallback,
    message_text,
)

ANTHROPIC_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
CACHED = {"type": "ephemeral"}


class AnthropicModel(ApiChatModel):
    provider = "anthropic"
    models_path = "/v1/models"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        base_url: str = ANTHROPIC_URL,
        context_length: int = 200_000,
        **options: Any,
    ) -> None:
        """``options``: max_step_tokens, timeout_s, retries, backoff_s (see ApiChatModel)."""
        super().__init__(model, base_url=base_url, context_length=context_length, **options)
        self._headers = {"anthropic-version": ANTHROPIC_VERSION}
        register_secret(api_key)
        if api_key:
            self._headers["x-api-key"] = api_key

    # -- converting ----------------------------------------------------------------------------

    def _tools(self, functions: Sequence[FunctionSchema]) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = [
            {
                "name": function.name,
                "description": function_description(function),
                "input_schema": api_parameters(function.parameters),
            }
            for function in functions
        ]
        if tools:
            tools[-1]["cache_control"] = CACHED
        return tools

    def _message(self, message: ChatMessage) -> dict[str, Any]:
        """One message as (role, content blocks); ``_messages`` merges and orders them."""
        if message.role == "assistant" and message.call is not None:
            if message.call.name == "send_message":
                text = str(message.call.arguments.get("message", "")) or "(empty reply)"
                return {"role": "assistant", "content": [{"type": "text", "text": text}]}
            block = {
                "type": "tool_use",
                "id": message.call.id or "call",
                "name": message.call.name,
                "input": message.call.arguments,
            }
            return {"role": "assistant", "content": [block]}
        if message.role == "tool" and message.call_id:
            block = {
                "type": "tool_result",
                "tool_use_id": message.call_id,
                "content": message.content,
            }
            return {"role": "user", "content": [block]}
        role = "assistant" if message.role == "assistant" else "user"
        return {"role": role, "content": [{"type": "text", "text": message_text(message) or "…"}]}

    def _messages(self, prompt: Prompt) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        open_calls: set[str] = set()
        for message in prompt.messages:
            converted = self._message(message)
            block = converted["content"][0]
            if block["type"] == "tool_result" and block["tool_use_id"] not in open_calls:
                converted = {
                    "role": "user",
                    "content": [{"type": "text", "text": message_text(message)}],
                }
            open_calls = {b["id"] for b in converted["content"] if b["type"] == "tool_use"}
            if messages and messages[-1]["role"] == converted["role"]:
                messages[-1]["content"].extend(converted["content"])
            else:
                messages.append(converted)
        if not messages or messages[0]["role"] != "user":
            note = {"type": "text", "text": "(The earlier conversation is summarised above.)"}
            messages.insert(0, {"role": "user", "content": [note]})
        return messages

    def request_body(self, prompt: Prompt) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": prompt.output_tokens(self.max_step_tokens),
            "system": [{"type": "text", "text": self._system(prompt), "cache_control": CACHED}],
            "messages": self._messages(prompt),
            "tools": self._tools(prompt.functions),
            "tool_choice": {"type": "auto"},
            "stream": True,
            "temperature": 0.3 if prompt.temperature is None else prompt.temperature,
        }
        if not prompt.functions:  # a plain-text reply
            del body["tools"], body["tool_choice"]
        elif prompt.allowed is not None and len(prompt.allowed) == 1:
            (name,) = prompt.allowed
            body["tool_choice"] = {"type": "tool", "name": name}
        return body

    # -- generating ----------------------------------------------------------------------------

    def step(
        self,
        prompt: Prompt,
        *,
        on_text: TextCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> Step:
        stats = StepStats(prompt_tokens=self.count_prompt(prompt))
        started = time.perf_counter()
        blocks: dict[int, dict[str, Any]] = {}
        streams: dict[int, MessageStream] = {}
        reported_input = 0
        with self._lock:
            for event, data in self._client.stream_events(
                "/v1/messages", self._headers, self.request_body(prompt), cancel
            ):
                kind = data.get("type", event)
                if kind == "error":
                    raise self._stream_error(data)
                if kind == "message_start":
                    usage = data.get("message", {}).get("usage", {})
                    reported_input = sum(
                        int(usage.get(key) or 0)
                        for key in (
                            "input_tokens",
                            "cache_read_input_tokens",
                            "cache_creation_input_tokens",
                        )
                    )
                    stats.evaluated_tokens = int(usage.get("input_tokens") or 0)
                elif kind == "content_block_start":
                    block = dict(data["content_block"])
                    block["json"] = ""
                    blocks[data["index"]] = block
                elif kind == "content_block_delta":
                    if not stats.first_token_s:
                        stats.first_token_s = time.perf_counter() - started
                    block = blocks[data["index"]]
                    delta = data["delta"]
                    if delta.get("type") == "text_delta":
                        block["text"] = block.get("text", "") + delta["text"]
                        if on_text is not None:
                            on_text(delta["text"])
                    elif delta.get("type") == "input_json_delta":
                        piece = delta["partial_json"]
                        block["json"] += piece
                        name = block.get("name")
                        self._show_message(streams, data["index"], name, piece, on_text)
                elif kind == "message_delta":
                    stats.generated_tokens = int(
                        (data.get("usage") or {}).get("output_tokens") or 0
                    )
        stats.total_s = time.perf_counter() - started
        self._calibrate(prompt, reported_input)
        return self._result(blocks, stats)

    @staticmethod
    def _result(blocks: dict[int, dict[str, Any]], stats: StepStats) -> Step:
        ordered = [blocks[index] for index in sorted(blocks)]
        text = "".join(block.get("text", "") for block in ordered if block["type"] == "text")
        uses = [block for block in ordered if block["type"] == "tool_use"]
        if not uses:
            return streamed_step(text, None, stats)
        use = uses[0]
        # A tool without arguments streams no JSON; its input came whole with the block's start.
        arguments = use["json"] or json.dumps(use.get("input") or {})
        return streamed_step(text, (use["name"], arguments, use["id"]), stats)

    def _stream_error(self, data: dict[str, Any]) -> Exception:
        error = data.get("error") or {}
        kind, message = error.get("type", "error"), error.get("message", "")
        if kind == "overloaded_error":
            return ModelError(
                f"Anthropic's servers are overloaded ({message}); try again in a minute."
            )
        return ModelError(f"The Anthropic server stopped the reply ({kind}: {message}).")

    def complete(
        self,
        system: str,
        text: str,
        *,
        max_tokens: int,
        cancel: threading.Event | None = None,
    ) -> str:
        body = {
            "model": self.model,
            "max_tokens": max_tokens,
            "system": system,
            "messages": [{"role": "user", "content": text}],
            "stream": True,
            "temperature": 0.2,
        }
        return self._stream_text("/v1/messages", body, cancel, self._text_piece)

    def _text_piece(self, event: str | None, data: dict[str, Any]) -> str:
        if data.get("type", event) == "error":
            raise self._stream_error(data)
        delta = data.get("delta") or {}
        return str(delta["text"]) if delta.get("type") == "text_delta" else ""
