"""Ingestion: files into archival memory, once, in sync, and never half-done.

The ingestion index (``document`` table) records each file's size, modification time, content
hash, status and error. An unchanged file is skipped without being read (size and mtime match) or
after a hash check; a changed file replaces its passages; a file that is gone loses them. Files
are marked ``queued`` before work starts and ``indexing`` while they are read, so after a crash
the next run picks up exactly those and, because a file's old passages are dropped before new
ones are written, never duplicates anything. One bad file gets an error and the batch goes on.
"""

from __future__ import annotations

import fnmatch
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from sqlmodel import Session, col, select

from engine.errors import GenerationCancelled
from engine.ingest.chunking import chunk_sections
from engine.ingest.loaders import DocumentError, UnsupportedFile, is_supported, load
from engine.memory.archival import NewPassage, Source
from engine.memory.models import DocumentRow

if TYPE_CHECKING:
    from engine.mnemo import Mnemo

log = logging.getLogger("mnemo.ingest")

INSERT_BATCH = 512  # passages embedded and written together
HASH_PIECE = 1024 * 1024
DEFAULT_EXCLUDES = (
    ".*",  # hidden files and folders: .git, .venv, .cache...
    "node_modules",
    "__pycache__",
    "build",
    "dist",
    "target",
    "out",
    "venv",
    "*.egg-info",
    "*~",
    "*.tmp",
    "*.swp",
)

Outcome = Literal["done", "unchanged", "error", "skipped", "removed", "cancelled"]


@dataclass(frozen=True)
class FileResult:
    path: str
    outcome: Outcome
    chunks: int = 0
    error: str | None = None


@dataclass
class IngestProgress:
    """What a progress bar and a per-file list need, after each file."""

    files_done: int = 0
    files_total: int = 0
    chunks: int = 0
    errors: int = 0
    current: str | None = None
    results: list[FileResult] = field(default_factory=list)


ProgressCallback = Callable[[IngestProgress], None]


def excluded(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in patterns)


def walk(
    folder: Path, include: Sequence[str] = (), exclude: Sequence[str] = DEFAULT_EXCLUDES
) -> Iterator[Path]:
    """Readable document files under ``folder``; symlinked folders are not followed (no loops).

    Symlinked files are listed, so that a broken or looping link gets its own error.
    """
    for root, folders, files in os.walk(folder, followlinks=False, onerror=None):
        folders[:] = sorted(f for f in folders if not excluded(f, exclude))
        for name in sorted(files):
            path = Path(root) / name
            if excluded(name, exclude):
                continue
            if include and not excluded(name, include):
                continue
            if is_supported(path):
                yield path


def file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while piece := file.read(HASH_PIECE):
            digest.update(piece)
    return digest.hexdigest()


def _reason(error: BaseException) -> str:
    """Why a file could not be read, as the end of a sentence."""
    if isinstance(error, DocumentError):
        return str(error)
    if isinstance(error, FileNotFoundError):
        return "it was deleted or moved while being read"
    if isinstance(error, PermissionError):
        return "Mnemo has no permission to read it"
    if isinstance(error, IsADirectoryError):
        return "it is a folder"
    if isinstance(error, OSError) and error.errno == 40:  # ELOOP
        return "it is a symbolic link that points to itself (a link loop)"
    if isinstance(error, OSError):
        return f"it cannot be read ({error.strerror or error})"
    return f"reading it failed unexpectedly ({type(error).__name__}: {error})"


class Ingestor:
    """Reads files into a profile's archival memory and keeps the ingestion index."""

    def __init__(self, mnemo: Mnemo) -> None:
        self._mnemo = mnemo
        self._lock = threading.Lock()  # one file is written at a time

    # -- the index -----------------------------------------------------------------------------

    def documents(self, under: str | None = None) -> list[DocumentRow]:
        with Session(self._mnemo.database) as session:
            query = select(DocumentRow).order_by(col(DocumentRow.path))
            if under is not None:
                prefix = under.rstrip(os.sep) + os.sep
                query = query.where(col(DocumentRow.path).startswith(prefix))
            return list(session.exec(query))

    def _set(self, path: str, **values: object) -> None:
        with Session(self._mnemo.database) as session:
            row = session.get(DocumentRow, path) or DocumentRow(
                path=path, status="queued", updated_at=0.0
            )
            for key, value in values.items():
                setattr(row, key, value)
            row.updated_at = time.time()
            session.add(row)
            session.commit()

    def _queue(self, paths: Sequence[Path]) -> None:
        """Mark files as queued in one transaction, so a crash leaves a list to resume from."""
        with Session(self._mnemo.database) as session:
            for path in paths:
                row = session.get(DocumentRow, str(path))
                if row is None:
                    session.add(
                        DocumentRow(path=str(path), status="queued", updated_at=time.time())
                    )
                elif row.status in ("error", "skipped"):
                    row.status = "queued"
                    session.add(row)
            session.commit()

    # -- ingesting -----------------------------------------------------------------------------

    def collect(
        self,
        paths: Iterable[str | os.PathLike[str]],
        include: Sequence[str] = (),
        exclude: Sequence[str] = DEFAULT_EXCLUDES,
    ) -> list[Path]:
        """Files to read: each file given, and the documents under each folder given."""
        files: list[Path] = []
        for given in paths:
            path = Path(given).expanduser().absolute()
            if path.is_dir():
                files += walk(path, include, exclude)
            else:
                files.append(path)
        return list(dict.fromkeys(files))

    def ingest(
        self,
        paths: Iterable[str | os.PathLike[str]],
        *,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
        include: Sequence[str] = (),
        exclude: Sequence[str] = DEFAULT_EXCLUDES,
    ) -> IngestProgress:
        """Ingest files and folders; unchanged files are skipped. Returns the final progress."""
        files = self.collect(paths, include, exclude)
        return self._run(files, progress, cancel)

    def resume(
        self, progress: ProgressCallback | None = None, cancel: threading.Event | None = None
    ) -> IngestProgress:
        """Finish files a crash or a cancel left queued or half-indexed."""
        with Session(self._mnemo.database) as session:
            rows = session.exec(
                select(DocumentRow).where(col(DocumentRow.status).in_(("queued", "indexing")))
            ).all()
        return self._run([Path(row.path) for row in rows], progress, cancel)

    def _run(
        self,
        files: list[Path],
        progress: ProgressCallback | None,
        cancel: threading.Event | None,
    ) -> IngestProgress:
        state = IngestProgress(files_total=len(files))
        self._queue(files)
        for path in files:
            if cancel is not None and cancel.is_set():
                break
            state.current = str(path)
            if progress:
                progress(state)
            result = self.ingest_file(path, cancel)
            state.results.append(result)
            state.files_done += 1
            state.chunks += result.chunks
            state.errors += result.outcome == "error"
            if progress:
                progress(state)
        state.current = None
        return state

    def ingest_file(self, path: Path, cancel: threading.Event | None = None) -> FileResult:
        """Bring one file's passages in line with the file, whatever state it is in."""
        key = str(path)
        try:
            stat = path.stat()
        except FileNotFoundError:
            removed = self.remove(key)
            return FileResult(key, "removed", error=None if removed else "it does not exist")
        except OSError as error:
            return self._failed(key, _reason(error))
        if not path.is_file():
            return self._failed(key, _reason(IsADirectoryError()))
        with Session(self._mnemo.database) as session:
            row = session.get(DocumentRow, key)
        embedder = self._mnemo.embedder.name
        if (
            row is not None
            and row.status == "done"
            and row.embedder == embedder
            and row.size == stat.st_size
            and row.mtime == stat.st_mtime
        ):
            return FileResult(key, "unchanged", row.chunk_count)
        limit = int(self._mnemo.settings.get("ingest.max_file_mb"))
        if stat.st_size > limit * 2**20:
            self._mnemo.archival.delete_by_source(key)
            return self._failed(
                key,
                f"it is {stat.st_size / 2**20:.0f} MB and Mnemo reads files up to {limit} MB "
                "(the setting ingest.max_file_mb)",
            )
        if stat.st_size == 0:
            self._mnemo.archival.delete_by_source(key)
            self._set(
                key,
                status="skipped",
                error="it is empty",
                chunk_count=0,
                size=0,
                mtime=stat.st_mtime,
            )
            return FileResult(key, "skipped", error="it is empty")
        try:
            digest = file_hash(path)
        except OSError as error:
            return self._failed(key, _reason(error))
        if (
            row is not None
            and row.status == "done"
            and row.content_hash == digest
            and (row.embedder == embedder)
        ):
            self._set(key, size=stat.st_size, mtime=stat.st_mtime)  # touched, not changed
            return FileResult(key, "unchanged", row.chunk_count)
        with self._lock:
            return self._index(path, stat, digest, cancel)

    def _index(
        self, path: Path, stat: os.stat_result, digest: str, cancel: threading.Event | None
    ) -> FileResult:
        key = str(path)
        self._set(key, status="indexing", error=None)
        archival = self._mnemo.archival
        archival.delete_by_source(key)  # a changed file, or a crash mid-way: start clean
        written = 0
        try:
            batch: list[NewPassage] = []
            for chunk in chunk_sections(load(path)):
                if cancel is not None and cancel.is_set():
                    raise GenerationCancelled("Ingestion was stopped.")
                batch.append(
                    NewPassage(
                        chunk.text,
                        Source(path=key, section=chunk.section, chunk=chunk.position),
                        created_at=stat.st_mtime,
                        origin="document",
                    )
                )
                if len(batch) >= INSERT_BATCH:
                    archival.insert_many(batch)
                    written += len(batch)
                    batch = []
            if batch:
                archival.insert_many(batch)
                written += len(batch)
        except GenerationCancelled:
            archival.delete_by_source(key)
            self._set(key, status="queued", error=None, chunk_count=0)
            return FileResult(key, "cancelled")
        except UnsupportedFile as error:
            archival.delete_by_source(key)
            self._set(key, status="skipped", error=str(error), chunk_count=0)
            return FileResult(key, "skipped", error=str(error))
        except Exception as error:  # one bad file must not stop the batch
            if not isinstance(error, DocumentError | OSError):
                log.exception("ingesting %s failed", key)
            archival.delete_by_source(key)
            return self._failed(key, _reason(error))
        if not written:
            self._set(
                key,
                status="skipped",
                error="it contains no text",
                chunk_count=0,
                size=stat.st_size,
                mtime=stat.st_mtime,
                content_hash=digest,
            )
            return FileResult(key, "skipped", error="it contains no text")
        self._set(
            key,
            status="done",
            error=None,
            chunk_count=written,
            size=stat.st_size,
            mtime=stat.st_mtime,
            content_hash=digest,
            embedder=self._mnemo.embedder.name,
        )
        return FileResult(key, "done", written)

    def _failed(self, key: str, reason: str) -> FileResult:
        self._set(key, status="error", error=reason, chunk_count=0)
        return FileResult(key, "error", error=reason)

    def remove(self, path: str) -> int:
        """Forget a file, or every file under a folder: its passages and its index rows."""
        removed = 0
        rows = [row.path for row in self.documents(under=path)]
        with Session(self._mnemo.database) as session:
            exact = session.get(DocumentRow, path)
            if exact is not None:
                rows.append(exact.path)
        for key in dict.fromkeys(rows):
            removed += self._mnemo.archival.delete_by_source(key)
            with Session(self._mnemo.database) as session:
                row = session.get(DocumentRow, key)
                if row is not None:
                    session.delete(row)
                    session.commit()
        return removed

    def reconcile(
        self,
        folder: Path,
        include: Sequence[str] = (),
        exclude: Sequence[str] = DEFAULT_EXCLUDES,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> IngestProgress:
        """Catch up with a folder: index what is new or changed, drop what is gone."""
        present = set(walk(folder, include, exclude))
        for row in self.documents(under=str(folder)):
            if Path(row.path) not in present:
                self.remove(row.path)
        return self._run(sorted(present), progress, cancel)
