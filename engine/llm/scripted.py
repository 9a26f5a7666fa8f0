"""A model that replays queued outputs, for testing the agent loop's logic.

It behaves like a text-decoding backend in everything but choosing what to say: its outputs pass
through the same parser as a local model's, it streams ``send_message`` text, counts tokens (one
per word or punctuation mark) and refuses a prompt larger than its context window, as a real model
would. It never stands in for the real-model tests.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from engine.errors import ContextOverflowError, GenerationCancelled
from engine.llm.base import (
    FunctionSchema,
    MessageStream,
    Prompt,
    Step,
    StepStats,
    TextCallback,
    TextStream,
    message_text,
    parse_call,
    plain_step,
    render_functions,
)

_TOKEN = re.compile(r"\w+|[^\w\s]")
MESSAGE_OVERHEAD = 4  # role markers around each message


@dataclass
class ScriptedStep:
    """A queued output with an optional delay before it (to test cancellation and kills)."""

    output: str | dict[str, Any] | Callable[[Prompt], str | dict[str, Any]]
    delay_s: float = 0.0


class ScriptExhaustedError(AssertionError):
    """The loop asked for more steps than the test queued."""


class ScriptedModel:
    def __init__(
        self,
        *,
        context_length: int = 8192,
        max_step_tokens: int = 128,
        default: Callable[[Prompt], str | dict[str, Any]] | None = None,
        parameter_count: int | None = None,
    ) -> None:
        self.name = "scripted"
        self.parameter_count = parameter_count  # None: treated like an API model
        self.context_length = context_length
        self.max_step_tokens = max_step_tokens
        self._queue: deque[ScriptedStep] = deque()
        self._summaries: deque[str] = deque()
        self._default = default
        self.prompts: list[Prompt] = []
        self.prefilled: list[Prompt] = []
        self.states_kept = 0
        self.summary_requests: list[tuple[str, str]] = []

    def enqueue(self, outputs: Iterable[str | dict[str, Any] | ScriptedStep]) -> None:
        """Queue outputs: a dict is a call ({"function": ..., "arguments": ...}), a string is
        raw model output (parsed like a local model's), a ``ScriptedStep`` adds a delay."""
        for output in outputs:
            self._queue.append(output if isinstance(output, ScriptedStep) else ScriptedStep(output))

    def enqueue_summary(self, text: str) -> None:
        self._summaries.append(text)

    @property
    def queued(self) -> int:
        return len(self._queue)

    # -- counting ------------------------------------------------------------------------------

    def count_tokens(self, text: str) -> int:
        return len(_TOKEN.findall(text))

    def count_functions(self, functions: Sequence[FunctionSchema]) -> int:
        return self.count_tokens(render_functions(functions))

    def count_prompt(self, prompt: Prompt) -> int:
        functions = [render_functions(prompt.functions)] if prompt.functions else []
        system = "\n\n".join([prompt.instructions, *functions, prompt.memory])
        return (
            self.count_tokens(system)
            + MESSAGE_OVERHEAD
            + sum(
                self.count_tokens(message_text(message)) + MESSAGE_OVERHEAD
                for message in prompt.messages
            )
        )

    # -- generating ----------------------------------------------------------------------------

    def step(
        self,
        prompt: Prompt,
        *,
        on_text: TextCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> Step:
        size = self.count_prompt(prompt)
        if size + self.max_step_tokens > self.context_length:
            raise ContextOverflowError(
                f"The prompt has {size} tokens; with {self.max_step_tokens} for the reply it "
                f"does not fit the context window of {self.context_length}."
            )
        self.prompts.append(prompt)
        if self._queue:
            scripted = self._queue.popleft()
        elif self._default is not None:
            scripted = ScriptedStep(self._default)
        else:
            raise ScriptExhaustedError("the scripted model has no output queued for this step")
        self._wait(scripted.delay_s, cancel)
        output = scripted.output(prompt) if callable(scripted.output) else scripted.output
        raw = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        stream: MessageStream | TextStream = MessageStream() if prompt.functions else TextStream()
        if not prompt.functions:  # a word is a token here; a plain reply is cut at its cap
            raw = "".join(re.findall(r"\S+\s*", raw)[: prompt.output_tokens(self.max_step_tokens)])
        for generated, piece in enumerate(re.findall(r"\S+\s*", raw)):
            if cancel is not None and cancel.is_set():
                stopped = GenerationCancelled("The reply was stopped.")
                stopped.stats = StepStats(size, size, generated)  # as the local model says
                raise stopped
            visible = stream.feed(piece)
            if visible and on_text is not None:
                on_text(visible)
        stats = StepStats(
            prompt_tokens=size, evaluated_tokens=size, generated_tokens=self.count_tokens(raw)
        )
        if not prompt.functions:
            return plain_step(raw, stats)
        call, error = parse_call(raw)
        return Step(call, raw=raw, error=error, stats=stats)

    def prefill(self, prompt: Prompt) -> None:
        self.prefilled.append(prompt)

    def keep_state(self) -> None:
        self.states_kept += 1

    def complete(
        self,
        system: str,
        text: str,
        *,
        max_tokens: int,
        cancel: threading.Event | None = None,
    ) -> str:
        size = self.count_tokens(system) + self.count_tokens(text) + 2 * MESSAGE_OVERHEAD
        if size + max_tokens > self.context_length:
            raise ContextOverflowError(
                f"The summary prompt has {size} tokens and does not fit the context window of "
                f"{self.context_length} with {max_tokens} for the summary."
            )
        self.summary_requests.append((system, text))
        if self._summaries:
            summary = self._summaries.popleft()
        else:
            # Deterministic stand-in: the first words of each line, as many as fit.
            summary = " / ".join(" ".join(line.split()[:6]) for line in text.splitlines() if line)
        words = _TOKEN.findall(summary)
        if len(words) > max_tokens:
            summary = " ".join(words[:max_tokens])
        return summary

    @staticmethod
    def _wait(seconds: float, cancel: threading.Event | None) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if cancel is not None and cancel.wait(min(0.05, deadline - time.monotonic())):
                raise GenerationCancelled("The reply was stopped.")
            if cancel is None:
                time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
