"""One error path: a user's mistake, their storage's failure, or a bug, told apart in one place
(``engine.errors.user_message``), with real SQLite errors sorted by their result code."""

from __future__ import annotations

import errno
import sqlite3

import pytest
import sqlalchemy
from sqlalchemy import text

from engine.errors import (
    BUSY,
    DAMAGED,
    DISK_FULL,
    READ_ONLY,
    InputError,
    environment_problem,
    user_message,
)


def sqlite_error(action) -> sqlite3.Error:
    with pytest.raises(sqlite3.Error) as raised:
        action()
    return raised.value


def test_sqlite_errors_are_sorted_by_their_code(tmp_path):
    path = tmp_path / "db.sqlite"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")
    other = sqlite3.connect(path, timeout=0)
    busy = sqlite_error(lambda: other.execute("INSERT INTO t VALUES (1)"))
    holder.execute("ROLLBACK")
    reader = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    read_only = sqlite_error(lambda: reader.execute("INSERT INTO t VALUES (1)"))
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not a database" * 100)
    damaged = sqlite_error(lambda: sqlite3.connect(garbage).execute("SELECT * FROM t"))
    bug = sqlite_error(lambda: holder.execute("SELECT * FROM no_such_table"))

    assert environment_problem(busy) == BUSY
    assert environment_problem(read_only) == READ_ONLY
    assert environment_problem(damaged) == DAMAGED
    assert environment_problem(bug) is None  # a wrong query is Mnemo's bug, not the user's
    # SQLAlchemy wraps the driver's error; the code is read from the original.
    engine = sqlalchemy.create_engine(f"sqlite:///{path}", connect_args={"timeout": 0})
    holder.execute("BEGIN IMMEDIATE")
    with pytest.raises(sqlalchemy.exc.OperationalError) as wrapped, engine.begin() as connection:
        connection.execute(text("INSERT INTO t VALUES (2)"))
    holder.execute("ROLLBACK")
    assert user_message(wrapped.value) == BUSY
    engine.dispose()


def test_the_operating_system_and_lancedb_speak_through_error_numbers():
    assert environment_problem(OSError(errno.ENOSPC, "No space left on device")) == DISK_FULL
    assert environment_problem(OSError(errno.EROFS, "Read-only file system")) == READ_ONLY
    denied = environment_problem(PermissionError(errno.EACCES, "Permission denied", "/p/x"))
    assert denied is not None and "no permission to write /p/x" in denied
    lance = RuntimeError("LanceError(IO): Generic LocalFileSystem error: No space (os error 28)")
    assert environment_problem(lance) == DISK_FULL
    assert environment_problem(RuntimeError("index out of range")) is None
    assert environment_problem(OSError(errno.ENOENT, "No such file")) is None


def test_user_message_tells_the_users_part_from_a_bug():
    assert user_message(InputError("The page number must be at least 1.")) == (
        "The page number must be at least 1."
    )
    assert user_message(ValueError("unknown message role 'robot'")) is None  # a bug
    assert user_message(KeyError("x")) is None
    why = "The disk holding the profile folder /p is full, so Mnemo can show your memory."
    assert user_message(OSError(errno.EROFS, "ro"), read_only_reason=why) == why
    assert user_message(InputError("x"), read_only_reason=why) == "x"
