"""Upkeep of a vector table: the ANN index follows the table's growth."""

import subprocess
import sys
from pathlib import Path

import lancedb
import numpy as np
import pyarrow as pa

from engine.memory.vectors import VectorTable
from engine.memory.vectors import upkeep as lance_upkeep


class SixteenDims:
    name = "test-16"
    dim = 16
    query_prefix = document_prefix = ""

    def embed(self, texts):  # pragma: no cover - rows below carry their own vectors
        raise AssertionError("not used")


SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("vector", pa.list_(pa.float32(), 1))])


def _rows(start: int, count: int) -> pa.Table:
    data = np.random.default_rng(start).normal(size=(count, 16)).astype(np.float32)
    return pa.table(
        {
            "id": pa.array(range(start, start + count), pa.int64()),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(data.reshape(-1)), 16),
        }
    )


def _vector_indexes(table: VectorTable) -> list[str]:
    return [index.name for index in table.table.list_indices() if "vector" in index.columns]


def test_ann_index_is_built_then_rebuilt_when_the_table_outgrows_it(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(lance_upkeep, "ANN_INDEX_MIN_ROWS", 300)
    table = VectorTable(lancedb.connect(tmp_path), "t", SCHEMA, SixteenDims())
    table.add(_rows(0, 200))
    table.wait_for_maintenance()
    assert _vector_indexes(table) == []  # small tables are scanned, not indexed
    table.add(_rows(200, 100))
    table.wait_for_maintenance()
    assert _vector_indexes(table) == ["vector_ivf17_300"]  # sqrt(300) partitions
    table.add(_rows(300, 280))
    table.maintain()
    assert _vector_indexes(table) == ["vector_ivf17_300"]  # not yet doubled: kept
    (index,) = [i for i in table.table.list_indices() if "vector" in i.columns]
    # new rows are indexed as a segment of their own, never merged into the trained one
    assert (index.num_indexed_rows, index.num_unindexed_rows, index.num_segments) == (580, 0, 2)
    table.add(_rows(580, 10))  # fewer than 300 // 20: scanned, rather than one more segment
    table.maintain()
    (index,) = [i for i in table.table.list_indices() if "vector" in i.columns]
    assert (index.num_indexed_rows, index.num_unindexed_rows, index.num_segments) == (580, 10, 2)
    scanned = _rows(580, 10).column("vector")[5].values.to_numpy()
    assert table.vector_search(scanned, 1, None, ["id"])[0]["id"] == 585  # found all the same
    table.add(_rows(590, 710))
    table.wait_for_maintenance()
    assert _vector_indexes(table) == ["vector_ivf36_1300"]  # rebuilt; the old one is gone
    query = _rows(0, 200).column("vector")[5].values.to_numpy()
    assert table.vector_search(query, 1, None, ["id"])[0]["id"] == 5
    table.close()
    assert not [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]


def test_upkeep_of_a_table_without_an_ann_index_does_not_load_pylance(tmp_path):
    """Compacting a small table goes through lancedb alone: pylance, needed only to keep ANN
    index segments apart, stays ~60 MB resident for good once imported."""
    script = f"""
import sys, lancedb
sys.path.insert(0, {str(Path(__file__).parents[1])!r})
from tests.test_vectors import SCHEMA, SixteenDims, _rows
from engine.memory.vectors import VectorTable
table = VectorTable(lancedb.connect({str(tmp_path)!r}), "t", SCHEMA, SixteenDims())
for start in range(0, 60, 20):
    table.add(_rows(start, 20))
table.maintain()
loaded = "lance" in sys.modules
print(loaded, table.count(), len(table.table.to_lance().get_fragments()))
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.split() == ["False", "60", "1"]  # compacted, without pylance


def test_writes_of_earlier_sessions_count_towards_compaction(tmp_path):
    """Neither session writes as often as compaction waits for; the fragments the first one
    left are counted when the table opens again, so the second one compacts instead of piling
    fragments up for good."""
    every = lance_upkeep.OPTIMIZE_AFTER_WRITES_AT_LEAST
    table = VectorTable(lancedb.connect(tmp_path), "t", SCHEMA, SixteenDims())
    for start in range(every - 1):
        table.add(_rows(start, 1))
    table.close()
    assert table.table.stats()["fragment_stats"]["num_fragments"] == every - 1
    table = VectorTable(lancedb.connect(tmp_path), "t", SCHEMA, SixteenDims())
    for start in range(every - 1, every + 2):
        table.add(_rows(start, 1))
    table.wait_for_maintenance()
    assert table.table.stats()["fragment_stats"]["num_fragments"] <= 2
    assert table.count() == every + 2
    table.close()


def test_a_small_table_is_compacted_after_a_few_writes_and_a_large_one_after_more(
    tmp_path, monkeypatch
):
    """Every fragment costs each search time, and compaction rewrites the table: a small table
    compacts in a fraction of a second, so a day of chat (a write or two a message) never
    leaves it dozens of fragments; a large one waits longer (REWRITE_PER_FRAGMENT_SEARCHED)."""
    table = VectorTable(lancedb.connect(tmp_path / "small"), "t", SCHEMA, SixteenDims())
    for start in range(30):
        table.add(_rows(start, 1))
        table.wait_for_maintenance()
    assert table.table.stats()["fragment_stats"]["num_fragments"] <= (
        lance_upkeep.OPTIMIZE_AFTER_WRITES_AT_LEAST
    )
    assert table.count() == 30
    table.close()
    monkeypatch.setattr(lance_upkeep, "ANN_INDEX_MIN_ROWS", 10**9)  # no index to build here
    large = VectorTable(lancedb.connect(tmp_path / "large"), "t", SCHEMA, SixteenDims())
    large.add(_rows(0, 46_000))
    for start in range(46_000, 46_030):
        large.add(_rows(start, 1))
        large.wait_for_maintenance()
    assert large.table.stats()["fragment_stats"]["num_fragments"] == 31  # not yet due
    for start in range(46_030, 46_050):
        large.add(_rows(start, 1))
    large.wait_for_maintenance()
    assert large.table.stats()["fragment_stats"]["num_fragments"] <= 2  # 50 writes: due
    large.close()


def test_rows_an_import_left_outside_the_index_are_indexed_when_the_table_next_opens(
    tmp_path, monkeypatch
):
    """A large import's last writes, too few to call upkeep, leave rows that every search
    scans; the next open sees them and gives them an index segment."""
    monkeypatch.setattr(lance_upkeep, "ANN_INDEX_MIN_ROWS", 300)
    table = VectorTable(lancedb.connect(tmp_path), "t", SCHEMA, SixteenDims())
    table.add(_rows(0, 300))
    table.wait_for_maintenance()
    table.add(_rows(300, 200))  # a few writes: no upkeep falls due
    table.wait_for_maintenance()
    (index,) = [i for i in table.table.list_indices() if "vector" in i.columns]
    assert index.num_unindexed_rows == 200
    table.close()
    reopened = VectorTable(lancedb.connect(tmp_path), "t", SCHEMA, SixteenDims())
    reopened.wait_for_maintenance()
    (index,) = [i for i in reopened.table.list_indices() if "vector" in i.columns]
    assert (index.num_indexed_rows, index.num_unindexed_rows) == (500, 0)


def test_background_vectors_are_kept_once_per_computer_for_a_deterministic_embedder(
    tmp_path, monkeypatch, embedder
):
    """The everyday sentences search by meaning compares against are embedded once and kept in
    the cache folder; the next process reads them back, the same. A stand-in embedder (random
    vectors under a real name) keeps nothing there."""
    from engine.memory import vectors

    monkeypatch.setattr(vectors, "cache_folder", lambda: tmp_path)
    made = vectors._background_of(embedder)
    (kept,) = tmp_path.glob("background-*.npy")
    assert np.array_equal(np.load(kept), made) and made.shape[1] == embedder.dim

    class Counting:
        name, dim, deterministic = embedder.name, embedder.dim, True
        query_prefix = document_prefix = ""
        calls = 0

        def embed(self, texts):
            Counting.calls += 1
            return embedder.embed(texts)

    assert np.array_equal(vectors._background_of(Counting()), made) and Counting.calls == 0
    assert vectors._background_of(RandomSixteen()).shape[1] == 16
    assert list(tmp_path.glob("background-*.npy")) == [kept]


class RandomSixteen(SixteenDims):
    def embed(self, texts):
        return np.random.default_rng().normal(size=(len(texts), 16)).astype(np.float32)


def test_a_bulk_write_is_added_to_the_keyword_index_before_many_more_writes(tmp_path):
    """One large write (an import) left every row outside the keyword and key indexes until 50
    more writes came: each keyword search scanned them all (75 ms at 10k passages, not 4)."""
    schema = pa.schema([*SCHEMA, pa.field("text", pa.string())])
    many = lance_upkeep._unindexed_rows_max() + 200

    def rows(start: int, count: int) -> pa.Table:
        texts = [f"note {i} about the garden" for i in range(start, start + count)]
        return _rows(start, count).append_column("text", pa.array(texts))

    def unindexed(table: VectorTable) -> list[int]:
        return [
            table.table.index_stats(index.name).num_unindexed_rows
            for index in table.table.list_indices()
        ]

    table = VectorTable(
        lancedb.connect(tmp_path / "a"), "t", schema, SixteenDims(), fts_column="text",
        key_column="id",
    )  # fmt: skip
    table.add(rows(0, 10))
    table.wait_for_maintenance()
    assert unindexed(table) == [10, 10]  # a few rows are scanned rather than indexed at once
    table.add(rows(10, many))
    table.wait_for_maintenance()
    assert unindexed(table) == [0, 0]

    # A table a bulk write left so (before this rule) is indexed once it is opened again.
    earlier = VectorTable(
        lancedb.connect(tmp_path / "b"), "t", schema, SixteenDims(), fts_column="text",
        key_column="id",
    )  # fmt: skip
    earlier.upkeep.closed = True  # as an older Mnemo left it
    earlier.add(rows(0, many))
    assert unindexed(earlier) == [many, many]
    reopened = VectorTable(lancedb.connect(tmp_path / "b"), "t", schema, SixteenDims(),
                           fts_column="text", key_column="id")  # fmt: skip
    reopened.wait_for_maintenance()
    assert unindexed(reopened) == [0, 0]
