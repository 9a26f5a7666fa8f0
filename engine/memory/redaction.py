"""Redaction: taking a forgotten text out of every store of one profile, and out of its disk.

A forget (``engine.forget``) decides what goes and asks the person; this module does the
removal, wherever the text is held:
- recall messages (the text is replaced by "[forgotten on DATE]"), the keyword index and the
  neighbour text other messages are indexed with, and their vectors (made again);
- archival passages (a passage left with nothing but the marker goes), and every older Lance
  version, data file and keyword index that held them;
- knowledge: facts, their history, and the people and things it names, with their other names;
- core blocks and every earlier version, the conversations' summaries and titles, proposals,
  recall notes and search results stored as messages, uploaded documents, hand-off files and
  the log files.
SQLite's freed pages are overwritten (``secure_delete``), its keyword index merged, the WAL
truncated and the file vacuumed.

The removal finds the text by the tombstones' hashes (``engine.memory.tombstones``) as well as
by its words, so the profile sweeps again without the text ever being written down: at open,
to finish a forget a crash cut short (``finish_forgets``), after a snapshot's restore and an
import (``sweep``), and when `mnemo check --repair` finds it held (``forget_again``). It takes
the stores (``AllStores``), not the open profile, so the profile can call it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import SQLAlchemyError

from engine.db import on_postgres, writing
from engine.errors import NotFoundError
from engine.loaders import is_supported, load
from engine.memory import trace
from engine.memory.archival import ArchivalStore
from engine.memory.recall import RecallStore, keyword_text
from engine.memory.recall.conversations import move_in
from engine.memory.snapshots import Snapshot, SnapshotStore, backup
from engine.memory.tombstones import Tombstone, Tombstones, replace_spans, runs_in, words
from engine.memory.vectors import VectorTable, clear_query_vectors, quote_sql
from engine.profile import Profile, forget_prompt_states

log = logging.getLogger("mnemo.forget")

EXCERPT_CHARS = 60
# The tables and columns that hold what the person said or was told, with the words a preview
# uses for each. Entities, other names and facts are removed whole when their text is forgotten.
COLUMNS: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("message", "id", ("text",), "message"),
    ("agent_state", "conversation_id", ("summary",), "conversation summary"),
    ("conversation", "id", ("title",), "conversation title"),
    ("core_block", "label", ("value", "description"), "core memory block"),
    ("core_block_version", "id", ("old_value", "new_value"), "core memory version"),
    (
        "proposal",
        "id",
        ("label", "old_content", "new_content", "applied_content", "payload", "cause_ref"),
        "proposal",
    ),
    ("entity", "id", ("name", "note"), "person or thing"),
    ("entity_alias", "key", ("alias",), "other name"),
    ("relation", "id", ("value", "source_ref"), "fact"),
    ("document", "path", ("path", "error"), "document"),
)
REMOVED_WHOLE = {"entity": "name", "entity_alias": "alias", "relation": "value", "document": "path"}
# A passage's text, tags and where it came from (a document's path and section heading).
PASSAGE_COLUMNS = ("text", "tags", "source_path", "source_section")
PASSAGE = "archival passage"
# The profile's folders of files a person's text arrives in: a chat handed to the window
# (``engine.server.handoff``) and the documents sent to `mnemo serve` (deleted whole).
FILE_FOLDERS = {"handoff": "hand-off file", "uploads": "uploaded document"}
LOG = "log file"
Redact = Callable[[str], str]


@dataclass(frozen=True)
class Place:
    kind: str  # "message", "archival passage", ... (COLUMNS)
    ref: str  # which one: "message 12", "core memory block human"
    excerpt: str  # the text around it, for the preview only


class AllStores(Protocol):
    """Every store of one open profile, its folder (uploads, hand-off files, logs) and its
    snapshots: what a forget reads and rewrites. A ``Mnemo`` is one."""

    profile: Profile
    recall: RecallStore
    archival: ArchivalStore
    tombstones: Tombstones
    snapshots: SnapshotStore

    @property
    def database(self) -> Engine: ...

    @property
    def recall_vectors(self) -> VectorTable: ...

    @property
    def passage_vectors(self) -> VectorTable: ...

    def wait_for_background_work(self) -> None: ...


class Phrases:
    """Runs of words (``words``, normalised) found in a text however it is written: any case,
    width or separator, a decomposed letter, a soft hyphen or zero-width character inside."""

    def __init__(self, runs: list[list[str]]) -> None:
        self._runs: dict[int, set[tuple[str, ...]]] = {}
        for run in runs:
            if run:
                self._runs.setdefault(len(run), set()).add(tuple(run))

    def spans(self, value: str) -> list[tuple[int, int]]:
        return runs_in(words(value), self._runs, tuple)

    def search(self, value: str) -> tuple[int, int] | None:
        return min(self.spans(value), default=None)

    def sub(self, marker: str, value: str) -> str:
        return replace_spans(value, self.spans(value), marker)


_MARKER = re.compile(r"\[forgotten(?: on \d{4}-\d{2}-\d{2})?\]")


def outside_markers(redact: Redact) -> Redact:
    """``redact`` applied to the text between earlier "[forgotten…]" markers only: a marker's
    date is never taken for a forgotten number."""

    def apply(value: str) -> str:
        pieces = _MARKER.split(value)
        if len(pieces) == 1:
            return redact(value)
        markers = _MARKER.findall(value)
        redacted = [redact(piece) for piece in pieces]
        return "".join(p + m for p, m in zip(redacted, [*markers, ""], strict=True))

    return apply


# -- where a text is held --------------------------------------------------------------------------


JSON_COLUMNS = {"payload"}  # a proposal's: JSON, whose strings may be written as escapes


def redacted(column: str, value: str, redact: Redact) -> str:
    """``value`` of ``column`` redacted; a JSON column's strings as they read, not as their
    escapes are written (a merged note's "Zo\\u00eb" stayed after "Zoë" was forgotten)."""
    if column not in JSON_COLUMNS:
        return redact(value)
    try:
        data = json.loads(value)
    except ValueError:
        return redact(value)
    clean = _redact_json(data, redact)
    return value if clean == data else json.dumps(clean, ensure_ascii=False)


def _redact_json(data: Any, redact: Redact) -> Any:
    if isinstance(data, str):
        return redact(data)
    if isinstance(data, list):
        return [_redact_json(item, redact) for item in data]
    if isinstance(data, dict):
        return {key: _redact_json(item, redact) for key, item in data.items()}
    return data


def sql_places(connection: Connection, redact: Redact, like: str | None) -> list[Place]:
    places = []
    for table, key, columns, kind in COLUMNS:
        for row in _rows(connection, table, key, columns, like):
            for column in columns:
                value = row[column]
                if isinstance(value, str) and redacted(column, value, redact) != value:
                    places.append(Place(kind, f"{kind} {row[key]}", excerpt(value, None)))
                    break
    return places


def _rows(
    connection: Connection, table: str, key: str, columns: tuple[str, ...], like: str | None
) -> Iterable[Any]:
    """The rows that may hold the words: those whose ASCII text holds ``like``, and every row
    with other characters (a full-width or decomposed word is found only by reading it)."""
    where = ""
    if like:
        other = (
            "octet_length({c}) != char_length({c})"
            if connection.dialect.name == "postgresql"
            else "length(CAST({c} AS BLOB)) != length({c})"
        )
        where = " WHERE " + " OR ".join(
            f"lower({c}) LIKE :like OR {other.format(c=c)}" for c in columns
        )
    sql = f"SELECT {key}, {', '.join(columns)} FROM {table}{where}"
    return connection.execute(text(sql), {"like": like}).mappings().all()


def lance_where(like: str | None) -> str | None:
    """Passages that may hold the words (as ``_rows``), in any of their columns."""
    if not like:
        return None
    columns = ["text", "source_path", "source_section", "array_to_string(tags, ' ')"]
    return " OR ".join(
        f"lower({c}) LIKE {quote_sql(like)} OR octet_length({c}) != character_length({c})"
        for c in columns
    )


PASSAGE_READ = ["id", *PASSAGE_COLUMNS]


def passages(rows: list[dict[str, Any]], redact: Redact) -> list[dict[str, Any]]:
    """The rows ``redact`` changes, each with ``new``: its changed columns, redacted."""
    changed = []
    for row in rows:
        new: dict[str, Any] = {}
        for column in PASSAGE_COLUMNS:
            value = row.get(column)
            if isinstance(value, str):
                redacted: Any = redact(value)
            elif isinstance(value, list):
                redacted = [redact(tag) for tag in value]
            else:
                continue
            if redacted != value:
                new[column] = redacted
        if new:
            changed.append({**row, "new": new})
    return changed


def held_files(stores: AllStores, redact: Redact) -> list[tuple[str, Path]]:
    """The hand-off files and uploaded documents that hold the text (in their name or their
    words): they are deleted whole (a PDF cannot be rewritten without it)."""
    held = []
    for folder, kind in FILE_FOLDERS.items():
        for path in sorted((stores.profile.root / folder).glob("*")):
            if path.is_file() and (redact(path.name) != path.name or file_holds(path, redact)):
                held.append((kind, path))
    return held


def file_holds(path: Path, redact: Redact) -> bool:
    """Whether a file's text holds what ``redact`` removes: a document as Mnemo reads it, any
    other file as text."""
    if holds_text(path, redact):
        return True
    if not is_supported(path):
        return False
    try:
        return any(
            redact(section.text) != section.text
            or redact(section.label or "") != (section.label or "")
            for section in load(path)
        )
    except Exception:  # noqa: BLE001 (a damaged upload: its raw bytes were read above)
        return False


def holds_text(path: Path, redact: Redact) -> bool:
    """Whether a file read as text holds what ``redact`` removes."""
    content = path.read_text(encoding="utf-8", errors="replace")
    return redact(content) != content


def excerpt(value: str, found: Phrases | None) -> str:
    span = found.search(value) if found is not None else None
    start = max(0, span[0] - EXCERPT_CHARS // 2) if span else 0
    piece = " ".join(value[start : start + EXCERPT_CHARS * 2].split())
    return ("…" if start else "") + piece


def snapshot_holds(stores: AllStores, snapshot_id: str, redact: Redact, like: str | None) -> bool:
    folder = stores.profile.root / "snapshots" / snapshot_id
    copy = folder / "mnemo.sqlite"
    if copy.exists():
        from sqlalchemy import create_engine

        engine = create_engine(f"sqlite:///file:{copy}?mode=ro&uri=true")
        try:
            with engine.connect() as connection:
                if sql_places(connection, redact, like):
                    return True
        finally:
            engine.dispose()
    tag = f"snapshot-{snapshot_id}"
    table = stores.passage_vectors
    if table.has_tag(tag):
        return bool(passages(table.rows_at(tag, lance_where(like), PASSAGE_READ), redact))
    return False


def log_files(stores: AllStores) -> list[Path]:
    """The profile's log files, rewritten without the text (never deleted)."""
    folder = stores.profile.log_path.parent
    return sorted(path for path in folder.glob("*") if path.is_file()) if folder.exists() else []


def facts(stores: AllStores) -> list[tuple[int, str, str, str]]:
    """Every fact as (id, subject, relation, object), its entities by name."""
    with stores.database.connect() as connection:
        return [
            (row.id, row.subject, row.predicate, row.object)
            for row in connection.execute(
                text(
                    "SELECT r.id, s.name AS subject, r.predicate, "
                    "COALESCE(o.name, r.value) AS object FROM relation r "
                    "JOIN entity s ON s.id = r.subject_id LEFT JOIN entity o ON o.id = r.object_id"
                )
            )
        ]


# -- removing --------------------------------------------------------------------------------------


def remove_items(stores: AllStores, items: list[tuple[str, str]]) -> None:
    """Messages, passages, facts and conversations forgotten whole, by (kind, id)."""
    for kind, item_id in items:
        if kind == "message":
            with suppress(NotFoundError):  # a conversation's message already gone
                stores.recall.delete(int(item_id))
        elif kind == "archival passage":
            stores.archival.delete(item_id)
        elif kind == "fact":
            with writing(stores.database).begin() as connection:
                _delete_relations(connection, [int(item_id)])
        elif kind == "conversation":
            with writing(stores.database).begin() as connection:
                for table, key in (("conversation", "id"), ("agent_state", "conversation_id")):
                    connection.execute(
                        text(f"DELETE FROM {table} WHERE {key} = :c"), {"c": item_id}
                    )


def remove(stores: AllStores, redact: Redact, like: str | None) -> Counter[str]:
    """Every place ``redact`` changes, changed (entities, names and facts removed whole).

    The forget's tombstones are written before this runs, and every writer checks what it
    stores against them once it holds its store's lock. So each store is read and changed
    under its lock: a write that began before the tombstones commits before this reads, and one
    after them keeps the text out itself."""
    found: Counter[str] = Counter()
    with stores.recall_vectors.writer_lock:  # the messages and their vectors, one step
        found += _remove_from_database(stores, redact, like)
    with stores.passage_vectors.writer_lock:
        found += _remove_from_passages(stores, redact, like)
    for kind, path in held_files(stores, redact):
        found[kind] += 1
        path.unlink(missing_ok=True)
    for path in log_files(stores):
        content = path.read_text(encoding="utf-8", errors="replace")
        if redact(content) != content:
            found[LOG] += 1
            path.write_text(redact(content), encoding="utf-8")
    return found


def _remove_from_database(stores: AllStores, redact: Redact, like: str | None) -> Counter[str]:
    with writing(stores.database).begin() as connection:
        found, changed = redact_rows(connection, redact, like)
        moved = _rename_named(connection, changed)
    changed_messages = changed.get("message", [])
    if changed_messages:
        ids = ", ".join(map(str, changed_messages))
        stores.recall_vectors.delete(f"id IN ({ids})")
        stores.recall.embed_missing()  # their vectors, made again from what is left
    for old, new in moved.items():
        stores.recall_vectors.update_values(
            f"conversation_id = {quote_sql(old)}", {"conversation_id": quote_sql(new)}
        )
    return found


NAMED_BY = "api-"  # the id of a conversation a program named: a hash of the name


def _rename_named(connection: Connection, changed: dict[str, list[Any]]) -> dict[str, str]:
    """A conversation a program named, whose name (its title) held the forgotten text, gets a
    new id that has nothing to do with the name: its id was a hash of it. Returns old -> new."""
    moved = {
        old: NAMED_BY + uuid.uuid4().hex[:16]
        for old in changed.get("conversation", [])
        if str(old).startswith(NAMED_BY)
    }
    for old, new in moved.items():
        move_in(connection, old, new)
    return moved


def redact_rows(
    connection: Connection, redact: Redact, like: str | None
) -> tuple[Counter[str], dict[str, list[Any]]]:
    """Every row ``redact`` changes, changed (entities, names and facts removed whole), in the
    database ``connection`` writes; returns the places by kind and the keys changed by table
    (the messages' vectors are the caller's)."""
    found: Counter[str] = Counter()
    changed: dict[str, list[Any]] = {}
    changed_messages = changed.setdefault("message", [])
    for table, key, columns, kind in COLUMNS:
        for row in _rows(connection, table, key, columns, like):
            values = {c: row[c] for c in columns if isinstance(row[c], str)}
            new = {c: r for c, v in values.items() if (r := redacted(c, v, redact)) != v}
            if not new:
                continue
            found[kind] += 1
            if table in REMOVED_WHOLE and REMOVED_WHOLE[table] in new:
                _delete_whole(connection, table, row[key])
                continue
            sets = ", ".join(f"{column} = :{column}" for column in new)
            if table == "message":
                sets += ", search_text = :text, embedded = 0"
                changed_messages.append(int(row[key]))
            else:
                changed.setdefault(table, []).append(row[key])
            connection.execute(
                text(f"UPDATE {table} SET {sets} WHERE {key} = :key"), {**new, "key": row[key]}
            )
    if changed_messages:
        _reindex(connection, changed_messages)
    return found, changed


def redact_snapshot(stores: AllStores, snapshot_id: str, redact: Redact, like: str | None) -> None:
    """Take the text out of a snapshot in place: its copy of the database is rewritten and
    vacuumed, and its versions of the Lance tables that held the text (a tagged version cannot
    be rewritten) are let go of. Restoring it then leaves those tables as they are, and after a
    message's text changed, embeds every message again (the vectors kept are not the
    snapshot's).

    The copy is rewritten beside it and put in its place whole: a kill halfway leaves the old
    copy, whose rows the next forget or check still finds, never one whose rows are clean while
    its keyword index and free pages still hold the words."""
    copy = stores.snapshots.database_copy(snapshot_id)
    dropped = set()
    tag = f"snapshot-{snapshot_id}"
    table = stores.passage_vectors
    if table.has_tag(tag) and passages(table.rows_at(tag, lance_where(like), PASSAGE_READ), redact):
        dropped.add(table.name)
    partial = copy.with_name(copy.name + ".partial")
    partial.unlink(missing_ok=True)  # one a kill left
    backup(copy, partial)
    if _rewrite_copy(partial, redact, like):
        dropped.add(stores.recall_vectors.name)  # the tagged vectors were made from the text
    os.replace(partial, copy)
    for left in ("-wal", "-shm"):  # the old copy's, from a reader: they held its pages
        copy.with_name(copy.name + left).unlink(missing_ok=True)
    if dropped:
        stores.snapshots.drop_tables(snapshot_id, dropped)


def _rewrite_copy(path: Path, redact: Redact, like: str | None) -> bool:
    """Redact a database copy's rows, then its keyword index's old segments and its free pages
    (both held the words too); returns whether a message's text or a conversation's id changed
    (every message is then marked for embedding again)."""
    from sqlalchemy import create_engine

    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as connection:
            _found, changed = redact_rows(connection, redact, like)
            moved = _rename_named(connection, changed)
            renewed = bool(changed.get("message") or moved)
            if renewed:  # the vectors kept are let go of: all made again after a restore
                connection.execute(text("UPDATE message SET embedded = 0"))
    finally:
        engine.dispose()
    raw = sqlite3.connect(path, isolation_level=None)
    try:
        raw.execute("INSERT INTO message_fts(message_fts) VALUES('optimize')")
        raw.execute("VACUUM")
        raw.execute("PRAGMA journal_mode = DELETE")  # one file, to be put in the copy's place
    finally:
        raw.close()
    return renewed


def _remove_from_passages(stores: AllStores, redact: Redact, like: str | None) -> Counter[str]:
    found: Counter[str] = Counter()
    for row in passages(stores.passage_vectors.rows(lance_where(like), PASSAGE_READ), redact):
        found[PASSAGE] += 1
        left = row["new"].get("text", row["text"])
        # A passage of a document whose path holds it goes whole, as the document's entry does.
        whole = "source_path" in row["new"]
        if not whole and [word for word in words(left) if not _is_marker_word(word.text)]:
            stores.archival.rewrite(row["id"], row["new"])
        else:
            stores.archival.delete(row["id"])
    return found


def _is_marker_word(word: str) -> bool:
    return word in ("forgotten", "on") or word.isdigit()


def _reindex(connection: Connection, message_ids: list[int]) -> None:
    """The keyword text of changed messages and of the turns that had them as neighbours."""
    listed = ", ".join(map(str, message_ids))
    rows = connection.execute(
        text(f"SELECT id, conversation_id FROM message WHERE id IN ({listed})")
    ).all()
    for message_id, conversation_id in rows:
        keyword_text.refresh_around(
            lambda sql, params: connection.execute(text(sql), params).all(),
            lambda sql, params: connection.execute(text(sql), params),
            conversation_id,
            message_id,
        )


def _delete_whole(connection: Connection, table: str, key: Any) -> None:
    if table == "relation":
        _delete_relations(connection, [int(key)])
    elif table == "document":
        connection.execute(text("DELETE FROM document WHERE path = :k"), {"k": key})
    elif table == "entity_alias":
        connection.execute(text("DELETE FROM entity_alias WHERE key = :k"), {"k": key})
    elif table == "entity":
        ids = [int(key)]
        ids += [
            row[0]
            for row in connection.execute(
                text("SELECT id FROM entity WHERE merged_into = :e"), {"e": key}
            )
        ]
        listed = ", ".join(map(str, ids))
        relations = connection.execute(
            text(
                f"SELECT id FROM relation WHERE subject_id IN ({listed}) OR object_id IN ({listed})"
            )
        ).all()
        _delete_relations(connection, [row[0] for row in relations])
        connection.execute(text(f"DELETE FROM entity_alias WHERE entity_id IN ({listed})"))
        connection.execute(text(f"UPDATE entity SET merged_into = NULL WHERE id IN ({listed})"))
        connection.execute(text(f"DELETE FROM entity WHERE id IN ({listed})"))


def _delete_relations(connection: Connection, ids: list[int]) -> None:
    if not ids:
        return
    listed = ", ".join(map(str, ids))
    connection.execute(
        text(f"UPDATE relation SET superseded_by = NULL WHERE superseded_by IN ({listed})")
    )
    connection.execute(text(f"DELETE FROM relation WHERE id IN ({listed})"))


def _remove_forgotten_facts(stores: AllStores, digests: set[str]) -> Counter[str]:
    found: Counter[str] = Counter()
    gone = [
        fact_id
        for fact_id, subject, predicate, obj in facts(stores)
        if stores.tombstones.fact_digest(subject, predicate, obj) in digests
    ]
    with writing(stores.database).begin() as connection:
        _delete_relations(connection, gone)
        found["fact"] += len(gone)
    return found


def held_again(stores: AllStores, stones: list[Tombstone]) -> Redact:
    """What ``stones`` forget, marked "[forgotten]" wherever it is found, by hash (between
    earlier markers only)."""
    return outside_markers(lambda value: stores.tombstones.redact(value, stones))


def sweep(
    stores: AllStores, stones: list[Tombstone] | None = None, *, scrubbed: bool = True
) -> dict[str, int]:
    """Remove whatever the tombstones forget that is held again: after an import, a snapshot's
    restore, or a forget cut short. Reads every row (by hash there is no word to search for).
    The disk is scrubbed after a removal, unless not ``scrubbed`` (the caller scrubs)."""
    chosen = stores.tombstones.active() if stones is None else stones
    if not chosen:
        return {}
    found = remove(stores, held_again(stores, chosen), None)
    fact_digests = {stone.digest for stone in chosen if stone.kind == "fact"}
    if fact_digests:
        found.update(_remove_forgotten_facts(stores, fact_digests))
    if found:
        if scrubbed:
            scrub(stores)
        log.info("forgot again what tombstones forget: %s", dict(found))
    return dict(found)


def finish_forgets(stores: AllStores) -> None:
    """Finish a forget a crash cut short (at open): its tombstone says what, never the text."""
    pending = [stone for stone in stores.tombstones.all() if stone.status == "forgetting"]
    if not pending:
        return
    log.info("finishing %d forgets cut short", len(pending))
    forget_again(stores, pending)
    for stone in pending:
        stores.tombstones.set_status(stone.id, "done")


def forget_in_snapshots(
    stores: AllStores, redact: Redact, like: str | None, since: float = 0.0
) -> list[str]:
    """Take the text out of every snapshot that holds it, in place (``redact_snapshot``): the
    person asked to forget a text, not to lose the snapshots (an import's undo among them). One
    that cannot be rewritten (its copy is damaged) is deleted whole. Run after the text left the
    stores and the disk (``scrub``), with the snapshots' lock held: a snapshot another program
    took meanwhile is found too. One taken since ``since`` (the forget began) is read byte by
    byte as well: taken between the rows' change and the scrub, its rows are clean while its
    keyword index and free pages still hold the words. Returns the ids rewritten."""
    with stores.snapshots.lock:
        holding = [
            snapshot
            for snapshot in stores.snapshots.all()
            if snapshot_holds(stores, snapshot.id, redact, like)
            or (snapshot.created_at.timestamp() >= since and _copy_holds(stores, snapshot, redact))
        ]
        rewritten = [s.id for s in holding if _rewrite(stores, s, redact, like)]
        if rewritten:  # the Lance versions they let go of: gone from the disk too
            for table in (stores.passage_vectors, stores.recall_vectors):
                table.prune_versions()
        return rewritten


def _copy_holds(stores: AllStores, snapshot: Snapshot, redact: Redact) -> bool:
    """Whether the bytes of a snapshot's database copy (and its write-ahead log) hold it."""
    copy = stores.snapshots.database_copy(snapshot.id)
    return any(
        path.is_file() and holds_text(path, redact)
        for path in (copy, copy.with_name(copy.name + "-wal"))
    )


def _rewrite(stores: AllStores, snapshot: Snapshot, redact: Redact, like: str | None) -> bool:
    """``redact_snapshot``; a snapshot that cannot be rewritten is deleted whole (False)."""
    try:
        redact_snapshot(stores, snapshot.id, redact, like)
        return True
    except (OSError, sqlite3.Error, SQLAlchemyError):
        log.exception("could not rewrite snapshot %s; it is deleted", snapshot.id)
        with suppress(NotFoundError):
            stores.snapshots.delete(snapshot.id)
        return False


def forget_again(stores: AllStores, stones: list[Tombstone] | None = None) -> list[str]:
    """Forget again what tombstones forget, still held (`mnemo check --repair`, a forget cut
    short): the snapshots that hold it are rewritten without it (their ids are returned), every
    store is swept and the disk scrubbed."""
    stones = stores.tombstones.active() if stones is None else stones
    sweep(stores, stones, scrubbed=False)
    scrub(stores)
    return forget_in_snapshots(stores, held_again(stores, stones), None)  # every byte read


# -- the disk --------------------------------------------------------------------------------------


def scrub(stores: AllStores) -> list[str]:
    """Leave no byte of what was removed: SQLite's free pages and WAL, Lance's old versions and
    data files, and what this process keeps in memory (search traces, query vectors)."""
    notes = []
    trace.clear()
    clear_query_vectors()
    forget_prompt_states()  # the local model's kept prompts (core memory and conversations)
    stores.wait_for_background_work()
    for table in (stores.passage_vectors, stores.recall_vectors):
        stores.profile.wait_for_turns()  # a turn the person waits for goes first
        table.scrub()
    stores.profile.wait_for_turns()
    engine = stores.database
    if on_postgres(engine):
        notes.append(
            "The rows are gone from PostgreSQL; the server's own backups and its tables until "
            "their next vacuum may still hold them."
        )
        return notes
    _scrub_sqlite(engine)
    return notes


def _scrub_sqlite(engine: Engine) -> None:
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.exec_driver_sql("INSERT INTO message_fts(message_fts) VALUES('optimize')")
        connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        for attempt in range(5):
            try:
                connection.exec_driver_sql("VACUUM")
                break
            except Exception:  # another connection reads: wait, then try again
                if attempt == 4:
                    raise
                time.sleep(0.5)
        connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
