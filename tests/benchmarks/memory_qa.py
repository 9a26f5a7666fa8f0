"""Memory QA end to end: past conversations in recall, then the real agent answers questions.

Each LoCoMo conversation goes into a fresh profile's recall, stored as `locomo_recall.py` stores it
(session dates, the first speaker as the user). Then each sampled question (categories 1-4) is
asked in a new conversation, one turn through ``Agent.send``, in each memory mode:

- ``self``: the model pages its memory itself (function calls, MemGPT);
- ``assisted``: the engine recalls for the message, the model replies in plain text;
- ``ceiling``: the same model answering with the gold evidence turns pasted into its prompt, in
  the assisted section's format: what perfect retrieval would give this model.

Replies are scored against the gold answer with LoCoMo's token F1 and "gold answer contained",
overall and per category, and strictly (``contained_strict``): the gold answer contained in a
reply that ends and holds no frame of the recall note (``conversation.py``'s ``runaway`` and
``FRAME``): a reply that recites the note holds the answer without giving it. A question's own
conversation is deleted after it, so no question sees another's turns. One JSON line out.

    uv run python tests/benchmarks/memory_qa.py [--questions 200] [--model PATH.gguf |
        --model openai:NAME --base-url URL | --model anthropic:NAME] [--max-tokens 128]
        [--show] [--score-shown FILE]

``--show`` prints each question, its gold answer and the reply to stderr; ``--score-shown``
scores such a listing again without running anything (an older commit's run, say).

``--max-tokens`` caps each step's output (LoCoMo answers are a few words; the bundled model
otherwise writes until the cap of 768 tokens, which costs time and F1 alike).
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import re
import string
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from _common import REPO, emit, use_model
from conversation import FRAME, runaway
from locomo_recall import CATEGORIES, evidence_ids, load_conversation, session_date

from engine import Mnemo
from engine.agent import Agent
from engine.context.window import load_state
from engine.llm import ChatModel, load_model
from engine.llm.base import ChatMessage, Prompt
from engine.transcript import SECTION_HEAD, spoken_date

MODES = ("self", "assisted", "ceiling")


def normalize(text: str) -> list[str]:
    """LoCoMo's answer normalisation: lower case, no punctuation, no articles."""
    text = str(text).lower()
    text = "".join(char for char in text if char not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the|and)\b", " ", text)
    return text.split()


def f1(reply: str, gold: str) -> float:
    predicted, wanted = normalize(reply), normalize(gold)
    common = sum((Counter(predicted) & Counter(wanted)).values())
    if not common:
        return 0.0
    precision, recall = common / len(predicted), common / len(wanted)
    return 2 * precision * recall / (precision + recall)


def contained(reply: str, gold: str) -> float:
    wanted = " ".join(normalize(gold))
    return float(bool(wanted) and wanted in " ".join(normalize(reply)))


def strict(reply: str, gold: str) -> float:
    """Contained in a reply that gives it: no frame of the note, and one that ends."""
    return float(bool(contained(reply, gold)) and not FRAME.search(reply) and not runaway(reply))


def scored(reply: str, gold: str) -> tuple[float, float, float]:
    return f1(reply, gold), contained(reply, gold), strict(reply, gold)


def summary(per_category: dict[str, list[tuple[float, float, float]]]) -> dict[str, Any]:
    rows = [row for per in per_category.values() for row in per]
    return {
        "f1": round(100 * sum(r[0] for r in rows) / len(rows), 1),
        "contained": round(100 * sum(r[1] for r in rows) / len(rows), 1),
        "contained_strict": round(100 * sum(r[2] for r in rows) / len(rows), 1),
        "f1_by_category": {
            category: round(100 * sum(r[0] for r in per) / len(per), 1)
            for category, per in sorted(per_category.items())
        },
    }


def score_shown(path: Path, categories: dict[str, str]) -> dict[str, Any]:
    """The scores of a ``--show`` listing, per mode."""
    by_mode: dict[str, dict[str, list[tuple[float, float, float]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t", 3)
        if len(parts) == 4 and parts[0] in MODES:
            mode, question, gold, shown = parts
            reply = ast.literal_eval(shown)
            by_mode[mode][categories[question]].append(scored(reply, gold))
    return {mode: summary(per) for mode, per in by_mode.items()}


def evidence_text(sample: dict[str, Any], wanted: list[str]) -> str:
    """The gold evidence turns as the assisted section shows recalled messages."""
    conversation = sample["conversation"]
    lines = [SECTION_HEAD]
    number = 1
    while f"session_{number}" in conversation:
        date = session_date(conversation[f"session_{number}_date_time"])
        for turn in conversation[f"session_{number}"]:
            if turn["dia_id"] in wanted:
                lines.append(f"- {spoken_date(date)}, {turn['speaker']}: {turn['text']}")
        number += 1
    return "\n".join(lines)


def ask(mnemo: Mnemo, model: ChatModel, mode: str, question: str, evidence: str, key: str) -> str:
    """One question in a new conversation; the conversation is removed afterwards."""
    if mode == "ceiling":
        window = Agent(mnemo, model, conversation_id=key).window
        prompt, _ = window.build(load_state(mnemo, key), assisted=True)
        prompt = Prompt(
            instructions=prompt.instructions,
            functions=[],
            memory=prompt.memory,
            messages=[ChatMessage("user", f"{question}\n\n{evidence}")],
        )
        return model.step(prompt).text
    mnemo.settings.set("agent.mode", mode)
    try:
        reply = Agent(mnemo, model, conversation_id=key).send(question).reply or ""
    finally:
        for hit in mnemo.recall.recent(1000, key):
            mnemo.recall.delete(hit.id)
    return reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--questions", type=int, default=200, help="sampled, the same per mode")
    parser.add_argument("--model", default="", help="PATH.gguf, openai:NAME or anthropic:NAME")
    parser.add_argument("--base-url", default="")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument(
        "--seed", type=int, default=7, help="the local model's, for repeatable runs"
    )
    parser.add_argument("--show", action="store_true", help="each question, gold and reply")
    parser.add_argument("--score-shown", type=Path, help="score a --show listing, run nothing")
    args = parser.parse_args()
    samples = json.loads((args.data / "locomo" / "locomo10.json").read_text())
    eligible = [
        (index, qa)
        for index, sample in enumerate(samples)
        for qa in sample["qa"]
        if qa.get("category") in CATEGORIES and evidence_ids(qa.get("evidence", []))
    ]
    if args.score_shown:
        categories = {qa["question"]: CATEGORIES[qa["category"]] for _, qa in eligible}
        emit(
            {"benchmark": "memory_qa", "scored": str(args.score_shown)}
            | score_shown(args.score_shown, categories)
        )
        return
    chosen = sorted(
        random.Random(0).sample(range(len(eligible)), min(args.questions, len(eligible)))
    )
    modes = args.modes.split(",")
    scores: dict[str, dict[str, list[tuple[float, float, float]]]] = {
        m: defaultdict(list) for m in modes
    }
    seconds: dict[str, float] = defaultdict(float)
    model: ChatModel | None = None
    started = time.perf_counter()
    by_sample: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for position in chosen:
        index, qa = eligible[position]
        by_sample[index].append(qa)
    for index, questions in sorted(by_sample.items()):
        with tempfile.TemporaryDirectory() as folder, Mnemo.open(folder) as mnemo:
            use_model(mnemo.settings, args.model, args.base_url)
            mnemo.settings.set("model.seed", args.seed)
            if model is None:
                model = load_model(mnemo.settings)
                model.max_step_tokens = args.max_tokens
            load_conversation(mnemo, samples[index])
            mnemo.wait_for_background_work()
            for number, qa in enumerate(questions):
                evidence = evidence_text(samples[index], evidence_ids(qa["evidence"]))
                category = CATEGORIES[qa["category"]]
                for mode in modes:
                    began = time.perf_counter()
                    reply = ask(mnemo, model, mode, qa["question"], evidence, f"q{number}{mode}")
                    seconds[mode] += time.perf_counter() - began
                    gold = str(qa["answer"])
                    scores[mode][category].append(scored(reply, gold))
                    if args.show:
                        print(f"{mode}\t{qa['question']}\t{gold}\t{reply!r}", file=sys.stderr)
    result: dict[str, Any] = {
        "benchmark": "memory_qa",
        "model": model.name if model else "",
        "questions": len(chosen),
        "max_tokens": args.max_tokens,
    }
    for mode in modes:
        rows = [row for per in scores[mode].values() for row in per]
        result[mode] = summary(scores[mode]) | {
            "seconds_per_question": round(seconds[mode] / len(rows), 2)
        }
    if "self" in modes and "assisted" in modes:
        result["assisted_over_self_f1"] = round(
            result["assisted"]["f1"] / max(result["self"]["f1"], 0.1), 2
        )
    if "ceiling" in modes and "assisted" in modes:
        result["assisted_share_of_ceiling_f1"] = round(
            result["assisted"]["f1"] / max(result["ceiling"]["f1"], 0.1), 2
        )
    result["seconds"] = round(time.perf_counter() - started)
    emit(result)


if __name__ == "__main__":
    main()
