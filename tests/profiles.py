"""Random profiles, as a person's use leaves them, and what an archive of one must carry.

``fill_randomly`` writes through the stores' own calls, as the app does: several titled
conversations, deleted messages, notes and document passages with tags and expiries, core
edits and new blocks, fact chains superseded and retracted, merged people, expiring facts,
proposals of every kind (core, fact, passage, block) pending, approved and rejected, an
indexed document and a watched folder. ``restored_differences`` and ``merged_differences``
say, table by table, what an import into an empty profile, or into one in use, failed to
carry; both empty means nothing was lost. The pytest slice (tests/test_exchange.py) and the
benchmark (tests/benchmarks/round_trip.py) share them.
"""

from __future__ import annotations

import contextlib
import json
import random
from pathlib import Path
from typing import Any

from sqlalchemy import text

from engine import Mnemo
from engine.errors import MnemoError
from engine.exchange.archive import OFFERED, TABLES, message_key
from engine.ingest.ingestor import Ingestor
from engine.ingest.watch import WatchedFolders
from engine.memory.archival import IMPORTED_TAG
from engine.memory.recall.messages import NewMessage

PEOPLE = ["Ana", "Ben", "Chloe", "Dev", "Ewa", "Farid", "Gus", "Hana"]
PLACES = ["Porto", "Lyon", "Madrid", "Lisbon", "Oslo", "Kyoto", "Quito"]
TOPICS = ["the garden shed", "the boiler", "a trip to Rome", "the new bike", "tax forms"]
DAY = 86_400.0
START = 1_700_000_000.0  # Nov 2023: every profile's times are its own, and reproducible


def fill_randomly(m: Mnemo, rng: random.Random, files: Path) -> None:
    """A profile as weeks of use might leave it (see the module's docstring)."""
    clock = [START + rng.random() * DAY]

    def tick() -> float:
        clock[0] += rng.random() * DAY / 4
        return clock[0]

    _conversations(m, rng, tick)
    _passages(m, rng, tick)
    _core(m, rng)
    _knowledge(m, rng)
    _proposals(m, rng)
    if rng.random() < 0.5:
        files.mkdir(parents=True, exist_ok=True)
        document = files / f"notes-{rng.randrange(10**6)}.md"
        document.write_text(f"# {rng.choice(TOPICS)}\n\nThe code is {rng.randrange(10**4)}.\n")
        Ingestor(m).ingest_file(document)
    if rng.random() < 0.5:
        files.mkdir(parents=True, exist_ok=True)
        WatchedFolders(m).add(str(files))
    if rng.random() < 0.5:
        m.settings.set("agent.step_limit", rng.randrange(2, 20))
    m.wait_for_background_work()


def _conversations(m: Mnemo, rng: random.Random, tick: Any) -> None:
    conversations = ["default"]
    for _ in range(rng.randrange(0, 3)):
        conversation = f"c-{rng.randrange(16**8):08x}"
        conversations.append(conversation)
        m.conversations.rename(conversation, f"About {rng.choice(TOPICS)}")
    messages = []
    for _ in range(rng.randrange(2, 30)):
        role = rng.choice(["user", "user", "assistant"])
        said = f"{rng.choice(PEOPLE)} and {rng.choice(TOPICS)}, note {rng.randrange(10**6)}."
        messages.append(NewMessage(role, said, tick(), rng.choice(conversations)))
    ids = m.recall.add_many(messages)
    for message_id in rng.sample(ids, k=rng.randrange(0, min(3, len(ids)) + 1)):
        m.recall.delete(message_id)


def _passages(m: Mnemo, rng: random.Random, tick: Any) -> None:
    ids = [
        m.archival.insert(
            f"{rng.choice(PEOPLE)} keeps {rng.choice(TOPICS)} notes, "
            f"number {rng.randrange(10**6)}.",
            tags=rng.sample(["home", "work", "family", "ideas"], k=rng.randrange(0, 3)),
            created_at=tick(),
            origin=rng.choice(["user", "user", "model"]),
        )
        for _ in range(rng.randrange(0, 6))
    ]
    for passage_id in ids:
        roll = rng.random()
        if roll < 0.2:
            m.archival.update(passage_id, text=f"Corrected: note {rng.randrange(10**6)}.")
        elif roll < 0.35:
            m.archival.delete(passage_id)
        elif roll < 0.5:
            m.archival.set_expiry(passage_id, START + 400 * DAY)


def _core(m: Mnemo, rng: random.Random) -> None:
    for _ in range(rng.randrange(0, 4)):
        label = rng.choice(["human", "persona"])
        line = f"Likes {rng.choice(TOPICS)} ({rng.randrange(100)})."
        if rng.random() < 0.5:
            m.core.append(label, line)
        else:
            m.core.set(label, line)
    if rng.random() < 0.3:
        m.core.add_block(
            f"projects_{rng.randrange(100)}",
            f"Working on {rng.choice(TOPICS)}.",
            description="What the person is working on.",
            char_limit=rng.choice([1000, 4000]),
        )
    if rng.random() < 0.2 and len(m.core.history("human")) > 1:
        m.core.undo("human")


def _knowledge(m: Mnemo, rng: random.Random) -> None:
    people = rng.sample(PEOPLE, k=rng.randrange(1, 5))
    for person in people:
        for place in rng.sample(PLACES, k=rng.randrange(1, 4)):  # moves: a chain superseded
            m.knowledge.add(person, "lives_in", place, supersede=True)
        if rng.random() < 0.5:
            m.knowledge.add(person, "birthday", f"{rng.randrange(1, 28)} May")
        if rng.random() < 0.4:
            m.knowledge.add(person, "likes", rng.choice(TOPICS), literal=True)
    facts = [fact for person in people for fact in m.knowledge.history(person)]
    for fact in rng.sample(facts, k=min(len(facts), rng.randrange(0, 3))):
        roll = rng.random()
        if fact.status != "current":
            continue
        if roll < 0.4:
            m.knowledge.retract(fact.id)
        elif roll < 0.8:
            m.knowledge.set_expiry(fact.id, START + rng.randrange(100, 900) * DAY)
    if len(people) >= 2 and rng.random() < 0.4:
        m.knowledge.add(people[1] + " Senior", "likes", "jazz", literal=True)
        m.knowledge.merge(people[1], people[1] + " Senior")
    if rng.random() < 0.4:
        m.knowledge.add_alias(people[0], people[0] + "zinha")


def _proposals(m: Mnemo, rng: random.Random) -> None:
    made = []
    with m.recall.transaction() as transaction:
        session = transaction.session
        for _ in range(rng.randrange(0, 4)):
            kind = rng.choice(["core", "fact", "passage", "block"])
            if kind == "core":
                made.append(
                    m.proposals.create_in(
                        session,
                        conversation_id="default",
                        label="human",
                        action="append",
                        new_content=f"Drinks tea ({rng.randrange(99)}).",
                    )
                )
            elif kind == "fact":
                person, place = rng.choice(PEOPLE), rng.choice(PLACES)
                current = m.knowledge.contradicted(person, "lives_in", place)
                made.append(
                    m.proposals.create_fact_in(
                        session,
                        conversation_id="default",
                        subject=person,
                        predicate="lives_in",
                        obj=place,
                        current=current,
                        untrusted_reason="read in a document",
                    )
                )
            elif kind == "passage":
                passages = m.archival.recent(5)
                if passages:
                    passage = rng.choice(passages)
                    made.append(
                        m.proposals.create_passage_in(
                            session,
                            conversation_id="default",
                            passage_id=passage.id,
                            old_text=passage.text,
                            new_text=f"Put right: note {rng.randrange(10**6)}.",
                            cause_ref=None,
                            untrusted_reason="a web page",
                        )
                    )
            else:
                made.append(
                    m.proposals.create_block_in(
                        session,
                        label=f"imported_{rng.randrange(10**4)}",
                        value="Brought in from a file.",
                        description="From an import.",
                        char_limit=2000,
                        read_only=False,
                        untrusted_reason="from a file",
                    )
                )
    for proposal in made:
        roll = rng.random()
        if roll < 0.35:
            # One that can no longer apply (its text was edited since) stays pending.
            with contextlib.suppress(MnemoError):
                m.proposals.approve(proposal.id)
        elif roll < 0.6:
            m.proposals.reject(proposal.id)


# -- what an archive must carry ------------------------------------------------------------------

# Columns an import sets on purpose: a row read from a file is untrusted whatever it says, and
# its keyword and vector state is made anew.
MESSAGE_COLUMNS = ("id", "conversation_id", "role", "name", "text", "created_at")


def rows(m: Mnemo, table: str) -> list[dict[str, Any]]:
    with m.database.connect() as connection:
        return [dict(row._mapping) for row in connection.execute(text(f"SELECT * FROM {table}"))]


def passages(m: Mnemo) -> dict[str, dict[str, Any]]:
    """Every passage by id, as memory holds it (the import's own tag aside)."""
    found = {}
    for row in m.archival.rows_for_export():
        row.pop("vector", None)
        row["tags"] = [tag for tag in row["tags"] or [] if tag != IMPORTED_TAG]
        for volatile in ("embedder", "dim"):
            row.pop(volatile, None)
        found[row["id"]] = row
    return found


def _sorted(items: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(item, sort_keys=True, default=str) for item in items)


def restored_differences(old: Mnemo, new: Mnemo) -> list[str]:
    """What an import into an empty profile did not restore exactly, table by table. Settings
    and watched folders are configuration: they must be offered, not applied."""
    differences = []
    for table in TABLES:
        if table in OFFERED:
            continue
        before, after = _sorted(rows(old, table)), _sorted(rows(new, table))
        if before != after:
            missing = sorted(set(before) - set(after))[:2]
            extra = sorted(set(after) - set(before))[:2]
            differences.append(f"{table}: missing {missing}, extra {extra}")
    before_messages = _sorted(
        [{c: row[c] for c in MESSAGE_COLUMNS} for row in rows(old, "message")]
    )
    after_rows = rows(new, "message")
    if before_messages != _sorted([{c: row[c] for c in MESSAGE_COLUMNS} for row in after_rows]):
        differences.append("message: the messages differ")
    if any(not row["untrusted_reason"] for row in after_rows):
        differences.append("message: an imported message is not marked as read from a file")
    if passages(old) != passages(new):
        differences.append("passages: they differ")
    return differences


def merged_differences(archived: Mnemo, before: dict[str, Any], merged: Mnemo) -> list[str]:
    """What an import into a profile in use lost or overwrote. ``before`` is ``contents`` of
    that profile before the import. Nothing of its own may change; every message, passage,
    conversation title, document, person, other name and fact of the archive must be there,
    a core block that differs and a fact that contradicts one as a proposal waiting."""
    differences = []
    after = contents(merged)
    for what in ("messages", "passages", "titles", "documents", "facts", "names"):
        lost = before[what] - after[what]
        if lost:
            differences.append(f"{what} of the profile in use were lost: {sorted(lost)[:2]}")
    archive = contents(archived)
    pending = {
        (p.kind, p.label, p.new_content) for p in merged.proposals.pending() if p.kind != "passage"
    }
    for what in ("messages", "passages", "titles", "documents", "names"):
        lost = archive[what] - after[what]
        if lost:
            differences.append(f"{what} of the archive were not imported: {sorted(lost)[:2]}")
    for fact in archive["facts"] - after["facts"]:
        subject, predicate, obj, status, _expires = fact
        proposed = ("fact", subject, obj) in pending
        if status == "current" and proposed:
            continue  # contradicts a fact of the profile in use: the person decides
        if status == "current" and any(f[:4] == fact[:4] for f in before["facts"]):
            continue  # held already: the profile's own (and its expiry) stays as it was
        differences.append(f"a fact of the archive was not imported: {fact}")
    for label, value in archive["blocks"].items():
        if after["blocks"].get(label, before["blocks"].get(label)) == value:
            continue
        if label in before["blocks"] and ("core", label, value) in pending:
            continue
        if label not in before["blocks"] and ("block", label, value) in pending:
            continue
        differences.append(f"the core block {label} is neither there nor proposed")
    for label, value in before["blocks"].items():
        if after["blocks"].get(label) != value:
            differences.append(f"the core block {label} of the profile in use was changed")
    return differences


def contents(m: Mnemo) -> dict[str, Any]:
    """A profile's memory by what it says, not by ids (ids differ between two profiles)."""
    entities = {row["id"]: row for row in rows(m, "entity")}

    def name(entity_id: int | None) -> str | None:
        seen = set()
        while entity_id is not None and entity_id not in seen:  # merged: its final entity
            seen.add(entity_id)
            row = entities[entity_id]
            if row["merged_into"] is None:
                return str(row["name"])
            entity_id = row["merged_into"]
        return None

    facts = {
        (
            name(row["subject_id"]),
            row["predicate"],
            name(row["object_id"]) if row["object_id"] is not None else row["value"],
            row["status"],
            row["expires_at"],
        )
        for row in rows(m, "relation")
    }
    names = {(row["alias"], name(row["entity_id"])) for row in rows(m, "entity_alias")}
    names |= {(row["name"], name(row["id"])) for row in entities.values()}
    return {
        "messages": {message_key(row) for row in rows(m, "message")},
        "passages": {
            (p["id"], p["text"], p["expires_at"], tuple(p["tags"])) for p in passages(m).values()
        },
        "titles": {(row["id"], row["title"]) for row in rows(m, "conversation")},
        "documents": {(row["path"], row["content_hash"]) for row in rows(m, "document")},
        "facts": facts,
        "names": names,
        "blocks": {row["label"]: row["value"] for row in rows(m, "core_block")},
    }


__all__ = [
    "contents",
    "fill_randomly",
    "merged_differences",
    "restored_differences",
]
