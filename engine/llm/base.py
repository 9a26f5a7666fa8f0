"""The contract between the agent loop and a model backend.

A backend turns a ``Prompt`` (instructions, function schemas, memory, messages) into one ``Step``:
exactly one function call, or the reason its output is not one. A prompt with no functions asks
for a plain-text reply (the assisted memory mode), streamed whole. It streams the user-visible part
(the ``send_message`` text) as it is generated, counts tokens with the model's own tokenizer and
reports its context length. Backends: ``LlamaModel`` (local GGUF, ``engine.llm.local``),
``OpenAIModel`` (any OpenAI-compatible server), ``AnthropicModel``, and ``ScriptedModel`` (tests).
"""

from __future__ import annotations

import codecs
import contextlib
import json
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from engine.modes import ModeChoice, choose_mode
from engine.text import safe_text, safe_value  # re-exported: callers import them from here

Role = Literal["system", "user", "assistant", "tool"]
TextCallback = Callable[[str], None]

# The JSON shape every text-decoding backend produces and every prompt shows for a call.
CALL_PREFIX = '{"function": '
# Bounds on JSON a model (or a server) writes. Memory functions take flat arguments (depth 3 with
# the envelope); a long archival note is a few thousand characters.
MAX_JSON_DEPTH = 16
MAX_JSON_CHARS = 200_000


def _depth(value: Any) -> int:
    """How deeply lists and objects nest in ``value`` (iteratively: no recursion to exhaust)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return deepest


def load_model_json(text: str) -> tuple[Any, str | None]:
    """Parse JSON that a model or a model server wrote: bounded in size and depth, with its
    strings made safe to store. Returns (value, None) or (None, what is wrong, for the model)."""
    if len(text) > MAX_JSON_CHARS:
        return None, f"it is {len(text):,} characters long (at most {MAX_JSON_CHARS:,})"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        return None, f"it is not valid JSON ({error.msg} at character {error.pos})"
    except RecursionError:
        return None, f"it nests deeper than {MAX_JSON_DEPTH} levels"
    if _depth(value) > MAX_JSON_DEPTH:
        return None, f"it nests deeper than {MAX_JSON_DEPTH} levels"
    return safe_value(value), None


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    id: str = ""

    def to_json(self) -> str:
        return json.dumps({"function": self.name, "arguments": self.arguments}, ensure_ascii=False)


@dataclass(frozen=True)
class ChatMessage:
    """One message of the conversation as a model sees it."""

    role: Role
    content: str = ""
    call: ToolCall | None = None  # assistant: the function it called
    call_id: str | None = None  # tool: the id of the call this result answers
    name: str | None = None  # tool: the function that produced this result


@dataclass(frozen=True)
class FunctionSchema:
    name: str
    description: str
    parameters: dict[str, Any]  # a JSON schema of type object
    example: dict[str, Any] | None = None  # arguments of one typical call


@dataclass
class Prompt:
    """Everything a model sees for one step, ordered from most to least stable."""

    instructions: str
    functions: list[FunctionSchema]
    memory: str  # core memory and the recursive summary
    messages: list[ChatMessage]
    allowed: frozenset[str] | None = None  # limit this step to these functions
    # With no functions: the plain reply must be JSON of this schema (a local model is held to
    # it by a grammar, an OpenAI-compatible server by response_format; the caller checks it).
    reply_schema: dict[str, Any] | None = None
    # A free-text reply's sampling temperature; None: the back-end's usual one (greedy for a local
    # model). A reply written again because it repeated an earlier one is sampled.
    temperature: float | None = None
    # The most tokens this step may write (an assisted reply's cap); None: the model's own.
    max_tokens: int | None = None
    # When the memory it holds was read: a state of it is never kept, nor carried into later
    # steps, once something was forgotten since (``engine.llm.prompt_states``).
    read_at: float = field(default_factory=time.time)

    def output_tokens(self, model_limit: int) -> int:
        """The tokens this step may write, for a model that allows ``model_limit``."""
        return min(model_limit, self.max_tokens) if self.max_tokens else model_limit


@dataclass
class StepStats:
    prompt_tokens: int = 0
    evaluated_tokens: int = 0  # prompt tokens not served from the cache
    generated_tokens: int = 0
    first_token_s: float = 0.0
    total_s: float = 0.0


@dataclass
class Step:
    """One model step: a parsed call, or ``error`` saying why the output is not usable."""

    call: ToolCall | None
    raw: str = ""
    text: str = ""  # free text a chat API returned instead of a call
    error: str | None = None
    stats: StepStats = field(default_factory=StepStats)


class ChatModel(Protocol):
    name: str
    context_length: int
    max_step_tokens: int  # room kept free in the window for one step's output

    @property
    def parameter_count(self) -> int | None:
        """The model's size in parameters; None where it is not known (API models)."""
        ...

    def count_tokens(self, text: str) -> int: ...

    def count_functions(self, functions: Sequence[FunctionSchema]) -> int: ...

    def count_prompt(self, prompt: Prompt) -> int:
        """The exact number of tokens ``step`` would feed the model for this prompt."""
        ...

    def step(
        self,
        prompt: Prompt,
        *,
        on_text: TextCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> Step: ...

    def prefill(self, prompt: Prompt) -> None:
        """Prepare for a step on ``prompt`` (a local model evaluates it into its KV cache);
        nothing for models that cannot."""
        ...

    def keep_state(self) -> None:
        """This process is done with the model: keep what it has evaluated for the next one to
        start from (a local model's state, ``engine.llm.prompt_states``); nothing for models
        that cannot."""
        ...

    def complete(
        self,
        system: str,
        text: str,
        *,
        max_tokens: int,
        cancel: threading.Event | None = None,
    ) -> str:
        """Plain text generation without functions (used for summaries)."""
        ...


def message_text(message: ChatMessage) -> str:
    """A message as text-decoding models see it: calls as JSON, results and notes labelled."""
    if message.role == "assistant" and message.call is not None:
        return message.call.to_json()
    if message.role == "tool":
        return f"[result of {message.name or 'function'}]\n{message.content}"
    if message.role == "system":
        return f"[system note]\n{message.content}"
    return message.content


def describe_parameters(schema: dict[str, Any]) -> str:
    """'label, content, request_heartbeat' with optional parameters marked by '?'."""
    required = set(schema.get("required", []))
    return ", ".join(
        name if name in required else f"{name}?" for name in schema.get("properties", {})
    )


def render_functions(functions: Sequence[FunctionSchema]) -> str:
    """The function list for models that read it as text (local models)."""
    lines = ["Functions (? marks an optional argument), each with an example:"]
    for function in functions:
        parameters = describe_parameters(function.parameters)
        lines.append(f"- {function.name}({parameters}): {function.description}")
        if function.example is not None:
            lines.append(f"  {ToolCall(function.name, function.example).to_json()}")
    return "\n".join(lines)


def parse_call(raw: str) -> tuple[ToolCall | None, str | None]:
    """Parse '{"function": NAME, "arguments": {...}}'; return the call or a correction."""
    text = raw.strip()
    if text.startswith("```"):  # a fenced block from a chatty model
        text = text.strip("`").removeprefix("json").strip()
    value, problem = load_model_json(text)
    if problem:
        return None, (
            f"your output could not be read: {problem}; reply with exactly one object like "
            '{"function": "send_message", "arguments": {"message": "..."}}'
        )
    if not isinstance(value, dict) or not isinstance(value.get("function"), str):
        return None, 'your output must be an object with a "function" name and "arguments"'
    arguments = value.get("arguments", {})
    if not isinstance(arguments, dict):
        return None, '"arguments" must be an object of named arguments'
    extra = sorted(set(value) - {"function", "arguments"})
    if extra:
        return None, f'unexpected keys {extra}; put every argument inside "arguments"'
    return ToolCall(value["function"], arguments), None


def mode_for(setting: str, model: ChatModel) -> ModeChoice:
    """The memory mode ``model`` gets under ``setting`` (``engine.modes``): for a local model,
    its catalogue entry and its architecture count as well as its size."""
    return choose_mode(
        setting,
        model.parameter_count,
        architecture=getattr(model, "architecture", None),
        catalogued=getattr(model, "catalogued_mode", None),
        server_on_this_computer=getattr(model, "server_on_this_computer", False),
    )


# Hybrid reasoning models (Qwen3, SmolLM3) may write their reasoning first, between these tags,
# even when asked not to: it is not the reply, and the person never sees it.
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def without_thinking(text: str) -> str:
    """``text`` without a leading reasoning block; an unclosed one is all reasoning."""
    head = text.lstrip()
    if not head.startswith(THINK_OPEN):
        return text
    end = head.find(THINK_CLOSE)
    return "" if end < 0 else head[end + len(THINK_CLOSE) :].lstrip()


def plain_step(text: str, stats: StepStats) -> Step:
    """A plain-text reply as a step; an empty one is an error the agent shows."""
    raw = safe_text(text)
    text = without_thinking(raw)
    if text.strip():
        return Step(None, raw=raw, text=text.strip(), stats=stats)
    error = "the model wrote only its reasoning" if raw.strip() else "the model's reply was empty"
    return Step(None, raw=raw, error=error, stats=stats)


class TextStream:
    """Decode a plain-text reply piece by piece (bytes split inside a character wait), holding
    back a leading reasoning block (``without_thinking``) so that it is never shown."""

    def __init__(self) -> None:
        self._bytes = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._held = ""  # the start, until it is known whether it opens a reasoning block
        self._passing = False  # the reply itself is streaming
        self._after_reasoning = False  # the reply follows a reasoning block: skip its blank lines

    def feed(self, data: bytes | str) -> str:
        text = self._bytes.decode(data) if isinstance(data, bytes) else data
        if self._passing:
            if self._after_reasoning:
                text = text.lstrip()
                self._after_reasoning = not text
            return text
        self._held += text
        head = self._held.lstrip()
        if not head.startswith(THINK_OPEN):
            if THINK_OPEN.startswith(head):
                return ""  # it may still become one
            self._passing, text, self._held = True, self._held, ""
            return text
        end = head.find(THINK_CLOSE)
        if end < 0:
            return ""
        self._passing, self._held = True, ""
        text = head[end + len(THINK_CLOSE) :].lstrip()
        self._after_reasoning = not text
        return text


class MessageStream:
    """Pull the ``message`` argument out of JSON that is still being generated.

    Fed output piece by piece (bytes from a local model, text from an API), it returns the newly
    decoded part of the message string, so a reply appears word by word although the model
    writes a function call. Only ``send_message`` has a ``message`` argument.
    """

    _START = re.compile(r'"message"\s*:\s*"')

    def __init__(self) -> None:
        self._bytes = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._raw = ""
        self._body_start: int | None = None
        self._position = 0  # how much of the string body has been decoded
        self._done = False

    def feed(self, data: bytes | str) -> str:
        self._raw += self._bytes.decode(data) if isinstance(data, bytes) else data
        if self._done:
            return ""
        if self._body_start is None:
            match = self._START.search(self._raw)
            if match is None:
                return ""
            self._body_start = match.end()
        body = self._raw[self._body_start :]
        out: list[str] = []
        i = self._position
        while i < len(body):
            char = body[i]
            if char == '"':
                self._done = True
                break
            if char == "\\":
                width = 6 if body[i + 1 : i + 2] == "u" else 2
                if i + width > len(body):
                    break  # the escape is not complete yet
                # A broken escape is skipped here; the parser reports the call itself.
                with contextlib.suppress(json.JSONDecodeError):
                    out.append(safe_text(json.loads(f'"{body[i : i + width]}"')))
                i += width
                continue
            out.append(char)
            i += 1
        self._position = i
        return "".join(out)

    @property
    def raw(self) -> str:
        return self._raw
