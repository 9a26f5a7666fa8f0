"""A profile's relational memory in PostgreSQL: the same tables as in SQLite, one schema per
assistant, and message vectors in pgvector.

The migrations carry the same names, in the same order, as ``engine.db.schema.MIGRATIONS``
(``tests/test_storage_backends.py`` checks it), so a schema version means the same on both. SQLite's
FTS5 table and its triggers become a generated ``tsvector`` column with a GIN index; times are
``DOUBLE PRECISION`` (PostgreSQL's ``REAL`` is four bytes, which would round a timestamp to
minutes). The version is kept in ``mnemo_schema``, and a newer one is refused untouched.

The password never goes in the profile: libpq reads it from ``PGPASSWORD`` or ``~/.pgpass``, and
Mnemo from the keyring (``mnemo keys set postgres``).
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from pathlib import Path
from urllib.parse import urlsplit

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from engine.db.schema import MIGRATIONS
from engine.errors import InputError, ProfileError, ProfileTooNewError
from engine.keys import get_key
from engine.profile import DATABASE_LOCATION

log = logging.getLogger("mnemo.db")

_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
# One lock number for every Mnemo migration on a server: two processes opening the same new
# assistant at once must not both create its tables.
_MIGRATION_LOCK = 0x6D6E656D6F

_LONG = "DOUBLE PRECISION"

POSTGRES_MIGRATIONS: dict[str, str] = {
    "recall_and_core_memory": f"""
        CREATE TABLE message (
            id BIGSERIAL PRIMARY KEY,
            conversation_id TEXT NOT NULL DEFAULT 'default',
            role TEXT NOT NULL CHECK (role IN
                ('user', 'assistant', 'function_call', 'function_result', 'system')),
            name TEXT,
            text TEXT NOT NULL,
            created_at {_LONG} NOT NULL,
            embedded INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX message_created_at ON message (created_at);
        CREATE INDEX message_conversation ON message (conversation_id, id);
        CREATE INDEX message_unembedded ON message (id) WHERE embedded = 0;
        CREATE TABLE core_block (
            label TEXT PRIMARY KEY,
            description TEXT NOT NULL DEFAULT '',
            value TEXT NOT NULL DEFAULT '',
            char_limit INTEGER NOT NULL,
            read_only INTEGER NOT NULL DEFAULT 0,
            position INTEGER NOT NULL DEFAULT 0,
            updated_at {_LONG} NOT NULL
        );
        CREATE TABLE core_block_version (
            id BIGSERIAL PRIMARY KEY,
            label TEXT NOT NULL,
            action TEXT NOT NULL,
            old_value TEXT,
            new_value TEXT,
            author TEXT NOT NULL CHECK (author IN ('user', 'model', 'system')),
            cause_kind TEXT,
            cause_ref TEXT,
            created_at {_LONG} NOT NULL
        );
        CREATE INDEX core_block_version_label ON core_block_version (label, id);
        CREATE TABLE setting (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    "agent_state_and_proposals": f"""
        CREATE TABLE agent_state (
            conversation_id TEXT PRIMARY KEY,
            context_start_id BIGINT NOT NULL DEFAULT 0,
            summary TEXT NOT NULL DEFAULT '',
            summarized_count INTEGER NOT NULL DEFAULT 0,
            pressure_warned INTEGER NOT NULL DEFAULT 0,
            updated_at {_LONG} NOT NULL
        );
        CREATE TABLE proposal (
            id BIGSERIAL PRIMARY KEY,
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
            version_id BIGINT,
            decided_by TEXT,
            created_at {_LONG} NOT NULL,
            decided_at {_LONG}
        );
        CREATE INDEX proposal_status ON proposal (status, id);
    """,
    "document_index_and_watched_folders": f"""
        CREATE TABLE document (
            path TEXT PRIMARY KEY,
            size BIGINT NOT NULL DEFAULT 0,
            mtime {_LONG} NOT NULL DEFAULT 0,
            content_hash TEXT,
            status TEXT NOT NULL
                CHECK (status IN ('queued', 'indexing', 'done', 'error', 'skipped')),
            error TEXT,
            chunk_count INTEGER NOT NULL DEFAULT 0,
            embedder TEXT,
            updated_at {_LONG} NOT NULL
        );
        CREATE INDEX document_status ON document (status);
        CREATE TABLE watched_folder (
            path TEXT PRIMARY KEY,
            include TEXT NOT NULL DEFAULT '[]',
            exclude TEXT NOT NULL DEFAULT '[]',
            added_at {_LONG} NOT NULL
        );
    """,
    # The words index: what SQLite's FTS5 table holds, as a generated column. 'english' stems
    # as FTS5's porter tokenizer does; it also drops stop words, which the query drops anyway.
    "message_search_text_with_neighbours": """
        ALTER TABLE message ADD COLUMN search_text TEXT;
        UPDATE message SET search_text = text;
        ALTER TABLE message ADD COLUMN search_vector tsvector GENERATED ALWAYS AS
            (to_tsvector('english', coalesce(search_text, ''))) STORED;
        CREATE INDEX message_search ON message USING GIN (search_vector);
        CREATE TABLE message_context_pending (conversation_id TEXT PRIMARY KEY);
        INSERT INTO message_context_pending SELECT DISTINCT conversation_id FROM message;
    """,
    "message_search_text_short_neighbours": """
        INSERT INTO message_context_pending SELECT DISTINCT conversation_id FROM message
            ON CONFLICT DO NOTHING;
    """,
    "message_untrusted_reason": """
        ALTER TABLE message ADD COLUMN untrusted_reason TEXT;
        UPDATE message SET untrusted_reason = 'written after you pasted a long text'
            WHERE role = 'user' AND length(text) > 2000;
        CREATE INDEX message_untrusted ON message (conversation_id, id)
            WHERE untrusted_reason IS NOT NULL;
    """,
    "knowledge_memory": f"""
        CREATE TABLE entity (
            id BIGSERIAL PRIMARY KEY,
            name TEXT NOT NULL,
            key TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL DEFAULT 'other',
            note TEXT NOT NULL DEFAULT '',
            merged_into BIGINT REFERENCES entity(id),
            created_at {_LONG} NOT NULL
        );
        CREATE TABLE entity_alias (
            key TEXT PRIMARY KEY,
            alias TEXT NOT NULL,
            entity_id BIGINT NOT NULL REFERENCES entity(id)
        );
        CREATE TABLE relation (
            id BIGSERIAL PRIMARY KEY,
            subject_id BIGINT NOT NULL REFERENCES entity(id),
            predicate TEXT NOT NULL,
            object_id BIGINT REFERENCES entity(id),
            value TEXT,
            valid_from {_LONG},
            valid_to {_LONG},
            learned_at {_LONG} NOT NULL,
            source_kind TEXT NOT NULL,
            source_ref TEXT,
            asserted_by TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'current',
            superseded_by BIGINT REFERENCES relation(id)
        );
        CREATE INDEX relation_subject ON relation (subject_id, status, predicate);
        CREATE INDEX relation_object ON relation (object_id);
        CREATE INDEX entity_alias_entity ON entity_alias (entity_id);
    """,
    "proposal_kinds": """
        ALTER TABLE proposal ADD COLUMN kind TEXT NOT NULL DEFAULT 'core';
        ALTER TABLE proposal ADD COLUMN payload TEXT;
    """,
    "conversation_titles": f"""
        CREATE TABLE conversation (
            id TEXT PRIMARY KEY,
            title TEXT NOT NULL,
            origin TEXT NOT NULL,
            created_at {_LONG}
        );
    """,
    "fact_expiry": f"""
        ALTER TABLE relation ADD COLUMN expires_at {_LONG};
    """,
    "message_sentence_vectors": """
        CREATE TABLE message_sentences_pending (conversation_id TEXT PRIMARY KEY);
        INSERT INTO message_sentences_pending
            SELECT DISTINCT conversation_id FROM message WHERE role = 'user';
    """,
}


def is_postgres(url: str | None) -> bool:
    return bool(url) and urlsplit(str(url)).scheme.split("+")[0] in ("postgresql", "postgres")


def check_url(url: str) -> str:
    """The server's address as the profile keeps it; refused in words when it is not a
    PostgreSQL URL or carries a password (which would then sit in a file)."""
    if not is_postgres(url):
        raise InputError(
            f"{url!r} is not a PostgreSQL address; write postgresql://USER@HOST:PORT/DATABASE."
        )
    try:
        parsed = make_url(url)
    except Exception as error:
        raise InputError(f"{url!r} is not a valid PostgreSQL address ({error}).") from error
    if parsed.password:
        raise InputError(
            "Leave the password out of the database address: Mnemo reads it from the keyring "
            "(`mnemo keys set postgres`) or PGPASSWORD, and never writes it into the profile."
        )
    return url


def new_schema() -> str:
    """A schema for a new assistant: a server may hold many assistants, of many users."""
    return "mnemo_" + uuid.uuid4().hex[:16]


def record_location(root: Path, url: str, schema: str) -> None:
    """Write down, in the profile folder, that its tables are in ``schema`` on ``url``."""
    (root / DATABASE_LOCATION).write_text(
        json.dumps({"url": url, "schema": schema}, indent=1), "utf-8"
    )


def location(root: Path) -> tuple[str, str] | None:
    """The server address and schema of a profile kept in PostgreSQL, or None (SQLite)."""
    path = root / DATABASE_LOCATION
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text("utf-8"))
        url, schema = str(data["url"]), str(data["schema"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ProfileError(
            f"{path} should say which PostgreSQL server holds this assistant, and cannot be "
            f"read ({error}); restore it from a backup."
        ) from error
    if not _SCHEMA_NAME.fullmatch(schema):
        raise ProfileError(f"{path} names the schema {schema!r}, which is not a Mnemo schema.")
    return url, schema


def open_postgres(url: str, schema: str) -> Engine:
    """Connect, create the schema and pgvector if needed, and migrate; a newer schema is
    refused before anything is written."""
    parsed = make_url(url).set(drivername="postgresql+psycopg")
    password = get_key("postgres")
    if password and not parsed.password:
        parsed = parsed.set(password=password)
    engine = create_engine(
        parsed,
        pool_size=4,
        max_overflow=8,
        pool_pre_ping=True,
        connect_args={"options": f"-c search_path={schema},public", "connect_timeout": 10},
    )
    where = f"{parsed.host or 'localhost'}/{parsed.database or ''}"
    try:
        _migrate(engine, schema)
    except ProfileError:
        engine.dispose()
        raise
    except SQLAlchemyError as error:
        engine.dispose()
        reason = str(getattr(error, "orig", None) or error).strip().splitlines()[0]
        raise ProfileError(
            f"Cannot open this assistant's database on the PostgreSQL server {where} ({reason}); "
            "check that the server is running and reachable, and the user and password."
        ) from error
    return engine


def _migrate(engine: Engine, schema: str) -> None:
    with engine.begin() as connection:
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
        connection.execute(text(f"CREATE SCHEMA IF NOT EXISTS {schema}"))
        if not connection.execute(
            text("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
        ).first():
            try:
                with connection.begin_nested():
                    connection.execute(text("CREATE EXTENSION vector WITH SCHEMA public"))
            except SQLAlchemyError as error:
                raise ProfileError(
                    "The PostgreSQL server has no pgvector, or this user may not add it; ask "
                    "its administrator to run CREATE EXTENSION vector in this database."
                ) from error
        connection.execute(
            text(f"CREATE TABLE IF NOT EXISTS {schema}.mnemo_schema (version INTEGER NOT NULL)")
        )
        version = connection.execute(text(f"SELECT version FROM {schema}.mnemo_schema")).scalar()
        if version is None:
            connection.execute(text(f"INSERT INTO {schema}.mnemo_schema VALUES (0)"))
            version = 0
        if version > len(MIGRATIONS):
            raise ProfileTooNewError(
                "This assistant's database was written by a newer version of Mnemo (schema "
                f"{version}; this version understands up to {len(MIGRATIONS)}). Update Mnemo "
                "to open it; nothing has been changed."
            )
        for number, (name, _sqlite) in enumerate(MIGRATIONS[version:], start=version + 1):
            log.info("applying migration %d (%s) to PostgreSQL schema %s", number, name, schema)
            connection.exec_driver_sql(POSTGRES_MIGRATIONS[name])
            connection.execute(
                text(f"UPDATE {schema}.mnemo_schema SET version = :v"), {"v": number}
            )
