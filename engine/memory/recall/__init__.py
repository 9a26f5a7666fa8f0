"""Recall memory: every message ever exchanged, in SQLite, searchable by words, date and meaning.

``RecallStore`` is the one door. Writing is here (one insert path, for one message or many);
searching is in ``recall.search``; the message vectors (embedding, repair after a crash,
re-embedding) are in ``recall.vectors``; what a stored message is, is in ``recall.messages``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import date, datetime
from typing import Any

from sqlalchemy import Engine, text
from sqlmodel import Session

from engine import clock
from engine.cross_encoder import CrossEncoder
from engine.db import on_postgres, write_session, writing
from engine.db.schema import Message
from engine.errors import NotFoundError, redact
from engine.memory.recall import keyword_text
from engine.memory.recall.conversations import all_conversations, move_in
from engine.memory.recall.messages import (
    COLUMNS,
    DEFAULT_CONVERSATION,
    PASTED_CHARS,
    ROLES,
    MessageHit,
    NewMessage,
    check_role,
    hit_from_row,
    pasted_for,
    pasted_reason,
)
from engine.memory.recall.search import RecallSearch
from engine.memory.recall.vectors import VECTOR_SCHEMA, WHOLE_MESSAGES, MessageVectors
from engine.memory.search import Page, SearchMode, to_timestamp
from engine.memory.tombstones import Tombstones
from engine.memory.vectors import VectorTable, quote_sql

__all__ = [
    "DEFAULT_CONVERSATION",
    "PASTED_CHARS",
    "ROLES",
    "VECTOR_SCHEMA",
    "MessageHit",
    "NewMessage",
    "RecallStore",
    "RecallTransaction",
    "pasted_reason",
]

log = logging.getLogger("mnemo.recall")

# What a new message row is given (the id comes from the database unless an import brings it).
_MESSAGES = Message.__table__  # type: ignore[attr-defined]
_INSERTED = (
    "conversation_id",
    "role",
    "name",
    "text",
    "search_text",
    "created_at",
    "untrusted_reason",
)
# PostgreSQL's id sequence does not move past ids given explicitly; SQLite needs no such step.
_ADVANCE_IDS = (
    "SELECT setval(pg_get_serial_sequence('message', 'id'), (SELECT max(id) FROM message))"
)


class RecallTransaction:
    """Messages and other rows (through ``session``) that commit together or not at all."""

    def __init__(self, session: Session, tombstones: Tombstones | None = None) -> None:
        self.session = session
        self.rows: list[dict[str, Any]] = []  # what was added, for the vectors after commit
        self.committed = False  # the rows are in, whatever befalls their vectors after
        self._tombstones = tombstones

    def add(
        self,
        role: str,
        text_: str,
        *,
        name: str | None = None,
        conversation_id: str = DEFAULT_CONVERSATION,
        created_at: datetime | date | str | float | None = None,
        untrusted_reason: str | None = None,
    ) -> int:
        message = NewMessage(role, text_, created_at, conversation_id, name)
        return self.add_many([message], untrusted_reason)[0]

    def add_many(
        self, messages: Iterable[NewMessage], untrusted_reason: str | None = None
    ) -> list[int]:
        """Insert messages (the one insert path) and refresh the keyword index of their
        neighbours, once per conversation from its first new turn."""
        now = clock.timestamp()
        added: list[dict[str, Any]] = []
        for message in messages:
            check_role(message.role)
            clean = redact(message.text)  # a reply or function result with an API key in it
            if self._tombstones is not None:  # what the person asked to forget stays out
                clean = self._tombstones.redact(clean)
            row: dict[str, Any] = {
                "id": message.id,
                "conversation_id": message.conversation_id,
                "role": message.role,
                "name": message.name,
                "text": clean,
                "search_text": clean,
                "created_at": to_timestamp(message.created_at) or now,
                "untrusted_reason": untrusted_reason
                or message.untrusted_reason
                or pasted_for(message.role, message.text),
            }
            if message.vector is not None and clean == message.text:
                row["vector"] = message.vector  # (an imported one of a changed text would not do)
            added.append(row)
        self._insert(added)
        firsts: dict[str, int] = {}
        for row in added:
            if row["role"] in keyword_text.TURN_ROLES:
                firsts.setdefault(row["conversation_id"], row["id"])
        session = self.session
        for conversation_id, first_id in firsts.items():
            keyword_text.refresh(
                lambda sql, params: session.execute(text(sql), params).all(),
                lambda sql, params: session.execute(text(sql), params),
                conversation_id,
                first_id,
            )
        self.rows += added
        return [row["id"] for row in added]

    def _insert(self, rows: list[dict[str, Any]]) -> None:
        """Insert the rows and set their ids: those given (an import keeps them), else new ones,
        many to a statement (on PostgreSQL a statement per message was a round trip each)."""
        connection = self.session.connection()
        new = [row for row in rows if row["id"] is None]
        given = [
            {key: row[key] for key in ("id", *_INSERTED)} for row in rows if row["id"] is not None
        ]
        if new:
            insert = _MESSAGES.insert().returning(_MESSAGES.c.id, sort_by_parameter_order=True)
            values = [{key: row[key] for key in _INSERTED} for row in new]
            for row, found in zip(new, connection.execute(insert, values), strict=True):
                row["id"] = found.id
        if given:
            connection.execute(_MESSAGES.insert(), given)
            if on_postgres(connection):  # its id sequence does not move past given ids
                connection.execute(text(_ADVANCE_IDS))


class RecallStore:
    """All messages of a profile. Thread-safe: each call uses its own pooled connection."""

    def __init__(
        self, engine: Engine, vectors: VectorTable, tombstones: Tombstones | None = None
    ) -> None:
        self._engine = engine
        self._vectors = vectors
        self._tombstones = tombstones
        self._index = MessageVectors(engine, vectors)
        self._search = RecallSearch(engine, vectors, self._index.only_turns)

    def use_cross_encoder(self, encoder: CrossEncoder | None) -> None:
        """Order the head of hybrid searches by ``encoder`` (None: by the fused scores)."""
        self._search.cross_encoder = encoder

    # -- writing -------------------------------------------------------------------------------

    def add(
        self,
        role: str,
        text_: str,
        *,
        created_at: datetime | date | str | float | None = None,
        conversation_id: str = DEFAULT_CONVERSATION,
        name: str | None = None,
        untrusted_reason: str | None = None,
    ) -> int:
        """Store one message (committed before this returns) and return its id;
        ``untrusted_reason`` says why its text is not the person's (a program sent it)."""
        message = NewMessage(
            role, text_, created_at, conversation_id, name, untrusted_reason=untrusted_reason
        )
        return self.add_many([message])[0]

    def add_many(self, messages: Iterable[NewMessage | Mapping[str, Any]]) -> list[int]:
        """Store many messages in one transaction, then embed them in batches; return their ids."""
        batch = [NewMessage(**m) if isinstance(m, Mapping) else m for m in messages]
        if not batch:
            return []
        with self.transaction(embed_failure_raises=True) as transaction:
            return transaction.add_many(batch)

    def embed_missing(self) -> None:
        """Embed the messages marked as having no vector (the health check's repair)."""
        self._index.repair_missing_vectors()

    def titles(self, conversation_ids: set[str]) -> dict[str, str]:
        """These conversations' titles as the conversation list shows them ("ChatGPT: Kyoto
        trip", or the first thing the person said)."""
        if not conversation_ids:
            return {}
        return {
            info.id: info.label
            for info in all_conversations(self._engine)
            if info.id in conversation_ids
        }

    def vectors_of(self, ids: Sequence[int]) -> dict[int, Any]:
        """The stored vectors of these messages (an export carries them)."""
        if not ids:
            return {}
        where = f"id IN ({', '.join(str(int(i)) for i in ids)}) AND {WHOLE_MESSAGES}"
        return {
            int(row["id"]): row["vector"] for row in self._vectors.rows(where, ["id", "vector"])
        }

    @contextmanager
    def transaction(
        self,
        *,
        embed_failure_raises: bool = False,
        between: Callable[[], None] | None = None,
    ) -> Iterator[RecallTransaction]:
        """Write messages together with other rows (a step's call, result and proposals).

        Nothing is visible until the block ends without an error; then the messages are
        embedded (``MessageVectors``: made without a lock, written under the vector table's). A
        failed embedding leaves the committed messages for the next open to embed, unless
        ``embed_failure_raises`` (a bulk import wants to know). With ``between`` (a bulk
        import's), they are embedded a few at a time, and ``between`` called before each few: a
        chat turn's own messages go first, and the import may wait (or stop) there.
        The block holds SQLite's write lock from its start, so what it checks against the
        tombstones holds until it commits (``engine.db.write_session``).
        """
        with write_session(self._engine) as session:
            transaction = RecallTransaction(session, self._tombstones)
            yield transaction
            session.commit()
            transaction.committed = True
        self._embed_committed(transaction.rows, embed_failure_raises, between)

    def _embed_committed(
        self,
        rows: list[dict[str, Any]],
        failure_raises: bool,
        between: Callable[[], None] | None = None,
    ) -> None:
        try:
            if between is None:
                self._index.embed(rows)
            else:
                self._index.embed_yielding(rows, between)
        except Exception:  # committed already; the next open embeds what is missing
            if failure_raises:
                raise
            log.exception("could not embed %d new messages", len(rows))

    def delete(self, message_id: int) -> None:
        """Forget a message: its row, its vector, and its words in its neighbours' index text."""
        with writing(self._engine).begin() as connection:
            row = connection.execute(
                text("SELECT conversation_id FROM message WHERE id = :id"), {"id": message_id}
            ).first()
            if row is None:
                raise NotFoundError(f"There is no message {message_id} in recall memory.")
            connection.execute(text("DELETE FROM message WHERE id = :id"), {"id": message_id})
            keyword_text.refresh_around(
                lambda sql, params: connection.execute(text(sql), params).all(),
                lambda sql, rows: connection.execute(text(sql), rows),
                row.conversation_id,
                message_id,
            )
        self._vectors.delete(f"id = {int(message_id)}")

    def move_conversation(self, old: str, new: str) -> None:
        """Give a conversation another id, in the database and in its messages' vectors."""
        with self._index.lock:
            with writing(self._engine).begin() as connection:
                move_in(connection, old, new)
            self._vectors.update_values(
                f"conversation_id = {quote_sql(old)}", {"conversation_id": quote_sql(new)}
            )

    # -- the vectors ---------------------------------------------------------------------------

    @property
    def embedder_mismatch(self) -> str | None:
        """A sentence describing a change of embedder that needs a re-embed, or None."""
        return self._index.mismatch

    def reembed(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Recompute every message vector with the current embedder (ask the user first)."""
        return self._index.reembed(progress)

    def rebuild_vectors(self) -> int:
        """Make every message vector again in a new table (the old one cannot be read)."""
        return self._index.rebuild()

    def wait_until_indexed(self) -> None:
        """Block until the start-up repair of missing vectors has finished."""
        self._index.wait_until_indexed()

    # -- reading -------------------------------------------------------------------------------

    def get(self, message_id: int) -> MessageHit:
        with self._engine.connect() as connection:
            row = connection.execute(
                text(f"SELECT {COLUMNS} FROM message m WHERE m.id = :id"), {"id": message_id}
            ).first()
        if row is None:
            raise NotFoundError(f"There is no message {message_id} in recall memory.")
        return hit_from_row(row)

    def latest_id(self) -> int:
        """The newest message id (0 for an empty profile)."""
        with self._engine.connect() as connection:
            return int(
                connection.execute(text("SELECT coalesce(max(id), 0) FROM message")).scalar_one()
            )

    def count(self, conversation_id: str | None = None) -> int:
        sql = "SELECT count(*) FROM message"
        params: dict[str, Any] = {}
        if conversation_id is not None:
            sql += " WHERE conversation_id = :conversation_id"
            params["conversation_id"] = conversation_id
        with self._engine.connect() as connection:
            return int(connection.execute(text(sql), params).scalar_one())

    def untrusted_reason(self, conversation_id: str) -> str | None:
        """Why this conversation's context may carry text the user did not write, or None.

        Once read, such text stays in the model's context: in the window, then folded into the
        summary when the window is evicted. So the whole conversation counts, and it still does
        after a restart."""
        with self._engine.connect() as connection:  # the partial index answers at once
            return connection.execute(
                text(
                    "SELECT untrusted_reason FROM message WHERE conversation_id = :conversation_id "
                    "AND untrusted_reason IS NOT NULL ORDER BY id LIMIT 1"
                ),
                {"conversation_id": conversation_id},
            ).scalar()

    def recent(
        self, limit: int = 20, conversation_id: str = DEFAULT_CONVERSATION
    ) -> list[MessageHit]:
        """The newest messages of a conversation, oldest first."""
        return self._conversation(conversation_id, "ORDER BY m.id DESC LIMIT :limit", limit=limit)[
            ::-1
        ]

    def since(self, start_id: int, conversation_id: str = DEFAULT_CONVERSATION) -> list[MessageHit]:
        """A conversation's messages from ``start_id`` on, oldest first (the context window)."""
        return self._conversation(
            conversation_id, "AND m.id >= :start_id ORDER BY m.id", start_id=start_id
        )

    def _conversation(
        self, conversation_id: str, condition: str, **values: int
    ) -> list[MessageHit]:
        """A conversation's messages under ``condition`` (more SQL after its WHERE clause)."""
        with self._engine.connect() as connection:
            rows = connection.execute(
                text(
                    f"SELECT {COLUMNS} FROM message m "
                    f"WHERE m.conversation_id = :conversation_id {condition}"
                ),
                {"conversation_id": conversation_id, **values},
            ).all()
        return [hit_from_row(row) for row in rows]

    # -- searching -------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        limit: int = 10,
        page: int = 1,
        *,
        mode: SearchMode = "hybrid",
        start: datetime | date | str | None = None,
        end: datetime | date | str | None = None,
        roles: Sequence[str] | None = None,
        conversation_id: str | None = None,
    ) -> Page[MessageHit]:
        """Messages ranked by words (BM25), by meaning (cosine), or both fused (the default)."""
        return self._search.search(
            query,
            limit,
            page,
            mode=mode,
            start=start,
            end=end,
            roles=roles,
            conversation_id=conversation_id,
        )

    def search_by_date(
        self,
        start: datetime | date | str | None,
        end: datetime | date | str | None,
        limit: int = 10,
        page: int = 1,
        *,
        roles: Sequence[str] | None = None,
        conversation_id: str | None = None,
    ) -> Page[MessageHit]:
        """Messages from ``start`` to ``end``, oldest first (a date ``end`` covers its day)."""
        return self._search.search_by_date(
            start, end, limit, page, roles=roles, conversation_id=conversation_id
        )

    def close(self) -> None:
        self._index.wait_until_indexed()
