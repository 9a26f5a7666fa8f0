"""SQLModel classes for the tables that ``engine.db`` migrations create.

The migrations own the schema (FTS5 tables and triggers need raw SQL); these classes give typed
access to the rows. Times are stored as UNIX seconds (REAL) so that range queries stay simple.
"""

from __future__ import annotations

from sqlmodel import Field, SQLModel


class Message(SQLModel, table=True):
    __tablename__ = "message"

    id: int | None = Field(default=None, primary_key=True)
    conversation_id: str = "default"
    role: str
    name: str | None = None
    text: str
    created_at: float
    embedded: int = 0
    search_text: str | None = None  # what the keyword index holds (see context_index)
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
