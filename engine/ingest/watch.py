"""Watched folders: a persisted list, and a watchdog observer that keeps archival memory in sync.

Changes are debounced (an editor's burst of saves re-indexes a file once, after it has been quiet
for a second) and handled on one worker thread, so a burst never blocks the caller. When watching
starts, each folder is first reconciled with the index, which catches what changed while Mnemo
was closed.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlmodel import Session, col, select
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from engine.db import write_session
from engine.db.schema import WatchedFolderRow
from engine.errors import MnemoError
from engine.ingest.ingestor import (
    DEFAULT_EXCLUDES,
    FileResult,
    Ingestor,
    Stores,
    canonical_path,
    excluded,
)
from engine.loaders import is_supported

if TYPE_CHECKING:
    from sqlalchemy import Engine

log = logging.getLogger("mnemo.watch")

DEBOUNCE_S = 1.0


@dataclass(frozen=True)
class WatchedFolder:
    path: Path
    include: tuple[str, ...]
    exclude: tuple[str, ...]


class WatchedFolders:
    """The profile's list of watched folders (``stores``: a ``Mnemo``, or what has its
    database)."""

    def __init__(self, stores: Stores) -> None:
        self._database: Engine = stores.database

    def all(self) -> list[WatchedFolder]:
        with Session(self._database) as session:
            rows = session.exec(select(WatchedFolderRow).order_by(col(WatchedFolderRow.path)))
            return [
                WatchedFolder(
                    Path(row.path), tuple(json.loads(row.include)), tuple(json.loads(row.exclude))
                )
                for row in rows
            ]

    def add(
        self,
        path: str | Path,
        include: Sequence[str] = (),
        exclude: Sequence[str] | None = None,
    ) -> WatchedFolder:
        folder = canonical_path(path)
        if not folder.is_dir():
            raise MnemoError(f"{folder} is not a folder; watch a folder, or ingest a single file.")
        rules = tuple(DEFAULT_EXCLUDES if exclude is None else (*DEFAULT_EXCLUDES, *exclude))
        with write_session(self._database) as session:
            row = session.get(WatchedFolderRow, str(folder)) or WatchedFolderRow(
                path=str(folder), added_at=time.time()
            )
            row.include = json.dumps(list(include))
            row.exclude = json.dumps(list(rules))
            session.add(row)
            session.commit()
        return WatchedFolder(folder, tuple(include), rules)

    def remove(self, path: str | Path) -> None:
        folder = str(canonical_path(path))
        with write_session(self._database) as session:
            row = session.get(WatchedFolderRow, folder)
            if row is None:
                raise MnemoError(
                    f"{folder} is not a watched folder; `mnemo watch list` shows them."
                )
            session.delete(row)
            session.commit()


class _Changes(FileSystemEventHandler):
    """Collects changed paths under one folder, with the time of their latest event."""

    def __init__(self, watcher: FolderWatcher, folder: WatchedFolder) -> None:
        self._watcher = watcher
        self._folder = folder

    def _wanted(self, path: Path, is_directory: bool) -> bool:
        try:
            parts = path.relative_to(self._folder.path).parts
        except ValueError:
            return False
        if any(excluded(part, self._folder.exclude) for part in parts):
            return False
        include = self._folder.include
        return is_directory or not include or excluded(path.name, include)

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        paths = [event.src_path]
        if event.event_type == "moved":
            paths.append(event.dest_path)
        for raw in paths:
            path = Path(raw if isinstance(raw, str) else raw.decode())
            if self._wanted(path, event.is_directory):
                self._watcher.touch(path, self._folder, event.is_directory)


class FolderWatcher:
    """Watches every watched folder; changed files are re-indexed on a worker thread.

    ``on_result`` is called (on the worker thread) with each file's outcome.
    """

    def __init__(
        self,
        stores: Stores,
        *,
        debounce_s: float = DEBOUNCE_S,
        on_result: Callable[[FileResult], None] | None = None,
    ) -> None:
        self._stores = stores
        self._ingestor = Ingestor(stores)
        self._debounce_s = debounce_s
        self._on_result = on_result
        self._pending: dict[Path, tuple[float, WatchedFolder, bool]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._observer = Observer()
        self._worker = threading.Thread(target=self._work, name="mnemo-watch", daemon=True)

    def start(self) -> None:
        folders = WatchedFolders(self._stores).all()
        for folder in folders:
            if folder.path.is_dir():
                self._observer.schedule(_Changes(self, folder), str(folder.path), recursive=True)
            else:
                log.warning("watched folder %s is missing; skipped", folder.path)
        self._observer.start()
        self._folders = folders
        self._worker.start()

    def stop(self) -> None:
        self._stop.set()
        self._observer.stop()
        self._observer.join()
        self._worker.join()

    def touch(self, path: Path, folder: WatchedFolder, is_directory: bool) -> None:
        with self._lock:
            self._pending[path] = (time.monotonic(), folder, is_directory)
            self._idle.clear()

    def wait_until_idle(self, timeout: float = 30.0) -> bool:
        """Block until the start-up reconciliation and every pending change are done."""
        return self._idle.wait(timeout)

    def _report(self, result: FileResult) -> None:
        if self._on_result is not None:
            self._on_result(result)

    def _work(self) -> None:
        ingest = self._ingestor
        for folder in self._folders:  # catch up with what changed while Mnemo was closed
            if self._stop.is_set():
                return
            if folder.path.is_dir():
                for result in ingest.reconcile(
                    folder.path, folder.include, folder.exclude, cancel=self._stop
                ).results:
                    self._report(result)
        ingest.resume(cancel=self._stop)
        while not self._stop.wait(min(0.2, self._debounce_s / 2)):
            now = time.monotonic()
            with self._lock:
                ready = [
                    (path, folder, is_directory)
                    for path, (seen, folder, is_directory) in self._pending.items()
                    if now - seen >= self._debounce_s
                ]
                for path, _, _ in ready:
                    del self._pending[path]
                if not self._pending and not ready:
                    self._idle.set()
            for path, folder, is_directory in ready:
                try:
                    self._handle(path, folder, is_directory)
                except Exception:  # the watcher must outlive any one file
                    log.exception("could not handle a change to %s", path)

    def _handle(self, path: Path, folder: WatchedFolder, is_directory: bool) -> None:
        ingest = self._ingestor
        if path.is_dir():
            for result in ingest.reconcile(path, folder.include, folder.exclude).results:
                self._report(result)
        elif path.exists():
            if is_supported(path):
                self._report(ingest.ingest_file(path, self._stop, inside=folder.path))
        elif is_directory or not path.suffix or is_supported(path):
            removed = ingest.remove(str(path))
            self._report(FileResult(str(path), "removed", removed))
