"""What the API back-ends share: token estimates calibrated by the server's own counts.

An API model's tokenizer is not available offline, so prompt sizes are estimated from characters
and corrected after every step by the prompt-token count the server reports (``usage``), which
makes the estimate converge on the model's own count for this conversation's kind of text.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

from engine.llm.base import (
    ChatMessage,
    FunctionSchema,
    MessageStream,
    Prompt,
    Step,
    StepStats,
    TextCallback,
    ToolCall,
    load_model_json,
)
from engine.llm.http import STEP_DEADLINE_S, ApiClient

CHARS_PER_TOKEN = 3.6
MESSAGE_OVERHEAD = 4
MAX_STEP_CHARS = 100_000  # of text and call arguments in one step: 25 times a full answer


def cut_notice(provider: str) -> str:
    """Said where an answer was cut at ``MAX_STEP_CHARS`` (it is stored cut, never whole)."""
    return (
        f"The {provider} server sent more than {MAX_STEP_CHARS:,} characters in one step; "
        "the rest was cut."
    )


def api_parameters(schema: dict[str, Any]) -> dict[str, Any]:
    """A function's JSON schema for an API: length limits move into the descriptions.

    Servers that turn schemas into grammars (llama.cpp) choke on long ``maxLength`` values, and
    the agent checks lengths itself anyway.
    """
    properties = {}
    for name, spec in schema.get("properties", {}).items():
        spec = dict(spec)
        limit = spec.pop("maxLength", None)
        spec.pop("minLength", None)
        if limit is not None:
            spec["description"] = f"{spec.get('description', '')} (at most {limit} characters)"
        if isinstance(spec.get("items"), dict):
            spec["items"] = {k: v for k, v in spec["items"].items() if "Length" not in k}
        properties[name] = spec
    return {**schema, "properties": properties}


def function_description(function: FunctionSchema) -> str:
    if function.example is None:
        return function.description
    return f"{function.description} Example arguments: {json.dumps(function.example)}"


class ApiChatModel:
    """Base of the HTTP back-ends: counting, the system text, the calibration, and what their
    streams share (the reply's text, the visible part of a send_message call, the check)."""

    provider = "api"
    models_path = "/models"  # where the server lists its models
    _headers: dict[str, str]

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        context_length: int,
        max_step_tokens: int = 1024,
        timeout_s: float = 60.0,
        retries: int = 3,
        backoff_s: float = 1.0,
        deadline_s: float = STEP_DEADLINE_S,
    ) -> None:
        self._client = ApiClient(
            base_url,
            self.provider,
            timeout_s=timeout_s,
            retries=retries,
            backoff_s=backoff_s,
            deadline_s=deadline_s,
        )
        self.model = model
        self.name = f"{self.provider}:{model}"
        self.context_length = context_length
        self.max_step_tokens = max_step_tokens
        self._scale = 1.0  # server-reported prompt tokens / our estimate, smoothed
        self._lock = threading.Lock()

    @property
    def parameter_count(self) -> int | None:
        return None  # a provider does not say

    def prefill(self, prompt: Prompt) -> None:
        pass  # a server caches prompts itself

    def keep_state(self) -> None:
        pass  # the same

    # -- counting ------------------------------------------------------------------------------

    def count_tokens(self, text: str) -> int:
        return math.ceil(len(text) / CHARS_PER_TOKEN * self._scale)

    def count_functions(self, functions: Sequence[FunctionSchema]) -> int:
        return self.count_tokens(json.dumps(self._tools(functions)))

    def count_prompt(self, prompt: Prompt) -> int:
        return (
            self.count_tokens(self._system(prompt))
            + self.count_functions(prompt.functions)
            + sum(
                self.count_tokens(json.dumps(self._message(message))) + MESSAGE_OVERHEAD
                for message in prompt.messages
            )
        )

    def _calibrate(self, prompt: Prompt, reported_tokens: int | None) -> None:
        if not reported_tokens:
            return
        estimate = self.count_prompt(prompt) / self._scale
        if estimate > 0:
            ratio = min(3.0, max(0.33, reported_tokens / estimate))
            self._scale = 0.5 * self._scale + 0.5 * ratio

    # -- the request ---------------------------------------------------------------------------

    @staticmethod
    def _system(prompt: Prompt) -> str:
        return f"{prompt.instructions}\n\n{prompt.memory}"

    def _tools(self, functions: Sequence[FunctionSchema]) -> list[dict[str, Any]]:
        raise NotImplementedError

    def _message(self, message: ChatMessage) -> dict[str, Any]:
        raise NotImplementedError

    def close(self) -> None:
        self._client.close()

    # -- what both streams share ---------------------------------------------------------------

    def _stream_text(
        self,
        path: str,
        body: dict[str, Any],
        cancel: threading.Event | None,
        piece: Callable[[str | None, dict[str, Any]], str],
    ) -> str:
        """A plain reply: ``piece(event, data)`` is the text each streamed event adds."""
        pieces: list[str] = []
        room = MAX_STEP_CHARS
        with self._lock:
            for event, data in self._client.stream_events(path, self._headers, body, cancel):
                pieces.append(piece(event, data)[:room])
                room -= len(pieces[-1])
                if room <= 0:
                    break
        return "".join(pieces).strip()

    @staticmethod
    def _show_message(
        streams: dict[int, MessageStream],
        index: int,
        name: str | None,
        arguments_piece: str,
        on_text: TextCallback | None,
    ) -> None:
        """Stream the user-visible text of a send_message call as its arguments arrive."""
        if name != "send_message" or on_text is None:
            return
        shown = streams.setdefault(index, MessageStream()).feed(arguments_piece)
        if shown:
            on_text(shown)

    def check(self) -> str:
        """Whether the server answers and knows the model (for `mnemo doctor`)."""
        listed = self._client.get_json(self.models_path, self._headers)
        names = [item.get("id") for item in listed.get("data", []) if isinstance(item, dict)]
        if names and self.model not in names:
            return f"reachable, but it does not list {self.model!r} (it has {len(names)} models)"
        return "reachable"


def streamed_step(text: str, call: tuple[str, str, str] | None, stats: StepStats) -> Step:
    """What a chat API streamed, as a step: its first tool call (name, arguments as JSON, id),
    or, without one, its plain text taken as the reply."""
    if call is None:
        if text.strip():
            return Step(None, raw=text, text=text.strip(), stats=stats)
        return Step(None, raw="", error="your reply was empty; call a function", stats=stats)
    name, arguments_json, call_id = call
    raw = json.dumps({"function": name, "arguments": arguments_json})
    arguments, problem = load_model_json(arguments_json or "{}")
    if problem:
        return Step(
            None,
            raw=raw[:4000],
            error=f"the arguments of {name} could not be read: {problem}",
            stats=stats,
        )
    if not isinstance(arguments, dict) or not name:
        return Step(
            None, raw=raw, error="a tool call needs a name and an object of arguments", stats=stats
        )
    return Step(ToolCall(name, arguments, call_id), raw=raw, stats=stats)
