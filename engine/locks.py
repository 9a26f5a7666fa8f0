"""Locks that hold across processes: one writer at a time for what SQLite does not guard.

SQLite lets one connection write at a time by itself. LanceDB does not: two processes that write
one table at once (a forget's rewrite in `mnemo forget`, an append in the window) commit versions
that conflict ("Retryable commit conflict"), and a rewrite's clean-up can delete the data file
of an append still being written. So each writer of a vector table, in any process, holds the
table's ``WriterLock`` while it writes. The lock is the operating system's (a file lock), so a
killed holder frees it at once, and it is taken by one thread of this process at a time.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from types import TracebackType

from filelock import FileLock, Timeout

from engine.errors import MnemoError

log = logging.getLogger("mnemo.locks")

# How long a writer waits for another process's write: longer than the longest (a forget's
# rewrite of a large table, an ANN index built at 1M rows takes about a minute).
WAIT_S = 600.0
SLOW_S = 5.0  # a wait this long is logged


class WriterBusyError(MnemoError):
    """Another program held the lock for longer than a writer waits."""


class WriterLock:
    """Held by one thread of one process at a time, across every process of this computer;
    re-entrant for the thread that holds it."""

    def __init__(self, path: Path, what: str) -> None:
        """``what`` names what the lock guards, for the sentence a person reads."""
        self.path = path
        self.what = what
        self._thread = threading.RLock()
        self._depth = 0  # the holding thread's nesting
        self._file: FileLock | None = None

    def __enter__(self) -> WriterLock:
        self._thread.acquire()
        try:
            if self._depth == 0:
                self._acquire_file()
        except BaseException:
            self._thread.release()
            raise
        self._depth += 1
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._depth -= 1
        try:
            if self._depth == 0 and self._file is not None:
                self._file.release()
        finally:
            self._thread.release()

    def _acquire_file(self) -> None:
        if self._file is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError:
                return  # a read-only profile: nothing here writes, so nothing can clash
            self._file = FileLock(self.path, thread_local=False)
        started = time.monotonic()
        try:
            self._file.acquire(timeout=WAIT_S)
        except Timeout:
            raise WriterBusyError(
                f"Another Mnemo program has been writing {self.what} for over "
                f"{WAIT_S / 60:.0f} minutes; wait for it to finish, or close it, and try again."
            ) from None
        except OSError:  # a lock file that cannot be made (read-only folder): as above
            self._file = None
            return
        waited = time.monotonic() - started
        if waited > SLOW_S:
            log.info("waited %.1f s for another writer of %s", waited, self.what)
