"""Knowledge lookup at 10k entities and 100k relations: ``KnowledgeStore.facts`` latency.

Target (issue: knowledge memory): p50 <= 5 ms. Also the assisted mode's per-turn cost: finding the
entities a message names and reading their facts (``engine.agent.assisted_rules.facts_for``).
Entities and relations are written in bulk with the schema's own columns (adding 100k facts one by
one through the store would take minutes and not change lookup cost); lookups go through the store,
by name and by alias. Prints one JSON line.

    uv run python tests/benchmarks/knowledge_lookup.py [--entities 10000] [--relations 100000]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np
import sqlalchemy
from _common import TextGenerator, emit, p50

from engine import Mnemo
from engine.agent.assisted_rules import facts_for
from engine.memory.knowledge import name_key

PREDICATES = ["lives_in", "works_at", "likes", "knows", "visited", "owns", "member_of", "born_in"]


def load(m: Mnemo, entities: int, relations: int) -> list[str]:
    words = TextGenerator(seed=21)
    by_key: dict[str, str] = {}
    for _ in range(entities * 3):
        name = " ".join(words.sentences(1, 2, 3)).title()
        by_key.setdefault(name_key(name), name)
    by_key.pop("", None)
    names = list(by_key.values())[:entities]
    rng = np.random.default_rng(22)
    now = time.time()
    with m.database.begin() as connection:
        connection.execute(
            sqlalchemy.text(
                "INSERT INTO entity (id, name, key, kind, created_at) "
                "VALUES (:id, :name, :key, 'person', :now)"
            ),
            [{"id": i + 1, "name": n, "key": name_key(n), "now": now} for i, n in enumerate(names)],
        )
        connection.execute(
            sqlalchemy.text(
                "INSERT INTO entity_alias (key, alias, entity_id) VALUES (:key, :alias, :id)"
            ),
            [{"key": f"alias {i}", "alias": f"Alias {i}", "id": i + 1} for i in range(len(names))],
        )
        subjects = rng.integers(1, len(names) + 1, relations)
        objects = rng.integers(1, len(names) + 1, relations)
        connection.execute(
            sqlalchemy.text(
                "INSERT INTO relation (subject_id, predicate, object_id, learned_at, source_kind, "
                "asserted_by, status) VALUES (:s, :p, :o, :t, 'user', 'user', :status)"
            ),
            [
                {
                    "s": int(s),
                    "p": PREDICATES[i % len(PREDICATES)],
                    "o": int(o),
                    "t": now - i,
                    "status": "superseded" if i % 5 == 0 else "current",
                }
                for i, (s, o) in enumerate(zip(subjects, objects, strict=True))
            ],
        )
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--relations", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, Mnemo.open(folder) as m:
        started = time.perf_counter()
        names = load(m, args.entities, args.relations)
        load_s = time.perf_counter() - started
        rng = np.random.default_rng(23)
        picks = rng.integers(0, len(names), args.queries)
        by_name, by_alias, by_relation, counts, recalled = [], [], [], [], []
        for i in picks:
            start = time.perf_counter()
            page = m.knowledge.facts(names[i].lower())
            by_name.append((time.perf_counter() - start) * 1000)
            counts.append(page.total)
            start = time.perf_counter()
            m.knowledge.facts(f"alias {i}")
            by_alias.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            m.knowledge.facts(names[i], "lives in")
            by_relation.append((time.perf_counter() - start) * 1000)
            # What the assisted mode adds to every turn: the facts about whom a message names.
            message = f"Yesterday I had lunch with {names[i]} and we talked about the new job."
            start = time.perf_counter()
            facts_for(m, message, set())
            recalled.append((time.perf_counter() - start) * 1000)
    emit(
        {
            "benchmark": "knowledge_lookup",
            "entities": len(names),
            "relations": args.relations,
            "load_s": round(load_s, 1),
            "current_facts_per_entity_p50": float(np.median(counts)),
            "facts_by_name_p50_ms": p50(by_name),
            "facts_by_alias_p50_ms": p50(by_alias),
            "facts_of_one_relation_p50_ms": p50(by_relation),
            "recall_facts_for_a_message_p50_ms": p50(recalled),
            "target_p50_ms": 5,
        }
    )


if __name__ == "__main__":
    main()
