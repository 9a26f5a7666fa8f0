"""Tidying: memory after months of use put in order, where the person can see it.

Keeping by rule (``keeping.py``) stores every lasting statement as it comes. After months the
same fact is noted in several wordings, a note still says where the person lived before they
moved, a waiting proposal names a value that has changed since, and the human block holds lines
that were true once. The tidy pass finds these by the same rules that kept them, and proposes
each change; nothing changes until the person approves it (``ProposalStore``, kind ``tidy``):

- **duplicates**: notes of the person's words that name the same things of their life (a
  value of their facts), or state the same facts (``facts_in``), or say the same words
  (``duplicate_key``), are merged into the oldest, which keeps the day it was first said; the
  merged notes' messages stay in recall; a note of a change or a loss is never merged away;
- **history**: a note of a value that a later fact replaced ("I live in Porto" after the move
  to Krakow) is kept as history (``REPLACED_TAG``), as a note is that a statement replaces;
- **musings**: a note or fact kept from a musing or question ("if I ever moved to Berlin") is
  removed;
- **the human block**: rebuilt short and current, a line for each current fact and then the
  lines that say more, none twice (``tidy_block``): one edit, shown as a diff.

Waiting proposals that a later fact made stale are taken back (``withdraw_in``), and waiting
facts that the person has said again since join the batch: those are the facts that later
statements contradict. The batch is one reviewable unit ("Mnemo tidied your memory: …"); each
approved change can be undone (``ProposalStore.undo``) and keeps its history.
"""

from __future__ import annotations

import functools
import os
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine import clock
from engine.agent import assisted_rules as assisted
from engine.agent.timeline import names
from engine.errors import NotFoundError
from engine.memory.archival import Passage, duplicate_key
from engine.memory.core import EMPTY_TEXTS
from engine.memory.extract import facts_in
from engine.memory.knowledge import (
    RELATIVES,
    USER,
    Fact,
    contradicts,
    fact_values,
    name_key,
    said_to_person,
)
from engine.memory.proposals import Proposal
from engine.memory.recall.messages import DEFAULT_CONVERSATION
from engine.memory.search import same_word
from engine.resources import resource_path

if TYPE_CHECKING:
    from engine.mnemo import Mnemo

NOTES_READ = 10_000  # the person's notes a pass reads at most (months of use hold hundreds)
PROPOSALS_READ = 2_000  # the latest proposals read for the block lines the person rejected


@functools.cache
def _safety_words() -> tuple[str, ...]:
    lines = resource_path("language/safety.txt").read_text("utf-8").splitlines()
    return tuple(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def details(text: str) -> frozenset[str]:
    """The details of a note or line that must never be lost by tidying: its numbers ("8am",
    "2") and its words of health, allergies, medication and care (``language/safety.txt``)."""
    words = [word.lower() for word in re.findall(r"\w+", text)]
    return frozenset(
        word for word in words if any(char.isdigit() for char in word) or _of_safety(word)
    )


def _of_safety(word: str) -> bool:
    """A word of ``language/safety.txt``, or one that starts as it does ("allergies" for
    "allergic": their first five letters, or the whole of a shorter one, "vets" for "vet")."""
    return any(
        len(os.path.commonprefix((word, safe))) >= min(len(safe), 5) for safe in _safety_words()
    )


def says_more(text: str, than: str) -> bool:
    """Whether ``text`` holds a detail (``details``) that ``than`` does not."""
    theirs = details(than)
    return any(not any(same_word(mine, other) for other in theirs) for mine in details(text))


@dataclass
class Tidying:
    """What a tidy pass would change, read and not yet proposed (``plan``)."""

    merges: list[tuple[Passage, list[Passage]]] = field(default_factory=list)  # kept, merged
    history: list[tuple[Passage, str]] = field(default_factory=list)  # note, what holds now
    musings: list[Passage] = field(default_factory=list)
    musing_facts: list[Fact] = field(default_factory=list)
    stale: list[Proposal] = field(default_factory=list)  # waiting, and made wrong since
    restated: list[Proposal] = field(default_factory=list)  # waiting facts said again since
    human: tuple[str, str] | None = None  # the block now, and as proposed

    def __bool__(self) -> bool:
        return bool(
            self.merges
            or self.history
            or self.musings
            or self.musing_facts
            or self.stale
            or self.restated
            or self.human
        )

    def summary(self, lead: str = "Mnemo tidied your memory") -> str:
        """ "Mnemo tidied your memory: 12 duplicate notes merged, 3 facts updated, 1 musing
        removed" (``lead``: what comes before the colon)."""
        if not self:
            return "Your memory is tidy: nothing to merge, update or remove."
        return summary_of(
            lead=lead,
            merged=sum(len(gone) for _kept, gone in self.merges),
            updated=len(self.restated),
            history=len(self.history),
            musings=len(self.musings) + len(self.musing_facts),
            stale=len(self.stale),
            human=self.human is not None,
        )


def summary_of(
    *,
    merged: int,
    updated: int,
    history: int,
    musings: int,
    stale: int = 0,
    human: bool,
    lead: str = "Mnemo tidied your memory",
) -> str:
    parts = [
        _count(merged, "duplicate note", "merged"),
        _count(updated, "fact", "updated"),
        _count(history, "outdated note", "kept as history"),
        _count(musings, "musing", "removed"),
        _count(stale, "waiting change", "taken back"),
        "the human block brought up to date" if human else "",
    ]
    return f"{lead}: " + ", ".join(p for p in parts if p) + "."


def batch_summary(proposals: Iterable[Proposal]) -> str:
    """What a batch's proposals change, in one sentence (the window's heading of the batch)."""
    changes = [p.change or p.kind for p in proposals]
    return summary_of(
        merged=changes.count("merge"),
        updated=changes.count("fact"),
        history=changes.count("history"),
        musings=changes.count("musing") + changes.count("retract"),
        human="core" in changes,
    )


def _count(n: int, noun: str, done: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)} {done}" if n else ""


def notes(mnemo: Mnemo, with_history: bool = False) -> list[Passage]:
    """The person's own words kept as notes, oldest first: current ones, and with
    ``with_history`` those a later statement replaced too."""
    kept = [
        note
        for note in mnemo.archival.recent(NOTES_READ, origin="user")
        if assisted.NOTE_TAG in note.tags and (with_history or not _is_history(note))
    ]
    return sorted(kept, key=lambda note: note.created_at)


def said(note: Passage) -> str:
    return assisted.own_words(note.text) or note.text


def stated(note: Passage) -> frozenset[tuple[str, str, str]]:
    """The facts a note states, as compared: subject, relation, value."""
    found = facts_in(said(note), note.created_at.astimezone().date())
    return frozenset((name_key(c.subject), c.predicate, name_key(c.object)) for c in found)


def plan(mnemo: Mnemo) -> Tidying:
    """What tidying would change now; reads only."""
    tidying = Tidying()
    kept = notes(mnemo, with_history=True)
    facts = _user_history(mnemo)
    current = [fact for fact in facts if fact.status == "current"]
    tidying.musings = [note for note in kept if not assisted.lasting(said(note))]
    musing_ids = {note.id for note in tidying.musings}
    lasting = [note for note in kept if note.id not in musing_ids]
    replaced = {
        note.id: because
        for note in lasting
        if not _is_history(note) and (because := _replaced_by(note, current, facts))
    }
    tidying.history = [(note, replaced[note.id]) for note in lasting if note.id in replaced]
    tidying.merges = _duplicates(lasting, {*replaced, *_history_ids(lasting)}, facts)
    merged = {note.id for _kept, gone in tidying.merges for note in gone}
    # A note merged away is not also kept as history: approved after the merge, it had no note.
    tidying.history = [(note, now) for note, now in tidying.history if note.id not in merged]
    tidying.musing_facts = _facts_from_musings(mnemo, current)
    tidying.stale, tidying.restated = _waiting(mnemo, current)
    rejected = [
        proposal
        for proposal in mnemo.proposals.all(PROPOSALS_READ)
        if proposal.status == "rejected" and not proposal.withdrawn
    ]
    _without_turned_down(tidying, rejected)
    human = mnemo.core.get("human")
    rejected_human = [proposal for proposal in rejected if proposal.label == "human"]
    tidied = tidy_block(human, facts, _rejected_lines(rejected_human))
    turned_down = any(
        (p.old_content, p.new_content) == (human, tidied)
        for p in rejected_human
        if p.cause_kind == "tidy"
    )
    if tidied != human and not turned_down:  # the same change, rejected: not again
        tidying.human = (human, tidied)
    return tidying


def _without_turned_down(tidying: Tidying, rejected: list[Proposal]) -> None:
    """Leave out of the plan each change the person rejected in an earlier batch: the same
    note merged into the same note, kept as history, or removed; the same fact retracted."""
    turned_down = {
        (p.payload.get("change"), p.label, p.payload.get("into"))
        for p in rejected
        if p.kind == "tidy"
    }
    tidying.merges = [
        (kept, gone)
        for kept, merged in tidying.merges
        if (gone := [n for n in merged if ("merge", n.id, kept.id) not in turned_down])
    ]
    tidying.history = [
        (note, now)
        for note, now in tidying.history
        if ("history", note.id, None) not in turned_down
    ]
    tidying.musings = [n for n in tidying.musings if ("musing", n.id, None) not in turned_down]
    tidying.musing_facts = [
        fact for fact in tidying.musing_facts if ("retract", str(fact.id), None) not in turned_down
    ]


def _rejected_lines(rejected: list[Proposal]) -> frozenset[str]:
    """The lines the person turned down for the human block: those each rejected proposal
    would have added."""
    lines: set[str] = set()
    for proposal in rejected:
        before = set((proposal.old_content or "").splitlines())
        lines.update(line for line in proposal.new_content.splitlines() if line not in before)
    return frozenset(lines)


def _is_history(note: Passage) -> bool:
    return assisted.REPLACED_TAG in note.tags


def _history_ids(kept: list[Passage]) -> set[str]:
    return {note.id for note in kept if _is_history(note)}


def _user_history(mnemo: Mnemo) -> list[Fact]:
    try:
        return mnemo.knowledge.history(USER)
    except NotFoundError:  # no facts about the person yet
        return []


def _replaced_by(note: Passage, current: list[Fact], facts: list[Fact]) -> str | None:
    """What holds now in place of what the note says, said to the person: the current fact,
    learned after the note, that contradicts a fact the note states ("you live in Krakow" for
    "I live in Porto"), or the end of what it names ("Tofu is no longer with you" for "Walking
    Tofu is the best part of my day"). None when the note is still true."""
    for subject, predicate, value in stated(note):
        for fact in current:
            if (
                fact.predicate == predicate
                and name_key(fact.subject) == subject
                and contradicts(predicate, value, fact.object)
                and fact.learned_at > note.created_at
            ):
                return said_to_person(fact.sentence())
    words = said(note)
    if assisted.ended_names(words):
        return None  # the loss itself is no history: it is what ended it
    named = [f for f in facts if any(names(words, v) for v in fact_values(f.predicate, f.object))]
    gone = [
        f
        for f in named
        if f.status == "ended"
        and f.predicate in RELATIVES  # a pet or person: the end has no fact of its own
        and f.valid_to is not None
        and f.valid_to > note.created_at
    ]
    if gone and all(f.status != "current" for f in named):
        return f"{gone[0].object} is no longer with you"
    return None


def topics(facts: Iterable[Fact]) -> dict[str, str]:
    """What each thing the person's facts name is about: the thing itself ("Olive",
    "Tailspin"), or for a side of a taste the pair ("cats" and "dogs" are both "cats|dogs"),
    so that "Dogs is my thing, not cats" and "I've gone off cats" are about one taste."""
    about: dict[str, str] = {}
    for fact in facts:
        values = [name_key(v) for v in fact_values(fact.predicate, fact.object)]
        topic = "|".join(sorted(values))
        for value in values:  # "dogs" alone is about "cats|dogs" once the pair is known
            about[value] = max(about.get(value, topic), topic, key=len)
    return about


def _duplicates(
    kept: list[Passage], history: set[str], facts: list[Fact]
) -> list[tuple[Passage, list[Passage]]]:
    """Notes that say the same lasting fact: they name the same things of the person's life
    that their facts hold (``topics``: "Olive", "Tailspin", a taste) and no other name
    ("Walking Olive is the best part of my day" and "My cat Olive woke me up"); or, naming
    none, they state the same facts, or say the same words. History (the ids in ``history``)
    merges with history only. A note that tells of a change or a loss ("We lost Tofu today",
    "I've just moved to Aarhus") is a point of the timeline: it is not merged away unless it
    states just what the first point did ("Home for me is Aarhus these days" after the move),
    and the group's others merge into the first such note; else into the oldest, which holds
    the day the fact was first said. A note that names part of what another names ("being an
    architect is busy", "I'm an architect at Adatum") joins that note's group, whose note
    naming it all is the one kept."""
    about = topics(facts)
    groups: dict[tuple[bool, object], list[Passage]] = {}
    note_keys: dict[str, object] = {}
    for note in kept:
        words = said(note)
        named = assisted.names_held(words) | {value for value in about if names(words, value)}
        key: object = (
            frozenset(about[v] for v in named)
            if named and named <= about.keys()
            else stated(note) or duplicate_key(words)
        )
        if key:
            note_keys[note.id] = key
            groups.setdefault((note.id in history, key), []).append(note)
    for history_key, key in sorted(groups, key=lambda k: -len(_as_set(k[1]))):
        wider = [
            other
            for other in groups
            if other[0] == history_key and _as_set(key) and _as_set(key) < _as_set(other[1])
        ]
        if wider:  # "being an architect is busy" says part of "I'm an architect at Adatum"
            widest = max(wider, key=lambda other: len(_as_set(other[1])))
            groups[widest] = sorted(
                [*groups[widest], *groups.pop((history_key, key))], key=lambda n: n.created_at
            )
    merges: list[tuple[Passage, list[Passage]]] = []
    for key, group in groups.items():
        points = [note for note in group if _is_point(note)]
        whole = [note for note in group if note_keys[note.id] == key[1]]
        kept_note = next((note for note in whole if note in points), whole[0])
        first = stated(kept_note)
        gone = [
            note
            for note in group
            if note is not kept_note
            and (note not in points or _said_again(note, first))
            and not says_more(said(note), said(kept_note))  # a need, a dose, an allergy
        ]
        if gone:
            merges.append((kept_note, gone))
    return merges


def _as_set(key: object) -> frozenset[object]:
    """A group's key as the set of what its notes name (a key of words or of stated facts is
    no set of names: it is part of no other)."""
    return (
        key if isinstance(key, frozenset) and all(isinstance(k, str) for k in key) else frozenset()
    )


def _said_again(point: Passage, first: frozenset[tuple[str, str, str]]) -> bool:
    """Whether a point of change says no more than the note its group keeps (which states
    ``first``): the same change again ("Home for me is Aarhus these days" after the move), or
    no fact beyond it ("I'm at Adatum now" beside "My job is at Adatum, I'm an architect
    there"). A loss ("We lost Tofu today") always says more."""
    if not first or assisted.ended_names(said(point)):
        return False
    return stated(point) <= first


def _is_point(note: Passage) -> bool:
    """A note of a change or a loss: a point of the timeline, never merged away."""
    words = said(note)
    return assisted.states_a_change(words) or bool(assisted.ended_names(words))


def _fact_sentence(note: Passage) -> str | None:
    """What a note states, as said to the person ("your cat is Miso")."""
    found = facts_in(said(note), note.created_at.astimezone().date())
    return "; ".join(said_to_person(c.sentence()) for c in found) or None


def _facts_from_musings(mnemo: Mnemo, current: list[Fact]) -> list[Fact]:
    """Current facts learned from a message that was a musing or a question: no statement
    of it that tells the fact is lasting ("being a nurse is busy" is, beside "we had a long
    meeting today")."""
    found: list[Fact] = []
    for fact in current:
        if fact.source_kind != "message" or not (fact.source_ref or "").isdigit():
            continue
        try:
            message = mnemo.recall.get(int(fact.source_ref or 0))
        except NotFoundError:  # forgotten since
            continue
        telling = [
            statement
            for statement in assisted.user_statements(message.text)
            if any(names(statement, value) for value in fact_values(fact.predicate, fact.object))
        ]
        if not any(assisted.lasting(statement) for statement in telling):
            found.append(fact)
    return found


def _waiting(mnemo: Mnemo, current: list[Fact]) -> tuple[list[Proposal], list[Proposal]]:
    """Waiting fact proposals about the person: those a fact learned after them replaced
    (stale), and those whose value the person has said again since (restated)."""
    stale: list[Proposal] = []
    restated: list[Proposal] = []
    for proposal in mnemo.proposals.pending():
        if proposal.kind != "fact" or proposal.cause_kind == "tidy":
            continue
        predicate = proposal.payload.get("predicate", "")
        later = [
            fact
            for fact in current
            if fact.subject_is(proposal.label)
            and fact.predicate == predicate
            and fact.learned_at > proposal.created_at
        ]
        if any(contradicts(predicate, f.object, proposal.new_content) for f in later):
            stale.append(proposal)
        elif _said_since(mnemo, proposal):
            restated.append(proposal)
    return stale, restated


def _said_since(mnemo: Mnemo, proposal: Proposal) -> bool:
    """Whether a message of the person after the proposal states its value again."""
    hits = mnemo.recall.search(
        proposal.new_content, 20, mode="keyword", start=proposal.created_at, roles=["user"]
    )
    return any(
        hit.created_at > proposal.created_at
        and names(hit.text, proposal.new_content)
        and assisted.lasting(hit.text)
        for hit in hits
    )


def tidy_block(block: str, facts: Iterable[Fact], rejected: frozenset[str] = frozenset()) -> str:
    """The human block short and current: a line for each current fact about the person, in
    the order learned ("Your cat is Olive."), but one the person rejected (``rejected``), then
    the block's lines that say more than those: a line that names only what the person's facts
    hold or held (a value since replaced, or one a fact's line says), a line of the moment, and
    a line said again (the same names, or the same words in another order, such as "cats over
    dogs" after "dogs over cats": the later stays) go. A line that holds a detail no other line
    holds (a need, a dose, an allergy: ``details``) always stays, as it was written."""
    facts = [fact for fact in facts if fact.subject_is(USER)]
    current = sorted((f for f in facts if f.status == "current"), key=lambda f: f.learned_at)
    held = topics(facts)
    lines = [assisted.as_sentence(said_to_person(fact.sentence())) for fact in current]
    lines = [line for line in lines if line not in rejected]
    kept: list[str] = []
    for line in block.splitlines():
        named = assisted.names_held(line)
        if not line.strip() or line.strip() in EMPTY_TEXTS:
            continue
        if says_more(line, "\n".join(lines)):
            kept.append(" ".join(line.split()))
            continue
        if not assisted.lasting(line):
            continue
        if named <= held.keys() and (named or any(names(line, value) for value in held)):
            continue  # its fact's line says it, or it held once
        kept.append(" ".join(line.split()))
    tidied = "\n".join(_without_repeats([*lines, *kept]))
    said = [line.strip() for line in block.splitlines() if line.strip()]
    if not tidied and all(line in EMPTY_TEXTS for line in said):
        return block  # nothing known yet: the block's own placeholder stays
    return tidied


def _without_repeats(lines: list[str]) -> list[str]:
    """Lines that name the same things (the first stays), or say the same words in any order
    (the last stays: "dogs over cats" said after "cats over dogs")."""
    by_names: dict[frozenset[str], str] = {}
    first: list[str] = []
    for line in lines:
        named = assisted.names_held(line)
        if named and named in by_names and not says_more(line, by_names[named]):
            continue
        by_names.setdefault(named, line)
        first.append(line)
    last: dict[frozenset[str], str] = {}
    for line in first:
        last.pop(words := frozenset(duplicate_key(line).split()), None)
        last[words] = line
    return list(last.values())


def propose(mnemo: Mnemo, tidying: Tidying) -> str | None:
    """Write the plan's changes as one batch of proposals; return the batch's id (None when
    there was nothing to tidy). Stale waiting proposals are taken back at once: they changed
    nothing yet."""
    if not tidying:
        return None
    batch = f"tidy-{clock.now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
    store = mnemo.proposals
    with mnemo.recall.transaction() as tx:
        session = tx.session
        for kept, gone in tidying.merges:
            for note in gone:
                store.create_tidy_in(
                    session,
                    batch,
                    "merge",
                    note,
                    new_text=kept.text,
                    into=kept.id,
                    again=_fact_sentence(note),
                )
        for note, because in tidying.history:
            store.create_tidy_in(
                session, batch, "history", note, tag=assisted.REPLACED_TAG, again=because
            )
        for note in tidying.musings:
            store.create_tidy_in(session, batch, "musing", note)
        for fact in tidying.musing_facts:
            store.create_tidy_fact_in(session, batch, fact)
        for proposal in tidying.restated:
            store.join_batch_in(session, proposal.id, batch)
        for proposal in tidying.stale:
            store.withdraw_in(session, proposal.id)
        if tidying.human:
            old, new = tidying.human
            store.create_in(
                session,
                conversation_id=DEFAULT_CONVERSATION,
                label="human",
                action="replace",
                old_content=old,
                new_content=new,
                cause_kind="tidy",
                cause_ref=batch,
                batch=batch,
            )
    return batch


TIDY_EVERY_S = 24 * 3600  # the idle pass runs at most once a day


def due(mnemo: Mnemo, every_s: float = TIDY_EVERY_S) -> bool:
    """Whether an idle pass should run: no batch of the last one waits for the person, the
    last ran ``every_s`` ago or never, and the person has said something since."""
    store = mnemo.proposals
    batch = store.latest_batch()
    if batch is None:
        return mnemo.recall.count() > 0
    proposals = store.batch(batch)
    if any(p.status == "pending" for p in proposals):
        return False
    last = max(p.created_at for p in proposals).timestamp()
    if clock.timestamp() - last < every_s:
        return False
    newest = mnemo.recall.recent(1)
    return bool(newest) and newest[-1].created_at.timestamp() > last


def tidy(mnemo: Mnemo) -> tuple[Tidying, str | None]:
    """Plan and propose: what ``mnemo tidy`` and the window's idle pass run."""
    tidying = plan(mnemo)
    return tidying, propose(mnemo, tidying)
