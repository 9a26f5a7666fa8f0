"""LoCoMo extraction quality: how many gold single-hop answers end up in knowledge memory's
current facts, when every turn of a conversation is read as Mnemo reads a user's message.

Each speaker's turns are read as the user's statements
(``engine.agent.assisted_rules.user_statements``, "I" being the speaker) in session order, with the
session's date as "today", and every extracted fact is stored as if the user approved each change
(a move supersedes the old home). Then, for each single-hop question (LoCoMo category 4), the
answer counts as contained when its words all occur in one current fact's sentence. A figure to
report, not a gate.

Two extractors, on the same turns:
- ``patterns``: what the assisted mode does (``engine.memory.extract.facts_in``; the bundled
  model does not choose among these, see ``Agent._memory_step``).
- ``model``: a grammar-constrained call per statement asking the model (``--model PATH``, the
  bundled one by default) for facts about the speaker, the relation chosen from the relations
  knowledge memory knows (or "none"), the value free text: roughly what a self-managed model's
  ``knowledge_add`` calls would store. Slow on the CPU: use ``--conversations 1``.

    uv run python tests/benchmarks/knowledge_extraction.py [--extractor patterns|model]
        [--model PATH] [--conversations 10] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import REPO, emit
from locomo_recall import session_date

from engine import Mnemo
from engine.agent import assisted_rules as assisted
from engine.llm.base import ChatMessage, Prompt, load_model_json
from engine.memory.extract import Candidate, facts_in
from engine.memory.knowledge import RELATIVES, SINGLE_VALUED

SINGLE_HOP = 4
RELATIONS = sorted({*SINGLE_VALUED, *RELATIVES, "likes", "hobby", "pet", "plans", "studies"})


def model_schema() -> dict[str, Any]:
    """One fact per statement (the local grammar takes flat objects), or relation "none"."""
    return {
        "type": "object",
        "properties": {
            "relation": {"type": "string", "enum": [*RELATIONS, "none"]},
            "value": {"type": "string", "minLength": 1, "maxLength": 60},
        },
        "required": ["relation", "value"],
        "additionalProperties": False,
    }


class ModelExtractor:
    def __init__(self, path: str | None) -> None:
        from engine.llm.local import LlamaModel

        self.model = LlamaModel(path, context_length=2048)
        self.schema = model_schema()

    def __call__(self, statement: str, speaker: str) -> list[Candidate]:
        prompt = Prompt(
            instructions="You extract lasting facts about a person from what they say.",
            functions=[],
            memory="",
            messages=[
                ChatMessage(
                    "user",
                    f'{speaker} said: "{statement}"\nList the lasting facts this states about '
                    f"{speaker} (home, work, family, birthday, likes), or none. Answer with "
                    'JSON: {"facts": [{"relation": ..., "value": ...}]}',
                )
            ],
            reply_schema=self.schema,
        )
        fact, problem = load_model_json(self.model.step(prompt).text)
        if problem or not isinstance(fact, dict) or fact.get("relation") in (None, "none"):
            return []
        value = str(fact.get("value", "")).strip()
        return [Candidate(speaker, fact["relation"], value)] if value else []


def words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.casefold()))


def run_conversation(sample: dict[str, Any], extract: Any) -> tuple[int, int, int, int]:
    """(statements read, facts stored, single-hop questions, answers contained)."""
    conversation = sample["conversation"]
    statements = stored = 0
    with tempfile.TemporaryDirectory() as folder, Mnemo.open(folder) as mnemo:
        number = 1
        while f"session_{number}" in conversation:
            today = session_date(conversation[f"session_{number}_date_time"]).date()
            for turn in conversation[f"session_{number}"]:
                speaker = turn["speaker"]
                for statement in assisted.user_statements(turn["text"]):
                    statements += 1
                    for fact in extract(statement, speaker, today):
                        try:
                            result = mnemo.knowledge.add(
                                fact.subject,
                                fact.predicate,
                                fact.object,
                                valid_from=fact.valid_from,
                                supersede=True,
                            )
                        except Exception:  # a value the store refuses (too long, no letters)
                            continue
                        stored += hasattr(result, "id")
            number += 1
        sentences = [
            words(fact.sentence())
            for entity, _count in mnemo.knowledge.entities(limit=10**6)
            for fact in mnemo.knowledge.facts(entity.name, limit=10**6)
        ]
    questions = [qa for qa in sample["qa"] if qa.get("category") == SINGLE_HOP]
    contained = sum(
        any(words(str(qa["answer"])) <= sentence for sentence in sentences) for qa in questions
    )
    return statements, stored, len(questions), contained


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--extractor", choices=("patterns", "model"), default="patterns")
    parser.add_argument("--model", help="a GGUF file for --extractor model (default: bundled)")
    args = parser.parse_args()
    samples = json.loads((args.data / "locomo" / "locomo10.json").read_text())
    if args.extractor == "model":
        model = ModelExtractor(args.model)

        def extract(statement: str, speaker: str, _today: Any) -> list[Candidate]:
            return model(statement, speaker)

        name = model.model.name
    else:

        def extract(statement: str, speaker: str, today: Any) -> list[Candidate]:
            return facts_in(statement, today, speaker=speaker)

        name = "patterns"
    started = time.perf_counter()
    totals = [0, 0, 0, 0]
    for sample in samples[: args.conversations]:
        for index, value in enumerate(run_conversation(sample, extract)):
            totals[index] += value
    statements, stored, questions, contained = totals
    emit(
        {
            "benchmark": "knowledge_extraction",
            "extractor": name,
            "conversations": min(args.conversations, len(samples)),
            "statements": statements,
            "facts_stored": stored,
            "single_hop_questions": questions,
            "answers_in_current_facts": contained,
            "answers_in_current_facts_pct": round(100 * contained / max(questions, 1), 1),
            "seconds": round(time.perf_counter() - started, 1),
        }
    )


if __name__ == "__main__":
    main()
