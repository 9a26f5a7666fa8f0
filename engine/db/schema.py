"""The profile database's schema, in one place: each migration (a named SQL script, applied in
order) and the SQLModel class for each table they create.

The migrations own the schema (FTS5 tables and triggers need raw SQL), for SQLite and PostgreSQL
alike; the classes give typed access to the rows, and ``tests/test_architecture.py`` checks that
both agree. A new table is a new migration here and its class below it. Times are stored as UNIX
seconds (REAL) so that range queries stay simple.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlmodel import Field, SQLModel


@dataclass(frozen=True)
class Migration:
    """One step of the schema, written once: ``sql`` holds for both databases, in SQLite's
    words, and is translated for PostgreSQL (``BIGSERIAL`` for a row id, ``DOUBLE PRECISION``
    for ``REAL``: PostgreSQL's ``REAL`` is four bytes, which would round a time to minutes). Only
    the keyword index differs: SQLite's FTS5 table and triggers, PostgreSQL's ``tsvector``."""

    name: str
    sql: str = ""
    sqlite_only: str = ""
    postgres_only: str = ""

    @property
    def for_sqlite(self) -> str:
        return self.sql + self.sqlite_only

    @property
    def for_postgres(self) -> str:
        translated = re.sub(r"\bINTEGER PRIMARY KEY\b", "BIGSERIAL PRIMARY KEY", self.sql)
        return re.sub(r"\bREAL\b", "DOUBLE PRECISION", translated) + self.postgres_only


MIGRATIONS: list[Migration] = [
    Migration(
        "recall_and_core_memory",
        sql="""
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
        sqlite_only="""
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
        """,
    ),
    Migration(
        "agent_state_and_proposals",
        sql="""
        CREATE TABLE agent_state (
            conversation_id TEXT PRIMARY KEY,
            context_start_id BIGINT NOT NULL DEFAULT 0,
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
            version_id BIGINT,
            decided_by TEXT,
            created_at REAL NOT NULL,
            decided_at REAL
        );
        CREATE INDEX proposal_status ON proposal (status, id);
        """,
    ),
    Migration(
        "document_index_and_watched_folders",
        sql="""
        CREATE TABLE document (
            path TEXT PRIMARY KEY,
            size BIGINT NOT NULL DEFAULT 0,
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
    Migration(
        "message_search_text_with_neighbours",
        # The keyword index holds ``search_text`` (engine.memory.recall.keyword_text): the
        # message with its neighbours' words. PostgreSQL's 'english' stems as FTS5's porter
        # tokenizer does; it also drops stop words, which the query drops anyway.
        sql="""
        ALTER TABLE message ADD COLUMN search_text TEXT;
        UPDATE message SET search_text = text;
        CREATE TABLE message_context_pending (conversation_id TEXT PRIMARY KEY);
        INSERT INTO message_context_pending SELECT DISTINCT conversation_id FROM message;
        """,
        sqlite_only="""
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
        """,
        postgres_only="""
        ALTER TABLE message ADD COLUMN search_vector tsvector GENERATED ALWAYS AS
            (to_tsvector('english', coalesce(search_text, ''))) STORED;
        CREATE INDEX message_search ON message USING GIN (search_vector);
        """,
    ),
    Migration(
        "message_search_text_short_neighbours",
        sqlite_only="""
        INSERT OR IGNORE INTO message_context_pending SELECT DISTINCT conversation_id FROM message;
        """,
        postgres_only="""
        INSERT INTO message_context_pending SELECT DISTINCT conversation_id FROM message
            ON CONFLICT DO NOTHING;
        """,
    ),
    Migration(
        "message_untrusted_reason",
        # Set on a function result that brought text the user did not write into the context,
        # and on a user message long enough to be pasted (recall.PASTED_CHARS); the
        # conversation's core-memory edits wait for the user from then on
        # (Recall.untrusted_reason).
        sql="""
        ALTER TABLE message ADD COLUMN untrusted_reason TEXT;
        UPDATE message SET untrusted_reason = 'written after you pasted a long text'
            WHERE role = 'user' AND length(text) > 2000;
        CREATE INDEX message_untrusted ON message (conversation_id, id)
            WHERE untrusted_reason IS NOT NULL;
        """,
    ),
    Migration(
        "knowledge_memory",
        # People, places and things, and what holds between them (engine.memory.knowledge).
        # ``key`` is a name as compared (engine.memory.knowledge.name_key). A relation's object
        # is an entity or, for values such as a birthday, literal text. Nothing is deleted when
        # a fact changes: the old relation is superseded (pointing at the new one) or retracted.
        sql="""
        CREATE TABLE entity (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            key TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL DEFAULT 'other',
            note TEXT NOT NULL DEFAULT '',
            merged_into BIGINT REFERENCES entity(id),
            created_at REAL NOT NULL
        );
        CREATE TABLE entity_alias (
            key TEXT PRIMARY KEY,
            alias TEXT NOT NULL,
            entity_id BIGINT NOT NULL REFERENCES entity(id)
        );
        CREATE TABLE relation (
            id INTEGER PRIMARY KEY,
            subject_id BIGINT NOT NULL REFERENCES entity(id),
            predicate TEXT NOT NULL,
            object_id BIGINT REFERENCES entity(id),
            value TEXT,
            valid_from REAL,
            valid_to REAL,
            learned_at REAL NOT NULL,
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
    ),
    Migration(
        "proposal_kinds",
        # A proposal now changes core memory (``core``), knowledge memory (``fact``: add or
        # supersede a fact) or an archival note (``passage``: correct or delete it); ``payload``
        # holds what approval needs beyond the texts shown (JSON).
        sql="""
        ALTER TABLE proposal ADD COLUMN kind TEXT NOT NULL DEFAULT 'core';
        ALTER TABLE proposal ADD COLUMN payload TEXT;
        """,
    ),
    Migration(
        "conversation_titles",
        # Conversations brought in from elsewhere (ChatGPT, Claude, a Letta agent) keep their
        # title and where they came from; Mnemo's own have no row.
        sql="""
        CREATE TABLE conversation (
            id TEXT PRIMARY KEY,
            title TEXT NOT NULL,
            origin TEXT NOT NULL,
            created_at REAL
        );
        """,
    ),
    Migration(
        "fact_expiry",
        # A fact can stop holding at a known time ("in Lisbon until Friday"): it then leaves
        # current facts, stays listed as expired for a grace period, and is purged.
        sql="""
        ALTER TABLE relation ADD COLUMN expires_at REAL;
        """,
    ),
    Migration(
        "message_sentence_vectors",
        # The user's messages of several sentences get a vector per sentence as well
        # (recall.vectors.sentence_parts); those stored before are given theirs once, by the
        # start-up repair, conversation by conversation.
        sql="""
        CREATE TABLE message_sentences_pending (conversation_id TEXT PRIMARY KEY);
        INSERT INTO message_sentences_pending
            SELECT DISTINCT conversation_id FROM message WHERE role = 'user';
        """,
    ),
    Migration(
        # The messages each batch of a chat export's import wrote (ids first to last), in the
        # batch's own transaction: its undo takes out these and nothing else (not a message the
        # person wrote meanwhile in an imported conversation, nor an earlier import's).
        "import_batches",
        sql="""
        CREATE TABLE import_batch (
            id INTEGER PRIMARY KEY,
            import_id TEXT NOT NULL,
            first_id BIGINT NOT NULL,
            last_id BIGINT NOT NULL
        );
        CREATE INDEX import_batch_import ON import_batch (import_id);
        """,
    ),
]


# -- the tables ---------------------------------------------------------------------------------


class ImportBatch(SQLModel, table=True):
    __tablename__ = "import_batch"

    id: int | None = Field(default=None, primary_key=True)
    import_id: str
    first_id: int
    last_id: int


class Message(SQLModel, table=True):
    __tablename__ = "message"

    id: int | None = Field(default=None, primary_key=True)
    conversation_id: str = "default"
    role: str
    name: str | None = None
    text: str
    created_at: float
    embedded: int = 0  # 1 once it has the vector it should have (function rows get none)
    search_text: str | None = None  # what the keyword index holds (see keyword_text)
    untrusted_reason: str | None = None  # this result brought untrusted text into the context


class CoreBlock(SQLModel, table=True):
    __tablename__ = "core_block"

    label: str = Field(primary_key=True)
    description: str = ""
    value: str = ""
    char_limit: int
    read_only: int = 0
    position: int = 0
    updated_at: float


class CoreBlockVersion(SQLModel, table=True):
    __tablename__ = "core_block_version"

    id: int | None = Field(default=None, primary_key=True)
    label: str
    action: str
    old_value: str | None = None
    new_value: str | None = None
    author: str
    cause_kind: str | None = None
    cause_ref: str | None = None
    created_at: float


class Setting(SQLModel, table=True):
    __tablename__ = "setting"

    key: str = Field(primary_key=True)
    value: str


class AgentStateRow(SQLModel, table=True):
    """Which messages of a conversation are in the context window, and the summary of the rest."""

    __tablename__ = "agent_state"

    conversation_id: str = Field(primary_key=True)
    context_start_id: int = 0
    summary: str = ""
    summarized_count: int = 0
    pressure_warned: int = 0
    updated_at: float


class ProposalRow(SQLModel, table=True):
    __tablename__ = "proposal"

    id: int | None = Field(default=None, primary_key=True)
    conversation_id: str
    label: str
    action: str
    old_content: str | None = None
    new_content: str
    status: str = "pending"
    cause_kind: str
    cause_ref: str | None = None
    untrusted_reason: str | None = None
    applied_content: str | None = None
    version_id: int | None = None
    decided_by: str | None = None
    created_at: float
    decided_at: float | None = None
    kind: str = "core"  # core, fact or passage
    payload: str | None = None  # JSON: what approving a fact or passage proposal needs


class ConversationRow(SQLModel, table=True):
    """A conversation brought in from elsewhere: its title and where it came from."""

    __tablename__ = "conversation"

    id: str = Field(primary_key=True)
    title: str
    origin: str
    created_at: float | None = None


class DocumentRow(SQLModel, table=True):
    """One file in the ingestion index: what was seen of it and how indexing went."""

    __tablename__ = "document"

    path: str = Field(primary_key=True)
    size: int = 0
    mtime: float = 0.0
    content_hash: str | None = None
    status: str
    error: str | None = None
    chunk_count: int = 0
    embedder: str | None = None
    updated_at: float


class WatchedFolderRow(SQLModel, table=True):
    __tablename__ = "watched_folder"

    path: str = Field(primary_key=True)
    include: str = "[]"
    exclude: str = "[]"
    added_at: float


class EntityRow(SQLModel, table=True):
    __tablename__ = "entity"

    id: int | None = Field(default=None, primary_key=True)
    name: str
    key: str = Field(unique=True)
    kind: str = "other"
    note: str = ""
    merged_into: int | None = Field(default=None, foreign_key="entity.id")
    created_at: float


class EntityAliasRow(SQLModel, table=True):
    __tablename__ = "entity_alias"

    key: str = Field(primary_key=True)
    alias: str
    entity_id: int = Field(foreign_key="entity.id")


class RelationRow(SQLModel, table=True):
    __tablename__ = "relation"

    id: int | None = Field(default=None, primary_key=True)
    subject_id: int = Field(foreign_key="entity.id")
    predicate: str
    object_id: int | None = Field(default=None, foreign_key="entity.id")
    value: str | None = None
    valid_from: float | None = None
    valid_to: float | None = None
    learned_at: float
    source_kind: str
    source_ref: str | None = None
    asserted_by: str
    status: str = "current"
    superseded_by: int | None = Field(default=None, foreign_key="relation.id")
    expires_at: float | None = None
