"""A stored message as the rest of Mnemo sees it, and the rules every recall module shares for
its rows: the roles, the default conversation, what counts as pasted text."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from engine.memory.search import from_timestamp

ROLES = ("user", "assistant", "function_call", "function_result", "system")
DEFAULT_CONVERSATION = "default"
# A user message longer than this is taken as pasted text (a mail, a page of a document), which
# may carry instructions the user did not write. In LongMemEval's 51,700 user turns, 99% are
# under 1,264 characters and the 0.6% over 2,000 are pasted CSV, articles and code.
PASTED_CHARS = 2000


def pasted_for(role: str, text: str) -> str | None:
    """A user message long enough to be pasted is stored marked as untrusted."""
    return pasted_reason(text) if role == "user" else None


def pasted_reason(user_text: str) -> str | None:
    """Why a user's message counts as untrusted (it is long enough to be pasted), or None."""
    if len(user_text) <= PASTED_CHARS:
        return None
    return f"written after you pasted a long text ({len(user_text):,} characters)"


COLUMNS = "m.id, m.role, m.text, m.created_at, m.conversation_id, m.name, m.untrusted_reason"


@dataclass(frozen=True)
class MessageHit:
    """A stored message; ``score`` is set when it came from a ranked search."""

    id: int
    role: str
    text: str
    created_at: datetime
    conversation_id: str = DEFAULT_CONVERSATION
    name: str | None = None
    score: float | None = None
    weak: bool = False  # found, but neither clearly close in meaning nor sharing most words
    # Why its text is not the person's own words, or None: pasted text, or a program's message.
    untrusted_reason: str | None = None


@dataclass(frozen=True)
class NewMessage:
    role: str
    text: str
    created_at: datetime | date | str | float | None = None
    conversation_id: str = DEFAULT_CONVERSATION
    name: str | None = None
    # An import keeps what it can: the id (into an empty profile, so that everything that
    # points at a message still does), the reason it was untrusted, and its vector (made by the
    # same embedder).
    id: int | None = None
    untrusted_reason: str | None = None
    vector: Any = None


def hit_from_row(row: Any, score: float | None = None, weak: bool = False) -> MessageHit:
    return MessageHit(
        id=row.id,
        role=row.role,
        text=row.text,
        created_at=from_timestamp(row.created_at),
        conversation_id=row.conversation_id,
        name=row.name,
        score=score,
        weak=weak,
        untrusted_reason=getattr(row, "untrusted_reason", None),
    )


def check_role(role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"unknown message role {role!r}; use one of {', '.join(ROLES)}")
