"""What the person says about their life is kept by rule, in either mode, after the reply:
first-person statements as archival notes, facts about home, work, family and the like in
knowledge memory, and "it's X, not Y" as a correction. Pasted text only proposes."""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

from engine.agent import assisted_rules as assisted
from engine.agent.human_block import HumanBlockLines
from engine.errors import (
    MnemoError,
)
from engine.events import (
    FunctionCalled,
    FunctionReturned,
    ProposalApplied,
    ProposalCreated,
)
from engine.functions import (
    describe_call,
    propose_fact,
)
from engine.memory.archival import NewPassage
from engine.memory.extract import Candidate, facts_in
from engine.memory.knowledge import RELATIVES, USER, Fact, said_to_person
from engine.memory.proposals import Proposal
from engine.memory.recall import (
    MessageHit,
    RecallTransaction,
    pasted_reason,
)
from engine.memory.search import query_terms, same_word
from engine.transcript import REMEMBER

if TYPE_CHECKING:
    from engine.agent.steps import EventCallback, Steps

log = logging.getLogger("mnemo.agent")
PASTED_PROPOSALS = 3  # statements of a pasted text proposed for the human block, at most


def untrusted_of(user: MessageHit) -> str | None:
    """Why a message of the user's is not their own word, or None: a program sent it, or it
    holds pasted text."""
    return user.untrusted_reason or pasted_reason(user.text)


class Keeper:
    """Keeps what the person's message said (``Agent.keeper``)."""

    def __init__(self, steps: Steps) -> None:
        self.steps = steps  # what it stores its calls with
        self.mnemo, self.conversation_id = steps.mnemo, steps.conversation_id
        self.human_block = HumanBlockLines(self.mnemo, self.conversation_id)

    def keep(self, user: MessageHit, emit: EventCallback) -> None:
        """Keep what the user's message tells about their life, by rule, not by a small model's
        choice (asked to choose, the bundled model kept 3 of 25 facts in a conversation):

        - every statement about them or the people in their life that is not a passing remark,
          request or musing (``assisted.lasting``) is kept in the user's own words as an
          archival note;
        - a statement of a fact knowledge memory holds (``engine.memory.extract``: home, work,
          family, birthdays, allergies) is kept there too, or only there when it says no more;
          a change they state ("moved", "actually", "not … any more") replaces the old fact;
        - a correction ("it's X, not Y", "no wait, it's the 14th", "training moved to Sunday")
          puts right what was kept before (``_correct``);
        - each statement is proposed, short and in the second person, for the ``human`` block
          of core memory (``HumanBlockLines``), where the person approves it.

        The trust rules are those of any write: typed text is kept at once; text the user
        pasted (``pasted_reason``), and a program's message (its ``untrusted_reason``), become
        proposals that wait for them."""
        today = user.created_at.astimezone().date()
        lost = assisted.ended_names(user.text)  # "my dog Biscuit died" states no dog now
        if untrusted_of(user) is None:  # a pasted text's "we lost Tofu" ends nothing
            self._end_lost(user.text)
        known = self._known_facts()
        last_named = self._last_named(user)

        def names(name: str) -> bool:
            if name.casefold() in ("she", "he"):
                return last_named is not None
            return self.mnemo.knowledge.resolve(name) is not None

        learned: dict[str, list[Candidate]] = {}  # statements that state a knowledge fact
        notes: list[str] = []
        core_lines: list[str] = []  # how each kept statement reads in the human block

        def fresh(candidate: Candidate) -> bool:
            """A fact not held yet, not waiting, and not of someone the message says is lost."""
            return (
                not self.mnemo.knowledge.holds(*candidate.triple)
                and candidate.sentence().casefold() not in known  # said again before approval
                and not any(same_word(candidate.object, name) for name in lost)
            )

        for statement in assisted.user_statements(user.text, names):
            if not assisted.lasting(statement):
                continue
            spoken = assisted.first_person(statement) or assisted.named_subject(
                statement, last_named
            )
            found = facts_in(assisted.without_opener(spoken) or spoken, today)
            new = [c for c in found if fresh(c)]
            if new:
                learned[statement] = new
            sentences = [candidate.sentence() for candidate in found]
            if (not found or assisted.said_beyond(statement, sentences)) and (
                assisted.fact_line(statement).casefold() not in known
            ):
                notes.append(statement)
            if (new or statement in notes) and assisted.for_core(statement, bool(found)):
                core_lines.append(assisted.core_line(spoken))
        # The people of their life named in passing ("a toast for my brother Paolo's wedding").
        for candidate in facts_in(user.text, today):
            if (
                candidate.predicate in RELATIVES
                and candidate not in [c for found in learned.values() for c in found]
                and fresh(candidate)
            ):
                learned.setdefault(user.text, []).append(candidate)
                core_lines.append(said_to_person(candidate.sentence()) + ".")
        correction = assisted.correction_in(user.text)
        if learned or notes or correction:
            self._remember(user, notes, learned, correction, emit, core_lines)

    def _end_lost(self, text: str) -> None:
        """A pet or person of the person's life who died ("We lost Tofu today") is no longer
        theirs now: the fact ends, and stays in the history."""
        for name in assisted.ended_names(text):
            for fact in self.mnemo.knowledge.facts(USER, limit=100):
                if (
                    fact.subject_is(USER)
                    and fact.predicate in RELATIVES
                    and same_word(fact.object, name)
                ):
                    self.mnemo.knowledge.end(fact.id)

    def _last_named(self, user: MessageHit) -> str | None:
        """The person the conversation's recent messages named last, whom "she" or "he" in
        ``user``'s message is read as."""
        for hit in reversed(self.mnemo.recall.recent(12, self.conversation_id)):
            if hit.role != "user":
                continue
            others = [e for e in self.mnemo.knowledge.mentioned(hit.text) if e.name != USER]
            if others:
                return others[0].name
        return None

    def _known_facts(self) -> str:
        """The human block and pending additions and facts, casefolded (to skip what is
        already known or already waits for the user)."""
        blocks = {block.label: block.value for block in self.mnemo.core.blocks()}
        pending = [
            p.new_fact() if p.kind == "fact" else p.new_content
            for p in self.mnemo.proposals.pending(self.conversation_id)
        ]
        return "\n".join([blocks.get("human", ""), *pending]).casefold()

    def _remember(
        self,
        user: MessageHit,
        notes: list[str],
        candidates: dict[str, list[Candidate]],
        correction: assisted.Correction | None,
        emit: EventCallback,
        core_lines: list[str],
    ) -> None:
        """Store what ``keep`` chose, as one ``remember`` call: the notes, the knowledge facts
        (stored at once, or proposed when they contradict a current fact), the correction, and
        the lines proposed for the human block (``core_lines``). From pasted text, the notes
        become proposals for the ``human`` block and nothing is corrected."""
        knowledge = [fact for facts in candidates.values() for fact in facts]
        kept = list(dict.fromkeys([*candidates, *notes]))
        arguments: dict[str, Any] = {"facts": kept}
        if knowledge:
            arguments["knowledge"] = [fact.sentence() for fact in knowledge]
        if correction:
            arguments["correction"] = str(correction)
        emit(FunctionCalled(REMEMBER, arguments, describe_call(REMEMBER, arguments)))
        untrusted = untrusted_of(user)
        proposals: list[Proposal] = []
        outcomes: list[str] = []
        if untrusted is None:
            outcomes += self._store_notes(user, notes)
            if assisted.states_a_change(user.text):
                outcomes += self._replace_notes(user, notes)
            if correction:
                outcomes.append(self._correct(correction, user.id))
        with self.mnemo.recall.transaction() as transaction:
            self.steps.store_call(transaction, REMEMBER, arguments)
            if untrusted is not None and notes:
                notes = notes[:PASTED_PROPOSALS]
                for fact in notes:
                    pasted = self.human_block.propose_line(
                        transaction, user, assisted.fact_line(fact), untrusted=untrusted
                    )
                    proposals += [pasted] if pasted else []
                outcomes.append(
                    f"{len(proposals)} of {len(notes)} statements proposed for the human block; "
                    "they wait for the user's approval"
                )
            change = untrusted is None and assisted.states_a_change(user.text)
            replaced: dict[str, str] = {}  # an old value, and the value that replaced it
            ended_facts: list[str] = []  # the sentences of the facts replaced
            for candidate in knowledge:
                outcome, waiting, ended = self._learn(
                    transaction, user, candidate, untrusted, supersede=change
                )
                outcomes.append(outcome)
                replaced |= {fact.object: candidate.object for fact in ended}
                ended_facts += [fact.sentence() for fact in ended]
                if waiting is not None:
                    proposals.append(waiting)
            if untrusted is None and self.steps.mode.mode == "assisted":
                # A model that manages its memory writes core memory itself (MemGPT).
                proposals += self.human_block.propose(
                    transaction, user, core_lines, replaced, ended_facts
                )
            result = "; ".join(outcomes) or "nothing new"
            transaction.add(
                "function_result",
                result,
                name=REMEMBER,
                conversation_id=self.conversation_id,
            )
        emit(FunctionReturned(REMEMBER, True, result, f"{len(kept) or 1} kept"))
        for proposal in proposals:
            applied = proposal.status == "approved"
            emit(ProposalApplied(proposal) if applied else ProposalCreated(proposal))

    def _store_notes(self, user: MessageHit, notes: list[str]) -> list[str]:
        """The user's own statements as archival notes (one each, never twice)."""
        lines = [assisted.fact_line(statement) for statement in notes]
        fresh = [line for line in lines if self.mnemo.archival.find_duplicate(line, "user") is None]
        if not fresh:
            return []
        self.mnemo.archival.insert_many(
            [
                NewPassage(text, source=user.id, tags=(assisted.NOTE_TAG,), origin="user")
                for text in fresh
            ]
        )
        return [f"noted: {text}" for text in fresh]

    def _replace_notes(self, user: MessageHit, statements: list[str]) -> list[str]:
        """Mark as history the older notes that what the person says changed replaces
        ("Efua switched to a university in Accra" replaces "My daughter Efua started university
        in Kumasi"): about the same person (a name both hold, or both in the first person),
        on the same topic (a word both hold besides names), and each holding a value the
        other does not. The note stays, tagged ``REPLACED_TAG``; recall shows it as history."""
        outcomes: list[str] = []
        older = [
            note
            for note in self.mnemo.archival.recent(50, origin="user")
            if note.source.message_id != user.id
            and assisted.NOTE_TAG in note.tags
            and assisted.REPLACED_TAG not in note.tags
        ]
        for note in older:
            said = assisted.own_words(note.text) or note.text
            if any(assisted.replaces(s, said, self.mnemo.knowledge.resolve) for s in statements):
                self.mnemo.archival.update(note.id, tags=[*note.tags, assisted.REPLACED_TAG])
                outcomes.append(f"replaced: {note.text}")
        return outcomes

    def _correct(self, correction: assisted.Correction, message_id: int) -> str:
        """Put right the newest fact or note of the user that says what was corrected: the
        old value itself ("it's Thursday, not Tuesday" after "my appointment is on Tuesday"),
        or the value of the new one's kind ("no wait, it's the 16th" after "…on the 9th"), in
        a note about the correction's topic when it names one ("training moved to Sunday").
        Notes of the correcting message itself are left as they are. What was put right, in
        words."""
        notes = [
            note
            for note in self.mnemo.archival.recent(50, origin="user")
            if note.source.message_id != message_id
        ]
        if correction.old:
            old = correction.old
            pattern = re.compile(rf"(?<!\w){re.escape(old)}(?!\w)", re.IGNORECASE)
            for fact in self.mnemo.knowledge.facts(USER, limit=50):
                if fact.subject_is(USER) and pattern.fullmatch(fact.object):
                    corrected = self.mnemo.knowledge.correct(fact.id, correction.new)
                    return f"corrected: {corrected.sentence()}"
            for note in notes:
                if pattern.search(note.text):
                    text = pattern.sub(correction.new, note.text)
                    self.mnemo.archival.update(note.id, text)
                    return f"corrected: {text}"
        kind = assisted.value_kind(correction.new)
        if kind is None:
            return f"nothing said {correction.old or correction.new!r} to correct"
        values = assisted.VALUE_KINDS[kind]
        digits = re.findall(r"\d+", correction.old or "")
        topic = query_terms(correction.topic)

        def fits(text: str) -> re.Match[str] | None:
            """The value of the kind this note holds (the old one's, when it was said)."""
            for match in values.finditer(text):
                if not digits or re.findall(r"\d+", match[0])[:1] == digits[:1]:
                    return match
            return None

        about_topic = [
            note
            for note in notes
            if any(
                same_word(w, t)
                for t in topic
                for w in query_terms(assisted.own_words(note.text) or note.text, 10**6)
            )
        ]
        # With no topic ("no wait, it's the 16th"), the newest note of the value's kind.
        for note in about_topic if topic else notes:
            if match := fits(note.text):
                text = note.text[: match.start()] + correction.new + note.text[match.end() :]
                self.mnemo.archival.update(note.id, text)
                return f"corrected: {text}"
        return f"nothing said before to correct with {correction.new!r}"

    def _learn(
        self,
        transaction: RecallTransaction,
        user: MessageHit,
        candidate: Candidate,
        untrusted: str | None,
        *,
        supersede: bool = False,
    ) -> tuple[str, Proposal | None, list[Fact]]:
        """One fact from the user's message into knowledge memory: what happened, in words,
        the proposal when it waits for the user, and the facts it replaces (``supersede``:
        the user said that it changed, so the new fact replaces the old one at once), or will
        once they approve it (so the block's line of the old value is proposed anew beside
        it: "You're based in Aarhus" does not stay beside "Your flat is in Lisbon")."""
        source = {"source_kind": "message", "source_ref": str(user.id)}
        session = transaction.session
        savepoint = session.begin_nested()
        try:
            current = self.mnemo.knowledge.contradicted(*candidate.triple)
            if untrusted is None:
                stored = self.mnemo.knowledge.add_in(
                    session,
                    candidate.subject,
                    candidate.predicate,
                    candidate.object,
                    valid_from=candidate.valid_from,
                    asserted_by="user",
                    supersede=supersede,
                    **source,  # type: ignore[arg-type]
                )
                if isinstance(stored, Fact):
                    savepoint.commit()
                    return f"learned: {stored.sentence()}", None, list(current)
                current = stored.current
            result = propose_fact(
                self.mnemo,
                session,
                self.conversation_id,
                subject=candidate.subject,
                relation=candidate.predicate,
                obj=candidate.object,
                current=current,
                valid_from=candidate.valid_from,
                asserted_by="user",
                untrusted_reason=untrusted,
                **source,
            )
        except MnemoError as error:
            savepoint.rollback()
            log.info("a fact from the message was not kept: %s", error)
            return f"not kept: {candidate.sentence()} ({error})", None, []
        savepoint.commit()
        return result.text, result.proposal, list(current) if untrusted is None else []
