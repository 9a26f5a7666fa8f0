"""KV-cache prefix reuse over a 50-turn conversation with the local model. One JSON line out.

Per turn: prompt tokens, tokens actually evaluated (the rest came from the cache), and the time to
the first generated token, end to end (from ``Agent.send`` to the model's first token, so prompt
assembly counts) and inside the model. Target: TTFT at turn 50 / turn 2 <= 1.3.

Then generation speed through the engine against raw llama-cpp-python on the same final prompt
(same grammar, greedy): engine tok/s / raw tok/s, target >= 0.95.

    uv run python tests/benchmarks/prefix_reuse.py [--turns 50] [--context 8192] [--model F]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from typing import Any

import llama_cpp
from _common import emit

from engine import Mnemo
from engine.agent import Agent
from engine.llm.base import Prompt, Step, TextCallback
from engine.llm.local import LlamaModel

TOPICS = "gardening,chess,sourdough,cycling,astronomy,jazz,pottery,sailing,hiking,origami".split(
    ","
)


class Timed:
    """The model, with the wall time each step started and its statistics kept."""

    def __init__(self, model: LlamaModel) -> None:
        self.model = model
        self.steps: list[tuple[float, Step, Prompt]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def step(
        self,
        prompt: Prompt,
        *,
        on_text: TextCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> Step:
        started = time.perf_counter()
        step = self.model.step(prompt, on_text=on_text, cancel=cancel)
        self.steps.append((started, step, prompt))
        return step


def generation_speed(model: LlamaModel, prompt: Prompt, repeats: int) -> tuple[float, float]:
    """Median tokens/s after the first token: through the engine, and raw llama-cpp-python."""
    tokens = model._render(model._chat(prompt))
    text = llama_cpp.Llama.detokenize(model._llama, tokens, special=True).decode("utf-8")
    grammar = model._grammar(prompt.functions, prompt.allowed)
    raw = llama_cpp.Llama(
        model_path=str(model.path),
        n_ctx=model.context_length,
        n_threads=model._llama.n_threads,
        verbose=False,
    )
    engine_rates, raw_rates = [], []
    for _ in range(repeats):
        step = model.step(prompt)
        decode_s = step.stats.total_s - step.stats.first_token_s
        engine_rates.append((step.stats.generated_tokens - 1) / decode_s)

        first = None
        count = 0
        for _chunk in raw.create_completion(
            text,
            max_tokens=model.max_step_tokens,
            temperature=0.0,
            repeat_penalty=1.1,
            grammar=grammar,
            stream=True,
        ):
            count += 1
            if first is None:
                first = time.perf_counter()
        assert first is not None
        raw_rates.append((count - 1) / (time.perf_counter() - first))
    return statistics.median(engine_rates), statistics.median(raw_rates)


def full_prompt_seconds(model: LlamaModel, prompt: Prompt) -> float:
    """What the first token of the last turn would cost if nothing were cached."""
    model._llama.reset()
    tokens = model._render(model._chat(prompt))
    started = time.perf_counter()
    model._llama.eval(tokens)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--context", type=int, default=8192)
    parser.add_argument("--model", help="a GGUF file (default: the bundled SmolLM2-135M)")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--details", action="store_true", help="every turn on stderr")
    args = parser.parse_args()

    model = Timed(LlamaModel(args.model, context_length=args.context))
    turns = []
    evictions = 0
    with tempfile.TemporaryDirectory() as folder, Mnemo.open(folder) as mnemo:
        mnemo.settings.set("agent.step_limit", 3)
        agent = Agent(mnemo, model)  # type: ignore[arg-type]
        for turn in range(1, args.turns + 1):
            topic = TOPICS[turn % len(TOPICS)]
            before = len(model.steps)
            sent = time.perf_counter()
            events: list[Any] = []
            agent.send(
                f"Turn {turn}: tell me one short fact about {topic}.", on_event=events.append
            )
            evictions += sum(type(e).__name__ == "ContextEvicted" for e in events)
            started, step, _ = model.steps[before]
            turns.append(
                {
                    "turn": turn,
                    "prompt_tokens": step.stats.prompt_tokens,
                    "evaluated_tokens": step.stats.evaluated_tokens,
                    "ttft_s": started - sent + step.stats.first_token_s,
                    "ttft_model_s": step.stats.first_token_s,
                    "steps": len(model.steps) - before,
                }
            )
        last_prompt = model.steps[-1][2]
        engine_rate, raw_rate = generation_speed(model.model, last_prompt, args.repeats)
        without_reuse = full_prompt_seconds(model.model, model.steps[-1][2])
    if args.details:
        for row in turns:
            print(json.dumps(row), file=sys.stderr)

    def at(turn: int, key: str) -> float:
        return turns[turn - 1][key]

    evaluated = [t["evaluated_tokens"] for t in turns[1:]]
    emit(
        {
            "benchmark": "prefix_reuse",
            "model": model.name,
            "turns": len(turns),
            "context": args.context,
            "evictions": evictions,
            "prompt_tokens_turn_2": at(2, "prompt_tokens"),
            "prompt_tokens_last": turns[-1]["prompt_tokens"],
            "evaluated_tokens_turn_1": at(1, "evaluated_tokens"),
            "evaluated_tokens_per_turn_p50": statistics.median(evaluated),
            "evaluated_tokens_per_turn_max": max(evaluated),
            # A turn whose step evicted messages re-reads the window after the new summary.
            "ttft_eviction_turn_max_s": round(
                max((t["ttft_s"] for t in turns[1:] if t["evaluated_tokens"] > 1000), default=0.0),
                3,
            ),
            "ttft_turn_2_s": round(at(2, "ttft_s"), 3),
            "ttft_last_s": round(turns[-1]["ttft_s"], 3),
            "ttft_ratio_last_vs_2": round(turns[-1]["ttft_s"] / at(2, "ttft_s"), 3),
            "ttft_ratio_median_41_50_vs_2_11": round(
                statistics.median(t["ttft_s"] for t in turns[-10:])
                / statistics.median(t["ttft_s"] for t in turns[1:11]),
                3,
            ),
            "ttft_last_without_reuse_s": round(without_reuse, 3),
            "ttft_model_turn_2_s": round(at(2, "ttft_model_s"), 3),
            "ttft_model_last_s": round(turns[-1]["ttft_model_s"], 3),
            "engine_tok_s": round(engine_rate, 1),
            "raw_tok_s": round(raw_rate, 1),
            "generation_ratio": round(engine_rate / raw_rate, 3),
        }
    )


if __name__ == "__main__":
    main()
