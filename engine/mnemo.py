"""``Mnemo``: one open profile with its three memory tiers: the scripting API's entry point."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from pathlib import Path
from types import TracebackType

from sqlalchemy import Engine

from engine.cross_encoder import CrossEncoder
from engine.db import on_postgres, open_database, postgres
from engine.db.schema import DocumentRow
from engine.embed import Embedder, embedder_for
from engine.errors import ProfileError
from engine.memory import archival, recall, redaction
from engine.memory.archival import ArchivalStore
from engine.memory.core import CoreMemory
from engine.memory.documents import DocumentIndex
from engine.memory.knowledge import KnowledgeStore
from engine.memory.proposals import ProposalStore
from engine.memory.recall import RecallStore
from engine.memory.recall.conversations import Conversations
from engine.memory.snapshots import NOT_ON_POSTGRES, Snapshot, SnapshotStore
from engine.memory.tombstones import Tombstones
from engine.memory.vectors import VectorTable
from engine.memory.vectors.lance import archival_location, lancedb
from engine.memory.vectors.postgres import PgVectorTable
from engine.profile import Profile
from engine.settings import Settings

log = logging.getLogger("mnemo")

# Another process may write archival memory while this one has it open (`mnemo mcp` or
# `mnemo ingest` beside the window): a read looks for newer versions at most this often.
OTHER_WRITERS_SEEN_WITHIN = timedelta(seconds=1)


def _snapshot_database(path: Path, what: str) -> None:
    """Before a migration rewrites tables: the database as it was (archival is untouched)."""
    SnapshotStore(path.parent, path, []).create(f"before {what}", automatic=True)


def _open_tables(profile: Profile, database_url: str | None) -> tuple[Engine, str | None]:
    """The profile's relational tables: in its SQLite file, or on the PostgreSQL server it
    was created on (``database_url`` places a new profile there). Returns the engine and why
    it is read-only, if it is."""
    located = postgres.location(profile.root)
    if database_url and located is None:
        if profile.database_path.exists():
            raise ProfileError(
                f"This assistant's memory is already in {profile.database_path}; it stays there "
                "(moving a memory between storages is not supported yet)."
            )
        url, schema = postgres.check_url(database_url), postgres.new_schema()
        engine = postgres.open_postgres(url, schema)
        postgres.record_location(profile.root, url, schema)  # once the server has its tables
        return engine, None
    if located is not None:
        return postgres.open_postgres(*located), None
    return open_database(profile.database_path, before_upgrade=_snapshot_database)


class Mnemo:
    """An open profile. Use ``Mnemo.open(path)``; close it (or use ``with``) when done."""

    def __init__(
        self,
        profile: Profile,
        embedder: Embedder | None,
        on_settings: Callable[[Settings], object] | None = None,
        archival_url: str | None = None,
        database_url: str | None = None,
    ) -> None:
        self.profile = profile
        self._engine, self.read_only = _open_tables(profile, database_url)
        self.settings = Settings(self._engine)
        embedder = embedder or embedder_for(str(self.settings.get("models.embedder")))
        if archival_url and not self.settings.is_set("storage.archival_url"):
            if profile.archival_path.exists():
                self._engine.dispose()
                raise ProfileError(
                    f"This assistant's archival memory is already in {profile.archival_path}; "
                    "it stays there (moving a memory between storages is not supported yet)."
                )
            self.settings.store("storage.archival_url", archival_url)  # a new profile's choice
        if on_settings is not None:
            on_settings(self.settings)
        try:
            where, options = archival_location(profile.archival_path, self.settings)
            lance = lancedb().connect(
                where,
                storage_options=options or None,
                read_consistency_interval=OTHER_WRITERS_SEEN_WITHIN,
            )
        except ProfileError:
            self._engine.dispose()
            raise
        except Exception as error:
            self._engine.dispose()
            raise ProfileError(
                f"Cannot open archival memory at {where} ({error}); check that it is reachable, "
                "readable and not damaged."
            ) from error
        locks = profile.root / "locks"  # every process's writers of a table take turns here
        self._message_vectors: VectorTable = (
            PgVectorTable(self._engine, "recall_vectors", embedder)
            if on_postgres(self._engine)
            else VectorTable(
                lance,
                "recall_vectors",
                recall.VECTOR_SCHEMA,
                embedder,
                lock_path=locks / "recall_vectors.lock",
            )
        )
        self._passage_vectors = VectorTable(
            lance,
            "passages",
            archival.SCHEMA,
            embedder,
            fts_column="text",
            key_column="id",
            lock_path=locks / "passages.lock",
        )
        self.tombstones = Tombstones(profile.root)  # what the person asked to forget
        self.core = CoreMemory(self._engine, self.tombstones)
        self.recall = RecallStore(self._engine, self._message_vectors, self.tombstones)
        self.archival = ArchivalStore(self._passage_vectors, self.tombstones)
        self.knowledge = KnowledgeStore(self._engine, self.tombstones)
        self.conversations = Conversations(self._engine, self.settings)
        self.proposals = ProposalStore(
            self._engine, self.core, self.recall, self.knowledge, self.archival, self.tombstones
        )
        self.snapshots = SnapshotStore(
            profile.root,
            profile.database_path,
            [self._message_vectors, self._passage_vectors],
            NOT_ON_POSTGRES if on_postgres(self._engine) else None,
        )
        # A restored snapshot may hold what was forgotten since it was taken: forgotten again.
        self.snapshots.after_restore = lambda: redaction.sweep(self)
        if not self.read_only:
            try:
                self.archival.purge_expired()
                self.knowledge.purge_expired()
            except Exception:  # never a reason not to open; the next open purges
                log.exception("could not purge expired passages and facts")
            redaction.finish_forgets(self)  # one a crash cut short: nothing is half-forgotten

    @property
    def embedder(self) -> Embedder:
        """What makes new vectors and queries (the tables', set by ``reembed``)."""
        return self._passage_vectors.embedder

    @property
    def recall_vectors(self) -> VectorTable:
        """The messages' vectors (the health check compares them with the messages)."""
        return self._message_vectors

    @property
    def passage_vectors(self) -> VectorTable:
        """Archival passages and their vectors, as LanceDB holds them."""
        return self._passage_vectors

    @property
    def database(self) -> Engine:
        """The profile's SQLite (or PostgreSQL) engine (the agent keeps its state there)."""
        return self._engine

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        embedder: Embedder | None = None,
        on_settings: Callable[[Settings], object] | None = None,
        archival_url: str | None = None,
        database_url: str | None = None,
    ) -> Mnemo:
        """Open the profile at ``path`` (default: ``$MNEMO_HOME`` or the user data folder),
        creating it if it does not exist. ``on_settings`` is called with the profile's settings
        as soon as they can be read, before LanceDB is imported and opened: the window starts
        loading the model there, so that llama.cpp's load (native code, without the GIL) runs
        beside that import instead of after it. ``archival_url`` places a new profile's archival
        memory (see ``storage.archival_url``), and ``database_url`` (``postgresql://…``) its
        other tables; an existing profile keeps its own."""
        return cls(
            Profile.resolve(path),
            embedder,
            on_settings,
            archival_url,
            database_url,
        )

    @property
    def embedder_mismatch(self) -> str | None:
        """Set when stored vectors come from another embedder; ``reembed()`` fixes it."""
        return self.archival.embedder_mismatch or self.recall.embedder_mismatch

    def use_cross_encoder(self, encoder: CrossEncoder | None) -> None:
        """Order the head of hybrid conversation and archival searches by ``encoder`` (a
        re-ranker, ``engine.llm.rerank.attach``); None: by their fused scores."""
        self.recall.use_cross_encoder(encoder)
        self.archival.cross_encoder = encoder

    def snapshot_before(self, what: str) -> Snapshot | None:
        """An automatic snapshot before a risky operation ("re-embedding"), so that it can be
        undone; none on a read-only profile, where nothing can change."""
        if self.read_only or on_postgres(self._engine):  # PostgreSQL has backups of its own
            return None
        return self.snapshots.create(f"before {what}", automatic=True)

    def reembed(
        self,
        progress: Callable[[str, int, int], None] | None = None,
        *,
        embedder_path: str | None = None,
    ) -> int:
        """Re-embed archival passages and messages with the current embedder, or first make the
        GGUF at ``embedder_path`` the embedder ("": the bundled one); return the count.

        It can take minutes on a large profile, so callers ask the user before calling it. A
        snapshot taken first brings the old vectors back (and the old setting with them). The
        setting changes before the vectors do: if the work is cut short, the searches say so and
        the next re-embed finishes it.
        """
        chosen = None if embedder_path is None else embedder_for(embedder_path, strict=True)
        if self.embedder_mismatch or (chosen is not None and chosen is not self.embedder):
            self.snapshot_before("re-embedding")
        if chosen is not None:
            self.settings.set("models.embedder", embedder_path)
            for table in (self._message_vectors, self._passage_vectors):
                table.use_embedder(chosen)
        count = 0
        for name, store in (("archival", self.archival), ("recall", self.recall)):
            if store.embedder_mismatch:
                count += store.reembed(partial(progress, name) if progress else None)
        return count

    def documents(self) -> list[DocumentRow]:
        """The ingested documents (the window lists them; so does a server)."""
        return DocumentIndex(self._engine).all()

    def wait_for_background_work(self) -> None:
        """Wait for vector repair, index builds and compaction (tests and benchmarks use this)."""
        self.recall.wait_until_indexed()
        self._message_vectors.wait_for_maintenance()
        self._passage_vectors.wait_for_maintenance()

    def close(self) -> None:
        self.recall.close()
        self._message_vectors.close()
        self._passage_vectors.close()
        self._engine.dispose()

    def __enter__(self) -> Mnemo:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
