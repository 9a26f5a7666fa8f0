"""How well a reader of sentences gets what a person said: the relation, its value, and whether it
is said as a fact at all. The measure that picks the language layer's parser (issue 73).

``tests/data/language/clauses.json`` holds sentences read by hand into clauses (who, relation,
value and kind, stance), in two parts: ``tuned`` may shape the relation table, ``untold`` is
only run to report. A reader gets one sentence and returns the clauses it read. One JSON line
per part:

- ``facts_read``: clauses said as facts (statements, corrections) whose relation and value the
  reader got, of all such clauses;
- ``cut_short``: clauses whose value it got only in part ("Joaqu" for "Joaquín"): not read;
- ``false_facts``: sentences said as no fact (questions, requests, hypotheticals, negations)
  from which the reader kept a fact;
- ``ms_per_sentence``: the median time a sentence took.

Readers: ``rules``, the rules the product runs today (``engine.memory.extract.facts_in`` for the
facts, ``assisted_rules.lasting`` for whether a statement is kept at all).

    uv run python tests/benchmarks/language_reading.py [--reader rules] [--part tuned|untold|both]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from _common import emit  # noqa: E402

DATA = REPO / "tests" / "data" / "language" / "clauses.json"
TODAY = date(2026, 12, 7)
FACT_STANCES = {"statement", "correction"}
Read = tuple[str, str]  # (relation, value), casefolded
Reader = Callable[[str], list[Read]]


def rules_reader() -> Reader:
    """Today's rules: the facts ``facts_in`` reads, kept only where ``lasting`` says so."""
    from engine.agent.assisted_rules import lasting
    from engine.memory.extract import facts_in
    from engine.memory.knowledge import PETS, PREFERS, RELATIVES

    def relation_of(predicate: str) -> str:
        if predicate in PETS:
            return "pet"
        if predicate in RELATIVES:
            return "relative"
        return predicate

    def read(sentence: str) -> list[Read]:
        if not lasting(sentence):
            return []
        found = []
        for fact in facts_in(sentence, TODAY):
            value = fact.object.split(" over ")[0] if fact.predicate == PREFERS else fact.object
            found.append((relation_of(fact.predicate), value.casefold()))
        return found

    return read


READERS: dict[str, Callable[[], Reader]] = {"rules": rules_reader}


def score(reader: Reader, sentences: list[dict]) -> dict[str, float | int]:
    said = got = cut_short = false_facts = no_fact_sentences = 0
    times = []
    for item in sentences:
        started = time.perf_counter()
        found = reader(item["text"])
        times.append(time.perf_counter() - started)
        facts = [c for c in item["clauses"] if c["stance"] in FACT_STANCES and c["relation"]]
        if not facts:
            no_fact_sentences += 1
            false_facts += bool(found)
        for clause in facts:
            said += 1
            value = clause["value"].casefold()
            relation = clause["relation"]
            if (relation, value) in found:
                got += 1
            elif any(r == relation and v and value.startswith(v) for r, v in found):
                cut_short += 1
    return {
        "facts_read": round(got / max(1, said), 3),
        "facts": said,
        "cut_short": cut_short,
        "false_facts": false_facts,
        "no_fact_sentences": no_fact_sentences,
        "ms_per_sentence": round(statistics.median(times) * 1000, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reader", choices=sorted(READERS), default="rules")
    parser.add_argument("--part", choices=["tuned", "untold", "both"], default="both")
    args = parser.parse_args()
    data = json.loads(DATA.read_text(encoding="utf-8"))
    reader = READERS[args.reader]()
    for part in ["tuned", "untold"] if args.part == "both" else [args.part]:
        emit({"benchmark": "language_reading", "reader": args.reader, "part": part,
              **score(reader, data[part])})  # fmt: skip


if __name__ == "__main__":
    main()
