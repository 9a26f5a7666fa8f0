"""Engine time per step and per turn on a profile with years of history.

The profile holds ``--messages`` messages (100k) and ``--passages`` archival passages (1M), built
as ``recall_search.py`` and ``archival_search.py`` build theirs (Zipf text, clustered synthetic
vectors under the real embedder's name, the app's own background upkeep), with the conversation
window where years of use leave it: the last 20 messages, and a summary of the rest.

A scripted model then runs ``--turns`` typical self-managed turns: a conversation search, an
archival search, a core-memory append (a proposal) and a reply. It counts tokens with the bundled
model's tokenizer, as the app would; queries are embedded by the real embedder. The engine's time
is everything but the model's own calls, split (exclusively) into:

- search: recall and archival searches, query embeddings included;
- context: loading the window's state, building the prompt, the status line, eviction;
- counting: the tokenizer's calls;
- commit: inserts, commits, and embedding the stored messages;
- other: the rest (dispatch, checks, events, proposals' bookkeeping).

A "step" is everything the engine does around one model call (the previous call's results
stored, then the next prompt built). The same run then puts the engine's time in proportion to
the bundled model's, two ways:

- the same turn: the last ``--model-turns`` typical turns' prompts given to the bundled model
  (its own words under the same grammar, its cache reused as in a turn); the engine's share is
  engine / (engine + model) per turn, p50s;
- the bundled model's own turns (``--model-turns``) in the mode the app gives it (assisted),
  answering everyday questions in a new conversation: their wall time, against the typical
  turn's engine time, and the engine's share of those turns themselves.

Targets (issue: start-up and scale): engine time p50 <= 30 ms per step, and <= 2% of the same
turn with the bundled model. Prints one JSON line.

    uv run python tests/benchmarks/turn_overhead.py [--profile PATH] [--turns 40]
"""

from __future__ import annotations

import argparse
import functools
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy.orm
from _common import ClusteredVectors, TextGenerator, emit
from archival_search import load as load_passages
from assisted_latency import TURNS
from sqlmodel import Session

import engine.agent
from engine import Mnemo
from engine.agent import Agent
from engine.agent import assisted_rules as assisted
from engine.context.window import AgentState, ContextWindow, save_state_in
from engine.embed import default_embedder
from engine.llm import load_model
from engine.llm.local import LlamaModel
from engine.llm.scripted import ScriptedModel
from engine.memory.archival import ArchivalStore
from engine.memory.recall import RecallStore, RecallTransaction
from engine.memory.recall.vectors import MessageVectors
from engine.memory.vectors import VectorTable

WINDOW_MESSAGES = 20
BUILT = "turn_overhead.built"
CATEGORIES = ("search", "context", "counting", "commit", "other")


# -- the profile ---------------------------------------------------------------------------------


def build(folder: Path, messages: int, passages: int) -> float:
    """Fill the profile (once: a kept ``--profile`` is reused); the seconds it took."""
    marker = folder / BUILT
    wanted = f"{messages} {passages}"
    if marker.exists() and marker.read_text() == wanted:
        return 0.0
    started = time.perf_counter()
    real = default_embedder()
    with Mnemo.open(folder, embedder=ClusteredVectors(real.name, real.dim, seed=7)) as m:
        generator = TextGenerator(seed=3)
        first = datetime(2022, 1, 1)
        for offset in range(m.recall.count(), messages, 10_000):
            count = min(10_000, messages - offset)
            m.recall.add_many(
                {
                    "role": ("user", "assistant")[(offset + i) % 2],
                    "text": text,
                    "created_at": first + timedelta(minutes=20 * (offset + i)),
                }
                for i, text in enumerate(generator.sentences(count, 4, 40))
            )
        if m.archival.count() < passages:
            load_passages(m, ClusteredVectors(real.name, real.dim, seed=11), passages)
        m._passage_vectors.maintain()
        m._message_vectors.maintain()
        m.wait_for_background_work()
        human = "\n".join(f"- {line}" for line in generator.sentences(12, 5, 12))
        m.core.set("human", human[: m.core.block("human").char_limit // 2])
        latest = m.recall.latest_id()
        state = AgentState(
            "default",
            context_start_id=latest - WINDOW_MESSAGES + 1,
            summary=" ".join(generator.sentences(8, 10, 20)),
            summarized_count=messages - WINDOW_MESSAGES,
        )
        with Session(m.database) as session:
            save_state_in(session, state)
            session.commit()
    marker.write_text(wanted)
    return time.perf_counter() - started


# -- attributing time ----------------------------------------------------------------------------


class Probe:
    """Exclusive time per category on the agent's thread: a nested call's time goes to the
    innermost category, except inside the model, whose calls are all the model's."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = defaultdict(float)
        self._stack: list[str] = ["other"]
        self._mark = time.perf_counter()
        self._thread = threading.get_ident()
        self.model_exits: list[dict[str, float]] = []  # the totals at each model call's end

    def engine_time(self) -> float:
        self._charge()
        return sum(v for k, v in self.totals.items() if k != "model")

    def snapshot(self) -> dict[str, float]:
        self._charge()
        return dict(self.totals)

    def _charge(self) -> None:
        now = time.perf_counter()
        self.totals[self._stack[-1]] += now - self._mark
        self._mark = now

    def wrap(self, owner: Any, name: str, category: str) -> None:
        original: Callable[..., Any] = getattr(owner, name)
        probe = self

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() != probe._thread:
                return original(*args, **kwargs)
            probe._charge()
            probe._stack.append("model" if probe._stack[-1] == "model" else category)
            try:
                return original(*args, **kwargs)
            finally:
                probe._charge()
                probe._stack.pop()
                if category == "model" and name == "step":
                    probe.model_exits.append(probe.snapshot())

        setattr(owner, name, timed)


def instrument(probe: Probe, model: Any) -> None:
    for owner, name, category in (
        (RecallStore, "search", "search"),
        (RecallStore, "search_by_date", "search"),
        (ArchivalStore, "search", "search"),
        (assisted, "recall_for", "search"),
        (engine.agent, "load_state", "context"),
        (ContextWindow, "build", "context"),
        (ContextWindow, "evict", "context"),
        (Agent, "_status", "context"),
        (RecallTransaction, "add_many", "commit"),
        (sqlalchemy.orm.Session, "commit", "commit"),
        (MessageVectors, "embed", "commit"),
        (VectorTable, "add", "commit"),
        (model, "count_tokens", "counting"),
        (model, "count_functions", "counting"),
        (model, "count_prompt", "counting"),
        (model, "step", "model"),
        (model, "complete", "model"),
        (model, "prefill", "model"),
    ):
        probe.wrap(owner, name, category)


class TokenizingScriptedModel(ScriptedModel):
    """The scripted model, counting tokens as the bundled model does (its tokenizer)."""

    def __init__(self, tokenizer: LlamaModel) -> None:
        super().__init__(
            context_length=tokenizer.context_length,
            max_step_tokens=tokenizer.max_step_tokens,
            default=None,
        )
        self.count_tokens = tokenizer.count_tokens  # type: ignore[method-assign]
        self.count_functions = tokenizer.count_functions  # type: ignore[method-assign]
        self.count_prompt = tokenizer.count_prompt  # type: ignore[method-assign]


def typical_turn(queries: list[str], fact: str) -> list[dict[str, Any]]:
    beat = {"request_heartbeat": True}
    return [
        {"function": "conversation_search", "arguments": {"query": queries[0], **beat}},
        {"function": "archival_memory_search", "arguments": {"query": queries[1], **beat}},
        {
            "function": "core_memory_append",
            "arguments": {"label": "human", "content": fact, **beat},
        },
        {"function": "send_message", "arguments": {"message": f"Noted: {fact}"}},
    ]


def percentiles(samples: list[float]) -> dict[str, float]:
    ms = np.array(samples) * 1000
    return {
        "p50": round(float(np.percentile(ms, 50)), 2),
        "p95": round(float(np.percentile(ms, 95)), 2),
    }


# -- the run -------------------------------------------------------------------------------------


def run(args: argparse.Namespace, folder: Path) -> None:
    build_s = build(folder, args.messages, args.passages)
    real = default_embedder()
    words = TextGenerator(seed=9)
    with Mnemo.open(folder, embedder=real) as m:
        m.wait_for_background_work()
        bundled = load_model(m.settings)
        assert isinstance(bundled, LlamaModel), "the benchmark times the bundled local model"
        scripted = TokenizingScriptedModel(bundled)
        probe = Probe()
        instrument(probe, scripted)
        agent = Agent(m, scripted)
        step_samples: list[float] = []
        by_position: dict[int, list[float]] = defaultdict(list)
        by_position_part: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        turn_samples: list[float] = []
        by_category: dict[str, list[float]] = defaultdict(list)
        steps_per_turn = []
        turn_prompts: list[list[Any]] = []
        for number in range(args.turns + 1):  # the first turn warms caches and is not counted
            queries = words.sentences(2, 2, 6)
            fact = words.sentences(1, 4, 9)[0]
            scripted.enqueue(typical_turn(queries, fact))
            message = " ".join(words.sentences(1, 6, 20))
            before, probe.model_exits = probe.snapshot(), []
            asked = len(scripted.prompts)
            agent.send(message)
            after = probe.snapshot()
            turn_prompts.append(scripted.prompts[asked:])
            for proposal in m.proposals.pending():  # the person decides, between turns
                m.proposals.reject(proposal.id)
            if number == 0:
                continue
            bounds = [before, *probe.model_exits[:-1], after]
            for position, (start, end) in enumerate(zip(bounds, bounds[1:], strict=False), 1):
                parts = {c: end.get(c, 0.0) - start.get(c, 0.0) for c in CATEGORIES}
                step_samples.append(sum(parts.values()))
                by_position[position].append(sum(parts.values()))
                for category, seconds in parts.items():
                    by_position_part[position][category].append(seconds)
            turn_samples.append(sum(after.get(c, 0.0) - before.get(c, 0.0) for c in CATEGORIES))
            steps_per_turn.append(len(probe.model_exits))
            for category in CATEGORIES:
                by_category[category].append(after.get(category, 0) - before.get(category, 0))

        # The same typical turns' prompts, given to the bundled model: how long it takes to
        # write those steps (its own words, under the same grammar, reusing its cache as a turn
        # does).
        same_turns = []
        for prompts in turn_prompts[-args.model_turns :]:
            started = time.perf_counter()
            for prompt in prompts:
                bundled.step(prompt)
            same_turns.append(time.perf_counter() - started)

        # The bundled model on the same profile, in the mode the app gives it (assisted).
        model_probe = Probe()
        instrument(model_probe, bundled)
        # A new conversation each run, so that a kept profile's earlier runs do not fill its window.
        real_agent = Agent(m, bundled, conversation_id=f"bundled-{time.time():.0f}")
        model_turns, model_engine = [], []
        model_parts: dict[str, list[float]] = defaultdict(list)
        for number in range(args.model_turns + 1):
            message = TURNS[number % len(TURNS)]  # what a person asks, so the model answers
            engine_before, parts_before = model_probe.engine_time(), model_probe.snapshot()
            started = time.perf_counter()
            real_agent.send(message)
            wall = time.perf_counter() - started
            if number == 0:
                continue
            model_turns.append(wall)
            model_engine.append(model_probe.engine_time() - engine_before)
            parts_after = model_probe.snapshot()
            for category in CATEGORIES:
                model_parts[category].append(
                    parts_after.get(category, 0.0) - parts_before.get(category, 0.0)
                )
        counts = {"messages": m.recall.count(), "passages": m.archival.count()}

    turn_p50 = float(np.median(turn_samples))
    bundled_p50 = float(np.median(model_turns))
    same_p50 = float(np.median(same_turns))
    emit(
        {
            "benchmark": "turn_overhead",
            **counts,
            "build_s": round(build_s, 1),
            "turns": args.turns,
            "steps_per_turn": float(np.median(steps_per_turn)),
            "engine_ms_per_step": percentiles(step_samples),
            "engine_ms_per_step_by_position": {
                str(position): {
                    "total": percentiles(samples)["p50"],
                    **{
                        category: percentiles(by_position_part[position][category])["p50"]
                        for category in CATEGORIES
                    },
                }
                for position, samples in sorted(by_position.items())
            },
            "engine_ms_per_turn": percentiles(turn_samples),
            "engine_ms_per_turn_by_part": {
                category: percentiles(by_category[category]) for category in CATEGORIES
            },
            "bundled_model_same_turn_s_p50": round(same_p50, 3),
            "engine_share_of_the_same_turn": round(turn_p50 / (turn_p50 + same_p50), 4),
            "bundled_model_turn_s_p50": round(bundled_p50, 3),
            "bundled_turn_engine_ms_p50": percentiles(model_engine)["p50"],
            "bundled_turn_engine_ms_by_part_p50": {
                category: percentiles(samples)["p50"] for category, samples in model_parts.items()
            },
            "engine_share_of_bundled_turn": round(turn_p50 / bundled_p50, 4),
            "bundled_turn_engine_share": round(float(np.median(model_engine)) / bundled_p50, 4),
            "targets": {"engine_ms_per_step_p50": 30, "engine_share_of_the_same_turn": 0.02},
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--passages", type=int, default=1_000_000)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--model-turns", type=int, default=5)
    parser.add_argument("--profile", help="build the profile here and reuse it next time")
    args = parser.parse_args()
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
        run(args, Path(args.profile))
    else:
        with tempfile.TemporaryDirectory() as folder:
            run(args, Path(folder))


if __name__ == "__main__":
    main()
