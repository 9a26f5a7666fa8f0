"""The health check: do SQLite, its keyword index and the vectors still agree?

A profile's memory lives in two stores (SQLite and LanceDB) and an index inside each; a crash, a
full disk, a bug or a hand edit can leave them disagreeing, and then search quietly misses things.
``check`` looks for each kind of disagreement Mnemo knows and says it in one sentence; ``repair``
fixes what can be fixed without asking (after a snapshot, so a repair can be undone) and says
what it cannot: a re-embed needs the user's consent, a block over its limit needs their words.

Run by ``mnemo check [--repair]`` and in the background when the window opens (a banner appears
only when something is wrong).
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import text

from engine import forget
from engine.db import on_postgres, writing
from engine.errors import ProfileError
from engine.exchange import unfinished
from engine.memory import redaction
from engine.memory.recall.vectors import EMBEDDED_ROLES, WHOLE_MESSAGES
from engine.memory.search import chunked
from engine.memory.vectors import quote_sql

if TYPE_CHECKING:
    from engine.mnemo import Mnemo

log = logging.getLogger("mnemo.health")

STALE_INDEX_ROWS = 5_000  # rows a table's indexes may lag behind before it is worth saying
_TURNS = "(" + ", ".join(quote_sql(role) for role in EMBEDDED_ROLES) + ")"


@dataclass(frozen=True)
class Problem:
    check: str  # what was checked: "database", "keyword index", "message vectors"…
    sentence: str  # what is wrong, for a person
    repair: str | None  # what `--repair` does about it; None: it cannot (the sentence says why)

    @property
    def repairable(self) -> bool:
        return self.repair is not None


def check(mnemo: Mnemo, *, forgotten: bool = False) -> list[Problem]:
    """Every disagreement found, in the order the checks run (each check is independent).
    On storage that cannot be written (read-only, or full), that is the one thing said: the
    checks would fail on it, or take what they cannot read for a disagreement. ``forgotten``
    also reads every file for text the person asked to forget (`mnemo check` does; the
    window's check at start does not, as it reads the whole profile)."""
    if mnemo.read_only:
        return [Problem("storage", mnemo.read_only, None)]
    problems: list[Problem] = []
    for run in (
        _database,
        _keyword_index,
        _message_vectors,
        _passages,
        _indexes,
        _embedder,
        _core_blocks,
        _proposals,
        _watched_folders,
        _tombstone_key,
        _unfinished_import,
        *((_forgotten,) if forgotten else ()),
    ):
        try:
            problems += run(mnemo)
        except Exception as error:  # a check that cannot run is itself worth saying
            log.exception("the %s check failed", run.__name__)
            problems.append(
                Problem(
                    run.__name__.strip("_").replace("_", " "),
                    f"could not be checked ({error}).",
                    None,
                )
            )
    return problems


def repair(mnemo: Mnemo) -> tuple[list[str], list[Problem]]:
    """Fix what can be fixed, after a snapshot; returns what was done and what is still wrong."""
    found = check(mnemo, forgotten=True)
    done: list[str] = []
    forgotten = any(problem.check == FORGOTTEN for problem in found)
    if forgotten:
        # First, and before the snapshot a repair takes, which would copy the text again.
        held = forget.held_on_disk(mnemo)
        snapshots = redaction.forget_again(mnemo)
        cleared = sorted(set(held) - set(forget.held_on_disk(mnemo)))
        if cleared:  # only what it did: a file still holding the text is a problem still
            done.append(
                f"Forgot again what was still held in {_listed(cleared)}"
                + (f", and took it out of {len(snapshots)} snapshots." if snapshots else ".")
            )
        found = [problem for problem in found if problem.check != FORGOTTEN]
    fixable = [problem for problem in found if problem.repairable]
    if fixable:
        mnemo.snapshot_before("repairing the profile")
    for problem in fixable:
        fix = _REPAIRS[problem.check]
        try:
            fix(mnemo)
            done.append(problem.repair or "")
        except Exception as error:
            log.exception("repairing %s failed", problem.check)
            done.append(f"Could not repair the {problem.check} ({error}).")
    return done, check(mnemo, forgotten=True) if fixable or forgotten else found


# -- the checks ---------------------------------------------------------------------------------


def _sqlite(mnemo: Mnemo) -> sqlite3.Connection:
    return sqlite3.connect(mnemo.profile.database_path, timeout=10)


def _database(mnemo: Mnemo) -> list[Problem]:
    if on_postgres(mnemo.database):  # the server checks its own pages
        return []
    with _sqlite(mnemo) as connection:
        rows = [row[0] for row in connection.execute("PRAGMA integrity_check")]
    if rows == ["ok"]:
        return []
    return [
        Problem(
            "database",
            f"The database is damaged ({rows[0]}); restore a snapshot (`mnemo snapshot list`) "
            "or an exported archive.",
            None,
        )
    ]


def _keyword_index(mnemo: Mnemo) -> list[Problem]:
    if on_postgres(mnemo.database):  # a generated column: it cannot disagree with the text
        return []
    with _sqlite(mnemo) as connection:
        try:
            connection.execute(
                "INSERT INTO message_fts (message_fts, rank) VALUES ('integrity-check', 1)"
            )
        except sqlite3.DatabaseError:
            return [
                Problem(
                    "keyword index",
                    "The keyword index of past conversations disagrees with the messages, so "
                    "searching by words misses some.",
                    "Rebuilt the keyword index of past conversations.",
                )
            ]
    return []


def _message_ids(mnemo: Mnemo) -> tuple[set[int], set[int]]:
    """(messages that should have a vector, every message that could)."""
    with mnemo.database.connect() as connection:
        rows = connection.execute(text(f"SELECT id, embedded FROM message WHERE role IN {_TURNS}"))
        turns = {(int(row.id), int(row.embedded)) for row in rows}
    return {i for i, embedded in turns if embedded}, {i for i, _ in turns}


def _vector_ids(mnemo: Mnemo, where: str | None = WHOLE_MESSAGES) -> list[int]:
    """The message ids of the vectors of whole messages (or of every vector, sentences too)."""
    return [int(row["id"]) for row in mnemo.recall_vectors.rows(where, ["id"])]


DAMAGED_VECTORS = "Rebuilt the message vectors from your messages."
DAMAGED_PASSAGES = "Brought back the newest version of archival memory that reads whole."


def _message_vectors(mnemo: Mnemo) -> list[Problem]:
    if not mnemo.recall_vectors.readable():  # a file of theirs was lost: made again
        return [
            Problem(
                "message vectors",
                "The message vectors cannot be read (a file of theirs is missing), so searching "
                "by meaning fails; your messages themselves are whole.",
                DAMAGED_VECTORS,
            )
        ]
    if mnemo.recall_vectors.mismatch:
        return []  # the embedder check says it; counts mean nothing until re-embedded
    expected, known = _message_ids(mnemo)
    stored = _vector_ids(mnemo)
    present = set(stored)
    missing = len(expected - present)
    orphans = len(set(_vector_ids(mnemo, None)) - known)
    doubled = len(stored) - len(present)
    parts = []
    if missing:
        parts.append(f"{missing} messages have no vector, so searching by meaning misses them")
    if orphans:
        parts.append(f"{orphans} vectors belong to no message")
    if doubled:
        parts.append(f"{doubled} messages have more than one vector")
    if not parts:
        return []
    return [
        Problem(
            "message vectors",
            "; ".join(parts).capitalize() + ".",
            "Embedded the messages without a vector and removed stray and doubled vectors.",
        )
    ]


def _passages(mnemo: Mnemo) -> list[Problem]:
    if not mnemo.passage_vectors.readable():
        return [
            Problem(
                "passages",
                "Archival memory cannot be read (a file of it is missing), so its passages "
                "cannot be searched.",
                DAMAGED_PASSAGES,
            )
        ]
    rows = mnemo.passage_vectors.rows(None, ["id", "origin", "source_path"])
    ids = [row["id"] for row in rows]
    doubled = len(ids) - len(set(ids))
    with mnemo.database.connect() as connection:
        indexed = {row[0] for row in connection.execute(text("SELECT path FROM document"))}
    orphans = {
        row["source_path"]
        for row in rows
        if row["origin"] == "document" and row["source_path"] and row["source_path"] not in indexed
    }
    parts = []
    if doubled:
        parts.append(f"{doubled} passages are stored twice")
    if orphans:
        parts.append(
            f"{len(orphans)} documents have passages but are not in the document index "
            f"(such as {sorted(orphans)[0]})"
        )
    if not parts:
        return []
    return [
        Problem(
            "passages",
            "; ".join(parts).capitalize() + ".",
            "Kept one copy of each doubled passage and removed the passages of documents Mnemo "
            "no longer knows (add the files again to have them back).",
        )
    ]


def _indexes(mnemo: Mnemo) -> list[Problem]:
    lagging = []
    for table in (mnemo.recall_vectors, mnemo.passage_vectors):
        for index in table.table.list_indices():
            stats = table.table.index_stats(index.name)
            if stats is not None and stats.num_unindexed_rows > STALE_INDEX_ROWS:
                lagging.append(f"{stats.num_unindexed_rows} rows of {table.name} ({index.name})")
    if not lagging:
        return []
    return [
        Problem(
            "search indexes",
            "Search indexes lag behind: " + "; ".join(lagging) + " (search is slower until they "
            "catch up).",
            "Brought the search indexes up to date.",
        )
    ]


def _embedder(mnemo: Mnemo) -> list[Problem]:
    mismatch = mnemo.embedder_mismatch
    return [Problem("embedder", mismatch, None)] if mismatch else []


def _core_blocks(mnemo: Mnemo) -> list[Problem]:
    return [
        Problem(
            "core memory",
            f"The {block.label} block holds {len(block.value)} characters, over its limit of "
            f"{block.char_limit}; shorten it in Core memory (`mnemo memory set`).",
            None,
        )
        for block in mnemo.core.blocks()
        if len(block.value) > block.char_limit
    ]


def _dangling_proposals(mnemo: Mnemo) -> list[int]:
    with mnemo.database.connect() as connection:
        return [
            int(row.id)
            for row in connection.execute(
                text(
                    "SELECT p.id FROM proposal p WHERE p.status = 'pending' "
                    "AND p.cause_kind = 'message' AND p.cause_ref IS NOT NULL "
                    "AND NOT EXISTS "
                    "(SELECT 1 FROM message m WHERE m.id = CAST(p.cause_ref AS INTEGER))"
                )
            )
        ]


def _proposals(mnemo: Mnemo) -> list[Problem]:
    dangling = _dangling_proposals(mnemo)
    if not dangling:
        return []
    return [
        Problem(
            "proposals",
            f"{len(dangling)} pending proposals come from messages that were deleted "
            f"(proposal {dangling[0]}{' and others' if len(dangling) > 1 else ''}).",
            "Set aside the proposals whose messages were deleted (marked rejected, kept in the "
            "history).",
        )
    ]


FORGOTTEN = "forgotten text"
_REPAIRS_SAID = {
    FORGOTTEN: "Forgot again what was still held, and deleted the snapshots holding it."
}


def _tombstone_key(mnemo: Mnemo) -> list[Problem]:
    problem = mnemo.tombstones.key_problem()
    return [Problem("tombstones", problem, None)] if problem else []


def _unfinished_import(mnemo: Mnemo) -> list[Problem]:
    journal = unfinished.read(mnemo)
    if journal is None or unfinished.running(mnemo, journal):
        return []
    return [
        Problem(
            "import",
            f"{journal.describe()}: import it again to finish it.",
            f"Took out what the stopped import of {journal.name} had brought.",
        )
    ]


def _undo_import(mnemo: Mnemo) -> None:
    unfinished.undo_unfinished(mnemo)


def _listed(paths: list[str]) -> str:
    return ", ".join(paths[:5]) + (f" and {len(paths) - 5} more files" if len(paths) > 5 else "")


def _forgotten(mnemo: Mnemo) -> list[Problem]:
    held = forget.held_on_disk(mnemo)
    if not held:
        return []
    return [
        Problem(
            FORGOTTEN,
            f"text you asked Mnemo to forget is still in {_listed(held)}.",
            _REPAIRS_SAID[FORGOTTEN],
        )
    ]


def _watched_folders(mnemo: Mnemo) -> list[Problem]:
    with mnemo.database.connect() as connection:
        paths = [row[0] for row in connection.execute(text("SELECT path FROM watched_folder"))]
    return [
        Problem(
            "watched folders",
            f"The watched folder {path} no longer exists; reconnect its drive, or stop watching "
            "it in Settings (`mnemo watch remove`).",
            None,
        )
        for path in paths
        if not Path(path).is_dir()
    ]


# -- the repairs ------------------------------------------------------------------------------


def _rebuild_keyword_index(mnemo: Mnemo) -> None:
    with writing(mnemo.database).begin() as connection:
        connection.execute(text("INSERT INTO message_fts (message_fts) VALUES ('rebuild')"))


def _fix_message_vectors(mnemo: Mnemo) -> None:
    if not mnemo.recall_vectors.readable():
        mnemo.recall.rebuild_vectors()
        return
    expected, known = _message_ids(mnemo)
    stored = Counter(_vector_ids(mnemo))
    present = set(stored)
    doubled = {i for i, count in stored.items() if count > 1}
    stray = set(_vector_ids(mnemo, None)) - known
    for chunk in chunked(sorted(stray | doubled), 500):
        mnemo.recall_vectors.delete(f"id IN ({', '.join(map(str, chunk))})")
    again = (expected - present) | doubled
    with writing(mnemo.database).begin() as connection:
        for chunk in chunked(sorted(again), 500):
            connection.execute(
                text(f"UPDATE message SET embedded = 0 WHERE id IN ({', '.join(map(str, chunk))})")
            )
    mnemo.recall.embed_missing()


def _fix_passages(mnemo: Mnemo) -> None:
    table = mnemo.passage_vectors
    if not table.readable():
        if table.restore_readable() is None:
            raise ProfileError(
                "no version of archival memory reads whole; restore a snapshot "
                "(`mnemo snapshot list`), or add your documents again"
            )
        return
    rows = table.rows(None, ["id", "origin", "source_path"])
    doubled = {i for i, count in Counter(row["id"] for row in rows).items() if count > 1}
    for passage_id in doubled:
        where = f"id = {quote_sql(passage_id)}"
        keep = table.rows(where, [*table.table.schema.names], limit=1)
        table.delete(where)
        table.add(keep)
    with mnemo.database.connect() as connection:
        indexed = {row[0] for row in connection.execute(text("SELECT path FROM document"))}
    for path in {
        r["source_path"] for r in rows if r["origin"] == "document" and r["source_path"]
    } - indexed:
        mnemo.archival.delete_by_source(path)


def _update_indexes(mnemo: Mnemo) -> None:
    for table in (mnemo.recall_vectors, mnemo.passage_vectors):
        table.maintain()


def _set_aside_proposals(mnemo: Mnemo) -> None:
    dangling = _dangling_proposals(mnemo)
    with writing(mnemo.database).begin() as connection:
        for proposal_id in dangling:
            connection.execute(
                text(
                    "UPDATE proposal SET status = 'rejected', decided_by = 'check', "
                    "decided_at = :now WHERE id = :id"
                ),
                {"id": proposal_id, "now": time.time()},
            )


_REPAIRS = {
    "keyword index": _rebuild_keyword_index,
    "message vectors": _fix_message_vectors,
    "passages": _fix_passages,
    "search indexes": _update_indexes,
    "proposals": _set_aside_proposals,
    "import": _undo_import,
}
