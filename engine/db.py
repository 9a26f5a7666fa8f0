"""The profile's SQLite database: connection settings and versioned migrations.

Each migration is a named SQL script; ``PRAGMA user_version`` records how many have been applied.
A database whose version is higher than the code knows was written by a newer Mnemo and is refused
untouched.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.pool import QueuePool
from sqlmodel import create_engine

from engine.errors import ProfileError, ProfileTooNewError

log = logging.getLogger("mnemo.db")

MIGRATIONS: list[tuple[str, str]] = [
    (
        "recall_and_core_memory",
        """
        CREATE TABLE message (
            id INTEGER PRIMARY KEY,
            conversation_id TEXT NOT NULL DEFAULT 'default',
            role TEXT NOT NULL CHECK (role IN
                ('user', 'assistant', 'function_call', 'function_result', 'system')),
            name TEXT,
            text TEXT NOT NULL,
            created_at REAL NOT NULL,
            embedded INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX message_created_at ON message (created_at);
        CREATE INDEX message_conversation ON message (conversation_id, id);
        CREATE INDEX message_unembedded ON message (id) WHERE embedded = 0;

        CREATE VIRTUAL TABLE message_fts USING fts5 (
            text, content = 'message', content_rowid = 'id',
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER message_fts_insert AFTER INSERT ON message BEGIN
            INSERT INTO message_fts (rowid, text) VALUES (new.id, new.text);
        END;
        CREATE TRIGGER message_fts_delete AFTER DELETE ON message BEGIN
            INSERT INTO message_fts (message_fts, rowid, text) VALUES ('delete', old.id, old.text);
        END;
        CREATE TRIGGER message_fts_update AFTER UPDATE OF text ON message BEGIN
            INSERT INTO message_fts (message_fts, rowid, text) VALUES ('delete', old.id, old.text);
            INSERT INTO message_fts (rowid, text) VALUES (new.id, new.text);
        END;

        CREATE TABLE core_block (
            label TEXT PRIMARY KEY,
            description TEXT NOT NULL DEFAULT '',
            value TEXT NOT NULL DEFAULT '',
            char_limit INTEGER NOT NULL,
            read_only INTEGER NOT NULL DEFAULT 0,
            position INTEGER NOT NULL DEFAULT 0,
            updated_at REAL NOT NULL
        );
        CREATE TABLE core_block_version (
            id INTEGER PRIMARY KEY,
            label TEXT NOT NULL,
            action TEXT NOT NULL,
            old_value TEXT,
            new_value TEXT,
            author TEXT NOT NULL CHECK (author IN ('user', 'model', 'system')),
            cause_kind TEXT,
            cause_ref TEXT,
            created_at REAL NOT NULL
        );
        CREATE INDEX core_block_version_label ON core_block_version (label, id);

        CREATE TABLE setting (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        """,
    ),
    (
        "agent_state_and_proposals",
        """
        CREATE TABLE agent_state (
            conversation_id TEXT PRIMARY KEY,
            context_start_id INTEGER NOT NULL DEFAULT 0,
            summary TEXT NOT NULL DEFAULT '',
            summarized_count INTEGER NOT NULL DEFAULT 0,
            pressure_warned INTEGER NOT NULL DEFAULT 0,
            updated_at REAL NOT NULL
        );
        CREATE TABLE proposal (
            id INTEGER PRIMARY KEY,
            conversation_id TEXT NOT NULL,
            label TEXT NOT NULL,
            action TEXT NOT NULL CHECK (action IN ('append', 'replace')),
            old_content TEXT,
            new_content TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'approved', 'rejected')),
            cause_kind TEXT NOT NULL,
            cause_ref TEXT,
            untrusted_reason TEXT,
            applied_content TEXT,
            version_id INTEGER,
            decided_by TEXT,
            created_at REAL NOT NULL,
            decided_at REAL
        );
        CREATE INDEX proposal_status ON proposal (status, id);
        """,
    ),
    (
        "document_index_and_watched_folders",
        """
        CREATE TABLE document (
            path TEXT PRIMARY KEY,
            size INTEGER NOT NULL DEFAULT 0,
            mtime REAL NOT NULL DEFAULT 0,
            content_hash TEXT,
            status TEXT NOT NULL
                CHECK (status IN ('queued', 'indexing', 'done', 'error', 'skipped')),
            error TEXT,
            chunk_count INTEGER NOT NULL DEFAULT 0,
            embedder TEXT,
            updated_at REAL NOT NULL
        );
        CREATE INDEX document_status ON document (status);
        CREATE TABLE watched_folder (
            path TEXT PRIMARY KEY,
            include TEXT NOT NULL DEFAULT '[]',
            exclude TEXT NOT NULL DEFAULT '[]',
            added_at REAL NOT NULL
        );
        """,
    ),
    (
        "message_search_text_with_neighbours",
        """
        ALTER TABLE message ADD COLUMN search_text TEXT;
        UPDATE message SET search_text = text;
        DROP TRIGGER message_fts_insert;
        DROP TRIGGER message_fts_delete;
        DROP TRIGGER message_fts_update;
        DROP TABLE message_fts;
        CREATE VIRTUAL TABLE message_fts USING fts5 (
            search_text, content = 'message', content_rowid = 'id',
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER message_fts_insert AFTER INSERT ON message BEGIN
            INSERT INTO message_fts (rowid, search_text) VALUES (new.id, new.search_text);
        END;
        CREATE TRIGGER message_fts_delete AFTER DELETE ON message BEGIN
            INSERT INTO message_fts (message_fts, rowid, search_text)
                VALUES ('delete', old.id, old.search_text);
        END;
        CREATE TRIGGER message_fts_update AFTER UPDATE OF search_text ON message BEGIN
            INSERT INTO message_fts (message_fts, rowid, search_text)
                VALUES ('delete', old.id, old.search_text);
            INSERT INTO message_fts (rowid, search_text) VALUES (new.id, new.search_text);
        END;
        INSERT INTO message_fts (message_fts) VALUES ('rebuild');
        CREATE TABLE message_context_pending (conversation_id TEXT PRIMARY KEY);
        INSERT INTO message_context_pending SELECT DISTINCT conversation_id FROM message;
        """,
    ),
    (
        "message_search_text_short_neighbours",
        """
        INSERT OR IGNORE INTO message_context_pending SELECT DISTINCT conversation_id FROM message;
        """,
    ),
    (
        "message_untrusted_reason",
        # Set on a function result that brought text the user did not write into the context;
        # the conversation's core-memory edits wait for the user from then on
        # (Recall.untrusted_reason).
        """
        ALTER TABLE message ADD COLUMN untrusted_reason TEXT;
        CREATE INDEX message_untrusted ON message (conversation_id, id)
            WHERE untrusted_reason IS NOT NULL;
        """,
    ),
]

SCHEMA_VERSION = len(MIGRATIONS)
# How long a write waits for another program (or Mnemo window) to release the database.
BUSY_TIMEOUT_S = 10.0


def _configure_connection(dbapi_connection: sqlite3.Connection, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.close()


def open_database(path: Path) -> Engine:
    """Open (creating if needed) and migrate the profile database; return a SQLAlchemy engine."""
    _migrate(path)
    engine = create_engine(
        f"sqlite:///{path}",
        poolclass=QueuePool,
        pool_size=4,
        max_overflow=8,
        connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_S},
    )
    event.listen(engine, "connect", _configure_connection)
    return engine


def _migrate(path: Path) -> None:
    try:
        connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error as error:
        raise ProfileError(f"Cannot open the profile database {path}: {error}.") from error
    try:
        try:
            version = connection.execute("PRAGMA user_version").fetchone()[0]
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
        connection.execute("PRAGMA journal_mode = WAL")
        for number, (name, script) in enumerate(MIGRATIONS[version:], start=version + 1):
            log.info("applying migration %d (%s) to %s", number, name, path)
            # executescript commits first; BEGIN..COMMIT makes each migration all-or-nothing.
            connection.executescript(
                f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {number};\nCOMMIT;"
            )
    except sqlite3.OperationalError as error:
        raise ProfileError(
            f"Cannot prepare the profile database {path} ({error}); if another program holds it "
            "locked, close it and try again."
        ) from error
    finally:
        connection.close()


def describe_database_error(error: BaseException) -> str | None:
    """The sentence to show for a database failure a user can act on, or None for a bug."""
    text = str(getattr(error, "orig", None) or error).lower()
    if "locked" in text or "busy" in text:
        return (
            "The profile database is busy: another program (perhaps another Mnemo) is writing "
            "to it. Close that program or wait a moment, then try again; nothing was changed."
        )
    if "disk is full" in text:
        return "The disk holding the profile is full; free some space and try again."
    if "readonly" in text or "read-only" in text:
        return "The profile folder is read-only; choose a folder you can write to."
    return None
