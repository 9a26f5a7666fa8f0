"""How often does the local model pick a sensible memory function? One JSON line out.

Each prompt is a user message in a fresh conversation, sent through the prompt the app ships
(instructions, function list with examples, core memory); the model takes one grammar-constrained
step. "Sensible" means the function is one a careful assistant could choose for that message; the
call is also checked against the function's schema (valid must be 100%: the grammar promises it).

    uv run python tests/benchmarks/function_choice.py [--model PATH.gguf] [--context 4096]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from _common import emit

from engine import Mnemo
from engine.context.window import ContextWindow, load_state
from engine.functions import check_arguments
from engine.llm.local import LlamaModel

SAVE = {"core_memory_append", "archival_memory_insert"}
PROMPTS: list[tuple[str, set[str]]] = [
    ("hello", {"send_message"}),
    ("Thanks, that's all for today. Bye!", {"send_message"}),
    ("Tell me a joke.", {"send_message"}),
    ("What is the capital of France?", {"send_message"}),
    ("How are you today?", {"send_message"}),
    ("My name is Sam and I live in Lyon.", SAVE),
    ("Please remember that my sister's birthday is May 3.", SAVE),
    ("I'm allergic to peanuts, keep that in mind.", SAVE),
    ("Note this down: the wifi password is tulip42.", SAVE),
    ("Actually I moved from Lyon to Paris last month.", {"core_memory_replace", *SAVE}),
    (
        "What did I tell you about my car last week?",
        {"conversation_search", "conversation_search_date"},
    ),
    ("Remind me what we discussed about the trip to Rome.", {"conversation_search"}),
    ("What did we talk about on 2026-11-02?", {"conversation_search_date", "conversation_search"}),
    ("What do my notes say about the budget?", {"archival_memory_search"}),
    ("Find the document about my apartment lease.", {"archival_memory_search"}),
    ("Search my files for the recipe with lentils.", {"archival_memory_search"}),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a GGUF file (default: the bundled SmolLM2-135M)")
    parser.add_argument("--context", type=int, default=4096)
    args = parser.parse_args()

    model = LlamaModel(args.model, context_length=args.context)
    rows = []
    with tempfile.TemporaryDirectory() as folder, Mnemo.open(folder) as mnemo:
        functions = {f.name: f for f in ContextWindow(mnemo, model, "probe").functions()}
        for number, (text, sensible) in enumerate(PROMPTS):
            window = ContextWindow(mnemo, model, f"prompt-{number}")
            mnemo.recall.add("user", text, conversation_id=window.conversation_id)
            prompt, _ = window.build(load_state(mnemo, window.conversation_id))
            started = time.perf_counter()
            step = model.step(prompt)
            seconds = time.perf_counter() - started
            name = step.call.name if step.call else None
            valid = (
                step.call is not None
                and name in functions
                and check_arguments(functions[name], step.call.arguments) is None
            )
            rows.append(
                {
                    "prompt": text,
                    "function": name,
                    "valid": valid,
                    "sensible": name in sensible,
                    "seconds": round(seconds, 2),
                }
            )
    emit(
        {
            "benchmark": "function_choice",
            "model": model.name,
            "prompts": len(rows),
            "valid_calls": sum(row["valid"] for row in rows),
            "sensible": sum(row["sensible"] for row in rows),
            "sensible_rate": round(sum(row["sensible"] for row in rows) / len(rows), 3),
            "by_kind": {
                kind: f"{sum(r['sensible'] for r in rows if r['prompt'] in group)}/{len(group)}"
                for kind, group in _groups().items()
            },
            "step_s_p50": round(statistics.median(row["seconds"] for row in rows), 2),
            "choices": {row["prompt"][:40]: row["function"] for row in rows},
        }
    )


def _groups() -> dict[str, set[str]]:
    groups: dict[str, set[str]] = {
        "reply": set(),
        "save": set(),
        "recall": set(),
        "archival": set(),
    }
    for text, sensible in PROMPTS:
        if sensible == {"send_message"}:
            groups["reply"].add(text)
        elif "archival_memory_search" in sensible:
            groups["archival"].add(text)
        elif sensible & {"conversation_search", "conversation_search_date"}:
            groups["recall"].add(text)
        else:
            groups["save"].add(text)
    return groups


if __name__ == "__main__":
    main()
