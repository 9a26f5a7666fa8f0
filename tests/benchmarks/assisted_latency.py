"""Time to first token in the assisted mode against a plain chat completion, same run.

A profile holds an earlier conversation (facts the user told). Then a 30-turn conversation runs
with the bundled model in fresh profiles with the same history, each way in turn, ``--rounds``
times:

- ``plain``: each turn stores the message and runs a plain chat completion of the window's
  prompt (history, no retrieval), timed from storing to the first token;
- ``assisted``: each turn through ``Agent.send`` in the assisted mode, timed from the call to
  the first streamed piece of the reply (recall, storing and prompt building included).

Both reuse the KV cache as the app does. Prints p50 of each and their ratio (target <= 1.2).

    uv run python tests/benchmarks/assisted_latency.py [--turns 30] [--rounds 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import datetime, timedelta

from _common import emit, p50

from engine import Mnemo
from engine.agent import Agent
from engine.context.window import load_state
from engine.events import Event, TextStreamed
from engine.llm.local import LlamaModel
from engine.memory.recall import NewMessage

EARLIER = [
    "My name is Priya and I live in Porto.",
    "I am allergic to peanuts.",
    "My sister Ana works at the city council in Lisbon.",
    "I play the cello in an amateur orchestra on Thursdays.",
    "My cat is called Miso and she is nine years old.",
    "I am training for a half marathon in April.",
]
TURNS = [
    "Hi, how are you today?",
    "What am I allergic to?",
    "Can you suggest a snack for my run?",
    "Where does my sister work?",
    "Tell me something about Porto.",
    "What instrument do I play?",
    "When is my orchestra rehearsal?",
    "What is my cat called?",
    "How old is she?",
    "Give me a tip for marathon training.",
]


def history() -> list[NewMessage]:
    start = datetime.now() - timedelta(days=30)
    messages = []
    for number, text in enumerate(EARLIER):
        when = start + timedelta(minutes=2 * number)
        messages.append(NewMessage("user", text, created_at=when, conversation_id="earlier"))
        messages.append(
            NewMessage(
                "assistant",
                "Thanks, noted.",
                created_at=when + timedelta(seconds=30),
                conversation_id="earlier",
            )
        )
    return messages


def plain_run(model: LlamaModel, turns: list[str]) -> list[float]:
    with tempfile.TemporaryDirectory() as folder, Mnemo.open(folder) as mnemo:
        mnemo.recall.add_many(history())
        agent = Agent(mnemo, model, conversation_id="now")
        firsts = []
        for text in turns:
            began = time.perf_counter()  # as in the app: store, build, render, generate
            mnemo.recall.add("user", text, conversation_id="now")
            prompt, _ = agent.window.build(load_state(mnemo, "now"), assisted=True)
            step = model.step(prompt)
            generating = step.stats.total_s - step.stats.first_token_s
            firsts.append(time.perf_counter() - began - generating)
            mnemo.recall.add("assistant", step.text or "…", conversation_id="now")
        return firsts


def assisted_run(model: LlamaModel, turns: list[str]) -> tuple[list[float], list[bool]]:
    """Each turn's time to first token, and whether it recalled anything."""
    with tempfile.TemporaryDirectory() as folder, Mnemo.open(folder) as mnemo:
        mnemo.recall.add_many(history())
        mnemo.wait_for_background_work()
        mnemo.settings.set("agent.mode", "assisted")
        agent = Agent(mnemo, model, conversation_id="now")
        firsts: list[float] = []
        recalled: list[bool] = []
        for text in turns:
            began = time.perf_counter()
            first: list[float] = []

            def on_event(event: Event, began: float = began, first: list[float] = first) -> None:
                if isinstance(event, TextStreamed) and not first:
                    first.append(time.perf_counter() - began)

            agent.send(text, on_event=on_event)
            firsts.append(first[0] if first else float("nan"))
            rows = mnemo.recall.recent(12, "now")
            start = max(i for i, row in enumerate(rows) if row.role == "user")
            recalled.append(any(row.name == "recall" for row in rows[start:]))
        return firsts, recalled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    turns = [TURNS[i % len(TURNS)] for i in range(args.turns)]
    model = LlamaModel()
    model.max_step_tokens = 96  # short replies keep the run short; both runs alike
    plain: list[float] = []
    assisted: list[float] = []
    recalled: list[bool] = []
    for _round in range(args.rounds):  # alternated, so that drift on a shared machine is shared
        plain += plain_run(model, turns)
        firsts, flags = assisted_run(model, turns)
        assisted += firsts
        recalled += flags
    emit(
        {
            "benchmark": "assisted_latency",
            "turns": args.turns,
            "rounds": args.rounds,
            "turns_with_recall": sum(recalled),
            "plain_ttft_p50_s": round(p50(plain), 3),
            "assisted_ttft_p50_s": round(p50(assisted), 3),
            "ratio": round(p50(assisted) / p50(plain), 2),
            "recall_turns_ttft_p50_s": round(
                p50([t for t, flag in zip(assisted, recalled, strict=True) if flag]), 3
            ),
        }
    )


if __name__ == "__main__":
    main()
