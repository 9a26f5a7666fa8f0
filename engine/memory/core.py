"""Core memory: small labelled blocks that are always in the model's context.

Every change is stored as a version with provenance (who made it and what caused it), so a block's
history can be listed and any edit undone. Edits that would break a block's rules (too long,
read-only) are refused with a sentence that says what to do; the block is never half-written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy import Engine, func
from sqlmodel import Session, col, select

from engine import clock
from engine.db import committed, row_or_missing, write_session
from engine.db.schema import CoreBlock, CoreBlockVersion
from engine.errors import CoreMemoryError, NotFoundError
from engine.memory.search import from_timestamp
from engine.memory.tombstones import Tombstones
from engine.resources import resource_path

Author = Literal["user", "model", "system"]
CauseKind = Literal["message", "document", "version", "cli", "proposal"]
EditAction = Literal["append", "replace"]
DEFAULT_CHAR_LIMIT = 2000
# The most a block may hold: every block is in every prompt, and Letta's own files go up to
# 20,000 characters; a larger limit would only let one block fill the context window.
MAX_CHAR_LIMIT = 20_000
DEFAULT_BLOCKS = {
    "persona": "Who the assistant is: its name, personality and how it speaks.",
    "human": "What the assistant knows about the user: name, preferences, important facts.",
}


@dataclass(frozen=True)
class Block:
    label: str
    value: str
    description: str
    char_limit: int
    read_only: bool
    updated_at: datetime

    @property
    def room_left(self) -> int:
        return self.char_limit - len(self.value)


@dataclass(frozen=True)
class BlockVersion:
    """One change to a block: what it was before and after, by whom, and why."""

    id: int
    label: str
    action: str
    old_value: str | None
    new_value: str | None
    author: str
    cause_kind: str | None
    cause_ref: str | None
    created_at: datetime


def _block(row: CoreBlock) -> Block:
    return Block(
        label=row.label,
        value=row.value,
        description=row.description,
        char_limit=row.char_limit,
        read_only=bool(row.read_only),
        updated_at=from_timestamp(row.updated_at),
    )


def _version(row: CoreBlockVersion) -> BlockVersion:
    assert row.id is not None
    return BlockVersion(
        id=row.id,
        label=row.label,
        action=row.action,
        old_value=row.old_value,
        new_value=row.new_value,
        author=row.author,
        cause_kind=row.cause_kind,
        cause_ref=row.cause_ref,
        created_at=from_timestamp(row.created_at),
    )


# A label is a name, or a path of names as Letta Code writes them ("system/human/family",
# "/note_directory"): each part letters, digits, '-', '_' or '.', never '.' or '..' alone.
_LABEL = re.compile(r"/?(?!\.{1,2}(?:/|$))[\w.-]+(?:/(?!\.{1,2}(?:/|$))[\w.-]+)*", re.ASCII)
MAX_LABEL_CHARS = 100


def _check_label(label: str) -> None:
    if not _LABEL.fullmatch(label) or len(label) > MAX_LABEL_CHARS:
        raise CoreMemoryError(
            f"{label[:MAX_LABEL_CHARS]!r} cannot be a block label; use up to "
            f"{MAX_LABEL_CHARS} letters, digits, '-', '_' or '.', in parts joined by '/'."
        )


# What a new profile's blocks say before anything is known (resources/prompts/human.txt).
EMPTY_TEXTS = frozenset({"Nothing is known about the user yet."})


class CoreMemory:
    """The profile's core blocks (``persona``, ``human`` and any the user adds)."""

    def __init__(self, engine: Engine, tombstones: Tombstones | None = None) -> None:
        self._engine = engine
        self._tombstones = tombstones  # what the person asked to forget: never written back
        self._ensure_defaults()

    def _ensure_defaults(self) -> None:
        with write_session(self._engine) as session:
            for position, (label, description) in enumerate(DEFAULT_BLOCKS.items()):
                if session.get(CoreBlock, label) is None:
                    value = resource_path(f"prompts/{label}.txt").read_text("utf-8").strip()
                    self._create(
                        session,
                        label,
                        value,
                        description,
                        DEFAULT_CHAR_LIMIT,
                        False,
                        position,
                        "system",
                    )
            session.commit()

    # -- reading -------------------------------------------------------------------------------

    def blocks(self) -> list[Block]:
        with Session(self._engine) as session:
            rows = session.exec(
                select(CoreBlock).order_by(col(CoreBlock.position), col(CoreBlock.label))
            ).all()
            return [_block(row) for row in rows]

    def block(self, label: str) -> Block:
        with Session(self._engine) as session:
            return _block(self._row(session, label))

    def get(self, label: str) -> str:
        return self.block(label).value

    def history(self, label: str) -> list[BlockVersion]:
        """Every change of a block, oldest first (including those of a removed block)."""
        with Session(self._engine) as session:
            rows = session.exec(
                select(CoreBlockVersion)
                .where(CoreBlockVersion.label == label)
                .order_by(col(CoreBlockVersion.id))
            ).all()
            if not rows:
                self._row(session, label)  # raises NotFoundError for an unknown block
            return [_version(row) for row in rows]

    # -- changing ------------------------------------------------------------------------------

    def set(
        self,
        label: str,
        value: str,
        *,
        author: Author = "user",
        cause_kind: CauseKind | None = None,
        cause_ref: str | None = None,
    ) -> Block:
        """Replace a block's whole text."""
        return self._write(label, lambda _old: value, "set", author, cause_kind, cause_ref)

    def append(
        self,
        label: str,
        content: str,
        *,
        author: Author = "user",
        cause_kind: CauseKind | None = None,
        cause_ref: str | None = None,
    ) -> Block:
        """Add a line to the end of a block."""
        return self._write(label, _appender(content), "append", author, cause_kind, cause_ref)

    def replace(
        self,
        label: str,
        old_content: str,
        new_content: str,
        *,
        author: Author = "user",
        cause_kind: CauseKind | None = None,
        cause_ref: str | None = None,
    ) -> Block:
        """Replace the first occurrence of ``old_content`` (which must be there) in a block."""
        return self._write(
            label,
            _replacer(label, old_content, new_content),
            "replace",
            author,
            cause_kind,
            cause_ref,
        )

    def preview(
        self, label: str, action: EditAction, content: str, old_content: str | None = None
    ) -> tuple[str, str]:
        """The block's text before and after an append or replace, without changing anything.

        Raises the same ``CoreMemoryError`` the edit itself would (unknown or read-only block,
        missing text to replace, over the limit), so a proposal can be refused up front.
        """
        block = self.block(label)
        new_value = self._checked_edit(
            label,
            block.value,
            block.char_limit,
            bool(block.read_only),
            _edit_for(label, action, content, old_content),
        )
        return block.value, new_value

    def apply_in(
        self,
        session: Session,
        label: str,
        action: EditAction,
        content: str,
        old_content: str | None,
        *,
        author: Author,
        cause_kind: CauseKind,
        cause_ref: str | None,
    ) -> int | None:
        """Apply an append or replace inside the caller's transaction; return the version id.

        Approving a proposal uses this so that the block's change and the proposal's new status
        are committed together.
        """
        version = self._apply(
            session,
            label,
            _edit_for(label, action, content, old_content),
            action,
            author,
            cause_kind,
            cause_ref,
        )
        if version is None:
            return None
        session.flush()
        return version.id

    def undo(self, label: str, version_id: int | None = None, *, author: Author = "user") -> Block:
        """Restore the text a block had before one of its changes (by default the latest).

        The restore is itself a new version, so an undo can be undone too.
        """
        versions = [v for v in self.history(label) if v.action != "create"]
        if not versions:
            raise CoreMemoryError(f"The {label} block has no change to undo.")
        if version_id is None:
            target = versions[-1]
        else:
            matching = [v for v in versions if v.id == version_id]
            if not matching:
                raise NotFoundError(f"The {label} block has no version {version_id} to undo.")
            target = matching[0]
        if target.action == "remove":
            raise CoreMemoryError(f"The {label} block was removed; add it again to restore it.")
        restored = target.old_value or ""
        return self._write(label, lambda _old: restored, "undo", author, "version", str(target.id))

    def add_block_in(
        self,
        session: Session,
        label: str,
        value: str = "",
        *,
        description: str = "",
        char_limit: int = DEFAULT_CHAR_LIMIT,
        read_only: bool = False,
        author: Author = "user",
    ) -> Block:
        """A new block; nothing is committed here: the caller's transaction (an approved
        proposal's) does, or ``add_block`` does for itself."""
        if self._tombstones is not None:
            value = self._tombstones.redact(value)
        self.check_new_block(label, value, char_limit)
        if session.get(CoreBlock, label) is not None:
            raise CoreMemoryError(f"There is already a block named {label}.")
        position = (session.exec(select(func.max(CoreBlock.position))).one() or 0) + 1
        row = self._create(
            session, label, value, description, char_limit, read_only, position, author
        )
        session.flush()
        return _block(row)

    add_block = committed(add_block_in)

    def remove_block(self, label: str, *, author: Author = "user") -> None:
        if label in DEFAULT_BLOCKS:
            raise CoreMemoryError(
                f"The {label} block is built in and cannot be removed; clear its text instead."
            )
        with write_session(self._engine) as session:
            row = self._row(session, label)
            session.add(self._version_row(label, "remove", row.value, None, author, None, None))
            session.delete(row)
            session.commit()

    def configure(
        self,
        label: str,
        *,
        description: str | None = None,
        char_limit: int | None = None,
        read_only: bool | None = None,
    ) -> Block:
        """Change a block's settings (the user's call, so it works on read-only blocks too)."""
        with write_session(self._engine) as session:
            row = self._row(session, label)
            if char_limit is not None:
                if char_limit > MAX_CHAR_LIMIT:
                    raise CoreMemoryError(
                        f"A block holds at most {MAX_CHAR_LIMIT:,} characters (every block is "
                        "in every prompt)."
                    )
                if char_limit < len(row.value):
                    raise CoreMemoryError(
                        f"The {label} block holds {len(row.value)} characters; shorten it before "
                        f"lowering its limit to {char_limit}."
                    )
                row.char_limit = char_limit
            if description is not None:
                row.description = description
            if read_only is not None:
                row.read_only = int(read_only)
            row.updated_at = clock.timestamp()
            session.add(row)
            session.commit()
            return _block(row)

    # -- helpers -------------------------------------------------------------------------------

    @staticmethod
    def _row(session: Session, label: str) -> CoreBlock:
        return row_or_missing(
            session, CoreBlock, label, f"There is no core memory block named {label!r}."
        )

    @classmethod
    def check_new_block(cls, label: str, value: str, char_limit: int) -> None:
        """Why a block could not be added, as a CoreMemoryError naming it; None if it can."""
        _check_label(label)
        if not 1 <= char_limit <= MAX_CHAR_LIMIT:
            raise CoreMemoryError(
                f"The {label} block's character limit is {char_limit:,}; a block holds between "
                f"1 and {MAX_CHAR_LIMIT:,} characters."
            )
        cls._check_fits(label, value, char_limit)

    @staticmethod
    def _check_fits(label: str, value: str, char_limit: int) -> None:
        if len(value) > char_limit:
            raise CoreMemoryError(
                f"The {label} block holds at most {char_limit} characters; the new text has "
                f"{len(value)}, {len(value) - char_limit} too many. Shorten it or summarise "
                "older facts first."
            )

    @staticmethod
    def _version_row(
        label: str,
        action: str,
        old: str | None,
        new: str | None,
        author: str,
        cause_kind: str | None,
        cause_ref: str | None,
    ) -> CoreBlockVersion:
        return CoreBlockVersion(
            label=label,
            action=action,
            old_value=old,
            new_value=new,
            author=author,
            cause_kind=cause_kind,
            cause_ref=cause_ref,
            created_at=clock.timestamp(),
        )

    def _create(
        self,
        session: Session,
        label: str,
        value: str,
        description: str,
        char_limit: int,
        read_only: bool,
        position: int,
        author: str,
    ) -> CoreBlock:
        row = CoreBlock(
            label=label,
            value=value,
            description=description,
            char_limit=char_limit,
            read_only=int(read_only),
            position=position,
            updated_at=clock.timestamp(),
        )
        session.add(row)
        session.add(self._version_row(label, "create", None, value, author, None, None))
        return row

    def _write(
        self,
        label: str,
        edit: Callable[[str], str],
        action: str,
        author: Author,
        cause_kind: str | None,
        cause_ref: str | None,
    ) -> Block:
        with write_session(self._engine) as session:
            self._apply(session, label, edit, action, author, cause_kind, cause_ref)
            session.commit()
            return _block(self._row(session, label))

    def _apply(
        self,
        session: Session,
        label: str,
        edit: Callable[[str], str],
        action: str,
        author: str,
        cause_kind: str | None,
        cause_ref: str | None,
    ) -> CoreBlockVersion | None:
        row = self._row(session, label)
        new_value = self._checked_edit(label, row.value, row.char_limit, bool(row.read_only), edit)
        if new_value == row.value:
            return None
        version = self._version_row(
            label, action, row.value, new_value, author, cause_kind, cause_ref
        )
        session.add(version)
        row.value = new_value
        row.updated_at = clock.timestamp()
        session.add(row)
        return version

    def _checked_edit(
        self,
        label: str,
        value: str,
        char_limit: int,
        read_only: bool,
        edit: Callable[[str], str],
    ) -> str:
        if read_only:
            raise CoreMemoryError(
                f"The {label} block is read-only; make it editable first if it should change."
            )
        new_value = edit(value)
        if self._tombstones is not None:
            new_value = self._tombstones.redact(new_value)
        if len(new_value) > char_limit:
            room = char_limit - len(value)
            raise CoreMemoryError(
                f"The {label} block holds at most {char_limit} characters and has {room} "
                f"left; this edit would make it {len(new_value)} characters. Shorten the "
                "text or replace older content instead."
            )
        return new_value


def _appender(content: str) -> Callable[[str], str]:
    """A line added to a block; the first line takes the place of the block's empty-state text
    ("Nothing is known about the user yet.", which would read wrong above what is known)."""
    return lambda old: f"{old}\n{content}" if old and old not in EMPTY_TEXTS else content


def _replacer(label: str, old_content: str, new_content: str) -> Callable[[str], str]:
    def edit(old: str) -> str:
        if not old_content or old_content not in old:
            raise CoreMemoryError(
                f"The {label} block does not contain {old_content!r}; quote its text exactly."
            )
        return old.replace(old_content, new_content, 1)

    return edit


def _edit_for(
    label: str, action: EditAction, content: str, old_content: str | None
) -> Callable[[str], str]:
    if action == "append":
        return _appender(content)
    return _replacer(label, old_content or "", content)
