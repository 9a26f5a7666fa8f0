"""Errors a user can understand and act on, and the one place that tells them from bugs.

Anything raised as a ``MnemoError`` is shown to the user as it is: one sentence that says what went
wrong and how to fix it. A failure of this computer's storage (a busy, full, read-only or damaged
database or disk) is the user's environment, not a bug, and ``user_message`` gives its sentence.
Every other exception is a bug. The command line, the window's workers and the agent all ask
``user_message``.
"""

from __future__ import annotations

import errno
import logging
import sqlite3

REDACTED = "[key removed]"
SECRET_FRAGMENT = 12  # a run this long of a key's characters counts as the key (a server's echo)
_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember an API key, so that no error, log line or stored note ever carries it."""
    if value and len(value.strip()) >= SECRET_FRAGMENT:
        _secrets.add(value.strip())


def redact(text: str) -> str:
    """``text`` without any known key, whole or echoed in part (servers often quote a part):
    each run of characters covered by some 12-character stretch of a key becomes one mark."""
    for secret in _secrets:
        stretches = {
            secret[i : i + SECRET_FRAGMENT] for i in range(len(secret) - SECRET_FRAGMENT + 1)
        }
        if not any(stretch in text for stretch in stretches):
            continue  # the usual case, found at the speed of ``in`` (every stored message)
        covered = [False] * len(text)
        for i in range(len(text) - SECRET_FRAGMENT + 1):
            if text[i : i + SECRET_FRAGMENT] in stretches:
                covered[i : i + SECRET_FRAGMENT] = [True] * SECRET_FRAGMENT
        if any(covered):
            text = "".join(
                REDACTED if hidden and (i == 0 or not covered[i - 1]) else "" if hidden else char
                for i, (char, hidden) in enumerate(zip(text, covered, strict=True))
            )
    return text


class RedactingFilter(logging.Filter):
    """A log filter that takes known keys out of every record's message."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, ()
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


class MnemoError(Exception):
    """A failure the user can fix; ``str(error)`` is the sentence to show. Errors become text
    here, so known keys are taken out here (a server may echo the key in its error)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(redact(arg) if isinstance(arg, str) else arg for arg in args))


class ProfileError(MnemoError):
    """The profile directory or its database cannot be used."""


class ProfileTooNewError(ProfileError):
    """The profile was written by a newer Mnemo; it is refused, never rewritten."""


class CoreMemoryError(MnemoError):
    """A core-memory edit was refused (over the limit, read-only, unknown block...)."""


class NotFoundError(MnemoError):
    """A message, passage or block that does not exist was asked for."""


class EmbedderMismatchError(MnemoError):
    """Archival memory was embedded with another model; re-embedding needs the user's consent."""


class VectorTableDamagedError(MnemoError):
    """A vector table cannot be read: a file of its newest version is gone (a disk fault)."""


class ModelError(MnemoError):
    """A model cannot be loaded or used (file missing, not a GGUF, server unreachable...)."""


class ContextOverflowError(ModelError):
    """A prompt does not fit the model's context window, even after eviction; or a server said
    its window is smaller than Mnemo assumed (``context_length``: the size it gave)."""

    def __init__(self, message: str, context_length: int | None = None) -> None:
        super().__init__(message)
        self.context_length = context_length


class GenerationCancelled(MnemoError):
    """The user stopped a generation; nothing from the unfinished step was kept. ``stats``:
    what the model had done until then (an ``engine.llm.base.StepStats``), when it says."""

    stats: object = None


class InputError(MnemoError):
    """A value the user gave cannot be used (an empty passage, a page number, a date)."""


# -- the user's environment versus a bug --------------------------------------------------------

READ_ONLY = (
    "The profile folder is read-only, so nothing can be changed; copy it somewhere you can "
    "write, or make it writable."
)
DISK_FULL = "The disk holding the profile is full; free some space and try again."
BUSY = (
    "The profile database is busy: another program (perhaps another Mnemo) is writing to it. "
    "Close that program or wait a moment, then try again; nothing was changed."
)
DAMAGED = (
    "The profile database is damaged, so this could not be done; restore the profile folder "
    "from a backup, or start a new profile and keep the old folder for later."
)
NO_PERMISSION = (
    "Mnemo has no permission to write {what}; make the profile folder writable, or choose "
    "another one."
)

# SQLite's primary result codes (https://sqlite.org/rescode.html); an extended code keeps its
# primary code in the low byte.
_SQLITE_SENTENCES = {
    5: BUSY,  # SQLITE_BUSY
    6: BUSY,  # SQLITE_LOCKED
    8: READ_ONLY,  # SQLITE_READONLY
    11: DAMAGED,  # SQLITE_CORRUPT
    13: DISK_FULL,  # SQLITE_FULL
    26: DAMAGED,  # SQLITE_NOTADB
}
_OS_SENTENCES = {errno.EROFS: READ_ONLY, errno.ENOSPC: DISK_FULL, errno.EDQUOT: DISK_FULL}


def environment_problem(error: BaseException) -> str | None:
    """The sentence for a storage failure the user can act on; None when ``error`` is a bug.

    SQLite errors are sorted by their result code (SQLAlchemy keeps the original as ``orig``),
    the operating system's by errno. LanceDB's errors come from Rust as text, so for them the
    operating system's error number is read from "os error N".
    """
    cause = getattr(error, "orig", None) or error
    if isinstance(cause, OSError) and cause.errno is not None:
        if cause.errno in (errno.EACCES, errno.EPERM):
            return NO_PERMISSION.format(what=cause.filename or "to the profile folder")
        return _OS_SENTENCES.get(cause.errno)
    if isinstance(cause, sqlite3.Error):
        code = getattr(cause, "sqlite_errorcode", None)
        return None if code is None else _SQLITE_SENTENCES.get(code & 0xFF)
    if isinstance(cause, RuntimeError):
        number = _os_error_number(str(cause))
        return None if number is None else _OS_SENTENCES.get(number)
    return None


def _os_error_number(text: str) -> int | None:
    marker = "os error "
    start = text.find(marker)
    if start < 0:
        return None
    digits = "".join(char for char in text[start + len(marker) :][:4] if char.isdigit())
    return int(digits) if digits else None


def user_message(error: BaseException, read_only_reason: str | None = None) -> str | None:
    """What to tell the user about ``error``; None means it is a bug (log it, say so plainly).

    ``read_only_reason``: why the profile was opened read-only. It says a storage failure more
    precisely (on a full disk the database is opened read-only, and SQLite then reports a
    read-only database).
    """
    if isinstance(error, MnemoError):
        return str(error)
    sentence = environment_problem(error)
    return read_only_reason if sentence is not None and read_only_reason else sentence
