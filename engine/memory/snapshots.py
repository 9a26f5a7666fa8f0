"""Snapshots: the whole memory at one moment, to roll back to after a mistake.

A snapshot is taken while Mnemo runs and stays consistent: SQLite (recall, core memory and its
history, proposals, knowledge, settings) is copied with SQLite's online backup API, which reads
one committed state however busy the database is; LanceDB (archival passages, message vectors)
is not copied at all: the tables' current versions are tagged, so upkeep keeps their data and a
restore makes them current again. A snapshot therefore costs one copy of the SQLite file plus
the Lance data that has changed since, which stays on disk while the snapshot does.

SQLite is copied before the tables are tagged. Anything written in between leaves rows in Lance
that SQLite does not know yet (vectors of newer messages, passages of a file still marked as
indexing), which Mnemo already treats as leftovers of an interrupted write; the other order would
leave SQLite pointing at vectors that are not there.

Automatic snapshots are taken before risky operations (``Mnemo.snapshot_before``) and pruned
beyond ``KEEP_AUTOMATIC`` or ``AUTOMATIC_CAP_BYTES``; the user's own are kept until deleted.

An import that is not over needs the snapshot it took (its undo, or its restore when it fails):
it marks the snapshot ``needed_by`` itself until it ends. Pruning skips such a snapshot, and a
forget takes its text out of it in place instead of deleting it (``engine.memory.redaction``).
"""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from engine.db import BUSY_TIMEOUT_S
from engine.errors import MnemoError, NotFoundError
from engine.locks import WriterLock
from engine.memory.search import from_timestamp

log = logging.getLogger("mnemo.snapshots")


class TaggedTable(Protocol):
    """What a snapshot asks of a vector table (``engine.memory.vectors``, which imports this
    module for its errors): keep the current version under a tag, and bring it back."""

    name: str

    def tag(self, name: str) -> int: ...

    def restore_tag(self, name: str) -> None: ...

    def has_tag(self, name: str) -> bool: ...

    def drop_tag(self, name: str) -> None: ...


FOLDER = "snapshots"
DATABASE = "mnemo.sqlite"
META = "snapshot.json"
NEEDED = "needed-by.txt"  # in a snapshot's folder: what unfinished import needs it
TAG_PREFIX = "snapshot-"
# Automatic snapshots kept: the newest 10, and no more than 2 GiB of database copies between
# them (ten copies of a profile with years of messages stay under the cap).
KEEP_AUTOMATIC = 10
AUTOMATIC_CAP_BYTES = 2 * 2**30
BULK_DELETE = 20  # deleting more items than this at once takes a snapshot first
BACKUP_PAGES = 4096  # copied per step, so that writers are never held up for long


class SnapshotError(MnemoError):
    """A snapshot could not be taken or restored; the sentence says why."""


@dataclass(frozen=True)
class Snapshot:
    id: str
    created_at: datetime
    note: str
    automatic: bool
    size: int  # bytes of the database copy (the Lance data it keeps alive is not counted)
    tables: dict[str, int]  # Lance table -> the version kept
    needed_by: str | None = None  # the unfinished import that needs it ("importing x.json")

    def describe(self) -> str:
        kind = "automatic" if self.automatic else "yours"
        note = f": {self.note}" if self.note else ""
        size = f"{self.size / 2**20:.1f} MB"
        return f"{self.id} ({self.created_at:%Y-%m-%d %H:%M}, {kind}, {size}){note}"


# Snapshots copy the SQLite file; an assistant on a server is kept by the server's backups.
NOT_ON_POSTGRES = (
    "Snapshots are kept for assistants stored on this computer; this one is in PostgreSQL, "
    "whose own backups (pg_dump, or the server's) cover it."
)


class SnapshotStore:
    def __init__(
        self,
        root: Path,
        database_path: Path,
        tables: list[TaggedTable],
        unavailable: str | None = None,
    ) -> None:
        """``unavailable``: why this profile cannot have snapshots (it is on a server)."""
        self._folder = root / FOLDER
        self._database_path = database_path
        self._tables = tables
        self._unavailable = unavailable
        # Held while a snapshot is taken, restored, deleted or rewritten, in any process: a
        # forget's rewrite never misses a snapshot still being copied.
        self.lock = WriterLock(root / "locks" / "snapshots.lock", "the snapshots")
        self.after_restore: Callable[[], object] | None = None  # forgets what was forgotten

    # -- taking -------------------------------------------------------------------------------

    def create(self, note: str = "", *, automatic: bool = False) -> Snapshot:
        """Take a snapshot now (it takes as long as copying the SQLite file)."""
        if self._unavailable:
            raise SnapshotError(self._unavailable)
        with self.lock:
            snapshot_id = self._create(note, automatic)
        log.info("snapshot %s taken (%s)", snapshot_id, note or "no note")
        if automatic:
            self.prune()
        return self.get(snapshot_id)

    def _create(self, note: str, automatic: bool) -> str:
        snapshot_id = time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:4]
        partial = self._folder / f"{snapshot_id}.partial"
        try:
            partial.mkdir(parents=True)
            copy = partial / DATABASE
            backup(self._database_path, copy)
            tables = {table.name: table.tag(TAG_PREFIX + snapshot_id) for table in self._tables}
            meta = {
                "id": snapshot_id,
                "created_at": time.time(),
                "note": note.strip(),
                "automatic": automatic,
                "size": copy.stat().st_size,
                "tables": tables,
            }
            (partial / META).write_text(json.dumps(meta, indent=2), encoding="utf-8")
            partial.rename(self._folder / snapshot_id)
        except (OSError, sqlite3.Error) as error:
            shutil.rmtree(partial, ignore_errors=True)
            for table in self._tables:
                table.drop_tag(TAG_PREFIX + snapshot_id)
            raise SnapshotError(
                f"The snapshot could not be written to {self._folder} ({error}); free some disk "
                "space or check that the profile folder is writable."
            ) from error
        return snapshot_id

    # -- reading ------------------------------------------------------------------------------

    def all(self) -> list[Snapshot]:
        """Every finished snapshot, newest first (one cut short by a crash is not listed)."""
        if not self._folder.is_dir():
            return []
        found = [self._read(path) for path in self._folder.iterdir() if (path / META).is_file()]
        return sorted((s for s in found if s), key=lambda s: s.created_at, reverse=True)

    def get(self, snapshot_id: str) -> Snapshot:
        snapshot = self._read(self._folder / snapshot_id) if snapshot_id.strip() else None
        if snapshot is None:
            raise NotFoundError(
                f"There is no snapshot {snapshot_id!r}; `mnemo snapshot list` shows them."
            )
        return snapshot

    @staticmethod
    def _read(path: Path) -> Snapshot | None:
        try:
            meta = json.loads((path / META).read_text(encoding="utf-8"))
            return Snapshot(
                id=meta["id"],
                created_at=from_timestamp(meta["created_at"]),
                note=meta.get("note", ""),
                automatic=bool(meta.get("automatic")),
                size=int(meta.get("size", 0)),
                tables={str(k): int(v) for k, v in meta.get("tables", {}).items()},
                needed_by=_needed_by(path),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    # -- what an unfinished import needs ------------------------------------------------------

    def need(self, snapshot_id: str, by: str) -> None:
        """Mark the snapshot as needed by ``by`` (an import, until it ends): it is not pruned,
        and a forget takes its text out of it instead of deleting it."""
        (self._folder / self.get(snapshot_id).id / NEEDED).write_text(by, encoding="utf-8")

    def release(self, snapshot_id: str | None) -> None:
        """The import that needed it has ended (finished or undone)."""
        if snapshot_id and Path(snapshot_id).name == snapshot_id:  # (a journal's word for it)
            (self._folder / snapshot_id / NEEDED).unlink(missing_ok=True)

    @contextmanager
    def needed(self, snapshot_id: str | None, by: str) -> Iterator[None]:
        """``need`` while the block runs (an import that restores the snapshot if it fails)."""
        if snapshot_id is None:
            yield
            return
        self.need(snapshot_id, by)
        try:
            yield
        finally:
            self.release(snapshot_id)

    def database_copy(self, snapshot_id: str) -> Path:
        """The snapshot's copy of the database (a forget rewrites a needed one in place)."""
        return self._folder / self.get(snapshot_id).id / DATABASE

    def drop_tables(self, snapshot_id: str, names: set[str]) -> None:
        """Let go of the snapshot's versions of these Lance tables (a forget, for a version
        that held the text): restoring it then leaves those tables as they are."""
        with self.lock:
            snapshot = self.get(snapshot_id)
            for table in self._tables:
                if table.name in names:
                    table.drop_tag(TAG_PREFIX + snapshot.id)
            path = self._folder / snapshot.id / META
            meta = json.loads(path.read_text(encoding="utf-8"))
            meta["tables"] = {k: v for k, v in meta.get("tables", {}).items() if k not in names}
            partial = path.with_name(META + ".partial")
            partial.write_text(json.dumps(meta, indent=2), encoding="utf-8")
            partial.replace(path)

    # -- restoring and deleting ------------------------------------------------------------------

    def restore(self, snapshot_id: str, *, keep_current: bool = True) -> Snapshot | None:
        """Bring the memory back to ``snapshot_id``, after taking a snapshot of the current
        state (returned: it undoes the restore; not taken when ``keep_current`` is False, as
        when a failed import is undone). Reopen the profile afterwards: what was read before
        the restore (the window's pages, caches) shows the old state."""
        if self._unavailable:
            raise SnapshotError(self._unavailable)
        with self.lock:
            return self._restore(snapshot_id, keep_current)

    def _restore(self, snapshot_id: str, keep_current: bool) -> Snapshot | None:
        snapshot = self.get(snapshot_id)
        before = (
            self.create(f"before restoring {snapshot.id}", automatic=True) if keep_current else None
        )
        try:
            backup(self._folder / snapshot.id / DATABASE, self._database_path)
            for table in self._tables:
                tag = TAG_PREFIX + snapshot.id
                if table.has_tag(tag):
                    table.restore_tag(tag)
                else:  # a snapshot from before the table existed: it held nothing then
                    log.info("snapshot %s has no version of %s", snapshot.id, table.name)
        except (OSError, sqlite3.Error) as error:
            kept = f"; the state before it is in snapshot {before.id}" if before else ""
            raise SnapshotError(
                f"Restoring snapshot {snapshot.id} failed ({error}){kept}."
            ) from error
        log.info("restored snapshot %s", snapshot.id)
        if self.after_restore is not None:
            self.after_restore()
        return before

    def delete(self, snapshot_id: str) -> None:
        with self.lock:
            snapshot = self.get(snapshot_id)
            for table in self._tables:
                table.drop_tag(TAG_PREFIX + snapshot.id)
            shutil.rmtree(self._folder / snapshot.id)

    def prune(self) -> list[str]:
        """Delete the oldest automatic snapshots beyond the count and the size cap."""
        automatic = [s for s in self.all() if s.automatic and not s.needed_by]  # newest first
        total, gone = 0, []
        for kept, snapshot in enumerate(automatic, start=1):
            total += snapshot.size
            if kept > KEEP_AUTOMATIC or (total > AUTOMATIC_CAP_BYTES and kept > 1):
                self.delete(snapshot.id)
                gone.append(snapshot.id)
        return gone


def _needed_by(folder: Path) -> str | None:
    try:
        return (folder / NEEDED).read_text(encoding="utf-8").strip() or "an import"
    except OSError:
        return None


def backup(source: Path, target: Path) -> None:
    """Copy one SQLite database onto another with the online backup API: a consistent copy of
    the last committed state, whatever else is writing (the target is replaced page by page in
    one transaction, so its other readers see the old or the new, never half)."""
    with sqlite3.connect(f"file:{source}?mode=ro", uri=True) as reader:
        with sqlite3.connect(target, timeout=BUSY_TIMEOUT_S) as writer:  # its turn to write
            reader.backup(writer, pages=BACKUP_PAGES)
        writer.close()
    reader.close()
