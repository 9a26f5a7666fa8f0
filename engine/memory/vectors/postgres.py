"""Message vectors in pgvector, for an assistant whose tables are in PostgreSQL.

It answers the same calls as the LanceDB ``VectorTable`` (its filters are the same SQL, so
``RecallSearch`` and ``MessageVectors`` do not know which one they have), with an HNSW index for
cosine distance that PostgreSQL keeps up by itself: no upkeep thread. Which embedder made the
vectors is kept in ``vector_table`` (Lance keeps it in the table's schema).
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pyarrow as pa
from sqlalchemy import Engine, text

from engine.embed.base import Embedder
from engine.memory.snapshots import NOT_ON_POSTGRES, SnapshotError
from engine.memory.vectors import VectorTable

# An add at least this large, and at least as large as the table, builds the index once after
# the rows are in instead of growing it row by row, which costs about ten times as much a row
# (recall_backends.py).
BULK_ROWS = 20_000
# Bytes a bulk build may use: what its graph needs, between PostgreSQL's default and 1 GB.
MIN_BUILD_MEMORY, MAX_BUILD_MEMORY = 64 << 20, 1 << 30
# HNSW's candidate list: pgvector's default (40), at least the search's limit, and more for a
# filtered search (the index drops the rows the filter refuses after it has picked its
# candidates, so a narrow filter could leave fewer than the limit).
EF_SEARCH = 40
FILTERED_EF_SEARCH = 400
_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)


class PgVectorTable(VectorTable):
    """A table ``name`` (id, part, conversation_id, role, created_at, vector) in the profile's
    schema; ``part`` tells a message's own vector (0) from its sentences'."""

    def __init__(self, engine: Engine, name: str, embedder: Embedder) -> None:
        # The LanceDB side of VectorTable (its connection, upkeep and tags) is not used here.
        self.name = name
        self._engine = engine
        self._embedder = embedder
        self._write_lock = threading.RLock()
        with engine.begin() as connection:
            connection.execute(
                text(
                    "CREATE TABLE IF NOT EXISTS vector_table "
                    "(name TEXT PRIMARY KEY, embedder TEXT NOT NULL, dim INTEGER NOT NULL)"
                )
            )
            row = connection.execute(
                text("SELECT embedder, dim FROM vector_table WHERE name = :name"), {"name": name}
            ).first()
            if row is None:
                self._recreate(connection)
            else:
                self._add_part_column(connection)
        self._stored = (str(row[0]), int(row[1])) if row else (embedder.name, embedder.dim)
        self.mismatch = self._describe_mismatch()

    def _recreate(self, connection: Any) -> None:
        """(Re)create the table for the current embedder, empty."""
        name, dim = self.name, self._embedder.dim
        connection.execute(text(f"DROP TABLE IF EXISTS {name}"))
        connection.execute(
            text(
                f"CREATE TABLE {name} (id BIGINT NOT NULL, part INTEGER NOT NULL DEFAULT 0, "
                "conversation_id TEXT NOT NULL, role TEXT NOT NULL, "
                f"created_at DOUBLE PRECISION NOT NULL, vector vector({dim}) NOT NULL, "
                "PRIMARY KEY (id, part))"
            )
        )
        self._create_index(connection)
        connection.execute(text(f"CREATE INDEX {name}_conversation ON {name} (conversation_id)"))
        connection.execute(
            text(
                "INSERT INTO vector_table VALUES (:name, :embedder, :dim) ON CONFLICT (name) "
                "DO UPDATE SET embedder = excluded.embedder, dim = excluded.dim"
            ),
            {"name": name, "embedder": self._embedder.name, "dim": dim},
        )

    def _add_part_column(self, connection: Any) -> None:
        """A table made before sentence vectors gains ``part`` (its rows are whole messages)."""
        has_part = connection.execute(
            text(
                "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = :name AND column_name = 'part'"
            ),
            {"name": self.name},
        ).first()
        if has_part is None:
            connection.execute(
                text(
                    f"ALTER TABLE {self.name} ADD COLUMN part INTEGER NOT NULL DEFAULT 0, "
                    f"DROP CONSTRAINT {self.name}_pkey, ADD PRIMARY KEY (id, part)"
                )
            )

    def _create_index(self, connection: Any) -> None:
        connection.execute(
            text(
                f"CREATE INDEX IF NOT EXISTS {self.name}_hnsw ON {self.name} "
                "USING hnsw (vector vector_cosine_ops)"
            )
        )

    @contextmanager
    def bulk(self, rows: int) -> Iterator[None]:
        """Around the adds of ``rows`` new rows (an import): when there are many, compared with
        the table, the index is dropped first and built once at the end (BULK_ROWS)."""
        existing = self.count()
        if rows < BULK_ROWS or rows < existing:
            yield
            return
        with self._write_lock:
            with self._engine.begin() as connection:
                connection.execute(text(f"DROP INDEX IF EXISTS {self.name}_hnsw"))
            try:
                yield
            finally:  # searches scan every row until it is back: build it even after a failure
                with self._engine.begin() as connection:
                    # A graph larger than this memory builds several times slower.
                    graph = (existing + rows) * 2 * 4 * self._stored[1]
                    memory = max(MIN_BUILD_MEMORY, min(MAX_BUILD_MEMORY, graph))
                    connection.execute(text(f"SET LOCAL maintenance_work_mem = {memory // 1024}"))
                    self._create_index(connection)

    @property
    def stored_embedder(self) -> tuple[str, int]:
        return self._stored

    def replace_all(self, rows: list[dict[str, Any]]) -> None:
        """Start again, empty, for the current embedder (re-embedding refills it)."""
        if rows:
            raise ValueError("a pgvector table is refilled through add()")
        with self._write_lock, self._engine.begin() as connection:
            self._recreate(connection)
        self._stored = (self._embedder.name, self._embedder.dim)
        self.mismatch = None

    # -- writes: binary COPY, the fastest way in (each chunk of vectors is one round trip) ----

    def add(self, rows: list[dict[str, Any]] | pa.Table) -> None:
        table = rows if isinstance(rows, pa.Table) else pa.Table.from_pylist(rows)
        if table.num_rows == 0:
            return
        self.require_current_embedder()
        vectors = np.asarray(table.column("vector").to_pylist(), dtype=">f4")
        ids = table.column("id").to_pylist()
        numbers = (
            table.column("part").to_pylist()
            if "part" in table.column_names
            else [0] * table.num_rows
        )
        conversations = table.column("conversation_id").to_pylist()
        roles = table.column("role").to_pylist()
        times = table.column("created_at").to_pylist()
        vector_head = struct.pack(">ihh", 4 + 4 * vectors.shape[1], vectors.shape[1], 0)
        parts = [_COPY_HEADER]
        for i, vector in enumerate(vectors):
            conversation, role = conversations[i].encode(), roles[i].encode()
            parts.append(struct.pack(">hiqii", 6, 8, ids[i], 4, numbers[i] or 0))
            parts.append(struct.pack(">i", len(conversation)) + conversation)
            parts.append(struct.pack(">i", len(role)) + role)
            parts.append(struct.pack(">id", 8, times[i]))
            parts.append(vector_head + vector.tobytes())
        parts.append(struct.pack(">h", -1))
        with self._write_lock:
            raw = self._engine.raw_connection()
            try:
                columns = "id, part, conversation_id, role, created_at, vector"
                with (
                    raw.cursor() as cursor,  # type: ignore[attr-defined]
                    cursor.copy(f"COPY {self.name} ({columns}) FROM STDIN (FORMAT BINARY)") as copy,
                ):
                    copy.write(b"".join(parts))
                raw.commit()
            finally:
                raw.close()

    def upsert(self, rows: list[dict[str, Any]], key: str = "id") -> None:
        raise NotImplementedError("message vectors are added and deleted, never updated")

    def update_values(self, where: str, values: dict[str, str]) -> None:
        raise NotImplementedError("message vectors are added and deleted, never updated")

    def delete(self, where: str) -> None:
        with self._write_lock, self._engine.begin() as connection:
            connection.execute(text(f"DELETE FROM {self.name} WHERE {where}"))

    # -- reads -----------------------------------------------------------------------------

    def count(self, where: str | None = None) -> int:
        clause = f" WHERE {where}" if where else ""
        with self._engine.connect() as connection:
            return int(
                connection.execute(text(f"SELECT count(*) FROM {self.name}{clause}")).scalar_one()
            )

    def rows(
        self,
        where: str | None,
        columns: list[str],
        limit: int | None = None,
        offset: int = 0,
        newest_first: bool = False,
    ) -> list[dict[str, Any]]:
        sql = f"SELECT {', '.join(columns)} FROM {self.name}"
        if where:
            sql += f" WHERE {where}"
        sql += " ORDER BY created_at DESC" if newest_first else " ORDER BY id"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        if offset:
            sql += f" OFFSET {int(offset)}"
        with self._engine.connect() as connection:
            rows = [dict(row._mapping) for row in connection.execute(text(sql))]
        for row in rows:
            if "vector" in row:
                row["vector"] = _parse_vector(row["vector"])
        return rows

    def vector_search(
        self, vector: np.ndarray, limit: int, where: str | None, columns: list[str]
    ) -> list[dict[str, Any]]:
        """Nearest rows by cosine distance. HNSW picks its candidates before a filter applies,
        so a filtered search that comes back short is answered again exactly."""
        self.require_current_embedder()
        literal = _vector_literal(vector)
        sql = (
            f"SELECT {', '.join(columns)}, vector <=> CAST(:q AS vector) AS _distance "
            f"FROM {self.name}{f' WHERE {where}' if where else ''} "
            "ORDER BY vector <=> CAST(:q AS vector) LIMIT :limit"
        )
        ef_search = max(limit, FILTERED_EF_SEARCH if where else EF_SEARCH)
        with self._engine.connect() as connection:
            connection.execute(text(f"SET LOCAL hnsw.ef_search = {min(ef_search, 1000)}"))
            found = connection.execute(text(sql), {"q": literal, "limit": limit}).all()
            if where and len(found) < limit:
                connection.execute(text("SET LOCAL enable_indexscan = off"))
                found = connection.execute(text(sql), {"q": literal, "limit": limit}).all()
            connection.rollback()
        return [dict(row._mapping) for row in found]

    # -- what LanceDB needed and PostgreSQL does itself ------------------------------------

    def tag(self, name: str) -> int:
        raise SnapshotError(NOT_ON_POSTGRES)

    def restore_tag(self, name: str) -> None:
        raise SnapshotError(NOT_ON_POSTGRES)

    def has_tag(self, name: str) -> bool:
        return False

    def drop_tag(self, name: str) -> None:
        pass

    def maintain(self) -> None:
        pass

    def scrub(self) -> None:
        """Rows deleted in PostgreSQL leave the tables at the server's next vacuum; what its
        own backups keep is the server's (a forget says so)."""

    def wait_for_maintenance(self) -> None:
        pass

    def close(self) -> None:
        pass


def _vector_literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"


def _parse_vector(value: Any) -> np.ndarray:
    if isinstance(value, str):
        return np.array(value.strip("[]").split(","), dtype=np.float32)
    return np.asarray(value, dtype=np.float32)
