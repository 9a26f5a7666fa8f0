"""What a vector table keeps of its versions (``VectorTable`` is one): the snapshots' tags, the
scrub that leaves nothing of deleted rows on disk (a forget), and the way back from damage: the
newest version that reads whole, or an empty table whose rows the caller makes again."""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from datetime import timedelta
from typing import Any, Protocol

import pyarrow as pa

from engine.embed.base import Embedder
from engine.memory.vectors.upkeep import COMPACT_TARGET_ROWS, Upkeep

log = logging.getLogger("mnemo.vectors")


class _Versioned(Protocol):
    """What the versions' work uses of its table (``VectorTable``)."""

    name: str
    table: Any  # the LanceDB table
    mismatch: str | None
    upkeep: Upkeep
    _connection: Any
    _embedder: Embedder
    _write_lock: AbstractContextManager[Any]

    def _writing(self) -> AbstractContextManager[None]: ...

    def _schema_for(self, embedder: Embedder) -> pa.Schema: ...

    def _create(self, embedder: Embedder, data: pa.Table | None = None) -> Any: ...

    def _create_indexes(self, table: Any) -> None: ...

    def _describe_mismatch(self) -> str | None: ...

    def has_tag(self, name: str) -> bool: ...

    def wait_for_maintenance(self) -> None: ...


class TableVersions:
    """Mixed into ``VectorTable``: its tags, its scrub and its repair from damage."""

    # -- snapshots (engine.memory.snapshots) ----------------------------------------------------

    def tag(self: _Versioned, name: str) -> int:
        """Keep the table's current version under ``name`` (upkeep never prunes it)."""
        with self._writing():
            self.table.tags.create(name, self.table.version)
            return int(self.table.version)

    def restore_tag(self: _Versioned, name: str) -> None:
        """Make the version kept as ``name`` the newest one (later versions stay in history
        until upkeep prunes them)."""
        self.wait_for_maintenance()
        with self._writing():
            self.table.checkout(name)
            self.table.restore()
            self.table.checkout_latest()
            self.mismatch = self._describe_mismatch()
            self.upkeep.recount()
        self.upkeep.schedule()

    def has_tag(self: _Versioned, name: str) -> bool:
        return name in self.table.tags.list()

    def drop_tag(self: _Versioned, name: str) -> None:
        with self._writing():
            if self.has_tag(name):
                self.table.tags.delete(name)

    def rows_at(
        self: _Versioned, tag: str, where: str | None, columns: list[str]
    ) -> list[dict[str, Any]]:
        """The matching rows of the version kept as ``tag`` (a snapshot's), read through a
        handle of their own: the table in use stays at its newest version."""
        older = self._connection.open_table(self.name)
        older.checkout(tag)
        query = older.search().select(columns)
        if where:
            query = query.where(where)
        return query.limit(max(1, older.count_rows(where))).to_list()

    def scrub(self: _Versioned) -> None:
        """Leave nothing of rows deleted or changed on disk (a forget): the data files that
        still hold them are rewritten, the keyword index is made anew, and every older version
        no snapshot keeps is deleted at once."""
        self.wait_for_maintenance()
        with self.upkeep.running, self._writing():
            self.table.to_lance().optimize.compact_files(
                target_rows_per_fragment=COMPACT_TARGET_ROWS,
                materialize_deletions=True,
                materialize_deletions_threshold=0.0,
            )
            self.table.checkout_latest()
            self._create_indexes(self.table)
            self.table.to_lance().cleanup_old_versions(
                older_than=timedelta(0), delete_unverified=True, error_if_tagged_old_versions=False
            )
            self.table.checkout_latest()
            self.upkeep.recount()

    def prune_versions(self: _Versioned) -> None:
        """Delete at once every version no snapshot keeps (a forget's snapshots let go of the
        versions that held the text)."""
        with self._writing():
            self.table.to_lance().cleanup_old_versions(
                older_than=timedelta(0), delete_unverified=True, error_if_tagged_old_versions=False
            )
            self.table.checkout_latest()

    # -- damage (a file of the table lost: the health check's repair) -------------------------

    def rebuild_empty(self: _Versioned) -> None:
        """Replace a damaged table by an empty one of the same name (its rows are made again
        by the caller): a new version, so what snapshots tagged is kept."""
        self.wait_for_maintenance()
        with self._write_lock:
            try:
                self.table.checkout_latest()
                self.table.add(pa.Table.from_pylist([], schema=self._schema_for(self._embedder)),
                               mode="overwrite")  # fmt: skip
                self._create_indexes(self.table)
            except (OSError, RuntimeError, ValueError):  # it would not even be overwritten
                log.exception("could not overwrite %s; making it anew", self.name)
                self._connection.drop_table(self.name)
                self.table = self._create(self._embedder)
            self.mismatch = None
            self.upkeep.recount()

    def restore_readable(self: _Versioned) -> int | None:
        """Make the newest version that reads whole the current one (a damaged table whose rows
        live nowhere else: archival passages); returns the version, or None if none reads."""
        self.wait_for_maintenance()
        with self._write_lock:
            self.table.checkout_latest()
            latest = int(self.table.version)
            for version in sorted((int(v["version"]) for v in self.table.list_versions()),
                                  reverse=True):  # fmt: skip
                try:
                    self.table.checkout(version)
                    self.table.to_arrow()
                except (OSError, RuntimeError, ValueError):
                    continue
                if version != latest:
                    self.table.restore()
                self.table.checkout_latest()
                self._create_indexes(self.table)
                self.upkeep.recount()
                return version
            self.table.checkout_latest()
            return None
