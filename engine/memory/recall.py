"""Recall memory: every message ever exchanged, in SQLite, searchable by words, date and meaning.

Messages are committed to SQLite first; their vectors follow in LanceDB (``recall_vectors``, keyed
by message id). The ``embedded`` flag marks which messages have a vector, so a crash between the two
writes is repaired on the next open instead of leaving a message unfindable by meaning.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time as time_module
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import pyarrow as pa
from sqlalchemy import Engine, text
from sqlmodel import Session

from engine.db.schema import Message
from engine.errors import NotFoundError
from engine.memory import context_index
from engine.memory.search import (
    Page,
    SearchMode,
    addressed_role,
    candidate_pools,
    check_paging,
    chunked,
    coordinated,
    from_timestamp,
    fts5_match,
    fuse,
    is_weak,
    prefer_role,
    to_timestamp,
)
from engine.memory.vectors import VectorTable, quote_sql

log = logging.getLogger("mnemo.recall")

ROLES = ("user", "assistant", "function_call", "function_result", "system")
DEFAULT_CONVERSATION = "default"
# A user message longer than this is taken as pasted text (a mail, a page of a document), which
# may carry instructions the user did not write. In LongMemEval's 51,700 user turns, 99% are
# under 1,264 characters and the 0.6% over 2,000 are pasted CSV, articles and code.
PASTED_CHARS = 2000


def _pasted(role: str, text: str) -> str | None:
    """A user message long enough to be pasted is stored marked as untrusted."""
    return pasted_reason(text) if role == "user" else None


def pasted_reason(user_text: str) -> str | None:
    """Why a user's message counts as untrusted (it is long enough to be pasted), or None."""
    if len(user_text) <= PASTED_CHARS:
        return None
    return f"written after you pasted a long text ({len(user_text):,} characters)"


EMBED_CHUNK = 2048

VECTOR_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("conversation_id", pa.string()),
        pa.field("role", pa.string()),
        pa.field("created_at", pa.float64()),
        pa.field("vector", pa.list_(pa.float32(), 1)),  # width set from the embedder
    ]
)

_COLUMNS = "m.id, m.role, m.text, m.created_at, m.conversation_id, m.name"


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


@dataclass(frozen=True)
class NewMessage:
    role: str
    text: str
    created_at: datetime | date | str | float | None = None
    conversation_id: str = DEFAULT_CONVERSATION
    name: str | None = None


class RecallTransaction:
    """Messages and other rows (through ``session``) that commit together or not at all."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.rows: list[dict[str, Any]] = []

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
        _check_role(role)
        message = Message(
            conversation_id=conversation_id,
            role=role,
            name=name,
            text=text_,
            created_at=to_timestamp(created_at) or time_module.time(),
            search_text=text_,
            untrusted_reason=untrusted_reason or _pasted(role, text_),
        )
        self.session.add(message)
        self.session.flush()
        assert message.id is not None
        self.rows.append(message.model_dump())
        if role in context_index.TURN_ROLES:
            session = self.session
            context_index.refresh(
                lambda sql, params: session.execute(text(sql), params).all(),
                lambda sql, params: session.execute(text(sql), params),
                conversation_id,
                message.id,
            )
        return message.id


def _hit(row: Any, score: float | None = None, weak: bool = False) -> MessageHit:
    return MessageHit(
        id=row.id,
        role=row.role,
        text=row.text,
        created_at=from_timestamp(row.created_at),
        conversation_id=row.conversation_id,
        name=row.name,
        score=score,
        weak=weak,
    )


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"unknown message role {role!r}; use one of {', '.join(ROLES)}")


def _refresh_context(connection: sqlite3.Connection, conversation_id: str, first_id: int) -> None:
    context_index.refresh(
        lambda sql, params: connection.execute(sql, params).fetchall(),
        connection.executemany,
        conversation_id,
        first_id,
    )


class RecallStore:
    """All messages of a profile. Thread-safe: each call uses its own pooled connection."""

    def __init__(self, engine: Engine, vectors: VectorTable) -> None:
        self._engine = engine
        self._vectors = vectors
        self._embed_lock = threading.Lock()
        self._repair_thread = threading.Thread(
            target=self._repair_missing_vectors, name="mnemo-recall-repair", daemon=True
        )
        self._repair_thread.start()

    # -- writing -------------------------------------------------------------------------------

    def add(
        self,
        role: str,
        text_: str,
        *,
        created_at: datetime | date | str | float | None = None,
        conversation_id: str = DEFAULT_CONVERSATION,
        name: str | None = None,
    ) -> int:
        """Store one message (committed before this returns) and return its id."""
        return self.add_many([NewMessage(role, text_, created_at, conversation_id, name)])[0]

    def add_many(self, messages: Iterable[NewMessage | Mapping[str, Any]]) -> list[int]:
        """Store many messages in one transaction, then embed them in batches; return their ids."""
        rows: list[dict[str, Any]] = []
        now = time_module.time()
        for message in messages:
            if isinstance(message, Mapping):
                message = NewMessage(**message)
            _check_role(message.role)
            rows.append(
                {
                    "conversation_id": message.conversation_id,
                    "role": message.role,
                    "name": message.name,
                    "text": message.text,
                    "created_at": to_timestamp(message.created_at) or now,
                    "untrusted_reason": _pasted(message.role, message.text),
                }
            )
        if not rows:
            return []
        # Holding the embed lock from insert to vector write keeps the start-up repair from
        # seeing these rows half-done and embedding them a second time.
        with self._embed_lock:
            self._insert(rows)
            self._embed(rows)
        return [row["id"] for row in rows]

    @contextmanager
    def transaction(self) -> Iterator[RecallTransaction]:
        """Write messages together with other rows (a step's call, result and proposals).

        Nothing is visible until the block ends without an error; then the messages are embedded.
        The embed lock keeps the start-up repair from embedding them a second time meanwhile.
        """
        with self._embed_lock:
            with Session(self._engine) as session:
                transaction = RecallTransaction(session)
                yield transaction
                session.commit()
            try:
                self._embed(transaction.rows)
            except Exception:  # committed already; the next open embeds what is missing
                log.exception("could not embed %d new messages", len(transaction.rows))

    def _insert(self, rows: list[dict[str, Any]]) -> None:
        """Insert rows with consecutive ids, set on each row, in one immediate transaction.

        BEGIN IMMEDIATE takes the write lock before reading max(id), so another process
        writing at the same time cannot take the same ids.
        """
        with self._immediate() as connection:
            first = connection.execute("SELECT coalesce(max(id), 0) + 1 FROM message")
            first_id = first.fetchone()[0]
            for offset, row in enumerate(rows):
                row["id"] = first_id + offset
            connection.executemany(
                "INSERT INTO message (id, conversation_id, role, name, text, created_at, "
                "search_text, untrusted_reason) VALUES (:id, :conversation_id, :role, :name, "
                ":text, :created_at, :text, :untrusted_reason)",
                rows,
            )
            firsts: dict[str, int] = {}
            for row in rows:
                if row["role"] in context_index.TURN_ROLES:
                    firsts.setdefault(row["conversation_id"], row["id"])
            for conversation_id, first_id in firsts.items():
                _refresh_context(connection, conversation_id, first_id)

    @contextmanager
    def _immediate(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that takes SQLite's write lock at once (BEGIN IMMEDIATE)."""
        raw = self._engine.raw_connection()
        try:
            connection = raw.driver_connection
            assert isinstance(connection, sqlite3.Connection)
            connection.execute("BEGIN IMMEDIATE")
            try:
                yield connection
                connection.commit()
            except BaseException:
                connection.rollback()
                raise
        finally:
            raw.close()

    def _embed(self, rows: Sequence[Mapping[str, Any]]) -> None:
        if self._vectors.mismatch:
            return  # left unembedded; re-embedding after the user agrees picks them up
        for chunk in chunked(rows, EMBED_CHUNK):
            vectors = self._vectors.embed([row["text"] for row in chunk])
            self._vectors.add(
                pa.table(
                    {
                        "id": pa.array([row["id"] for row in chunk], pa.int64()),
                        "conversation_id": [row["conversation_id"] for row in chunk],
                        "role": [row["role"] for row in chunk],
                        "created_at": pa.array([row["created_at"] for row in chunk], pa.float64()),
                        "vector": pa.FixedSizeListArray.from_arrays(
                            pa.array(vectors.reshape(-1)), vectors.shape[1]
                        ),
                    }
                )
            )
            ids = ",".join(str(row["id"]) for row in chunk)
            with self._engine.begin() as connection:
                connection.execute(text(f"UPDATE message SET embedded = 1 WHERE id IN ({ids})"))

    def _index_pending_contexts(self) -> None:
        """Give messages stored before neighbour indexing existed their context (once)."""
        with self._engine.connect() as connection:
            pending = [
                row[0]
                for row in connection.execute(
                    text("SELECT conversation_id FROM message_context_pending")
                )
            ]
        for conversation_id in pending:
            with self._immediate() as connection:
                _refresh_context(connection, conversation_id, 0)
                connection.execute(
                    "DELETE FROM message_context_pending WHERE conversation_id = ?",
                    (conversation_id,),
                )

    def _repair_missing_vectors(self) -> None:
        """Embed messages whose vector write was interrupted (a crash between the two stores)."""
        try:
            self._index_pending_contexts()
        except Exception:
            log.exception("could not index message contexts; will retry on next open")
        try:
            with self._embed_lock:
                with self._engine.connect() as connection:
                    rows = [
                        dict(row._mapping)
                        for row in connection.execute(
                            text(
                                "SELECT id, conversation_id, role, text, created_at FROM message "
                                "WHERE embedded = 0 ORDER BY id"
                            )
                        )
                    ]
                if not rows or self._vectors.mismatch:
                    return
                log.info("embedding %d messages left without a vector", len(rows))
                for chunk in chunked(rows, EMBED_CHUNK):
                    ids = ",".join(str(row["id"]) for row in chunk)
                    self._vectors.delete(f"id IN ({ids})")
                self._embed(rows)
        except Exception:
            log.exception("could not repair missing message vectors; will retry on next open")

    @property
    def embedder_mismatch(self) -> str | None:
        """A sentence describing a change of embedder that needs a re-embed, or None."""
        return self._vectors.mismatch

    def reembed(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Recompute every message vector with the current embedder (ask the user first)."""
        with self._embed_lock:
            self._vectors.replace_all([])
            with self._engine.begin() as connection:
                connection.execute(text("UPDATE message SET embedded = 0"))
                rows = [
                    dict(row._mapping)
                    for row in connection.execute(
                        text("SELECT id, conversation_id, role, text, created_at FROM message")
                    )
                ]
            for done, chunk in enumerate(chunked(rows, EMBED_CHUNK)):
                self._embed(chunk)
                if progress:
                    progress(min((done + 1) * EMBED_CHUNK, len(rows)), len(rows))
        return len(rows)

    def wait_until_indexed(self) -> None:
        """Block until the start-up repair of missing vectors has finished."""
        self._repair_thread.join()

    def delete(self, message_id: int) -> None:
        """Forget a message: its row, its vector, and its words in its neighbours' index text."""
        with self._engine.begin() as connection:
            row = connection.execute(
                text("SELECT conversation_id FROM message WHERE id = :id"), {"id": message_id}
            ).first()
            if row is None:
                raise NotFoundError(f"There is no message {message_id} in recall memory.")
            connection.execute(text("DELETE FROM message WHERE id = :id"), {"id": message_id})
            context_index.refresh_around(
                lambda sql, params: connection.execute(text(sql), params).all(),
                lambda sql, rows: connection.execute(text(sql), rows),
                row.conversation_id,
                message_id,
            )
        self._vectors.delete(f"id = {int(message_id)}")

    # -- reading -------------------------------------------------------------------------------

    def get(self, message_id: int) -> MessageHit:
        with self._engine.connect() as connection:
            row = connection.execute(
                text(f"SELECT {_COLUMNS} FROM message m WHERE m.id = :id"), {"id": message_id}
            ).first()
        if row is None:
            raise NotFoundError(f"There is no message {message_id} in recall memory.")
        return _hit(row)

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
                    f"SELECT {_COLUMNS} FROM message m "
                    f"WHERE m.conversation_id = :conversation_id {condition}"
                ),
                {"conversation_id": conversation_id, **values},
            ).all()
        return [_hit(row) for row in rows]

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
        check_paging(limit, page)
        where, params = self._filters(start, end, roles, conversation_id)
        clause = f"WHERE {where}" if where else ""
        return self._page(
            f"SELECT {_COLUMNS}, NULL AS score FROM message m {clause} "
            "ORDER BY m.created_at, m.id LIMIT :limit OFFSET :offset",
            f"SELECT count(*) FROM message m {clause}",
            params,
            limit,
            page,
        )

    def _page(
        self, sql: str, count_sql: str, params: dict[str, Any], limit: int, page: int
    ) -> Page[MessageHit]:
        """Run a paged query and its count in one read transaction.

        In WAL mode a transaction reads one snapshot, so a concurrent writer can never make the
        page and its total disagree.
        """
        with self._engine.connect() as connection:
            connection.exec_driver_sql("BEGIN")
            total = int(connection.execute(text(count_sql), params).scalar_one())
            rows = connection.execute(
                text(sql), {**params, "limit": limit, "offset": (page - 1) * limit}
            ).all()
            connection.rollback()
        return Page([_hit(row, row.score) for row in rows], total, page, limit)

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
        check_paging(limit, page)
        where, params = self._filters(start, end, roles, conversation_id)
        if mode == "keyword":
            return self._keyword_page(query, limit, page, where, params)
        keyword_pool, semantic_pool = candidate_pools(limit, page)
        notes: list[str] = []
        keyword, keyword_weight = (
            ({}, 0.0)
            if mode == "semantic"
            else self._keyword_scores(query, keyword_pool, where, params)
        )
        if mode == "hybrid" and self._vectors.mismatch:
            notes.append(self._vectors.mismatch)  # words still work while vectors wait
            semantic: dict[int, float] = {}
        else:
            semantic = self._semantic_scores(
                query, semantic_pool, start, end, roles, conversation_id
            )
        if mode == "hybrid":
            ranked = fuse(keyword, semantic, keyword_weight)
            role = addressed_role(query)
            if role and (not roles or len(set(roles) & set(context_index.TURN_ROLES)) > 1):
                rows = self._rows_by_id([i for i, _ in ranked], "m.id, m.role")
                ranked = prefer_role(ranked, {i: row.role for i, row in rows.items()}, role)
        else:
            ranked = sorted(semantic.items(), key=lambda item: item[1], reverse=True)
        chosen = ranked[(page - 1) * limit : page * limit]
        rows = self._rows_by_id([message_id for message_id, _ in chosen])
        hits = [
            _hit(
                rows[message_id],
                score,
                is_weak(semantic.get(message_id), rows[message_id].text, query),
            )
            for message_id, score in chosen
            if message_id in rows
        ]
        return Page(hits, len(ranked), page, limit, notes)

    # -- helpers -------------------------------------------------------------------------------

    @staticmethod
    def _filters(
        start: datetime | date | str | None,
        end: datetime | date | str | None,
        roles: Sequence[str] | None,
        conversation_id: str | None,
    ) -> tuple[str, dict[str, Any]]:
        clauses: list[str] = []
        params: dict[str, Any] = {}
        if start is not None:
            clauses.append("m.created_at >= :start")
            params["start"] = to_timestamp(start)
        if end is not None:
            clauses.append("m.created_at <= :end")
            params["end"] = to_timestamp(end, end_of_day=True)
        if roles:
            for role in roles:
                _check_role(role)
            clauses.append("m.role IN (" + ",".join(f"'{role}'" for role in roles) + ")")
        if conversation_id is not None:
            clauses.append("m.conversation_id = :conversation_id")
            params["conversation_id"] = conversation_id
        return " AND ".join(clauses), params

    def _keyword_page(
        self, query: str, limit: int, page: int, where: str, params: dict[str, Any]
    ) -> Page[MessageHit]:
        match = fts5_match(query)
        if match is None:
            return Page([], 0, page, limit)
        extra = f"AND {where}" if where else ""
        base = (
            "FROM message_fts JOIN message m ON m.id = message_fts.rowid "
            f"WHERE message_fts MATCH :match {extra}"
        )
        return self._page(
            f"SELECT {_COLUMNS}, -bm25(message_fts) AS score {base} "
            "ORDER BY bm25(message_fts) LIMIT :limit OFFSET :offset",
            f"SELECT count(*) {base}",
            {**params, "match": match},
            limit,
            page,
        )

    def _keyword_scores(
        self, query: str, limit: int, where: str, params: dict[str, Any]
    ) -> tuple[dict[int, float], float]:
        """BM25 of the best ``limit`` messages, scaled by how many of the query's words each
        one's indexed text holds, and the keyword side's weight (``search.coordinated``)."""
        match = fts5_match(query)
        if match is None:
            return {}, 0.0
        extra = f"AND {where}" if where else ""
        with self._engine.connect() as connection:
            rows = connection.execute(
                text(
                    "SELECT message_fts.rowid AS id, -bm25(message_fts) AS score, "
                    "m.search_text AS indexed FROM message_fts "
                    "JOIN message m ON m.id = message_fts.rowid "
                    f"WHERE message_fts MATCH :match {extra} "
                    "ORDER BY bm25(message_fts) LIMIT :limit"
                ),
                {**params, "match": match, "limit": limit},
            ).all()
        return coordinated(
            {row.id: float(row.score) for row in rows}, {row.id: row.indexed for row in rows}, query
        )

    def _semantic_scores(
        self,
        query: str,
        limit: int,
        start: datetime | date | str | None,
        end: datetime | date | str | None,
        roles: Sequence[str] | None,
        conversation_id: str | None,
    ) -> dict[int, float]:
        clauses = []
        if start is not None:
            clauses.append(f"created_at >= {to_timestamp(start)!r}")
        if end is not None:
            clauses.append(f"created_at <= {to_timestamp(end, end_of_day=True)!r}")
        if roles:
            clauses.append("role IN (" + ",".join(quote_sql(role) for role in roles) + ")")
        if conversation_id is not None:
            clauses.append(f"conversation_id = {quote_sql(conversation_id)}")
        return self._vectors.similar(query, limit, " AND ".join(clauses) or None)

    def _rows_by_id(self, ids: Sequence[int], columns: str = _COLUMNS) -> dict[int, Any]:
        if not ids:
            return {}
        with self._engine.connect() as connection:
            rows = connection.execute(
                text(
                    f"SELECT {columns} FROM message m WHERE m.id IN "
                    f"({','.join(str(int(i)) for i in ids)})"
                )
            ).all()
        return {row.id: row for row in rows}

    def close(self) -> None:
        self._repair_thread.join()
