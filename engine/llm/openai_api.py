"""OpenAI-compatible chat APIs with native tool calling and streaming.

Works with OpenAI, Groq, Ollama, LM Studio, vLLM and llama.cpp's servers: anything that speaks
``POST {base_url}/chat/completions`` with ``tools``. A plain-text answer (some servers and models
answer without a tool) is taken as the reply; the final step of a turn forces ``send_message``.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from engine.errors import ContextOverflowError, ModelError, register_secret
from engine.llm.api import (
    MAX_STEP_CHARS,
    ApiChatModel,
    api_parameters,
    cut_notice,
    function_description,
    streamed_step,
)
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
from engine.modes import Mode

OPENAI_URL = "https://api.openai.com/v1"
MAX_TOOL_CALLS = 16  # call indexes kept per step (only the first is run)


@dataclass(frozen=True)
class Chunk:
    """What one streamed chat completion chunk says, checked: each choice's content and its
    tool-call parts (index, id, name, a piece of the arguments), and the usage counts."""

    deltas: list[tuple[str, list[tuple[int, str, str, str]]]]
    usage: tuple[int, int] | None


def read_chunk(data: Any, base_url: str) -> Chunk:
    """A chunk as the OpenAI API defines it, or a ModelError in one sentence: a server that
    sends anything else (a list, a string for ``delta``, arguments as an object, NaN counts)
    is not one Mnemo can use, and that is the server's fault, not an error inside Mnemo."""

    def wrong(what: str) -> ModelError:
        return ModelError(
            f"The server at {base_url} sent something that is not a chat completion chunk "
            f"({what}); check that the base URL points at an OpenAI-compatible server."
        )

    def optional(value: Any, kind: type, what: str) -> Any:
        if value is not None and not isinstance(value, kind):
            raise wrong(f"{what} is {type(value).__name__}, not {kind.__name__}")
        return value

    def count(value: Any, what: str) -> int:
        if value is None:
            return 0
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise wrong(f"{what} is {value!r}, not a count")
        return value

    if not isinstance(data, dict):
        raise wrong(f"a {type(data).__name__} instead of an object")
    usage = optional(data.get("usage"), dict, "usage")
    counts = None
    if usage:
        counts = (
            count(usage.get("prompt_tokens"), "usage.prompt_tokens"),
            count(usage.get("completion_tokens"), "usage.completion_tokens"),
        )
    deltas = []
    for choice in optional(data.get("choices"), list, "choices") or []:
        choice = optional(choice, dict, "a choice") or {}
        delta = optional(choice.get("delta"), dict, "delta") or {}
        content = optional(delta.get("content"), str, "delta.content") or ""
        parts = []
        for part in optional(delta.get("tool_calls"), list, "delta.tool_calls") or []:
            part = optional(part, dict, "a tool call") or {}
            function = optional(part.get("function"), dict, "a tool call's function") or {}
            parts.append(
                (
                    count(part.get("index"), "a tool call's index"),
                    optional(part.get("id"), str, "a tool call's id") or "",
                    optional(function.get("name"), str, "a function name") or "",
                    optional(function.get("arguments"), str, "a function's arguments") or "",
                )
            )
        deltas.append((content, parts))
    return Chunk(deltas, counts)


ASSUMED_CONTEXT = 32768  # a server that does not say its context size, until it refuses one
PROBE_TIMEOUT_S = 3.0


def server_on_this_computer(url: str) -> bool:
    """Whether a server runs here (or on the local network), where small models are the rule:
    one that does not say its model's size then gets Mnemo's recall."""
    host = urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith(".local"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private


@dataclass
class ServedModel:
    """What an OpenAI-compatible server says of the model it serves, in ``/props`` and
    ``/models``; llama.cpp's server says the most, llama-cpp-python's and Ollama's little."""

    context_sizes: list[int] = field(default_factory=list)
    parameters: int | None = None  # llama.cpp's server: the model's n_params
    file_name: str | None = None  # the GGUF it loaded, where the server names one

    def read(self, answer: Any, model: str) -> None:
        if not isinstance(answer, dict):
            return
        settings = answer.get("default_generation_settings")
        found = [settings.get("n_ctx")] if isinstance(settings, dict) else []
        self._name(answer.get("model_path"))
        listed = [m for m in answer.get("data") or [] if isinstance(m, dict)]
        for entry in [m for m in listed if m.get("id") == model] or listed[:1]:
            meta: dict[str, Any] = entry["meta"] if isinstance(entry.get("meta"), dict) else {}
            found += [
                entry.get("max_model_len"),  # vLLM
                entry.get("context_length"),  # OpenRouter and others
                entry.get("max_context_length"),  # LM Studio
                meta.get("n_ctx_train"),  # llama.cpp's server: the most the model takes
            ]
            if isinstance(meta.get("n_params"), int) and meta["n_params"] > 0:
                self.parameters = meta["n_params"]
            self._name(entry.get("id"))
        self.context_sizes += [int(s) for s in found if isinstance(s, int) and s >= 256]

    def _name(self, path: Any) -> None:
        if isinstance(path, str) and path.lower().endswith(".gguf"):
            self.file_name = path.replace("\\", "/").rsplit("/", 1)[-1]


class OpenAIModel(ApiChatModel):
    provider = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = OPENAI_URL,
        api_key: str | None = None,
        context_length: int | None = ASSUMED_CONTEXT,
        ask_server: bool = False,
        **options: Any,
    ) -> None:
        """``options``: max_step_tokens, timeout_s, retries, backoff_s (see ApiChatModel).
        ``ask_server``: the server is asked what it serves (``ServedModel``), for the memory
        mode; ``context_length`` None: for its context size too."""
        super().__init__(
            model, base_url=base_url, context_length=context_length or ASSUMED_CONTEXT, **options
        )
        register_secret(api_key)
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._ask_for_usage = True  # dropped for servers that refuse stream_options
        # What a server of one's own says of its model, asked once: read for the memory mode,
        # and for the context size when none was chosen (`model.context_length` automatic).
        self._served: ServedModel | None = None
        if ask_server or context_length is None:
            self._served = self._ask_server()
        if context_length is None and self._served is not None:
            sizes = self._served.context_sizes
            self.context_length = min(sizes) if sizes else ASSUMED_CONTEXT

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
            "max_tokens": prompt.output_tokens(self.max_step_tokens),
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

    def _ask_server(self) -> ServedModel:
        """What the server says of its model: its context size (llama.cpp's server in
        ``/props``; vLLM, LM Studio and llama.cpp per model in ``/models``), and llama.cpp's
        server its GGUF and size. llama-cpp-python's server and Ollama say little: a refusal of
        a prompt past their window then gives the size (``engine.llm.http``)."""
        served = ServedModel()
        root = self._client.base_url.removesuffix("/v1")
        for url in (f"{root}/props", f"{self._client.base_url}/models"):
            try:
                answer = httpx.get(url, headers=self._headers, timeout=PROBE_TIMEOUT_S)
                found = answer.json() if answer.status_code == 200 else None
            except (httpx.HTTPError, ValueError):
                continue
            served.read(found, self.model)
        return served

    # What ``engine.llm.base.mode_for`` reads to choose the memory mode.

    @property
    def parameter_count(self) -> int | None:
        return self._served.parameters if self._served is not None else None

    @functools.cached_property
    def catalogued_mode(self) -> Mode | None:
        from engine.llm.catalog import catalogue_mode  # the catalogue is read only when asked

        return catalogue_mode(self._served.file_name if self._served is not None else None)

    @property
    def server_on_this_computer(self) -> bool:
        """Whether the server is here and was asked about its model (what it said comes first)."""
        return self._served is not None and server_on_this_computer(self._client.base_url)

    def step(
        self,
        prompt: Prompt,
        *,
        on_text: TextCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> Step:
        try:
            return self._step(prompt, on_text, cancel)
        except ContextOverflowError as error:
            if error.context_length:  # the server said its size: the next window fits it
                self.context_length = min(self.context_length, error.context_length)
            raise
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
        usage: tuple[int, int] | None = None
        room = MAX_STEP_CHARS  # content and arguments together
        body = self.request_body(prompt)
        events = 0
        with self._lock:
            for _event, data in self._client.stream_events(
                "/chat/completions", self._headers, body, cancel
            ):
                events += 1
                chunk = read_chunk(data, self._client.base_url)
                usage = chunk.usage or usage
                for content, parts in chunk.deltas:
                    if not stats.first_token_s and (content or parts):
                        stats.first_token_s = time.perf_counter() - started
                    if content and room > 0:
                        content = content[:room]
                        room -= len(content)
                        text.append(content)
                        if on_text is not None:
                            on_text(content)
                    for index, call_id, name, piece in parts:
                        if index >= MAX_TOOL_CALLS:
                            continue  # only the first call runs; a flood of them is dropped
                        call = calls.setdefault(index, {"arguments": ""})
                        call["id"] = call_id or call.get("id")
                        call["name"] = name or call.get("name")
                        piece = piece[: max(0, room)]
                        room -= len(piece)
                        call["arguments"] += piece
                        self._show_message(streams, index, call["name"], piece, on_text)
                if room <= 0:
                    break  # the rest is never read, let alone stored
            if not events:
                # A stream closed without a word: llama-cpp-python's server refuses a prompt past
                # its window so. Unstreamed, it says why (and its size), which ``step`` keeps.
                asked = {key: value for key, value in body.items() if key != "stream_options"}
                asked.update(stream=False, max_tokens=1)
                self._client.get_json("/chat/completions", self._headers, asked)
        stats.total_s = time.perf_counter() - started
        prompt_tokens, completion_tokens = usage or (0, 0)
        stats.evaluated_tokens = prompt_tokens or stats.prompt_tokens
        stats.generated_tokens = completion_tokens
        self._calibrate(prompt, prompt_tokens or None)
        if room <= 0:
            text.append(f"\n\n[{cut_notice(self.provider)}]")
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
            lambda _event, data: "".join(
                content for content, _parts in read_chunk(data, self._client.base_url).deltas
            ),
        )
