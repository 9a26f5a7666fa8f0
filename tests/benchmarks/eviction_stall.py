"""How long a user waits when the context window fills: eviction after the reply vs in the turn.

The bundled model in the assisted mode (4,096-token window) gets long messages until the window
has been folded into the summary at least twice. Each turn is timed from ``Agent.send`` to the
first streamed piece of the reply (what the user waits for). Two runs in the same process:

- ``ahead`` (the app): once the window passes the pressure line, the oldest half is folded after
  the reply and the shortened prompt is evaluated then, while the user reads;
- ``in_turn`` (before): the same conversation with that step switched off, so eviction happens
  when a prompt no longer fits, inside the next turn.

For each: the median wait of turns without eviction, the longest wait of a turn after (or with)
an eviction, and the extra wait; target: at most 5 s more than a turn without eviction.

    uv run python tests/benchmarks/eviction_stall.py [--turns 18]
"""

from __future__ import annotations

import argparse
import tempfile
import time

from _common import emit, p50

from engine import Mnemo
from engine.agent import Agent
from engine.events import ContextEvicted, Event, MessageSent, TextStreamed
from engine.llm.local import LlamaModel

TOPICS = ["garden", "bicycle", "kitchen", "violin", "holiday", "office", "library", "harbour"]


def message(number: int) -> str:
    topic = TOPICS[number % len(TOPICS)]
    return (
        f"Let me tell you about my {topic}, note {number}. "
        + f"The {topic} has many details I want you to keep in mind, such as colours, places, "
        "names and small plans for the coming weeks, and I will ask about them later. " * 4
    )


def run(model: LlamaModel, turns: int, ahead: bool) -> dict[str, float]:
    waits, after_eviction, post_reply = [], [], []
    with tempfile.TemporaryDirectory() as folder, Mnemo.open(folder) as mnemo:
        mnemo.settings.set("agent.mode", "assisted")
        agent = Agent(mnemo, model)
        if not ahead:
            agent.assisted._evict_ahead = lambda state, emit, cancel: False  # type: ignore[method-assign]
        evicted_before = False
        for number in range(turns):
            began = time.perf_counter()
            marks: dict[str, float] = {}

            def on_event(event: Event, began: float = began, marks: dict = marks) -> None:
                now = time.perf_counter() - began
                if isinstance(event, TextStreamed):
                    marks.setdefault("first", now)
                elif isinstance(event, MessageSent):
                    marks["reply"] = now
                elif isinstance(event, ContextEvicted):
                    marks.setdefault("evicted", now)

            agent.send(message(number), on_event=on_event)
            ended = time.perf_counter() - began
            wait = marks.get("first", ended)
            evicted_in_turn = "evicted" in marks and marks["evicted"] < marks.get("reply", ended)
            if evicted_before or evicted_in_turn:
                after_eviction.append(wait)
            else:
                waits.append(wait)
            evicted_before = "evicted" in marks and not evicted_in_turn
            if evicted_before:
                post_reply.append(ended - marks["reply"])
    typical = p50(waits)
    worst = max(after_eviction) if after_eviction else float("nan")
    return {
        "evictions": len(after_eviction),
        "wait_p50_s": round(typical, 2),
        "wait_after_eviction_max_s": round(worst, 2),
        "extra_wait_s": round(worst - typical, 2),
        "after_reply_s": round(max(post_reply), 2) if post_reply else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=18)
    args = parser.parse_args()
    model = LlamaModel(context_length=4096)
    model.max_step_tokens = 96  # short replies keep the run short; both runs alike
    in_turn = run(model, args.turns, ahead=False)
    ahead = run(model, args.turns, ahead=True)
    emit({"benchmark": "eviction_stall", "turns": args.turns, "ahead": ahead, "in_turn": in_turn})


if __name__ == "__main__":
    main()
