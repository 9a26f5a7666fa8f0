"""What a decided proposal does to the stores (``engine.memory.proposals``): a core edit, a
fact stored, an archival note changed, added or removed, a new block, a tidy change, and the
undoing of an approved one. The proposal store records and decides; this applies."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from sqlmodel import Session

from engine.db.schema import ProposalRow
from engine.errors import CoreMemoryError, InputError, MnemoError
from engine.memory.archival import NewPassage
from engine.memory.core import CoreMemory
from engine.memory.knowledge import KnowledgeStore
from engine.memory.tombstones import REDACTED, Tombstones

if TYPE_CHECKING:
    from engine.memory.archival import ArchivalStore


class ProposalEffects:
    """Applies and undoes proposals on the stores (``ProposalStore``'s)."""

    def __init__(
        self,
        core: CoreMemory,
        knowledge: KnowledgeStore,
        archival: ArchivalStore,
        tombstones: Tombstones | None,
    ) -> None:
        self._core = core
        self._knowledge = knowledge
        self._archival = archival
        self._tombstones = tombstones

    def apply(
        self, session: Session, row: ProposalRow, applied: str, edited: bool
    ) -> tuple[str, int | None]:
        """Apply an approved proposal in ``session`` with the text ``applied`` (``edited``: the
        person changed it): the text as applied, and the core version it made."""
        version_id = None
        if row.kind == "fact":
            self.store_fact(session, row, applied)
        elif row.kind == "passage":
            self._change_passage(row, applied)
        elif row.kind == "note":
            self._archival.insert_client_note(applied, row.label)
        elif row.kind == "tidy":
            applied = row.new_content  # not edited: it merges, tags or removes
            self._apply_tidy(session, row)
        elif row.kind == "block":
            payload = json.loads(row.payload or "{}")
            self._core.add_block_in(
                session,
                row.label,
                applied,
                description=payload.get("description", ""),
                char_limit=int(payload.get("char_limit") or 2000),
                read_only=bool(payload.get("read_only")),
            )
        else:
            version_id = self._apply_core(session, row, applied, edited)
        return applied, version_id

    def undo(self, session: Session, row: ProposalRow) -> None:
        """Undo an approved tidy change, fact or core edit (``ProposalStore.undo`` checks it
        may be undone)."""
        if row.kind == "tidy":
            self._undo_tidy(session, row)
        elif row.kind == "fact":
            self._knowledge.revert_in(session, *self._stored_fact(row))
        elif row.kind == "core":
            self._core.apply_in(
                session,
                row.label,
                "replace",
                row.old_content or "",
                row.applied_content,
                author="user",
                cause_kind="proposal",
                cause_ref=str(row.id),
            )

    def _apply_core(
        self, session: Session, row: ProposalRow, applied: str, edited: bool
    ) -> int | None:
        try:
            return self._core.apply_in(
                session,
                row.label,
                row.action,  # type: ignore[arg-type]
                applied,
                row.old_content,
                author="user" if edited else "model",
                cause_kind="proposal",
                cause_ref=str(row.id),
            )
        except CoreMemoryError as error:
            raise CoreMemoryError(
                f"Proposal {row.id} no longer fits the {row.label} block: {error} "
                "Edit it or reject it."
            ) from error

    def store_fact(self, session: Session, row: ProposalRow, obj: str) -> None:
        """Store an approved fact, superseding the facts it contradicts."""
        payload = json.loads(row.payload or "{}")
        self._knowledge.add_in(
            session,
            row.label,
            payload["predicate"],
            obj,
            valid_from=payload.get("valid_from"),
            source_kind=payload.get("source_kind", "message"),
            source_ref=payload.get("source_ref"),
            asserted_by=payload.get("asserted_by", "model"),
            supersede=True,
        )

    def _apply_tidy(self, session: Session, row: ProposalRow) -> None:
        """A tidy change: a note merged or removed, tagged as history, or a fact retracted."""
        payload = json.loads(row.payload or "{}")
        with _still_applies(row):
            if payload["change"] == "retract":
                self._knowledge.set_status_in(session, int(payload["fact"]), "retracted")
            elif payload["change"] == "history":
                note = self._archival.get(row.label)
                self._archival.update(note.id, tags=[*note.tags, payload["tag"]])
            else:
                self._archival.delete(row.label)

    def _undo_tidy(self, session: Session, row: ProposalRow) -> None:
        payload = json.loads(row.payload or "{}")
        if payload["change"] == "retract":
            fact = self._knowledge.fact(int(payload["fact"]))
            if self._tombstones and self._tombstones.forgets_fact(
                fact.subject, fact.predicate, fact.object
            ):
                raise InputError("That fact holds something you asked Mnemo to forget.")
            self._knowledge.set_status_in(session, fact.id, "current")
            return
        if payload["change"] == "history":
            note = self._archival.get(row.label)
            self._archival.update(note.id, tags=[t for t in note.tags if t != payload["tag"]])
            return
        kept = payload["note"]
        text = kept["text"]
        # A forget redacts the payload too: "[forgotten]", or "[forgotten on DATE]".
        if REDACTED.rstrip("]") in text or (self._tombstones and self._tombstones.spans(text)):
            raise InputError("Part of that note was forgotten since, so it does not come back.")
        self._archival.insert_many(
            [
                NewPassage(
                    text,
                    source=kept["message_id"],
                    tags=kept["tags"],
                    created_at=kept["created_at"],
                    origin="user",
                    id=row.label,
                )
            ]
        )

    def _stored_fact(self, row: ProposalRow) -> tuple[str, str, str]:
        payload = json.loads(row.payload or "{}")
        return row.label, payload["predicate"], row.applied_content or row.new_content

    def _change_passage(self, row: ProposalRow, text: str) -> None:
        with _still_applies(row):
            if text.strip():
                self._archival.update(row.label, text)
            else:
                self._archival.delete(row.label)


@contextmanager
def _still_applies(row: ProposalRow) -> Iterator[None]:
    """A note or fact gone or changed since the proposal was made: a sentence to reject it."""
    try:
        yield
    except MnemoError as error:
        raise CoreMemoryError(f"Proposal {row.id} no longer applies: {error} Reject it.") from error
