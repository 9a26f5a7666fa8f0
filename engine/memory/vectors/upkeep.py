"""The upkeep of a LanceDB vector table (``engine.memory.vectors.VectorTable``): the chores that
keep search fast as a table grows. Compaction, indexing new rows, pruning old versions, and an ANN
index once the table is too large for a flat scan. They run on a background thread; writers wait
only while it works (seconds at 100k rows, a minute at 1M)."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import timedelta
from typing import Any, Protocol

from engine.memory.vectors.lance import lancedb

log = logging.getLogger("mnemo.vectors")

# Below this many rows a flat scan is fast enough and an index is not worth its training time;
# above it search time grows linearly without one (tests/benchmarks/archival_search.py).
ANN_INDEX_MIN_ROWS = 20_000
# IVF with ~sqrt(rows) partitions, rebuilt from scratch each time the table doubles (so all
# rebuilds together cost about two builds) or has collected too many index segments. In between,
# new rows get an index segment of their own: merging them into the existing segment (what
# lancedb's ``optimize`` does) lost about a fifth of the exact top 10 at 1M rows and slowed
# search, where a separate segment kept recall and speed (Lance 13).
ANN_REBUILD_GROWTH = 1.0
ANN_MAX_SEGMENTS = 16
# Each segment costs every search some time, about what a flat scan of 1/20 of
# ANN_INDEX_MIN_ROWS costs; so new rows stay unindexed (scanned) until there are that many,
# instead of a segment per upkeep for the few rows of a chat session.
ANN_SEGMENT_MIN_ROWS_SHARE = 20
# Compaction merges the small fragments that appends leave behind into fragments of this size.
COMPACT_TARGET_ROWS = 50_000
# Compact after this many write operations at most: each write adds a file and a table version,
# and each file costs every search of the table time (a note search took 18 ms over 1-5 one-row
# fragments, 40 ms over 20 and 70 ms over 80: six months of chat left 23 in the notes table).
OPTIMIZE_EVERY_WRITES = 50
# Compaction rewrites the table's small fragments: about 27 us a row (10k rows: 0.27 s on the
# upkeep thread), where each fragment left costs a search about a millisecond (with a search or
# so per write). Compacting every W writes costs a write 27 us * rows / W in rewriting plus
# about W / 2 ms in searching, which is least at W = sqrt(rows * 0.054): 8 writes at 1,200 rows
# and below (a few fragments cost nothing measurable), 23 at 10k, OPTIMIZE_EVERY_WRITES by 46k.
REWRITE_PER_FRAGMENT_SEARCHED = 0.054
OPTIMIZE_AFTER_WRITES_AT_LEAST = 8
# Versions older than this are pruned after compaction, so the folder does not grow without bound.
KEEP_VERSIONS_FOR = timedelta(minutes=5)
_INDEX_PREFIX = "vector_ivf"


def _unindexed_rows_max() -> int:
    """Rows left outside an index are scanned by every search that uses it; upkeep falls due once
    this many wait. With 10k passages outside the keyword index (one bulk import), a keyword
    search took 75 ms instead of 4 (felt_speed.py's 10k profile)."""
    return ANN_INDEX_MIN_ROWS // ANN_SEGMENT_MIN_ROWS_SHARE


class KeptTable(Protocol):
    """What upkeep works on: a ``VectorTable``, which builds its upkeep (so the table imports
    upkeep, and upkeep only this)."""

    name: str
    table: Any  # the LanceDB table
    mismatch: str | None  # set while its vectors are another embedder's

    def count(self, where: str | None = None) -> int: ...


class Upkeep:
    """One table's upkeep (``VectorTable.upkeep``). Each write tells it (``wrote``), and it
    starts when due (``schedule``)."""

    def __init__(
        self, table: KeptTable, writing: Callable[[], AbstractContextManager[Any]]
    ) -> None:
        """``writing`` holds the table's lock (its writers, in every process, wait for
        upkeep's rewrites) on the table's newest version."""
        self._table = table
        self._writing = writing
        self._starting = threading.Lock()  # guards starting the upkeep thread
        self.running = threading.Lock()  # held while upkeep runs
        self._thread: threading.Thread | None = None
        self._writes_since_optimize = 0
        # What each write checks, kept instead of asked of Lance (a row count and an index
        # listing cost a few milliseconds at 1M rows, on every message of a turn): the rows,
        # counted after upkeep plus those added since (deletions are ignored, so upkeep may come
        # a little early), and the row count at which the ANN index falls due.
        self._rows_seen = -1  # not counted yet
        self._due_at = 0
        self._keyword_indexed = False  # whether it has a keyword or key index
        self._rows_since_optimize = 0  # rows (perhaps) outside those indexes
        self.closed = False

    def wrote(self, rows: int) -> None:
        self._writes_since_optimize += 1
        self._rows_since_optimize += rows
        if self._rows_seen >= 0:
            self._rows_seen += rows

    def recount(self) -> None:
        """The table was replaced or restored: count its rows again before the next upkeep."""
        self._rows_seen = -1

    def _vector_index(self) -> Any | None:
        return next((i for i in self._table.table.list_indices() if "vector" in i.columns), None)

    def _ann_due_at(self) -> int:
        """The row count at which the ANN index is (re)built: once the table is large enough
        for one, when the rows have doubled since it was built, or at once (past the size for
        one) when it has collected too many segments."""
        index = self._vector_index()
        if index is None or index.num_segments > ANN_MAX_SEGMENTS:
            return ANN_INDEX_MIN_ROWS
        built_on = index.name.rsplit("_", 1)[-1]  # the row count is kept in the index name
        built_rows = int(built_on) if built_on.isdigit() else 0
        return max(ANN_INDEX_MIN_ROWS, int(built_rows * (1 + ANN_REBUILD_GROWTH)) + 1)

    def _needs_maintenance(self) -> bool:
        if self._table.mismatch:
            return False
        if self._rows_seen < 0:  # not counted since the table was opened or replaced
            self._take_stock()
        if self._writes_since_optimize >= self._optimize_every():
            return True
        if self._keyword_indexed and self._rows_since_optimize >= _unindexed_rows_max():
            return True
        return self._rows_seen >= self._due_at

    def _optimize_every(self) -> int:
        """The writes after which the table is compacted (see REWRITE_PER_FRAGMENT_SEARCHED)."""
        balanced = round(math.sqrt(max(self._rows_seen, 0) * REWRITE_PER_FRAGMENT_SEARCHED))
        return max(OPTIMIZE_AFTER_WRITES_AT_LEAST, min(OPTIMIZE_EVERY_WRITES, balanced))

    def _take_stock(self) -> None:
        """Rows, when the ANN index falls due, and the writes since the last compaction, from
        the table itself. Each write leaves a fragment that compaction merges, so the surplus of
        fragments counts the writes of earlier sessions too: counted only in memory, a user who
        wrote fewer than OPTIMIZE_EVERY_WRITES times per session never got a compaction (131
        fragments at 100k messages made a vector search 2x slower than at 1M passages)."""
        stats: Any = self._table.table.stats()  # a dict at run time, whatever its annotation says
        rows = int(stats["num_rows"])
        compacted = math.ceil(rows / COMPACT_TARGET_ROWS)
        surplus = int(stats["fragment_stats"]["num_fragments"]) - compacted
        self._rows_seen, self._due_at = rows, self._ann_due_at()
        self._writes_since_optimize = max(self._writes_since_optimize, surplus)
        # Rows a large import left outside the ANN index (its last writes came too few to call
        # upkeep) are scanned by every search until upkeep gives them a segment: due now (with
        # half a large table left so, a search by meaning took several times as long).
        indexes = self._table.table.list_indices()
        index = next((i for i in indexes if "vector" in i.columns), None)
        index_stats = self._table.table.index_stats(index.name) if index is not None else None
        unindexed = index_stats.num_unindexed_rows if index_stats is not None else 0
        if unindexed >= _unindexed_rows_max():
            self._writes_since_optimize = max(self._writes_since_optimize, OPTIMIZE_EVERY_WRITES)
        # The same for the keyword and key indexes (a bulk import's rows wait outside them).
        keyword = [i.name for i in indexes if "vector" not in i.columns]
        self._keyword_indexed = bool(keyword)
        for name in keyword:
            waiting = self._table.table.index_stats(name)
            if waiting is not None:
                self._rows_since_optimize = max(
                    self._rows_since_optimize, waiting.num_unindexed_rows
                )

    def schedule(self) -> None:
        if self.closed or not self._needs_maintenance():
            return
        with self._starting:
            if self._thread and self._thread.is_alive():
                return
            self._thread = threading.Thread(
                target=self.run, name=f"mnemo-maintain-{self._table.name}", daemon=True
            )
            self._thread.start()

    def run(self) -> None:
        """Compact, index new rows, prune old versions; (re)build the ANN index when due."""
        with self.running:  # one upkeep at a time, or two could build rival indexes
            self._maintain()

    def _maintain(self) -> None:
        # Writers wait while upkeep runs: an index built while rows were being appended was
        # slower to search and found less of the exact top 10 than the same build on a quiet
        # table (archival_search.py at 1M rows). Readers are never blocked.
        try:
            with self._writing():
                self._writes_since_optimize = self._rows_since_optimize = 0
                if self._vector_index() is None and not self._table.table.tags.list():
                    # lancedb's own upkeep does the same without an ANN index (compact, add new
                    # rows to the keyword and key indexes, prune), and needs no pylance, whose
                    # import stays resident in the window for good (memory_at_rest.py). It
                    # refuses to prune past a snapshot's tagged version, which pylance's pruning
                    # skips instead.
                    self._table.table.optimize(cleanup_older_than=KEEP_VERSIONS_FOR)
                else:
                    self._optimize_keeping_segments()
                rows = self._table.count()
                if rows >= self._ann_due_at():
                    self._build_ann_index(rows)
                self._rows_seen, self._due_at = rows, self._ann_due_at()
        except Exception:  # upkeep must never take the app down; searches work without it
            log.exception(
                "maintenance of %s failed; it is retried after more writes", self._table.name
            )

    def _optimize_keeping_segments(self) -> None:
        """The upkeep through pylance: with an ANN index, new rows get an index segment of their
        own (see ANN_REBUILD_GROWTH), which lancedb's ``optimize`` cannot be told; and pruning
        keeps the versions snapshots tagged instead of failing on them."""
        self._table.table.to_lance().optimize.compact_files(
            target_rows_per_fragment=COMPACT_TARGET_ROWS
        )
        self._table.table.checkout_latest()  # later steps must build on the compacted version
        indexes = self._table.table.list_indices()
        vector = [index.name for index in indexes if "vector" in index.columns]
        others = [index.name for index in indexes if "vector" not in index.columns]
        dataset = self._table.table.to_lance()
        stats = self._table.table.index_stats(vector[0]) if vector else None
        unindexed = stats.num_unindexed_rows if stats is not None else 0
        if unindexed >= _unindexed_rows_max():
            dataset.optimize.optimize_indices(index_names=vector, num_indices_to_merge=0)
        if others:
            dataset.optimize.optimize_indices(index_names=others)
        dataset.cleanup_old_versions(
            older_than=KEEP_VERSIONS_FOR, error_if_tagged_old_versions=False
        )
        self._table.table.checkout_latest()

    def _build_ann_index(self, rows: int) -> None:
        old = [i.name for i in self._table.table.list_indices() if "vector" in i.columns]
        partitions = max(16, int(math.sqrt(rows)))
        log.info(
            "building ANN index on %s: %d rows, %d partitions", self._table.name, rows, partitions
        )
        self._table.table.create_index(
            "vector",
            config=lancedb().index.IvfSq(distance_type="cosine", num_partitions=partitions),
            name=f"{_INDEX_PREFIX}{partitions}_{rows}",
        )
        for name in old:
            self._table.table.drop_index(name)

    def wait(self) -> None:
        thread = self._thread
        if thread and thread.is_alive() and thread is not threading.current_thread():
            thread.join()

    def close(self) -> None:
        self.closed = True
        self.wait()
