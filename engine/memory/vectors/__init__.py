"""A LanceDB table of embedded rows.

Both archival passages and recall's message vectors live in such a table: add, delete, search,
and the snapshots' tags. Its upkeep (compaction, indexing new rows, pruning old versions, the ANN
index) is ``engine.memory.vectors.upkeep``'s.

Several processes may write one table (the window, `mnemo forget`, `mnemo import`, `mnemo mcp`).
Every write, in any of them, holds the table's ``WriterLock`` (``engine.locks``) and starts from
the newest version another may have committed (``_writing``). So two commits never conflict, a
delete sees the rows appended a moment before, and a rewrite (compaction, a forget's scrub) never
deletes the files of an append in progress. A read that finds a data file gone (another process
compacted the table and pruned the version it was reading) reads the newest version again.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pyarrow as pa

from engine.embed.base import Embedder
from engine.embed.kept import keep
from engine.errors import EmbedderMismatchError, VectorTableDamagedError
from engine.locks import WriterLock
from engine.memory.search import RELEVANCE_FLOOR, SearchMode, relevance
from engine.memory.vectors.lance import lancedb
from engine.memory.vectors.upkeep import Upkeep
from engine.memory.vectors.versions import TableVersions
from engine.profile import cache_folder
from engine.resources import resource_path

if TYPE_CHECKING:
    from lancedb import DBConnection

log = logging.getLogger("mnemo.vectors")

EMBEDDER_KEY = b"mnemo.embedder"
DIM_KEY = b"mnemo.dim"

# IVF_SQ (8-bit scalar quantisation) builds several times faster than IVF_PQ and finds nearly all
# of the exact top 10, where PQ's coarser codes lose about half. What it loses is quantisation,
# not probing (more probes did not help), so twice the requested rows are re-ranked with exact
# distances, for a few milliseconds (tests/benchmarks/archival_search.py measures both).
ANN_NPROBES = 20
ANN_REFINE_FACTOR = 2


_background: dict[tuple[str, int], np.ndarray] = {}
_background_lock = threading.Lock()


def background_vectors(embedder: Embedder) -> np.ndarray:
    """The embedder's vectors of everyday sentences on unrelated subjects: computed once per
    computer for an embedder whose vectors are always the same (``deterministic``), kept in the
    user's cache folder; a process's first search by meaning spent 0.3 s making them
    (tests/benchmarks/felt_speed.py)."""
    key = (embedder.name, embedder.dim)
    with _background_lock:
        if key not in _background:
            _background[key] = _background_of(embedder)
        return _background[key]


def _background_of(embedder: Embedder) -> np.ndarray:
    text = resource_path("search/background.txt").read_text("utf-8")
    sentences = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    texts = [embedder.document_prefix + sentence for sentence in sentences]
    if not getattr(embedder, "deterministic", False):  # a stand-in: nothing is kept
        return embedder.embed(texts)
    digest = hashlib.sha256("\n".join([embedder.name, *texts]).encode()).hexdigest()[:16]
    path = cache_folder() / f"background-{digest}-{embedder.dim}.npy"
    try:
        kept = np.load(path)
        if kept.shape == (len(texts), embedder.dim):
            return kept
    except (OSError, ValueError):
        pass  # not there yet, or damaged: made again
    vectors = embedder.embed(texts)
    keep(path, vectors=vectors)
    return vectors


def quote_sql(value: str) -> str:
    """A string literal for a Lance filter expression."""
    return "'" + value.replace("'", "''") + "'"


_query_vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_query_lock = threading.Lock()
QUERY_VECTORS_KEPT = 64


def query_vector(embedder: Embedder, query: str) -> np.ndarray:
    """A query's vector, kept for reuse: one message is searched in recall and in archival, and
    again as the previous message on the next turn (the assisted mode). Read-only."""
    key = (embedder.name, query)
    with _query_lock:
        if key in _query_vectors:
            _query_vectors.move_to_end(key)
            return _query_vectors[key]
    vector = embedder.embed([embedder.query_prefix + query])[0]
    _keep_query_vector(embedder, query, vector)
    return vector


def clear_query_vectors() -> None:
    """Drop the kept query vectors (a forget: a query may have held the text)."""
    with _query_lock:
        _query_vectors.clear()


def _keep_query_vector(embedder: Embedder, query: str, vector: np.ndarray) -> None:
    vector.flags.writeable = False
    with _query_lock:
        _query_vectors[(embedder.name, query)] = vector
        if len(_query_vectors) > QUERY_VECTORS_KEPT:
            _query_vectors.popitem(last=False)


_SQL_TYPES = {"double": "DOUBLE", "string": "STRING", "int64": "BIGINT", "int32": "INT"}
Read = TypeVar("Read")
COMMIT_TRIES = 3  # a commit that conflicts with another writer's is tried again
# What a person calls each table, in a sentence about it.
DESCRIBED = {"recall_vectors": "message vectors", "passages": "archival passages"}


def lock_path_for(connection: DBConnection, name: str) -> Path:
    """Where the writers of table ``name`` take turns (``WriterLock``): beside the tables in a
    folder, or for tables in object storage, in this computer's cache folder."""
    uri = str(connection.uri)
    if "://" not in uri or uri.startswith("file://"):
        return Path(uri.removeprefix("file://")) / "locks" / f"{name}.lock"
    digest = hashlib.sha256(uri.encode()).hexdigest()[:16]
    return cache_folder() / "locks" / f"{digest}-{name}.lock"


def _file_gone(error: Exception) -> bool:
    """Whether LanceDB failed because a file of the version it read is gone."""
    return "Not found" in str(error) or "No such file" in str(error)


class VectorTable(TableVersions):
    """One LanceDB table whose ``vector`` column holds one embedder's vectors."""

    def __init__(
        self,
        connection: DBConnection,
        name: str,
        schema: pa.Schema,
        embedder: Embedder,
        *,
        fts_column: str | None = None,
        key_column: str | None = None,
        lock_path: Path | None = None,
    ) -> None:
        """``lock_path``: the file the table's writers in every process take turns by
        (``lock_path_for`` when not given)."""
        self.name = name
        self._connection = connection
        self._embedder = embedder
        self._fts_column = fts_column
        self._key_column = key_column
        self._base_schema = schema
        self._write_lock: AbstractContextManager[Any] = WriterLock(
            lock_path or lock_path_for(connection, name), f"the {name} vector table"
        )
        self.upkeep = Upkeep(self, self._writing)
        if name in connection.list_tables().tables:
            self.table = connection.open_table(name)
            self._add_missing_columns()
        else:
            self.table = self._create(embedder)
        self.mismatch = self._describe_mismatch()
        self.upkeep.schedule()

    def _add_missing_columns(self) -> None:
        """A column the schema gained since the table was made (``expires_at``) is added,
        empty, to the existing table."""
        have = set(self.table.schema.names)
        missing = [f for f in self._base_schema if f.name not in have and f.name != "vector"]
        if missing:
            self.table.add_columns(
                {f.name: f"CAST(NULL AS {_SQL_TYPES[str(f.type)]})" for f in missing}
            )

    @property
    def writer_lock(self) -> AbstractContextManager[Any]:
        """The lock every writer of this table holds, in every process (re-entrant): a writer
        that must see the table unchanged across several steps holds it around them."""
        return self._write_lock

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Hold the table's lock (every process's writers take turns by it), on its newest
        version: what this process writes builds on what another committed."""
        with self._write_lock:
            self.table.checkout_latest()
            yield

    def _committed(self, write: Callable[[], object]) -> None:
        """``write()`` (inside ``_writing``), again on the newest version if Lance reports a
        commit conflict: a writer that does not take the lock (an older Mnemo, another tool)
        may still have committed between. A conflicting commit wrote nothing, so the retry
        cannot double a row."""
        for attempt in range(COMMIT_TRIES):
            try:
                write()
                return
            except (OSError, RuntimeError, ValueError) as error:
                if "conflict" not in str(error).lower() or attempt == COMMIT_TRIES - 1:
                    raise
                log.warning("a commit to %s conflicted with another writer's; again", self.name)
                self.table.checkout_latest()

    def _reading(self, read: Callable[[], Read]) -> Read:
        """``read()``, once more on the newest version if a file it needed is gone (another
        process compacted the table and pruned the version this one was reading). Gone from
        the newest version too, the table is damaged: said in a sentence with its repair."""
        try:
            return read()
        except (OSError, RuntimeError, ValueError) as error:
            if not _file_gone(error):
                raise
            log.info("a file of %s went while it was read; reading the newest version", self.name)
        self.table.checkout_latest()
        try:
            return read()
        except (OSError, RuntimeError, ValueError) as error:
            if not _file_gone(error):
                raise
            log.exception("%s cannot be read", self.name)
            raise VectorTableDamagedError(
                f"Part of the {DESCRIBED.get(self.name, self.name)} cannot be read: a file of "
                "theirs is missing from the profile folder. Run `mnemo check --repair` (or "
                "Repair in the window's banner) to rebuild them."
            ) from error

    def readable(self) -> bool:
        """Whether every row of the newest version reads (the health check asks)."""
        try:
            self._reading(lambda: self.table.to_arrow())
        except VectorTableDamagedError:
            return False
        return True

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
        self._create_indexes(table)
        return table

    def _create_indexes(self, table: Any) -> None:
        if self._fts_column:
            table.create_index(
                self._fts_column, config=lancedb().index.FTS(with_position=False), replace=True
            )
        if self._key_column:  # lookups by id (get, update, fetching search hits) stay fast
            table.create_index(self._key_column, config=lancedb().index.BTree(), replace=True)

    @property
    def embedder(self) -> Embedder:
        """The embedder that makes this table's new vectors and its queries'."""
        return self._embedder

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

    def use_embedder(self, embedder: Embedder) -> None:
        """Make new vectors and queries with ``embedder`` (a person chose another one): until the
        table is re-embedded, it says that its vectors are another embedder's."""
        with self._write_lock:
            self._embedder = embedder
            self.mismatch = self._describe_mismatch()

    def require_current_embedder(self) -> None:
        if self.mismatch:
            raise EmbedderMismatchError(self.mismatch)

    def replace_all(self, rows: list[dict[str, Any]]) -> None:
        """Rewrite the table with vectors of the current embedder (after the user agreed), as a
        new version of the same table: a snapshot taken before can still bring the old back."""
        schema = self._schema_for(self._embedder)
        self.wait_for_maintenance()
        with self._writing():
            self.table.add(pa.Table.from_pylist(rows, schema=schema), mode="overwrite")
            self._create_indexes(self.table)
            self.mismatch = None
            self.upkeep.recount()
        self.upkeep.schedule()

    @contextmanager
    def bulk(self, rows: int) -> Iterator[None]:
        """Around the adds of many rows (an import); LanceDB needs nothing (its upkeep indexes
        new rows later), pgvector does (``PgVectorTable.bulk``)."""
        yield

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors to store. One text stored alone is usually the newest chat message, which the
        assisted mode searches with next: its vector is kept as that query's too, where the
        embedder reads a query as it reads a text."""
        embedder = self._embedder
        vectors = embedder.embed([embedder.document_prefix + text for text in texts])
        if len(texts) == 1 and embedder.query_prefix == embedder.document_prefix:
            _keep_query_vector(self._embedder, texts[0], vectors[0].copy())
        return vectors

    # -- reads and writes ----------------------------------------------------------------------

    def add(self, rows: list[dict[str, Any]] | pa.Table) -> None:
        if not len(rows):
            return
        self.require_current_embedder()
        with self._writing():
            self._committed(lambda: self.table.add(rows))
            self.upkeep.wrote(len(rows))
        self.upkeep.schedule()

    def upsert(self, rows: list[dict[str, Any]], key: str = "id") -> None:
        self.require_current_embedder()
        with self._writing():
            self._committed(
                lambda: (
                    self.table.merge_insert(key)
                    .when_matched_update_all()
                    .when_not_matched_insert_all()
                    .execute(rows)
                )
            )
            self.upkeep.wrote(len(rows))
        self.upkeep.schedule()

    def update_values(self, where: str, values: dict[str, str]) -> None:
        """Set columns (SQL expressions) of the matching rows, in place."""
        with self._writing():
            self._committed(lambda: self.table.update(where=where, values_sql=values))
            self.upkeep.wrote(0)
        self.upkeep.schedule()

    def delete(self, where: str) -> None:
        with self._writing():
            self._committed(lambda: self.table.delete(where))
            self.upkeep.wrote(0)
        self.upkeep.schedule()

    def count(self, where: str | None = None) -> int:
        return self._reading(lambda: int(self.table.count_rows(where)))

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
            newest = lancedb().query.ColumnOrdering(column_name="created_at", ascending=False)
            query = query.order_by([newest])
        query = query.limit(limit if limit is not None else max(1, self.count(where)))
        if offset:
            query = query.offset(offset)
        return self._reading(query.to_list)

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
        return self._reading(query.to_list)

    def searched_in(self, mode: SearchMode) -> bool:
        """Whether a search in ``mode`` reads these vectors: always by meaning alone (which then
        fails on an embedder mismatch, in words), and in a hybrid search unless they wait for a
        re-embed (words alone answer meanwhile)."""
        return mode == "semantic" or (mode == "hybrid" and not self.mismatch)

    def embed_query(self, query: str) -> None:
        """Embed ``query`` now, for ``similar`` to reuse: a hybrid search calls this before it
        starts its keyword half, because the embedder running beside a search was slow (a
        3 ms query took ~20 ms next to LanceDB's full-text search on 2 cores)."""
        if query.strip():
            query_vector(self._embedder, query)

    def similar(
        self,
        query: str,
        limit: int,
        where: str | None,
        below_floor: list[tuple[Any, float]] | None = None,
    ) -> dict[Any, float]:
        """Ids of the rows nearest to ``query`` with their relevance (``search.relevance``: how
        far their similarity stands above unrelated text's), those above the floor only (the
        others go to ``below_floor`` when it is given, for the retrieval trace). An id with
        several rows (a message's sentences, ``recall.vectors.sentence_parts``) scores its best."""
        best: dict[Any, float] = {}
        for row, score in self.similar_rows(query, limit, where, ["id"], below_floor):
            best.setdefault(row["id"], score)  # nearest first
        return best

    def similar_rows(
        self,
        query: str,
        limit: int,
        where: str | None,
        columns: list[str],
        below_floor: list[tuple[Any, float]] | None = None,
    ) -> list[tuple[dict[str, Any], float]]:
        """``similar``, with the rows' ``columns`` read in the same query."""
        if not query.strip():
            return []
        vector = query_vector(self._embedder, query)
        rows = self.vector_search(vector, limit, where, columns)
        if not rows:
            return []
        similarities = np.array([1.0 - float(row["_distance"]) for row in rows])
        scores = relevance(similarities, background_vectors(self._embedder) @ vector)
        if below_floor is not None:
            below_floor.extend(
                (row, float(score))
                for row, score in zip(rows, scores, strict=True)
                if score < RELEVANCE_FLOOR
            )
        return [
            (row, float(score))
            for row, score in zip(rows, scores, strict=True)
            if score >= RELEVANCE_FLOOR
        ]

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
        return self._reading(query.to_list)

    # -- upkeep (engine.memory.vectors.upkeep) ----------------------------------------------------

    def maintain(self) -> None:
        """Compact, index new rows, prune old versions; (re)build the ANN index when due."""
        self.upkeep.run()

    def wait_for_maintenance(self) -> None:
        self.upkeep.wait()

    def close(self) -> None:
        self.upkeep.close()
