"""What the person says about their life is kept by rule, in either mode, after the reply:
first-person statements as archival notes, facts about home, work, family and the like in
knowledge memory, and "it's X, not Y" as a correction. Pasted text only proposes."""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

from engine.agent import assisted_rules as assisted
from engine.errors import (
    CoreMemoryError,
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
from engine.memory.knowledge import USER, Fact
from engine.memory.proposals import Proposal
from engine.memory.recall import (
    MessageHit,
    RecallTransaction,
    pasted_reason,
)
from engine.transcript import REMEMBER

if TYPE_CHECKING:
    from engine.agent.loop import Agent, EventCallback

log = logging.getLogger("mnemo.agent")
PASTED_PROPOSALS = 3  # statements of a pasted text proposed for the human block, at most


class Keeper:
    """Keeps what the person's message said (``Agent.keeper``)."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent  # its loop stores, replies and stops
        self.mnemo, self.conversation_id = agent.mnemo, agent.conversation_id

    def keep(self, user: MessageHit, emit: EventCallback) -> None:
        """Keep what the user's message tells about their life, by rule, not by a small model's
        choice (asked to choose, the bundled model kept 3 of 25 facts in a conversation):

        - every first-person statement that is not a passing remark (``assisted.lasting``) is
          kept in the user's own words as an archival note;
        - a statement of a fact knowledge memory holds (``engine.memory.extract``: home, work,
          family, birthdays, allergies) is kept there too, or only there when it says no more;
        - "it's X, not Y" puts right what was kept before (``_correct``).

        The trust rules are those of any write: typed text is kept at once; text the user
        pasted (``pasted_reason``) becomes proposals that wait for them."""
        today = user.created_at.astimezone().date()
        known = self._known_facts()
        learned: dict[str, list[Candidate]] = {}  # statements that state a knowledge fact
        notes: list[str] = []
        for statement in assisted.user_statements(user.text):
            if not assisted.lasting(statement):
                continue
            found = facts_in(statement, today)
            new = [
                c
                for c in found
                if not self.mnemo.knowledge.holds(*c.triple)
                and c.sentence().casefold() not in known  # said again before approval
            ]
            if new:
                learned[statement] = new
            sentences = [candidate.sentence() for candidate in found]
            if (not found or assisted.said_beyond(statement, sentences)) and (
                assisted.fact_line(statement).casefold() not in known
            ):
                notes.append(statement)
        correction = assisted.correction_in(user.text)
        if learned or notes or correction:
            self._remember(user, notes, learned, correction, emit)

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
        correction: tuple[str, str] | None,
        emit: EventCallback,
    ) -> None:
        """Store what ``_keep_what_was_said`` chose, as one ``remember`` call: the notes, the
        knowledge facts (stored at once, or proposed when they contradict a current fact), and
        the correction. From pasted text, the notes become proposals for the ``human`` block
        and nothing is corrected."""
        knowledge = [fact for facts in candidates.values() for fact in facts]
        kept = list(dict.fromkeys([*candidates, *notes]))
        arguments: dict[str, Any] = {"facts": kept}
        if knowledge:
            arguments["knowledge"] = [fact.sentence() for fact in knowledge]
        if correction:
            arguments["correction"] = f"{correction[0]}, not {correction[1]}"
        emit(FunctionCalled(REMEMBER, arguments, describe_call(REMEMBER, arguments)))
        untrusted = pasted_reason(user.text)
        proposals: list[Proposal] = []
        outcomes: list[str] = []
        if untrusted is None:
            outcomes += self._store_notes(user, notes)
            if correction:
                outcomes.append(self._correct(*correction))
        with self.mnemo.recall.transaction() as transaction:
            self.agent._store_call(transaction, REMEMBER, arguments)
            if untrusted is not None and notes:
                notes = notes[:PASTED_PROPOSALS]
                for fact in notes:
                    savepoint = transaction.session.begin_nested()
                    try:
                        proposal = self.mnemo.proposals.create_in(
                            transaction.session,
                            conversation_id=self.conversation_id,
                            label="human",
                            action="append",
                            new_content=assisted.fact_line(fact),
                            cause_kind="message",
                            cause_ref=str(user.id),
                            untrusted_reason=untrusted,
                        )
                    except CoreMemoryError as error:  # the block is full or read-only
                        savepoint.rollback()
                        log.info("a remembered fact was not proposed: %s", error)
                        continue
                    savepoint.commit()
                    proposals.append(proposal)
                outcomes.append(
                    f"{len(proposals)} of {len(notes)} statements proposed for the human block; "
                    "they wait for the user's approval"
                )
            for candidate in knowledge:
                outcome, waiting = self._learn(transaction, user, candidate, untrusted)
                outcomes.append(outcome)
                if waiting is not None:
                    proposals.append(waiting)
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

    def _correct(self, new: str, old: str) -> str:
        """Put right the newest fact or note of the user that says ``old``: "it's Thursday, not
        Tuesday" after "my appointment is on Tuesday". What was put right, in words."""
        pattern = re.compile(rf"(?<!\w){re.escape(old)}(?!\w)", re.IGNORECASE)
        for fact in self.mnemo.knowledge.facts(USER, limit=50):
            if fact.subject_is(USER) and pattern.fullmatch(fact.object):
                corrected = self.mnemo.knowledge.correct(fact.id, new)
                return f"corrected: {corrected.sentence()}"
        for note in self.mnemo.archival.recent(50, origin="user"):
            if pattern.search(note.text):
                text = pattern.sub(new, note.text)
                self.mnemo.archival.update(note.id, text)
                return f"corrected: {text}"
        return f"nothing said {old!r} to correct"

    def _learn(
        self,
        transaction: RecallTransaction,
        user: MessageHit,
        candidate: Candidate,
        untrusted: str | None,
    ) -> tuple[str, Proposal | None]:
        """One fact from the user's message into knowledge memory: what happened, in words,
        and the proposal when it waits for the user."""
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
                    **source,  # type: ignore[arg-type]
                )
                if isinstance(stored, Fact):
                    savepoint.commit()
                    return f"learned: {stored.sentence()}", None
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
            return f"not kept: {candidate.sentence()} ({error})", None
        savepoint.commit()
        return result.text, result.proposal
