"""Proposals: the model's edits to memory, waiting for the user's approval.

Core memory is always in the model's context, so a wrong or injected line there steers every later
answer. The model therefore never writes it directly: its ``core_memory_append``/``replace`` calls
become proposals that the user approves (as they are or edited) or rejects. Only approval changes
the block, as a version whose provenance names the proposal, and the proposal names the function
call that made it. The conversation gets a short system note of each decision so the model knows.

More kinds share the same panel and the same rules: a ``fact`` for knowledge memory (a
contradiction of a current fact, or a fact from text the user did not write), a ``passage``
(the model correcting or deleting an archival note after reading untrusted text), a ``block``
(a new core block from an imported file), a ``note`` (a new archival note from another
program over MCP) and a ``tidy`` change (``engine/agent/tidying.py``: a duplicate note merged,
an outdated one kept as history, a musing removed). A tidy pass's proposals share a ``batch``
in their payload, and an approved one can be undone (``undo``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import Engine
from sqlmodel import Session, col, func, select

from engine import clock
from engine.db import row_or_missing
from engine.db.schema import ProposalRow
from engine.errors import CoreMemoryError
from engine.memory.core import CoreMemory, EditAction
from engine.memory.knowledge import (
    USER_KEY,
    Fact,
    KnowledgeStore,
    fact_sentence,
    name_key,
    said_to_person,
)
from engine.memory.proposal_effects import ProposalEffects
from engine.memory.recall import RecallStore, RecallTransaction
from engine.memory.recall.messages import DEFAULT_CONVERSATION
from engine.memory.search import from_timestamp
from engine.memory.tombstones import Tombstones

if TYPE_CHECKING:
    from engine.memory.archival import ArchivalStore, Passage

ProposalKind = Literal["core", "fact", "passage", "block", "note", "tidy"]
WITHDRAWN_BY = "mnemo"  # who decided a proposal that a later message made stale


@dataclass(frozen=True)
class Proposal:
    id: int
    conversation_id: str
    label: str
    action: str
    old_content: str | None
    new_content: str
    status: str
    cause_kind: str
    cause_ref: str | None
    untrusted_reason: str | None
    applied_content: str | None
    version_id: int | None
    decided_by: str | None
    created_at: datetime
    decided_at: datetime | None
    kind: str = "core"
    payload: dict[str, Any] = field(default_factory=dict)

    @property
    def withdrawn(self) -> bool:
        """Whether Mnemo took it back because a later message replaced what it said."""
        return self.status == "rejected" and self.decided_by == WITHDRAWN_BY

    @property
    def batch(self) -> str | None:
        """The tidy pass it belongs to, if any."""
        return self.payload.get("batch")

    @property
    def change(self) -> str:
        """A tidy change's kind: merge, history, musing (a note) or retract (a fact)."""
        return str(self.payload.get("change", ""))

    @property
    def undone(self) -> bool:
        """Approved, and undone since (``ProposalStore.undo``)."""
        return "undone_at" in self.payload

    @property
    def trusted(self) -> bool:
        """False when the model wrote it after reading documents or search results."""
        return self.untrusted_reason is None

    @property
    def target(self) -> str:
        """What it changes, as the user reads it: "the human block", "facts about you"."""
        if self.kind == "fact" and name_key(self.label) == USER_KEY:
            return "facts about you"
        return self.target_for_model

    @property
    def target_for_model(self) -> str:
        """What it changes, as the model reads it: "facts about User", "facts about Ana"."""
        if self.kind == "fact":
            return f"facts about {self.label}"
        if self.kind == "passage":
            return f"archival note {self.label[:8]}"
        if self.kind == "block":
            return f"a new {self.label} block"
        if self.kind == "note":
            return "a new archival note"
        if self.kind == "tidy":
            return "facts about you" if self.change == "retract" else "an archival note"
        return f"the {self.label} block"

    def new_fact(self, obj: str | None = None) -> str:
        """A fact proposal's fact as a sentence (with ``obj`` when the user edited it)."""
        payload = self.payload
        since = f" (since {payload['valid_from']})" if payload.get("valid_from") else ""
        return fact_sentence(self.label, payload["predicate"], obj or self.new_content) + since

    def fact_to_person(self, obj: str | None = None) -> str:
        """The fact as the person reads it: "You live in Lyon" (the model reads "User lives…")."""
        return said_to_person(self.new_fact(obj))

    def replaced_to_person(self) -> list[str]:
        """The facts it would replace, said to the person ("You live in Porto")."""
        assert self.old_content
        return [said_to_person(sentence) for sentence in self.old_content.split("; ")]

    def describe(self) -> str:
        """What it would change, said to the person (the CLI and the window's notices)."""
        if self.kind == "fact":
            new = self.fact_to_person()
            if self.old_content:
                old = "; ".join(_lower_you(said) for said in self.replaced_to_person())
                return f"{new}, instead of: {old}"
            return f"remember that {_lower_you(new)}"
        if self.kind == "passage":
            if not self.new_content:
                return f"delete archival note {self.label[:8]}: {self.old_content!r}"
            return f"correct archival note {self.label[:8]} to {self.new_content!r}"
        if self.kind == "block":
            return f"add a block {self.label}: {self.new_content!r}"
        if self.kind == "note":
            return f"keep a note from {self.label}: {self.new_content!r}"
        if self.kind == "tidy":
            return self.tidy_change()
        if self.action == "append":
            return f"add to {self.label}: {self.new_content!r}"
        return f"in {self.label}, replace {self.old_content!r} with {self.new_content!r}"

    def tidy_change(self) -> str:
        """A tidy change, said to the person."""
        old = self.old_content or ""
        if self.change == "merge":
            again = self.payload.get("because")
            what = f"says again that {_lower_you(again)}" if again else "says the same"
            return f"merge the note {old!r} into {self.new_content!r}: it {what}"
        if self.change == "history":
            because = self.payload.get("because")
            return f"keep {old!r} as history" + (f": now {_lower_you(because)}" if because else "")
        if self.change == "retract":
            return f"remove the fact {said_to_person(old)!r}: it came from a musing or question"
        return f"remove the note {old!r}: it was a musing or question, not a fact"


def _lower_you(sentence: str) -> str:
    """ "You live in Lyon" inside a sentence: "you live in Lyon"; names keep their capital."""
    first, _, rest = sentence.partition(" ")
    return f"{first.lower()} {rest}" if first in ("You", "Your") else sentence


def _tell_model(tx: RecallTransaction, row: ProposalRow, sentence: str) -> None:
    """The decision, as a system note in the proposal's conversation, so the model knows; a
    proposal another program made over MCP, or a tidy pass, is no news to the model and gets
    none."""
    if row.cause_kind not in ("mcp", "tidy"):
        tx.add("system", sentence, conversation_id=row.conversation_id)


def _stored(session: Session, row: ProposalRow) -> Proposal:
    """A new proposal, written in the caller's transaction (it commits)."""
    session.add(row)
    session.flush()
    return _proposal(row)


def _proposal(row: ProposalRow) -> Proposal:
    assert row.id is not None
    return Proposal(
        id=row.id,
        conversation_id=row.conversation_id,
        label=row.label,
        action=row.action,
        old_content=row.old_content,
        new_content=row.new_content,
        status=row.status,
        cause_kind=row.cause_kind,
        cause_ref=row.cause_ref,
        untrusted_reason=row.untrusted_reason,
        applied_content=row.applied_content,
        version_id=row.version_id,
        decided_by=row.decided_by,
        created_at=from_timestamp(row.created_at),
        decided_at=from_timestamp(row.decided_at) if row.decided_at else None,
        kind=row.kind,
        payload=json.loads(row.payload) if row.payload else {},
    )


class ProposalStore:
    """Proposals recorded in the step that made them, read, and decided by the person (or the
    ``auto`` policy); what an approved one does to the stores is ``ProposalEffects``'."""

    def __init__(
        self,
        engine: Engine,
        core: CoreMemory,
        recall: RecallStore,
        knowledge: KnowledgeStore,
        archival: ArchivalStore,
        tombstones: Tombstones | None = None,
    ) -> None:
        self._engine = engine
        self._core = core
        self._recall = recall
        self._tombstones = tombstones
        self._effects = ProposalEffects(core, knowledge, archival, tombstones)

    def create_in(
        self,
        session: Session,
        *,
        conversation_id: str,
        label: str,
        action: EditAction,
        new_content: str,
        old_content: str | None = None,
        cause_kind: str = "message",
        cause_ref: str | None = None,
        untrusted_reason: str | None = None,
        auto_approve: bool = False,
        batch: str | None = None,
    ) -> Proposal:
        """Record a proposal inside the caller's transaction (the step that made it).

        An edit that could never apply (unknown or read-only block, text not found, too long) is
        refused here with the ``CoreMemoryError`` the model gets back, not queued for the user.
        With ``auto_approve`` (the user's policy) a trusted edit is applied in the same
        transaction; an untrusted one still waits for the user.
        """
        self._core.preview(label, action, new_content, old_content)
        row = ProposalRow(
            conversation_id=conversation_id,
            label=label,
            action=action,
            old_content=old_content,
            new_content=new_content,
            cause_kind=cause_kind,
            cause_ref=cause_ref,
            untrusted_reason=untrusted_reason,
            created_at=clock.timestamp(),
            payload=json.dumps({"batch": batch}) if batch else None,
        )
        session.add(_kept_out(row, self._tombstones))
        session.flush()
        if auto_approve and untrusted_reason is None and batch is None:
            version_id = self._core.apply_in(
                session,
                label,
                action,
                new_content,
                old_content,
                author="model",
                cause_kind="proposal",
                cause_ref=str(row.id),
            )
            _decide(row, "approved", "policy", new_content, version_id)
            session.add(row)
        return _proposal(row)

    def create_fact_in(
        self,
        session: Session,
        *,
        conversation_id: str,
        subject: str,
        predicate: str,
        obj: str,
        current: tuple[Fact, ...] = (),
        valid_from: str | None = None,
        source_kind: str = "message",
        source_ref: str | None = None,
        asserted_by: str = "model",
        untrusted_reason: str | None = None,
        auto_approve: bool = False,
    ) -> Proposal:
        """A fact for knowledge memory that waits for the user: it contradicts ``current``
        facts (shown side by side with it), or it comes from text the user did not write. With
        ``auto_approve`` (the user's policy) a trusted one is stored at once."""
        payload = {
            "predicate": predicate,
            "valid_from": valid_from,
            "source_kind": source_kind,
            "source_ref": source_ref,
            "asserted_by": asserted_by,
        }
        row = ProposalRow(
            conversation_id=conversation_id,
            kind="fact",
            label=subject,
            action="replace" if current else "append",
            old_content="; ".join(fact.sentence() for fact in current) or None,
            new_content=obj,
            payload=json.dumps(payload),
            cause_kind=source_kind,
            cause_ref=source_ref,
            untrusted_reason=untrusted_reason,
            created_at=clock.timestamp(),
        )
        session.add(_kept_out(row, self._tombstones))
        session.flush()
        if auto_approve and untrusted_reason is None:
            self._effects.store_fact(session, row, obj)
            _decide(row, "approved", "policy", obj, None)
            session.add(row)
        return _proposal(row)

    def create_passage_in(
        self,
        session: Session,
        *,
        conversation_id: str,
        passage_id: str,
        old_text: str,
        new_text: str,
        cause_ref: str | None,
        untrusted_reason: str | None,
    ) -> Proposal:
        """The model's correction of an archival note (``new_text`` empty: its deletion),
        waiting for the user because the model wrote it after reading untrusted text."""
        row = ProposalRow(
            conversation_id=conversation_id,
            kind="passage",
            label=passage_id,
            action="replace",
            old_content=old_text,
            new_content=new_text,
            cause_kind="message",
            cause_ref=cause_ref,
            untrusted_reason=untrusted_reason,
            created_at=clock.timestamp(),
        )
        return _stored(session, _kept_out(row, self._tombstones))

    def create_block_in(
        self,
        session: Session,
        *,
        label: str,
        value: str,
        description: str,
        char_limit: int,
        read_only: bool,
        untrusted_reason: str,
    ) -> Proposal:
        """A new core block from an imported file, waiting for the person (a block in every
        prompt is theirs to accept); refused here when it could never be added."""
        self._core.check_new_block(label, value, char_limit)
        row = ProposalRow(
            conversation_id=DEFAULT_CONVERSATION,
            kind="block",
            label=label,
            action="append",
            new_content=value,
            payload=json.dumps(
                {"description": description, "char_limit": char_limit, "read_only": read_only}
            ),
            cause_kind="import",
            untrusted_reason=untrusted_reason,
            created_at=clock.timestamp(),
        )
        return _stored(session, _kept_out(row, self._tombstones))

    def create_note_in(
        self,
        session: Session,
        *,
        text: str,
        client: str,
        untrusted_reason: str,
        cause_kind: str = "mcp",
    ) -> Proposal:
        """A note for archival memory from another program or an imported file (``client``,
        its label), waiting for the person."""
        row = ProposalRow(
            conversation_id=DEFAULT_CONVERSATION,
            kind="note",
            label=client,
            action="append",
            new_content=text,
            cause_kind=cause_kind,
            cause_ref=client,
            untrusted_reason=untrusted_reason,
            created_at=clock.timestamp(),
        )
        return _stored(session, _kept_out(row, self._tombstones))

    def create_tidy_in(
        self,
        session: Session,
        batch: str,
        change: Literal["merge", "history", "musing"],
        note: Passage,
        *,
        new_text: str = "",
        into: str | None = None,
        tag: str | None = None,
        again: str | None = None,
    ) -> Proposal:
        """A tidy pass's change to one of the person's notes: merged ``into`` another that says
        the same (``new_text``), tagged (``tag``: kept as history), or removed as a musing.
        ``again``: the fact it says again, or the later fact that replaced it, in words. The
        note as it is goes in the payload, to undo."""
        payload = {
            "batch": batch,
            "change": change,
            "note": {
                "text": note.text,
                "message_id": note.source.message_id,
                "tags": note.tags,
                "created_at": note.created_at.timestamp(),
            },
            "into": into,
            "tag": tag,
            "because": again,
        }
        row = ProposalRow(
            conversation_id=DEFAULT_CONVERSATION,
            kind="tidy",
            label=note.id,
            action="replace",
            old_content=note.text,
            new_content=new_text,
            payload=json.dumps(payload),
            cause_kind="tidy",
            cause_ref=batch,
            created_at=clock.timestamp(),
        )
        return _stored(session, _kept_out(row, self._tombstones))

    def create_tidy_fact_in(self, session: Session, batch: str, fact: Fact) -> Proposal:
        """A tidy pass's removal of a fact that came from a musing or a question."""
        row = ProposalRow(
            conversation_id=DEFAULT_CONVERSATION,
            kind="tidy",
            label=str(fact.id),
            action="replace",
            old_content=fact.sentence(),
            new_content="",
            payload=json.dumps({"batch": batch, "change": "retract", "fact": fact.id}),
            cause_kind="tidy",
            cause_ref=batch,
            created_at=clock.timestamp(),
        )
        return _stored(session, _kept_out(row, self._tombstones))

    def join_batch_in(self, session: Session, proposal_id: int, batch: str) -> None:
        """A waiting proposal that a tidy pass found still right joins its batch."""
        row = self._pending_row(session, proposal_id)
        row.payload = json.dumps({**json.loads(row.payload or "{}"), "batch": batch})
        session.add(row)

    # -- reading -------------------------------------------------------------------------------

    def get(self, proposal_id: int) -> Proposal:
        with Session(self._engine) as session:
            return _proposal(_row(session, proposal_id))

    def pending(self, conversation_id: str | None = None) -> list[Proposal]:
        """Proposals waiting for a decision, oldest first."""
        query = select(ProposalRow).where(ProposalRow.status == "pending")
        if conversation_id is not None:
            query = query.where(ProposalRow.conversation_id == conversation_id)
        with Session(self._engine) as session:
            return [_proposal(row) for row in session.exec(query.order_by(col(ProposalRow.id)))]

    def batch(self, batch: str) -> list[Proposal]:
        """A tidy pass's proposals, decided or not, in the order made."""
        query = (
            select(ProposalRow)
            .where(col(ProposalRow.payload).contains(json.dumps({"batch": batch})[1:-1]))
            .order_by(col(ProposalRow.id))
        )
        with Session(self._engine) as session:
            return [p for row in session.exec(query) if (p := _proposal(row)).batch == batch]

    def latest_batch(self) -> str | None:
        """The newest tidy pass's batch, if there was one."""
        query = (
            select(ProposalRow)
            .where(ProposalRow.cause_kind == "tidy")
            .order_by(col(ProposalRow.id).desc())
            .limit(1)
        )
        with Session(self._engine) as session:
            row = session.exec(query).first()
            return _proposal(row).batch if row is not None else None

    def count_pending(self, conversation_id: str) -> int:
        """How many proposals of a conversation wait for a decision (each step says so)."""
        query = select(func.count()).where(
            ProposalRow.status == "pending", ProposalRow.conversation_id == conversation_id
        )
        with Session(self._engine) as session:
            return int(session.exec(query).one())

    def all(self, limit: int = 100) -> list[Proposal]:
        """The newest proposals, decided or not, newest first."""
        query = select(ProposalRow).order_by(col(ProposalRow.id).desc()).limit(limit)
        with Session(self._engine) as session:
            return [_proposal(row) for row in session.exec(query)]

    def preview(self, proposal_id: int, content: str | None = None) -> tuple[str, str]:
        """The text now and as it would be after approval (with ``content`` if edited), as the
        person reads it: the block, the facts about the subject ("You live in…"), or the note."""
        proposal = self.get(proposal_id)
        if proposal.kind == "fact":
            old = "; ".join(proposal.replaced_to_person()) if proposal.old_content else ""
            return old, proposal.fact_to_person(content)
        if proposal.kind in ("passage", "block", "note"):
            return proposal.old_content or "", proposal.new_content if content is None else content
        if proposal.kind == "tidy":
            return proposal.old_content or "", proposal.new_content
        return self._core.preview(
            proposal.label,
            proposal.action,  # type: ignore[arg-type]
            proposal.new_content if content is None else content,
            proposal.old_content,
        )

    # -- deciding ------------------------------------------------------------------------------

    def approve(self, proposal_id: int, content: str | None = None) -> Proposal:
        """Apply a proposal (``content`` replaces the proposed text when the user edited it).

        The change, the proposal's status and the note to the model commit together (an
        archival note, kept in LanceDB, changes first: if that fails, nothing is decided).
        """
        with self._recall.transaction() as tx:
            row = self._pending_row(tx.session, proposal_id)
            edited = content is not None and content != row.new_content
            applied = row.new_content if content is None else content
            applied, version_id = self._effects.apply(tx.session, row, applied, edited)
            _decide(row, "approved", "user", applied, version_id)
            tx.session.add(row)
            how = "approved with edits" if edited else "approved"
            what = _proposal(row).target_for_model
            _tell_model(tx, row, f"The user {how} your change to {what} (proposal {row.id}).")
            return _proposal(row)

    def undo(self, proposal_id: int) -> Proposal:
        """Undo an approved change of a tidy pass, or of a proposal in its batch: the note
        comes back (unless part of it was forgotten since: that never returns), the tag goes,
        the fact holds again, the block is as before (a new version). The proposal is kept,
        approved, with the time it was undone, as history."""
        with self._recall.transaction() as tx:
            row = _row(tx.session, proposal_id)
            proposal = _proposal(row)
            if row.status != "approved" or proposal.batch is None or proposal.undone:
                state = "undone already" if proposal.undone else row.status
                raise CoreMemoryError(
                    f"Proposal {proposal_id} is {state}; only an approved change of a tidy "
                    "pass can be undone."
                )
            self._effects.undo(tx.session, row)
            row.payload = json.dumps({**proposal.payload, "undone_at": clock.timestamp()})
            tx.session.add(row)
            return _proposal(row)

    def reject(self, proposal_id: int) -> Proposal:
        with self._recall.transaction() as tx:
            row = self._pending_row(tx.session, proposal_id)
            _decide(row, "rejected", "user", None, None)
            tx.session.add(row)
            what = _proposal(row).target_for_model
            _tell_model(
                tx,
                row,
                f"The user rejected your change to {what} (proposal {row.id}); "
                "do not propose it again unless they ask.",
            )
            return _proposal(row)

    def withdraw_in(self, session: Session, proposal_id: int) -> Proposal:
        """Take back a waiting proposal that a later message made wrong ("Your sister lives in
        Ghent" after "she moved to Antwerp"), in the caller's transaction: approving it would
        write a stale line. It is rejected by Mnemo (``WITHDRAWN_BY``), not by the person."""
        row = self._pending_row(session, proposal_id)
        _decide(row, "rejected", WITHDRAWN_BY, None, None)
        session.add(row)
        return _proposal(row)

    # -- helpers -------------------------------------------------------------------------------

    def _pending_row(self, session: Session, proposal_id: int) -> ProposalRow:
        row = _row(session, proposal_id)
        if row.status != "pending":
            raise CoreMemoryError(f"Proposal {proposal_id} was already {row.status}.")
        return row


def _row(session: Session, proposal_id: int) -> ProposalRow:
    return row_or_missing(session, ProposalRow, proposal_id, f"There is no proposal {proposal_id}.")


def _decide(
    row: ProposalRow,
    status: str,
    decided_by: str,
    applied: str | None,
    version_id: int | None,
) -> None:
    row.status = status
    row.decided_by = decided_by
    row.applied_content = applied
    row.version_id = version_id
    row.decided_at = clock.timestamp()


def _kept_out(row: ProposalRow, tombstones: Tombstones | None) -> ProposalRow:
    """The proposal without what the person asked to forget, wherever it came from (the
    model, an import, a program over MCP). A core edit's text to replace and a passage's id
    must stay as they are to apply; what they name is checked when it is applied."""
    if tombstones is None:
        return row
    columns = ["new_content", "payload", "cause_ref"]
    columns += [] if row.kind in ("core", "passage") else ["label"]
    columns += [] if row.kind == "core" else ["old_content"]
    for column in columns:
        value = getattr(row, column)
        if value:
            setattr(row, column, tombstones.redact(value))
    return row
