"""OpenAI-compatible chat APIs with native tool calling and streaming.

Works with OpenAI, Groq, Ollama, LM Studio, vLLM and llama.cpp's servers: anything that speaks
``POST {base_url}/chat/completions`` with ``tools``. A plain-text answer (some servers and models
answer without a tool) is taken as the reply; the final step of a turn forces ``send_message``.
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

OPENAI_URL = "https://api.openai.com/v1"


class OpenAIModel(ApiChatModel):
    provider = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = OPENAI_URL,
        api_key: str | None = None,
        context_length: int = 32768,
        **options: Any,
    ) -> None:
        """``options``: max_step_tokens, timeout_s, retries, backoff_s (see ApiChatModel)."""
        super().__init__(model, base_url=base_url, context_length=context_length, **options)
        register_secret(api_key)
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._ask_for_usage = True  # dropped for servers that refuse stream_options

    # -- converting ----------------------------------------------------------------------------

    def _tools(self, functions: Sequence[FunctionSchema]) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "function": {
                    "name": function.name,
                    "description": function_description(function),
                    "parameters": api_parameters(function.parameters),
                },
            }
            for function in functions
        ]

    def _message(self, message: ChatMessage) -> dict[str, Any]:
        if message.role == "assistant" and message.call is not None:
            if message.call.name == "send_message":  # past replies read best as plain text
                return {"role": "assistant", "content": message.call.arguments.get("message", "")}
            return {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": message.call.id or "call",
                        "type": "function",
                        "function": {
                            "name": message.call.name,
                            "arguments": json.dumps(message.call.arguments, ensure_ascii=False),
                        },
                    }
                ],
            }
        if message.role == "tool" and message.call_id:
            return {"role": "tool", "tool_call_id": message.call_id, "content": message.content}
        role = "assistant" if message.role == "assistant" else "user"
        return {"role": role, "content": message_text(message)}

    def _messages(self, prompt: Prompt) -> list[dict[str, Any]]:
        messages = [{"role": "system", "content": self._system(prompt)}]
        for message in prompt.messages:
            converted = self._message(message)
            if converted["role"] == "tool" and "tool_calls" not in messages[-1]:
                # Its call was stored unparsed (malformed output): a result needs its call.
                converted = {"role": "user", "content": message_text(message)}
            messages.append(converted)
        return messages

    def request_body(self, prompt: Prompt) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": self._messages(prompt),
            "tools": self._tools(prompt.functions),
            "tool_choice": "auto",
            "stream": True,
            "max_tokens": self.max_step_tokens,
            "temperature": 0.3 if prompt.temperature is None else prompt.temperature,
        }
        if self._ask_for_usage:
            body["stream_options"] = {"include_usage": True}
        if not prompt.functions:  # a plain-text reply
            del body["tools"], body["tool_choice"]
            if prompt.reply_schema is not None:
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "reply", "schema": api_parameters(prompt.reply_schema)},
                }
        elif prompt.allowed is not None and len(prompt.allowed) == 1:
            (name,) = prompt.allowed
            body["tool_choice"] = {"type": "function", "function": {"name": name}}
        return body

    # -- generating ----------------------------------------------------------------------------

    def step(
        self,
        prompt: Prompt,
        *,
        on_text: TextCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> Step:
        try:
            return self._step(prompt, on_text, cancel)
        except ModelError as error:
            if not self._ask_for_usage or "stream_options" not in str(error):
                raise
            self._ask_for_usage = False
            return self._step(prompt, on_text, cancel)

    def _step(
        self, prompt: Prompt, on_text: TextCallback | None, cancel: threading.Event | None
    ) -> Step:
        stats = StepStats(prompt_tokens=self.count_prompt(prompt))
        started = time.perf_counter()
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        streams: dict[int, MessageStream] = {}
        usage: dict[str, Any] = {}
        with self._lock:
            for _event, chunk in self._client.stream_events(
                "/chat/completions", self._headers, self.request_body(prompt), cancel
            ):
                usage = chunk.get("usage") or usage
                for choice in chunk.get("choices") or []:
                    delta = choice.get("delta") or {}
                    if not stats.first_token_s and (
                        delta.get("content") or delta.get("tool_calls")
                    ):
                        stats.first_token_s = time.perf_counter() - started
                    if delta.get("content"):
                        text.append(delta["content"])
                        if on_text is not None:
                            on_text(delta["content"])
                    for part in delta.get("tool_calls") or []:
                        call = calls.setdefault(part.get("index", 0), {"arguments": ""})
                        function = part.get("function") or {}
                        call["id"] = part.get("id") or call.get("id")
                        call["name"] = function.get("name") or call.get("name")
                        piece = function.get("arguments") or ""
                        call["arguments"] += piece
                        self._show_message(
                            streams, part.get("index", 0), call["name"], piece, on_text
                        )
        stats.total_s = time.perf_counter() - started
        stats.evaluated_tokens = int(usage.get("prompt_tokens") or stats.prompt_tokens)
        stats.generated_tokens = int(usage.get("completion_tokens") or 0)
        self._calibrate(prompt, usage.get("prompt_tokens"))
        return self._result("".join(text), calls, stats)

    @staticmethod
    def _result(text: str, calls: dict[int, dict[str, Any]], stats: StepStats) -> Step:
        if not calls:
            return streamed_step(text, None, stats)
        first = calls[min(calls)]
        return streamed_step(
            text, (first.get("name") or "", first["arguments"], first.get("id") or ""), stats
        )

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
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": text}],
            "stream": True,
            "max_tokens": max_tokens,
            "temperature": 0.2,
        }
        return self._stream_text(
            "/chat/completions",
            body,
            cancel,
            lambda _event, chunk: "".join(
                (choice.get("delta") or {}).get("content") or ""
                for choice in chunk.get("choices") or []
            ),
        )
