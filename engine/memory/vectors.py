"""A LanceDB table of embedded rows, and its upkeep.

Both archival passages and recall's message vectors live in such a table. Besides add, delete and
search, it owns the two chores that keep search fast as a table grows: compaction (``optimize``,
which also folds new rows into the indexes and drops old versions) and an ANN index once the table
is too large for a flat scan. Both run on a background thread so writers never wait for them.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
from lancedb.index import FTS, IvfPq
from lancedb.query import ColumnOrdering

from engine.embed.base import Embedder
from engine.errors import EmbedderMismatchError

log = logging.getLogger("mnemo.vectors")

EMBEDDER_KEY = b"mnemo.embedder"
DIM_KEY = b"mnemo.dim"

# Below this many rows a flat scan is fast enough (~12 ms at 10k rows) and an index is not worth
# its training time; above it search time grows linearly without one.
ANN_INDEX_MIN_ROWS = 20_000
# Compact after this many write operations: each write adds a file and a table version.
OPTIMIZE_EVERY_WRITES = 50
# Versions older than this are pruned by compaction, so the folder does not grow without bound.
KEEP_VERSIONS_FOR = timedelta(minutes=5)
# ANN search settings: probe enough partitions and re-rank with exact distances for recall >= 0.95.
ANN_NPROBES = 32
ANN_REFINE_FACTOR = 10


def quote_sql(value: str) -> str:
    """A string literal for a Lance filter expression."""
    return "'" + value.replace("'", "''") + "'"


class VectorTable:
    """One LanceDB table whose ``vector`` column holds one embedder's vectors."""

    def __init__(
        self,
        connection: lancedb.DBConnection,
        name: str,
        schema: pa.Schema,
        embedder: Embedder,
        *,
        fts_column: str | None = None,
    ) -> None:
        self.name = name
        self._connection = connection
        self._embedder = embedder
        self._fts_column = fts_column
        self._base_schema = schema
        self._write_lock = threading.RLock()
        self._maintenance_lock = threading.Lock()
        self._maintenance_thread: threading.Thread | None = None
        self._writes_since_optimize = 0
        self._closed = False
        if name in connection.list_tables().tables:
            self.table = connection.open_table(name)
        else:
            self.table = self._create(embedder)
        self.mismatch = self._describe_mismatch()
        self._schedule_maintenance()

    # -- embedder bookkeeping ------------------------------------------------------------------

    def _schema_for(self, embedder: Embedder) -> pa.Schema:
        fields = [
            pa.field("vector", pa.list_(pa.float32(), embedder.dim))
            if field.name == "vector"
            else field
            for field in self._base_schema
        ]
        return pa.schema(fields).with_metadata(
            {EMBEDDER_KEY: embedder.name.encode(), DIM_KEY: str(embedder.dim).encode()}
        )

    def _create(self, embedder: Embedder, data: pa.Table | None = None) -> Any:
        schema = self._schema_for(embedder)
        table = self._connection.create_table(self.name, data=data, schema=schema, mode="overwrite")
        if self._fts_column:
            table.create_index(self._fts_column, config=FTS(with_position=False))
        return table

    @property
    def stored_embedder(self) -> tuple[str, int]:
        """Name and dimension of the embedder whose vectors this table holds."""
        metadata = self.table.schema.metadata or {}
        return (
            metadata.get(EMBEDDER_KEY, b"unknown").decode(),
            int(metadata.get(DIM_KEY, b"0")),
        )

    def _describe_mismatch(self) -> str | None:
        name, dim = self.stored_embedder
        if (name, dim) == (self._embedder.name, self._embedder.dim):
            return None
        return (
            f"The {self.name} vectors were made with the embedder {name} ({dim} dimensions) but "
            f"Mnemo is now set to {self._embedder.name} ({self._embedder.dim} dimensions); "
            "re-embed them (`mnemo reembed`) or switch back to the old embedder."
        )

    def require_current_embedder(self) -> None:
        if self.mismatch:
            raise EmbedderMismatchError(self.mismatch)

    def replace_all(self, rows: list[dict[str, Any]]) -> None:
        """Rewrite the table with vectors of the current embedder (after the user agreed)."""
        schema = self._schema_for(self._embedder)
        with self._write_lock:
            self.wait_for_maintenance()
            self.table = self._create(self._embedder, pa.Table.from_pylist(rows, schema=schema))
            self.mismatch = None
        self._schedule_maintenance()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._embedder.embed(texts)

    # -- reads and writes ----------------------------------------------------------------------

    def add(self, rows: list[dict[str, Any]] | pa.Table) -> None:
        if isinstance(rows, list) and not rows:
            return
        self.require_current_embedder()
        with self._write_lock:
            self.table.add(rows)
            self._writes_since_optimize += 1
        self._schedule_maintenance()

    def upsert(self, rows: list[dict[str, Any]], key: str = "id") -> None:
        self.require_current_embedder()
        with self._write_lock:
            self.table.merge_insert(
                key
            ).when_matched_update_all().when_not_matched_insert_all().execute(rows)
            self._writes_since_optimize += 1
        self._schedule_maintenance()

    def delete(self, where: str) -> None:
        with self._write_lock:
            self.table.delete(where)
            self._writes_since_optimize += 1
        self._schedule_maintenance()

    def count(self, where: str | None = None) -> int:
        return int(self.table.count_rows(where))

    def rows(
        self,
        where: str | None,
        columns: list[str],
        limit: int | None = None,
        offset: int = 0,
        newest_first: bool = False,
    ) -> list[dict[str, Any]]:
        """Plain rows (no ranking); ``limit=None`` returns every match."""
        query = self.table.search().select(columns)
        if where:
            query = query.where(where)
        if newest_first:
            query = query.order_by([ColumnOrdering(column_name="created_at", ascending=False)])
        query = query.limit(limit if limit is not None else max(1, self.count(where)))
        if offset:
            query = query.offset(offset)
        return query.to_list()

    def vector_search(
        self, vector: np.ndarray, limit: int, where: str | None, columns: list[str]
    ) -> list[dict[str, Any]]:
        """Nearest rows by cosine distance (``_distance`` in [0, 2])."""
        self.require_current_embedder()
        query: Any = self.table.search(vector.astype(np.float32), vector_column_name="vector")
        query = (
            query.distance_type("cosine")
            .select([*columns, "_distance"])
            .nprobes(ANN_NPROBES)
            .refine_factor(ANN_REFINE_FACTOR)
            .limit(limit)
        )
        if where:
            query = query.where(where, prefilter=True)
        return query.to_list()

    def text_search(
        self, query_text: str, limit: int, where: str | None, columns: list[str]
    ) -> list[dict[str, Any]]:
        """Rows ranked by BM25 over the full-text column (``_score``, higher is better)."""
        if not self._fts_column or not query_text.strip():
            return []
        query = (
            self.table.search(query_text, query_type="fts", fts_columns=self._fts_column)
            .select([*columns, "_score"])
            .limit(limit)
        )
        if where:
            query = query.where(where, prefilter=True)
        return query.to_list()

    # -- upkeep --------------------------------------------------------------------------------

    def _has_vector_index(self) -> bool:
        return any("vector" in index.columns for index in self.table.list_indices())

    def _needs_maintenance(self) -> bool:
        if self.mismatch:
            return False
        if self._writes_since_optimize >= OPTIMIZE_EVERY_WRITES:
            return True
        return not self._has_vector_index() and self.count() >= ANN_INDEX_MIN_ROWS

    def _schedule_maintenance(self) -> None:
        if self._closed or not self._needs_maintenance():
            return
        with self._maintenance_lock:
            if self._maintenance_thread and self._maintenance_thread.is_alive():
                return
            self._maintenance_thread = threading.Thread(
                target=self.maintain, name=f"mnemo-maintain-{self.name}", daemon=True
            )
            self._maintenance_thread.start()

    def maintain(self) -> None:
        """Build the ANN index when the table has grown big enough, then compact."""
        try:
            rows = self.count()
            if rows >= ANN_INDEX_MIN_ROWS and not self._has_vector_index():
                partitions = max(16, int(math.sqrt(rows)))
                log.info(
                    "building ANN index on %s (%d rows, %d partitions)", self.name, rows, partitions
                )
                self.table.create_index(
                    "vector",
                    config=IvfPq(
                        distance_type="cosine",
                        num_partitions=partitions,
                        num_sub_vectors=self._embedder.dim // 8,
                    ),
                )
            with self._write_lock:
                self._writes_since_optimize = 0
                self.table.optimize(cleanup_older_than=KEEP_VERSIONS_FOR)
        except Exception:  # upkeep must never take the app down; searches still work without it
            log.exception(
                "maintenance of %s failed; it will be retried after more writes", self.name
            )

    def wait_for_maintenance(self) -> None:
        thread = self._maintenance_thread
        if thread and thread.is_alive() and thread is not threading.current_thread():
            thread.join()

    def close(self) -> None:
        self._closed = True
        self.wait_for_maintenance()
