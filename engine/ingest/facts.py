"""Facts from a document, on the user's request ("extract facts from this file"), never from
every document: each becomes a proposal the user reviews, since a document is text the user did
not write (the trusted-write rule), and one that contradicts a current fact shows both."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path
from typing import Protocol

from engine.errors import InputError
from engine.loaders import load
from engine.memory.extract import facts_in
from engine.memory.knowledge import KnowledgeStore, name_key, predicate_key
from engine.memory.proposals import Proposal, ProposalStore
from engine.memory.recall import DEFAULT_CONVERSATION, RecallStore


class FactStores(Protocol):
    """What proposing a document's facts reads and writes (a ``Mnemo`` is one)."""

    knowledge: KnowledgeStore
    proposals: ProposalStore
    recall: RecallStore


MAX_PROPOSALS = 50  # per file: more would bury the proposal panel; the rest is said, not lost
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n{2,}")


def propose_facts_from(
    stores: FactStores, path: Path, conversation_id: str = DEFAULT_CONVERSATION
) -> tuple[list[Proposal], int]:
    """Propose the facts ``path`` states about people, places and things (in the third person:
    "Ana lives in Porto"). Returns the proposals and how many more facts were found than
    ``MAX_PROPOSALS`` allowed."""
    if not path.is_file():
        raise InputError(f"There is no file {path}.")
    today, knowledge = date.today(), stores.knowledge
    seen = {  # facts already proposed and waiting: extracting twice proposes nothing twice
        _key(p.label, p.payload["predicate"], p.new_content)
        for p in stores.proposals.pending()
        if p.kind == "fact"
    }
    proposals: list[Proposal] = []
    skipped = 0
    with stores.recall.transaction() as transaction:
        for section in load(path):
            for sentence in _SENTENCE.split(section.text):
                for candidate in facts_in(" ".join(sentence.split()), today, speaker=None):
                    key = _key(*candidate.triple)
                    if key in seen or knowledge.holds(*candidate.triple):
                        continue
                    seen.add(key)
                    if len(proposals) >= MAX_PROPOSALS:
                        skipped += 1
                        continue
                    predicate = predicate_key(candidate.predicate)
                    current = knowledge.contradicted(*candidate.triple)
                    where = f"{path.name}, {section.label}" if section.label else path.name
                    proposals.append(
                        stores.proposals.create_fact_in(
                            transaction.session,
                            conversation_id=conversation_id,
                            subject=candidate.subject,
                            predicate=predicate,
                            obj=candidate.object,
                            current=current,
                            valid_from=candidate.valid_from,
                            source_kind="document",
                            source_ref=where,
                            asserted_by="document",
                            untrusted_reason=f"taken from the document {path.name}",
                        )
                    )
    return proposals, skipped


def _key(subject: str, predicate: str, obj: str) -> tuple[str, str, str]:
    return name_key(subject), predicate_key(predicate), name_key(obj)
