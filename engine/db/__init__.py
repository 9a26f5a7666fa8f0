"""The profile's SQLite database: opening it, applying migrations, refusing a newer one, and
how its transactions begin.

The schema itself (each migration, and the table classes for the tables they create) is in
``engine.db.schema``. ``PRAGMA user_version`` records how many migrations have been applied. A
database whose version is higher than the code knows was written by a newer Mnemo and is refused
untouched.

Several writers share one profile (the window, `mnemo chat`, `mnemo serve`, `mnemo mcp`, an import,
a forget). SQLite lets one write at a time and makes the others wait (the busy timeout), but only
when a transaction asks for the write lock before it has read anything: one that reads first and
writes later gets SQLITE_BUSY at once, without waiting, when another connection wrote meanwhile
("database is locked"). So every transaction that writes begins as a write (``BEGIN IMMEDIATE``):
``writing(engine)`` is the engine that begins them so, and a transaction that began as a read and
then writes is a bug, refused where ``MNEMO_STRICT_WRITES`` is set (the tests set it).
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import re
import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from sqlalchemy import Connection, Engine, event
from sqlalchemy.pool import QueuePool
from sqlmodel import Session, create_engine

from engine.db.schema import MIGRATIONS
from engine.errors import NotFoundError, ProfileError, ProfileTooNewError, environment_problem

log = logging.getLogger("mnemo.db")

SCHEMA_VERSION = len(MIGRATIONS)
# How long a write waits for another program (or Mnemo window) to release the database: longer
# than the longest write of another (a forget's vacuum of a large profile takes seconds).
BUSY_TIMEOUT_S = 60.0
MIN_FREE_BYTES = 1 << 20  # less free space than this counts as a full disk
WRITES = "mnemo_writes"  # the execution option of ``writing``'s engine
STRICT_WRITES = "MNEMO_STRICT_WRITES"  # set: a read that turns into a write raises
_WRITE_STATEMENT = re.compile(r"\s*(INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER)\b", re.I)
_LOCKED = "mnemo_locked"  # in a connection's info: its transaction holds the write lock
_READ = "mnemo_read"  # in a connection's info: its deferred transaction has read


class ReadThenWriteError(RuntimeError):
    """A transaction that began as a read wrote: it can fail at once with "database is locked"
    when another writer came between (begin it with ``writing(engine)``)."""


class NestedWriteError(RuntimeError):
    """A thread that holds the write lock on one connection asked for it on another: it would
    wait for itself until the busy timeout ran out."""


_held = threading.local()  # per thread: the database's path -> the write it holds there
_TOKEN = "mnemo_write"  # in a connection's info: the mark of the write it holds now


def _holding(connection: Connection, raw: sqlite3.Connection) -> None:
    """Note that ``raw`` holds the write lock; refuse a second connection of this thread (a
    pooled connection's earlier write, since ended and perhaps another thread's now, does not
    count: its mark is gone with the end of that transaction)."""
    writers: dict[str, tuple[dict[Any, Any], object, sqlite3.Connection]]
    writers = _held.__dict__.setdefault("writers", {})
    database = str(connection.engine.url.database)
    held = writers.get(database)
    if held is not None:
        info, token, other = held
        if other is not raw and info.get(_TOKEN) is token and _in_transaction(other):
            raise NestedWriteError(
                "this thread already writes the database on another connection; write in that "
                "transaction, or after it ends"
            )
    token = object()
    connection.info[_TOKEN] = token
    writers[database] = (connection.info, token, raw)


def _in_transaction(raw: sqlite3.Connection) -> bool:
    try:
        return raw.in_transaction
    except sqlite3.ProgrammingError:  # closed since (its engine was disposed)
        return False


def writing(engine: Engine) -> Engine:
    """``engine``, beginning each transaction as a write (``BEGIN IMMEDIATE``): it waits its
    turn for the write lock at the start, before it reads, so it never fails halfway because
    another writer came between. Use it for every transaction that writes."""
    return engine.execution_options(**{WRITES: True})


@contextmanager
def write_session(engine: Engine) -> Iterator[Session]:
    """A session that holds the write lock from its start (``writing``): what it reads, and
    what it checks against the tombstones before it writes, is what the database holds while
    no other writer can change it (a forget's scan comes wholly before or after it)."""
    with Session(writing(engine)) as session:
        session.connection()  # begins the transaction, and with it BEGIN IMMEDIATE
        yield session


def _begin(connection: Connection) -> None:
    """Begin SQLite's transaction as SQLAlchemy begins its own: a write as a write."""
    _end(connection)
    if connection.get_execution_options().get("isolation_level") == "AUTOCOMMIT":
        return
    raw = connection.connection.dbapi_connection
    assert isinstance(raw, sqlite3.Connection)
    if raw.isolation_level is not None and not raw.in_transaction:
        raw.isolation_level = None  # (SQLAlchemy sets it back after an autocommit connection)
    writes = bool(connection.get_execution_options().get(WRITES))
    if writes:
        _holding(connection, raw)
    raw.execute("BEGIN IMMEDIATE" if writes else "BEGIN")
    connection.info[_LOCKED] = writes
    connection.info[_READ] = False


def _watch_statement(connection: Connection, _cursor: Any, statement: str, *_args: Any) -> None:
    """Note what a transaction begun as a read does: its first write after a read is the
    read-then-write that fails at once under another writer."""
    if connection.info.get(_LOCKED, True):
        return
    if not _WRITE_STATEMENT.match(statement):
        connection.info[_READ] = True
        return
    if connection.info.get(_READ):
        problem = (
            "a transaction that began as a read now writes; begin it with writing(engine): "
            + " ".join(statement.split())[:200]
        )
        if os.environ.get(STRICT_WRITES):
            raise ReadThenWriteError(problem)
        log.warning("%s", problem)
    raw = connection.connection.dbapi_connection
    assert isinstance(raw, sqlite3.Connection)
    _holding(connection, raw)
    connection.info[_LOCKED] = True  # the write took the lock (it waited its turn)


def _end(connection: Connection) -> None:
    for key in (_LOCKED, _READ, _TOKEN):
        connection.info.pop(key, None)


def _configure_connection(dbapi_connection: sqlite3.Connection, _record: Any) -> None:
    dbapi_connection.isolation_level = None  # transactions are begun by ``_begin``, not pysqlite
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    cursor.execute("PRAGMA foreign_keys = ON")
    # Freed pages are overwritten, so a deleted or forgotten text leaves no bytes behind.
    cursor.execute("PRAGMA secure_delete = ON")
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.close()


Row = TypeVar("Row")
Store = TypeVar("Store", bound="HasEngine")
Params = ParamSpec("Params")
Result = TypeVar("Result")


class HasEngine(Protocol):
    _engine: Engine


def committed(
    method: Callable[Concatenate[Store, Session, Params], Result],
) -> Callable[Concatenate[Store, Params], Result]:
    """The form of an ``…_in(session, …)`` method that runs in a session of its own and commits
    (``add = committed(add_in)``): one signature for the two, where each was written out. The
    session holds the write lock from its start (``write_session``)."""

    @functools.wraps(method)
    def run(store: Store, /, *args: Params.args, **kwargs: Params.kwargs) -> Result:
        with write_session(store._engine) as session:
            result = method(store, session, *args, **kwargs)
            session.commit()
            return result

    signature = inspect.signature(method)  # help() shows it without the session
    first, _session, *rest = signature.parameters.values()
    run.__signature__ = signature.replace(parameters=[first, *rest])  # type: ignore[attr-defined]
    return run


def row_or_missing(session: Session, table: type[Row], key: Any, missing: str) -> Row:
    """The row of ``table`` with primary key ``key``; ``NotFoundError(missing)`` when there is
    none, so every store says a missing row the same way."""
    row = session.get(table, key)
    if row is None:
        raise NotFoundError(missing)
    return row


def on_postgres(engine: Engine | Connection) -> bool:
    """Whether this profile's tables are in PostgreSQL (``engine.db.postgres``), not SQLite."""
    return engine.dialect.name == "postgresql"


def storage_problem(folder: Path) -> str | None:
    """Why nothing can be written in ``folder`` (a read-only place, a full disk), or None."""
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY) or not os.access(folder, os.W_OK)
        free = shutil.disk_usage(folder).free
    except OSError:
        return None
    if read_only:
        return (
            f"The profile folder {folder} is read-only, so Mnemo can show your memory but not "
            "change it; to chat or save, copy the folder somewhere you can write, or make it "
            "writable."
        )
    if free < MIN_FREE_BYTES:
        return (
            f"The disk holding the profile folder {folder} is full, so Mnemo can show your memory "
            "but not change it; free some space and try again."
        )
    return None


BeforeUpgrade = Callable[[Path, str], None]  # the database, what the upgrade is


def open_database(
    path: Path, before_upgrade: BeforeUpgrade | None = None
) -> tuple[Engine, str | None]:
    """Open (creating if needed) and migrate the profile database. Returns a SQLAlchemy engine
    and, when the folder cannot be written, why: the database is then opened read-only, so
    that reading still works. ``before_upgrade`` runs before migrations change an existing
    database (the memory layer keeps a snapshot)."""
    read_only = _migrate(path, before_upgrade)
    url = f"sqlite:///{path}"
    if read_only:  # immutable: read without the WAL's shared-memory file, which cannot be made
        url = f"sqlite:///file:{path}?mode=ro&immutable=1&uri=true"
    engine = create_engine(
        url,
        poolclass=QueuePool,
        pool_size=4,
        max_overflow=8,
        connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_S},
    )
    event.listen(engine, "connect", _configure_connection)
    event.listen(engine, "begin", _begin)
    event.listen(engine, "before_cursor_execute", _watch_statement)
    for ended in ("commit", "rollback"):
        event.listen(engine, ended, _end)
    return engine, read_only


def _migrate(path: Path, before_upgrade: BeforeUpgrade | None) -> str | None:
    """Bring the database to this version's schema; returns why it can only be read, if so."""
    problem = storage_problem(path.parent)
    if problem and path.exists():
        _check_version(path, problem)
        return problem
    try:
        connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error as error:
        raise ProfileError(
            problem or f"Cannot open the profile database {path}: {error}."
        ) from error
    try:
        version = _schema_version(connection, path)
        connection.execute("PRAGMA journal_mode = WAL")
        if 0 < version < len(MIGRATIONS) and before_upgrade is not None:
            before_upgrade(
                path, f"upgrading the database from schema {version} to {len(MIGRATIONS)}"
            )
        for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
            log.info("applying migration %d (%s) to %s", number, migration.name, path)
            # executescript commits first; BEGIN..COMMIT makes each migration all-or-nothing.
            connection.executescript(
                f"BEGIN IMMEDIATE;\n{migration.for_sqlite}\n"
                f"PRAGMA user_version = {number};\nCOMMIT;"
            )
    except sqlite3.OperationalError as error:
        raise ProfileError(
            environment_problem(error)
            or f"Cannot prepare the profile database {path} ({error}); if another program holds "
            "it locked, close it and try again."
        ) from error
    finally:
        connection.close()
    return None


def _schema_version(connection: sqlite3.Connection, path: Path) -> int:
    """The database's schema version; an unreadable one, or one from a newer Mnemo, is refused."""
    try:
        version = int(connection.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.DatabaseError as error:
        raise ProfileError(
            f"The profile database {path} is damaged or is not a Mnemo database ({error}); "
            "restore it from a backup or choose another profile folder."
        ) from error
    if version > SCHEMA_VERSION:
        raise ProfileTooNewError(
            f"This profile was written by a newer version of Mnemo (database schema {version}; "
            f"this version understands up to {SCHEMA_VERSION}). Update Mnemo to open it; "
            "the profile has not been changed."
        )
    return version


def _check_version(path: Path, problem: str) -> None:
    """A database that can only be read must already have this version's schema."""
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error as error:
        raise ProfileError(f"{problem} The database could not be opened ({error}).") from error
    try:
        version = _schema_version(connection, path)
    finally:
        connection.close()
    if version < SCHEMA_VERSION:
        raise ProfileError(
            f"{problem} Besides, this profile was written by an older Mnemo and needs a one-time "
            "update, which writes to it."
        )
