"""Ingestion: files into archival memory, once, in sync, and never half-done.

The ingestion index (``document`` table) records each file's size, modification time, content
hash, status and error. An unchanged file is skipped without being read (size and mtime match) or
after a hash check; a changed file replaces its passages; a file that is gone loses them. Files
are marked ``queued`` before work starts and ``indexing`` while they are read, so after a crash
the next run picks up exactly those and, because a file's old passages are dropped before new
ones are written, never duplicates anything. One bad file gets an error and the batch goes on.
"""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import logging
import os
import stat as stat_module
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from filelock import FileLock, Timeout

from engine.db.schema import DocumentRow
from engine.errors import GenerationCancelled
from engine.ingest.chunking import chunk_sections
from engine.loaders import DocumentError, UnsupportedFile, is_supported, load
from engine.memory.archival import ArchivalStore, NewPassage, Source
from engine.memory.documents import DocumentIndex

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from engine.embed.base import Embedder
    from engine.memory.snapshots import Snapshot
    from engine.memory.tombstones import Tombstones
    from engine.profile import Profile
    from engine.settings import Settings

log = logging.getLogger("mnemo.ingest")

INSERT_BATCH = 512  # passages embedded and written together
HASH_PIECE = 1024 * 1024
MIN_FILE_SECONDS = 60  # every file gets at least this long, however small
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

# Files are written one batch at a time in this process, whichever Ingestor (a watcher, a drop on
# the window, the CLI) asks, so two of them never index the same file at once; a lock file does
# the same between processes (see Ingestor._exclusive).
_WRITE_LOCK = threading.Lock()

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


def leaves_folder(path: Path, folder: Path) -> bool:
    """Whether ``path``, found under ``folder``, is a symbolic link to a file outside it: a
    folder given to Mnemo is read, and only what is inside it (a link named ``notes.md`` may
    point at a key file elsewhere)."""
    if not path.is_symlink():
        return False
    try:
        return not path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):  # a loop: reported as such when read
        return False


def canonical_path(given: str | os.PathLike[str]) -> Path:
    """The one form a path takes in the document index: absolute, with ``~``, ``.`` and ``..``
    resolved; symbolic links are kept as they are (a link is reported for what it is)."""
    return Path(os.path.normpath(Path(given).expanduser().absolute()))


def unstorable_name(path: Path | str) -> str | None:
    """Why a file cannot be indexed under its name, or None. Mnemo keeps paths as text; a name
    that is not valid UTF-8 (Python holds its bytes as lone surrogates) cannot be stored."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return (
            "its name is not valid UTF-8 text, so Mnemo cannot keep it; rename the file (for "
            "example with convmv) and it is read on the next scan"
        )
    return None


def display_path(path: Path | str) -> str:
    """A path as text that can always be shown and stored: undecodable bytes read as \\xNN."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while piece := file.read(HASH_PIECE):
            digest.update(piece)
    return digest.hexdigest()


def _special_kind(stat: os.stat_result) -> str:
    """What a file that is neither a regular file nor a folder is, in words."""
    mode = stat.st_mode
    if stat_module.S_ISFIFO(mode):
        return "a named pipe"
    if stat_module.S_ISSOCK(mode):
        return "a socket"
    if stat_module.S_ISCHR(mode) or stat_module.S_ISBLK(mode):
        return "a device"
    return "a special file"


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
    if isinstance(error, OSError) and error.errno == errno.ELOOP:
        return "it is a symbolic link that points to itself (a link loop)"
    if isinstance(error, OSError):
        return f"it cannot be read ({error.strerror or error})"
    return f"reading it failed unexpectedly ({type(error).__name__}: {error})"


class Stores(Protocol):
    """What ingestion reads and writes, and nothing more: the profile's folder (its lock),
    archival memory, the document index's database, the settings, the embedder, and the
    snapshot a large removal takes first. A ``Mnemo`` is one."""

    profile: Profile
    archival: ArchivalStore
    settings: Settings
    tombstones: Tombstones

    @property
    def embedder(self) -> Embedder: ...

    @property
    def database(self) -> Engine: ...

    def snapshot_before(self, what: str) -> Snapshot | None: ...


class Ingestor:
    """Reads files into a profile's archival memory and keeps the ingestion index."""

    def __init__(self, stores: Stores, on_wait: Callable[[], None] | None = None) -> None:
        """``on_wait`` is called once if another process is ingesting into this profile."""
        self._stores = stores
        self._on_wait = on_wait
        self.index = DocumentIndex(stores.database)
        self._outside: dict[str, Path] = {}  # links found under a folder, to files outside it

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        """Hold this profile's ingestion for the caller, in this process and across processes.

        Two processes ingesting the same files at once would each write their passages (both
        read the index before either wrote it), so the second waits for the first.
        """
        with _WRITE_LOCK:
            lock = FileLock(self._stores.profile.root / "ingest.lock", thread_local=False)
            try:
                lock.acquire(timeout=0)
            except Timeout:
                if self._on_wait is not None:
                    self._on_wait()
                lock.acquire()
            try:
                yield
            finally:
                lock.release()

    # -- the index -----------------------------------------------------------------------------

    def documents(self, under: str | None = None) -> list[DocumentRow]:
        """Every file read into this profile, with its state (for the Documents page)."""
        return self.index.all(under)

    # -- ingesting -----------------------------------------------------------------------------

    def collect(
        self,
        paths: Iterable[str | os.PathLike[str]],
        include: Sequence[str] = (),
        exclude: Sequence[str] = DEFAULT_EXCLUDES,
    ) -> list[Path]:
        """Files to read: each file given, and the documents under each folder given, with
        those indexed under it that are gone since (so that a re-run drops them). Every path
        takes one form, however it was given (``canonical_path``)."""
        files: list[Path] = []
        for given in paths:
            path = canonical_path(given)
            if path.is_dir():
                found = list(walk(path, include, exclude))
                self._note_outside(found, path)
                files += found
                listed = {str(file) for file in found}
                gone = [row.path for row in self.documents(str(path)) if row.path not in listed]
                files += [Path(name) for name in gone if not os.path.lexists(name)]
            else:
                files.append(path)
        return list(dict.fromkeys(files))

    def _note_outside(self, files: Iterable[Path], folder: Path) -> None:
        for file in files:
            if leaves_folder(file, folder):
                self._outside[str(file)] = folder
            else:  # (a link changed to point inside)
                self._outside.pop(str(file), None)

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
        return self._run([Path(path) for path in self.index.unfinished()], progress, cancel)

    def _run(
        self,
        files: list[Path],
        progress: ProgressCallback | None,
        cancel: threading.Event | None,
    ) -> IngestProgress:
        with self._exclusive():
            return self._run_locked(files, progress, cancel)

    def _run_locked(
        self,
        files: list[Path],
        progress: ProgressCallback | None,
        cancel: threading.Event | None,
    ) -> IngestProgress:
        state = IngestProgress(files_total=len(files))
        known = {row.path: row for row in self.documents()}
        work: list[Path] = []
        for path in files:  # the common case, a re-scan of unchanged files, costs one stat each
            row = known.get(str(path))
            unchanged = self._unchanged(row, path)
            if unchanged is not None:
                state.results.append(unchanged)
                state.files_done += 1
                state.chunks += unchanged.chunks
            else:
                work.append(path)
        if progress and state.files_done:
            progress(state)
        # A file whose name cannot be stored is reported on its own when its turn comes.
        self.index.queue(
            str(path) for path in work if not unstorable_name(path) and not self._refused(str(path))
        )

        def record(result: FileResult) -> None:
            state.results.append(result)
            state.files_done += 1
            state.chunks += result.chunks
            state.errors += result.outcome == "error"
            if progress:
                progress(state)

        writer = self._writer(record)
        try:
            for path in work:
                if cancel is not None and cancel.is_set():
                    break
                state.current = str(path)
                if progress:
                    progress(state)
                self._ingest_into(writer, path, known.get(str(path)), cancel)
            writer.flush()
        finally:
            if work:  # files were embedded: give back the embedder's peak working memory
                release = getattr(self._stores.embedder, "release_memory", None)
                if release is not None:
                    release()
        state.current = None
        return state

    def _refused(self, key: str) -> str | None:
        """Why a file is not read, with no trace of it kept in the index: its name holds what
        the person asked to forget, or it is a link out of the folder it was found in."""
        if self._stores.tombstones.spans(key):
            return (
                "its name holds what you asked Mnemo to forget; rename it and it is read on the "
                "next scan"
            )
        if key in self._outside:
            return (
                f"it is a link to a file outside {display_path(self._outside[key])}, and Mnemo "
                "reads only what is inside the folders it is given"
            )
        return None

    def _unchanged(self, row: DocumentRow | None, path: Path) -> FileResult | None:
        if row is None or row.status != "done" or row.embedder != self._stores.embedder.name:
            return None
        if self._refused(row.path):  # read before it was refused: its passages go now
            return None
        try:
            stat = path.stat()
        except OSError:
            return None
        if (row.size, row.mtime) != (stat.st_size, stat.st_mtime):
            return None
        return FileResult(str(path), "unchanged", row.chunk_count)

    def ingest_file(
        self, path: Path, cancel: threading.Event | None = None, inside: Path | None = None
    ) -> FileResult:
        """Bring one file's passages in line with the file, whatever state it is in; a file of
        the folder ``inside`` (a watched folder's change) only while it stays inside it."""
        path = canonical_path(path)
        if inside is not None:
            self._note_outside([path], canonical_path(inside))
        with self._exclusive():
            row = None
            if not unstorable_name(path):  # such a file is reported by _ingest_into
                row = self.index.get(str(path))
            unchanged = self._unchanged(row, path)
            if unchanged is not None:
                return unchanged
            results: list[FileResult] = []
            writer = self._writer(results.append)
            self._ingest_into(writer, path, row, cancel)
            writer.flush()
            return results[0]

    def _ingest_into(
        self,
        writer: _Writer,
        path: Path,
        row: DocumentRow | None,
        cancel: threading.Event | None,
    ) -> None:
        """Check one file and queue its passages on ``writer`` (which reports its outcome)."""
        problem = unstorable_name(path)
        if problem:
            writer.report(self._failed(display_path(path), problem))
            return
        key = str(path)
        if (refused := self._refused(key)) is not None:
            if self.index.get(key) is not None:  # read before: it goes, passages and all
                self._remove(key)
            writer.report(FileResult(key, "skipped", error=refused))
            return
        try:
            stat = path.stat()
        except FileNotFoundError:
            removed = self._remove(key)
            writer.report(
                FileResult(key, "removed", error=None if removed else "it does not exist")
            )
            return
        except OSError as error:
            writer.report(self._failed(key, _reason(error)))
            return
        if not stat_module.S_ISREG(stat.st_mode):
            kind = "a folder" if stat_module.S_ISDIR(stat.st_mode) else _special_kind(stat)
            writer.report(self._failed(key, f"it is {kind}, not a document"))
            return
        had_passages = row is not None and (row.chunk_count > 0 or row.status == "indexing")
        limit = int(self._stores.settings.get("ingest.max_file_mb"))
        if stat.st_size > limit * 2**20 or stat.st_size == 0:
            if had_passages:
                self._stores.archival.delete_by_source(key)
            if stat.st_size:
                reason = (
                    f"it is {stat.st_size / 2**20:.0f} MB and Mnemo reads files up to {limit} MB "
                    "(the setting ingest.max_file_mb)"
                )
                writer.report(self._failed(key, reason))
            else:
                self.index.set(
                    key,
                    status="skipped",
                    error="it is empty",
                    chunk_count=0,
                    size=0,
                    mtime=stat.st_mtime,
                )
                writer.report(FileResult(key, "skipped", error="it is empty"))
            return
        try:
            digest = file_hash(path)
        except OSError as error:
            writer.report(self._failed(key, _reason(error)))
            return
        if (
            row is not None
            and row.status == "done"
            and row.content_hash == digest
            and row.embedder == self._stores.embedder.name
        ):
            self.index.set(key, size=stat.st_size, mtime=stat.st_mtime)  # touched, not changed
            writer.report(FileResult(key, "unchanged", row.chunk_count))
            return
        self.index.set(key, status="indexing", error=None)
        if had_passages:
            self._stores.archival.delete_by_source(key)  # changed, or a crash mid-way: start clean
        file = writer.start(key, stat, digest)
        allowed_s = (
            MIN_FILE_SECONDS
            + int(self._stores.settings.get("ingest.seconds_per_mb")) * stat.st_size / 2**20
        )
        deadline = time.monotonic() + allowed_s
        try:
            for chunk in chunk_sections(load(path, unpacked_limit=limit * 2**20)):
                if cancel is not None and cancel.is_set():
                    raise GenerationCancelled("Ingestion was stopped.")
                if time.monotonic() > deadline:
                    raise DocumentError(
                        f"reading it took longer than {allowed_s:.0f} s, so it was stopped (a "
                        "minute plus ingest.seconds_per_mb per MB; raise that setting to let "
                        "large files finish)"
                    )
                writer.add(
                    file,
                    NewPassage(
                        chunk.text,
                        Source(path=key, section=chunk.section, chunk=chunk.position),
                        created_at=stat.st_mtime,
                        origin="document",
                    ),
                )
        except GenerationCancelled:
            writer.abandon(file)
            self.index.set(key, status="queued", error=None, chunk_count=0)
            writer.report(FileResult(key, "cancelled"))
            return
        except UnsupportedFile as error:
            writer.abandon(file)
            self.index.set(key, status="skipped", error=str(error), chunk_count=0)
            writer.report(FileResult(key, "skipped", error=str(error)))
            return
        except Exception as error:  # one bad file must not stop the batch
            if not isinstance(error, DocumentError | OSError):
                log.exception("ingesting %s failed", key)
            writer.abandon(file)
            writer.report(self._failed(key, _reason(error)))
            return
        writer.finish(file)

    def _writer(self, report: Callable[[FileResult], None]) -> _Writer:
        return _Writer(self._stores.archival, self.index, self._stores.embedder.name, report)

    def _failed(self, key: str, reason: str) -> FileResult:
        self.index.set(key, status="error", error=reason, chunk_count=0)
        return FileResult(key, "error", error=reason)

    def remove(self, path: str) -> int:
        """Forget a file, or every file under a folder: its passages and its index rows."""
        with self._exclusive():
            return self._remove(path)

    def _remove(self, path: str) -> int:
        if unstorable_name(path):
            return 0  # nothing was ever stored under such a name
        removed = 0
        rows = [row.path for row in self.index.all(under=path)]
        if rows:  # a folder, not one file the watcher saw go
            self._stores.snapshot_before(f"removing {path} and its passages")
        if self.index.get(path) is not None:
            rows.append(path)
        keys = list(dict.fromkeys(rows))
        for key in keys:
            removed += self._stores.archival.delete_by_source(key)
            self.index.delete(key)
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
        with self._exclusive():
            present = set(walk(folder, include, exclude))
            self._note_outside(present, folder)
            for row in self.documents(under=str(folder)):
                if Path(row.path) not in present:
                    self._remove(row.path)
            return self._run_locked(sorted(present), progress, cancel)


@dataclass
class _File:
    key: str
    stat: os.stat_result
    digest: str
    passages: int = 0
    in_buffer: int = 0
    flushed: bool = False


class _Writer:
    """Passages of many files embedded and written in large batches (as fast as the embedder
    alone); a file is marked done only once all of its passages are written."""

    def __init__(
        self,
        archival: ArchivalStore,
        index: DocumentIndex,
        embedder_name: str,
        report: Callable[[FileResult], None],
    ) -> None:
        self._archival = archival
        self._index = index
        self._embedder_name = embedder_name
        self.report = report
        self._buffer: list[NewPassage] = []
        self._open: list[_File] = []  # files with passages in the buffer
        self._finished: list[_File] = []  # complete files waiting for the next write

    def start(self, key: str, stat: os.stat_result, digest: str) -> _File:
        file = _File(key, stat, digest)
        self._open.append(file)
        return file

    def add(self, file: _File, passage: NewPassage) -> None:
        self._buffer.append(passage)
        file.passages += 1
        file.in_buffer += 1
        if len(self._buffer) >= INSERT_BATCH:
            self.flush()

    def finish(self, file: _File) -> None:
        self._finished.append(file)

    def abandon(self, file: _File) -> None:
        """Drop a failed file's passages: those still buffered (they are the buffer's tail) and
        any already written."""
        if file.in_buffer:
            del self._buffer[-file.in_buffer :]
        if file.flushed:
            self._archival.delete_by_source(file.key)
        self._open.remove(file)

    def flush(self) -> None:
        if self._buffer:
            self._archival.insert_many(self._buffer)
            self._buffer = []
            for file in self._open:
                file.flushed = file.flushed or file.in_buffer > 0
                file.in_buffer = 0
        for file in self._finished:
            self._open.remove(file)
            self._done(file)
        self._finished = []

    def _done(self, file: _File) -> None:
        if not file.passages:
            self._index.set(
                file.key,
                status="skipped",
                error="it contains no text",
                chunk_count=0,
                size=file.stat.st_size,
                mtime=file.stat.st_mtime,
                content_hash=file.digest,
            )
            self.report(FileResult(file.key, "skipped", error="it contains no text"))
            return
        self._index.set(
            file.key,
            status="done",
            error=None,
            chunk_count=file.passages,
            size=file.stat.st_size,
            mtime=file.stat.st_mtime,
            content_hash=file.digest,
            embedder=self._embedder_name,
        )
        self.report(FileResult(file.key, "done", file.passages))
