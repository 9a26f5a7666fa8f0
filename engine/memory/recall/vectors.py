"""The vectors of recall messages, in LanceDB beside the SQLite rows they belong to.

Messages are committed to SQLite first; their vectors follow (this module, keyed by
message id). The ``embedded`` flag marks which messages have a vector, so a crash between the two
writes is repaired when the profile next opens (on a thread of its own) instead of leaving a
message unfindable by meaning. The same start-up thread also gives messages stored before
neighbour indexing existed their keyword context, once.

Several processes embed one profile's messages (the window, an import, the start-up repair of
another). Vectors are made without any lock (a chunk of an import takes seconds of the cores),
then written under the vector table's lock, which every process's writers take turns by
(``_write``): only for the messages that still wait for one (``embedded = 0``) and whose text is
still the one embedded (a forget may have changed it meanwhile), and marked done in the same
hold. So a message is never embedded twice, a forgotten text's vector is never written, and a
chat's message never waits for an import's embedding, only for its write.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import pyarrow as pa
from sqlalchemy import Engine, text

from engine.db import on_postgres, writing
from engine.memory.recall import keyword_text
from engine.memory.search import chunked
from engine.memory.vectors import VectorTable, quote_sql

log = logging.getLogger("mnemo.recall")

EMBED_CHUNK = 2048
# Older messages given their sentence vectors at a time (a few seconds of embedding).
BACKFILL_CHUNK = 200
# Messages a bulk import embeds at a time between looks at a chat turn (about 2 s of embedding
# on a 2-core machine: a reply waits no longer for the vectors' lock).
YIELD_CHUNK = 32
EMBEDDED_ROLES = keyword_text.TURN_ROLES  # the messages that get a vector (see ``embed``)

# A person's message often asks one thing and mentions another in passing ("Any tips for a
# reusable water bottle? By the way, I just cancelled my Forbes subscription."). Its one vector
# averages the two, so a later question about the second finds it weakly. So each sentence of a
# user's message of several sentences gets a vector of its own as well (``part`` 1, 2, ...; the
# message's is part 0), and a search by meaning scores a message by its best part. Sentences of
# under SENTENCE_WORDS words ("Thanks!", "Hi Mel!") say too little to stand for a message, and
# at most MAX_SENTENCE_PARTS are kept (a pasted article). The assistant's replies explain one
# subject at length and get none. Held folds (docs/benchmarks.md): LongMemEval dev all@10 +5.6,
# LoCoMo +0.0 (its turns are short lines of one subject).
SENTENCE_ROLES = ("user",)
SENTENCE_WORDS = 8
MAX_SENTENCE_PARTS = 20

VECTOR_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("conversation_id", pa.string()),
        pa.field("role", pa.string()),
        pa.field("created_at", pa.float64()),
        pa.field("vector", pa.list_(pa.float32(), 1)),  # width set from the embedder
        pa.field("part", pa.int32()),  # 0 (or NULL, before parts): the whole message
    ]
)
WHOLE_MESSAGES = "(part IS NULL OR part = 0)"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def sentences(text: str) -> list[str]:
    """The sentences of ``text``: split after ".", "!" or "?" and at line breaks."""
    return [part.strip() for part in _SENTENCE_END.split(text) if part.strip()]


def sentence_parts(role: str, text: str) -> list[str]:
    """The sentences of a message that get vectors of their own (none for one sentence)."""
    if role not in SENTENCE_ROLES:
        return []
    found = sentences(text)
    if len(found) < 2:
        return []
    return [s for s in found if len(s.split()) >= SENTENCE_WORDS][:MAX_SENTENCE_PARTS]


def _refresh_context(connection: sqlite3.Connection, conversation_id: str, first_id: int) -> None:
    keyword_text.refresh(
        lambda sql, params: connection.execute(sql, params).fetchall(),
        connection.executemany,
        conversation_id,
        first_id,
    )


def _table(rows: Sequence[Mapping[str, Any]], vectors: np.ndarray, parts: list[int]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([row["id"] for row in rows], pa.int64()),
            "conversation_id": pa.array([row["conversation_id"] for row in rows], pa.string()),
            "role": pa.array([row["role"] for row in rows], pa.string()),
            "created_at": pa.array([row["created_at"] for row in rows], pa.float64()),
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(vectors.reshape(-1), pa.float32()), vectors.shape[1]
            ),
            "part": pa.array(parts, pa.int32()),
        }
    )


def _rows_to_embed(
    connection: Any, where: str, params: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """What the vectors of the messages ``where`` picks are made from, oldest first."""
    sql = (
        f"SELECT id, conversation_id, role, text, created_at FROM message WHERE {where} ORDER BY id"
    )
    return [dict(row._mapping) for row in connection.execute(text(sql), params or {})]


class MessageVectors:
    """Embedding, repairing and re-embedding the message vectors (and the one-time context
    indexing of old messages, which the same start-up repair runs)."""

    def __init__(self, engine: Engine, vectors: VectorTable) -> None:
        self._engine = engine
        self._vectors = vectors
        self.lock = vectors.writer_lock  # held while vectors are written and marked (``_write``)
        # Set once the table holds only EMBEDDED_ROLES' vectors (older versions embedded every
        # row; the start-up repair removes the rest): a search of those roles then needs no
        # filter, which slows every vector search (recall_search.py).
        self.only_turns = threading.Event()
        self._repair_thread = threading.Thread(
            target=self.repair_missing_vectors, name="mnemo-recall-repair", daemon=True
        )
        self._repair_thread.start()

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

    def embed(self, rows: Sequence[Mapping[str, Any]], *, replace: bool = False) -> None:
        """Give the user's and the assistant's messages their vectors, and mark every row done
        (``_write``); ``replace``: vectors a crash left of these messages go first (the repair).

        Function and system rows get none: a result quotes messages and passages that have
        vectors of their own (a meaning search would find each fact twice), and a call or a
        notice is the app's plumbing. They were 6 of the 8 messages of a typical self-managed
        turn, and most of its engine time (turn_overhead.py). Words still find them.
        """
        if self._vectors.mismatch:
            return  # left unembedded; re-embedding after the user agrees picks them up
        with self._vectors.bulk(len(rows)):
            for chunk in chunked(rows, EMBED_CHUNK):
                turns = [row for row in chunk if row["role"] in EMBEDDED_ROLES]
                made = self._vector_rows(turns) if turns else None  # the cores, no lock
                self._write(chunk, made, replace)

    def embed_yielding(
        self, rows: Sequence[Mapping[str, Any]], between: Callable[[], None]
    ) -> None:
        """``embed`` committed rows ``YIELD_CHUNK`` at a time, with ``between`` called before
        each chunk (a bulk import's: it lets a chat turn through, and waits or stops)."""
        for chunk in chunked(rows, YIELD_CHUNK):
            between()
            self.embed(chunk)

    def _write(
        self, rows: Sequence[Mapping[str, Any]], made: pa.Table | None, replace: bool
    ) -> None:
        """Under the lock: the vectors ``made`` of those of ``rows`` that still wait for one,
        with the text they were made from, and every one of those marked done."""
        with self.lock:
            waiting = self._still_waiting(rows)
            if made is not None and len(made):
                kept = pa.array([int(i) in waiting for i in made.column("id").to_pylist()])
                made = made.filter(kept)
                if replace and waiting:
                    listed = ",".join(map(str, sorted(waiting)))
                    self._vectors.delete(f"id IN ({listed})")
                if len(made):
                    self._vectors.add(made)
            if waiting:
                listed = ",".join(map(str, sorted(waiting)))
                with writing(self._engine).begin() as connection:
                    connection.execute(
                        text(f"UPDATE message SET embedded = 1 WHERE id IN ({listed})")
                    )

    def _still_waiting(self, rows: Sequence[Mapping[str, Any]]) -> set[int]:
        """The ids of ``rows`` that have no vector yet and still hold the text given."""
        if not rows:
            return set()
        ids = ",".join(str(int(row["id"])) for row in rows)
        with self._engine.connect() as connection:
            now: dict[int, str] = dict(
                connection.execute(
                    text(f"SELECT id, text FROM message WHERE id IN ({ids}) AND embedded = 0")
                ).all()
            )
        return {int(row["id"]) for row in rows if now.get(int(row["id"])) == row["text"]}

    def _vector_rows(self, rows: Sequence[Mapping[str, Any]]) -> pa.Table:
        """The rows' vectors (those they bring, from an import of the same embedder, else
        new) and their sentences' (``sentence_parts``). Several rows are embedded with their
        sentences in one call, so the embedder's batches stay full (a bulk import's few
        messages at a time, in two calls, embedded 18% slower); one row alone, as
        ``VectorTable.embed`` keeps its vector as its query's too."""
        given = [row.get("vector") for row in rows]
        owners, sentences, parts = self._sentences(rows)
        if all(vector is not None for vector in given):
            vectors = np.asarray(given, dtype=np.float32)
            part_vectors = self._embed_or_none(sentences, vectors.shape[1])
        elif len(rows) == 1:
            vectors = self._vectors.embed([rows[0]["text"]])
            part_vectors = self._embed_or_none(sentences, vectors.shape[1])
        else:
            made = self._vectors.embed([row["text"] for row in rows] + sentences)
            vectors, part_vectors = made[: len(rows)], made[len(rows) :]
        return pa.concat_tables(
            [_table(rows, vectors, [0] * len(rows)), _table(owners, part_vectors, parts)]
        )

    def _embed_or_none(self, texts: list[str], dim: int) -> np.ndarray:
        return self._vectors.embed(texts) if texts else np.zeros((0, dim), np.float32)

    @staticmethod
    def _sentences(
        rows: Sequence[Mapping[str, Any]],
    ) -> tuple[list[Mapping[str, Any]], list[str], list[int]]:
        """The rows' sentences (``sentence_parts``): each one's row, text and part 1, 2, ..."""
        owners, texts, parts = [], [], []
        for row in rows:
            for number, sentence in enumerate(sentence_parts(row["role"], row["text"]), 1):
                owners.append(row)
                texts.append(sentence)
                parts.append(number)
        return owners, texts, parts

    def _part_rows(self, rows: Sequence[Mapping[str, Any]], dim: int) -> pa.Table:
        """The vectors of the rows' sentences (``sentence_parts``), parts 1, 2, ..."""
        owners, texts, parts = self._sentences(rows)
        return _table(owners, self._embed_or_none(texts, dim), parts)

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
            if on_postgres(self._engine):  # rows are locked as they are written; no BEGIN IMMEDIATE
                with writing(self._engine).begin() as connection:
                    keyword_text.refresh(
                        lambda sql, params: connection.execute(text(sql), params).all(),
                        lambda sql, rows: connection.execute(text(sql), rows),
                        conversation_id,
                        0,
                    )
                    connection.execute(
                        text("DELETE FROM message_context_pending WHERE conversation_id = :c"),
                        {"c": conversation_id},
                    )
                continue
            with self._immediate() as raw:
                _refresh_context(raw, conversation_id, 0)
                raw.execute(
                    "DELETE FROM message_context_pending WHERE conversation_id = ?",
                    (conversation_id,),
                )

    def repair_missing_vectors(self) -> None:
        """Embed messages whose vector write was interrupted (a crash between the two stores),
        and give older messages what a newer Mnemo indexes (context words, sentence vectors)."""
        try:
            self._index_pending_contexts()
        except Exception:
            log.exception("could not index message contexts; will retry on next open")
        try:
            with self.lock:  # no writer, here or in another process, is between its two stores
                self._remove_strays()
            self.only_turns.set()
        except Exception:
            log.exception("could not remove stray message vectors; will retry on next open")
        try:
            self._embed_missing()
        except Exception:
            log.exception("could not repair missing message vectors; will retry on next open")
        try:
            self._embed_pending_sentences()
        except Exception:
            log.exception("could not embed older messages' sentences; will retry on next open")

    def _remove_strays(self) -> None:
        others = "role NOT IN (" + ",".join(map(quote_sql, EMBEDDED_ROLES)) + ")"
        if not self._vectors.mismatch and self._vectors.count(others):
            self._vectors.delete(others)
        # Vectors of messages the database never committed (a snapshot's archival side is
        # taken a moment after its database copy): a later message would reuse the id.
        with self._engine.connect() as connection:
            latest = connection.execute(text("SELECT coalesce(max(id), 0) FROM message")).scalar()
        beyond = f"id > {int(latest or 0)}"
        if self._vectors.count(beyond):
            self._vectors.delete(beyond)

    def _embed_missing(self) -> None:
        with self._engine.connect() as connection:
            rows = _rows_to_embed(connection, "embedded = 0")
        if not rows or self._vectors.mismatch:
            return
        log.info("embedding %d messages left without a vector", len(rows))
        self.embed(rows, replace=True)  # what a crash left of their vectors goes first

    def _embed_pending_sentences(self) -> None:
        """Give the user's messages stored before sentence vectors existed theirs (once, a
        conversation at a time; the messages keep their own vectors meanwhile)."""
        with self._engine.connect() as connection:
            pending = [
                row[0]
                for row in connection.execute(
                    text("SELECT conversation_id FROM message_sentences_pending")
                )
            ]
        roles = ",".join(map(quote_sql, SENTENCE_ROLES))
        for conversation_id in pending:
            if self._vectors.mismatch:
                return  # the re-embed the user is asked for makes them
            with self._engine.connect() as connection:
                rows = _rows_to_embed(
                    connection,
                    f"conversation_id = :c AND role IN ({roles}) AND embedded = 1",
                    {"c": conversation_id},
                )
            for chunk in chunked(rows, BACKFILL_CHUNK):
                parts = self._part_rows(chunk, self._vectors.stored_embedder[1])  # no lock
                with self.lock:
                    ids = ",".join(str(row["id"]) for row in chunk)
                    self._vectors.delete(f"id IN ({ids}) AND part > 0")  # a retry starts clean
                    unchanged = self._still_held(chunk)  # not changed by a forget meanwhile
                    keep = pa.array([int(i) in unchanged for i in parts.column("id").to_pylist()])
                    self._vectors.add(parts.filter(keep))
            with writing(self._engine).begin() as connection:
                connection.execute(
                    text("DELETE FROM message_sentences_pending WHERE conversation_id = :c"),
                    {"c": conversation_id},
                )

    def _still_held(self, rows: Sequence[Mapping[str, Any]]) -> set[int]:
        """The ids of ``rows`` whose vectors stand and whose text is still the one given."""
        ids = ",".join(str(int(row["id"])) for row in rows)
        with self._engine.connect() as connection:
            now: dict[int, str] = dict(
                connection.execute(
                    text(f"SELECT id, text FROM message WHERE id IN ({ids}) AND embedded = 1")
                ).all()
            )
        return {int(row["id"]) for row in rows if now.get(int(row["id"])) == row["text"]}

    @property
    def mismatch(self) -> str | None:
        """A sentence describing a change of embedder that needs a re-embed, or None."""
        return self._vectors.mismatch

    def rebuild(self) -> int:
        """Make every message vector again from the messages, in a new empty table (the table
        could not be read: a file of it was lost); returns how many messages."""
        with self.lock:
            self._vectors.rebuild_empty()
            with writing(self._engine).begin() as connection:
                connection.execute(text("UPDATE message SET embedded = 0"))
                rows = _rows_to_embed(connection, "1 = 1")
            self.embed(rows)
        return len(rows)

    def reembed(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Recompute every message vector with the current embedder (ask the user first)."""
        with self.lock:
            self._vectors.replace_all([])
            with writing(self._engine).begin() as connection:
                connection.execute(text("UPDATE message SET embedded = 0"))
                rows = _rows_to_embed(connection, "1 = 1")
            with self._vectors.bulk(len(rows)):
                for done, chunk in enumerate(chunked(rows, EMBED_CHUNK)):
                    self.embed(chunk)
                    if progress:
                        progress(min((done + 1) * EMBED_CHUNK, len(rows)), len(rows))
        return len(rows)

    def wait_until_indexed(self) -> None:
        """Block until the start-up repair of missing vectors has finished."""
        self._repair_thread.join()
