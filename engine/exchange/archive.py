"""The `.mnemo` archive: a whole memory in one zip, to keep, to move, or to read without Mnemo.

Inside:
- ``manifest.json``: the format and its version, when and by what it was made, the embedder,
  and how many of each thing it holds;
- ``data/<table>.jsonl``: every row of the profile's tables (core blocks and their versions,
  messages of every conversation, proposals, knowledge memory, watched folders, settings, the
  conversations' state), one JSON object per line, and ``data/passages.jsonl`` for archival
  memory; messages and passages carry their vectors (base64 float32) unless ``vectors=False``;
- a Markdown view for people: ``core/<block>.md``, ``conversations/<conversation>/<day>.md`` and
  ``passages/<source>.md``.

Importing into an empty profile restores it as it was, ids included, so the conversation goes
on where it was. Importing into a profile in use merges: a message or passage already there is
not stored twice, a core block that differs becomes a proposal, facts go through knowledge
memory's own rules (a contradiction is a proposal), and what belongs to the other profile alone
(its pending proposals, its conversations' window state, its settings) is left out and said so.
Either way a snapshot is taken first and restored if anything fails: nothing is half-imported.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
import shlex
import sqlite3
import time
import zipfile
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np
import sqlalchemy.exc
from sqlalchemy import inspect, text

from engine import __version__
from engine.db import on_postgres
from engine.errors import InputError, MnemoError, user_message
from engine.ingest.watch import WatchedFolders
from engine.memory.archival import IMPORTED_TAG, NewPassage, Source
from engine.memory.recall.messages import NewMessage
from engine.memory.search import from_timestamp, held_seconds, to_timestamp
from engine.settings import DEFAULTS, PLACED_AT_CREATION

if TYPE_CHECKING:
    from engine.mnemo import Mnemo

log = logging.getLogger("mnemo.exchange")

FORMAT = "mnemo-archive"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
# The tables exported as they are, in an order an import can write them in.
TABLES = (
    "core_block",
    "core_block_version",
    "setting",
    "agent_state",
    "proposal",
    "entity",
    "entity_alias",
    "relation",
    "watched_folder",
    "document",
    "conversation",
)
TABLE_NAMES = {
    "core_block": "core blocks",
    "core_block_version": "core memory versions",
    "setting": "settings",
    "agent_state": "conversation states",
    "proposal": "proposals",
    "entity": "people and things",
    "entity_alias": "other names",
    "relation": "facts",
    "watched_folder": "watched folders",
    "document": "indexed documents",
    "conversation": "conversation titles",
}
MESSAGE_COLUMNS = "id, conversation_id, role, name, text, created_at, untrusted_reason"
CHUNK = 2000
OFFERED = ("setting", "watched_folder")  # listed for the person, never applied
# Columns that point at a row of their own table, which may come later in the file (a fact
# superseded by a newer one, a person merged into another): written once every row is in.
SELF_REFERENCES = {"entity": "merged_into", "relation": "superseded_by"}
# An archive is read only within these, as a Word file is: a part (one table's rows) may unpack
# to this much, and no more than ``MAX_RATIO`` times its packed size once it is larger than
# ``RATIO_FROM`` (real rows pack 2 to 10 times; a zip bomb a thousand); one row (a line) to
# ``MAX_ROW_BYTES``, read without holding more.
MAX_PART_BYTES = 4 * 2**30
MAX_RATIO = 100
RATIO_FROM = 2**20
MAX_ROW_BYTES = 64 * 2**20
MAX_MANIFEST_BYTES = 2**20
Progress = Callable[[str, int, int], None]  # what, done, total


class ArchiveError(MnemoError):
    """An archive that cannot be imported; the sentence says why, and nothing was changed."""


@dataclass(frozen=True)
class Offer:
    """Something an imported file would configure, and the `mnemo` command that does it."""

    what: str
    command: tuple[str, ...]


@dataclass
class ImportReport:
    added: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    skipped: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    notes: list[str] = field(default_factory=list)
    snapshot: str | None = None  # taken before: restoring it undoes the import
    offered: list[Offer] = field(default_factory=list)  # configuration left for the person

    def lines(self) -> list[str]:
        """What was added and skipped, messages and passages first."""
        first = {"messages": 0, "passages": 1}
        added = sorted(self.added.items(), key=lambda item: first.get(item[0], 2))
        lines = [
            f"{what}: {count} added"
            + (f", {self.skipped[what]} already there" if self.skipped[what] else "")
            for what, count in added
            if count or self.skipped[what]
        ]
        lines += [
            f"{what}: {count} already there"
            for what, count in self.skipped.items()
            if what not in self.added
        ]
        offers = [
            f"Not applied, as the archive is data, not configuration: {offer.what}. "
            f"To apply it: mnemo {shlex.join(offer.command)}"
            for offer in self.offered
        ]
        return lines + self.notes + offers


UNTRUE_TIMES = "times that could not be true (read as unknown)"


def export_timestamp(value: Any, left_out: Counter[str] | None = None) -> float | None:
    """A time as a chat export writes it (UNIX seconds, or ISO 8601 text), or None. One that
    cannot be true (NaN, Infinity, words, before 1900 or after next year: a damaged or edited
    file) is None too, and counted in ``left_out`` for the import's report: one bad time never
    refuses a whole export."""
    if value is None or value == "":
        return None
    seconds: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = held_seconds(float(value))
    elif isinstance(value, str):
        try:
            seconds = to_timestamp(datetime.fromisoformat(value.replace("Z", "+00:00")))
        except ValueError:
            seconds = None
    if seconds is None and left_out is not None:
        left_out[UNTRUE_TIMES] += 1
    return seconds


# -- export ---------------------------------------------------------------------------------------


def export_archive(
    mnemo: Mnemo,
    path: Path,
    *,
    vectors: bool = True,
    since: date | None = None,
    progress: Progress | None = None,
) -> dict[str, int]:
    """Write the profile to ``path`` (a `.mnemo` zip); returns the counts in its manifest.
    ``since`` keeps only messages and passages from that day on (everything else is whole)."""
    report = progress or (lambda _what, _done, _total: None)
    start = to_timestamp(since) if since else None
    counts: dict[str, int] = {}
    partial = path.with_name(path.name + ".partial")
    try:
        with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            with mnemo.database.connect() as connection:
                for table in TABLES:
                    rows = (
                        dict(row._mapping)
                        for row in connection.execute(text(f"SELECT * FROM {table}"))
                        if table != "setting" or row._mapping["key"] not in PLACED_AT_CREATION
                    )  # where this profile's archival memory lived is no other profile's
                    counts[table] = _write_jsonl(archive, f"data/{table}.jsonl", rows)
                counts["message"] = _export_messages(
                    mnemo, archive, connection, start, vectors, report
                )
                _write_core_view(archive, connection)
                _write_conversation_view(archive, connection, start)
            counts["passage"] = _export_passages(mnemo, archive, start, vectors, report)
            manifest = {
                "format": FORMAT,
                "version": FORMAT_VERSION,
                "created_at": time.time(),
                "created_by": f"Mnemo {__version__}",
                "embedder": {"name": mnemo.embedder.name, "dim": mnemo.embedder.dim},
                "vectors": vectors,
                "since": since.isoformat() if since else None,
                "counts": counts,
            }
            archive.writestr(MANIFEST, json.dumps(manifest, indent=2))
        partial.replace(path)
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise MnemoError(
            f"Could not write the archive {path} ({error.strerror or error})."
        ) from error
    return counts


def _write_jsonl(archive: zipfile.ZipFile, name: str, rows: Iterator[dict[str, Any]]) -> int:
    count = 0
    with archive.open(name, "w") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False).encode() + b"\n")
            count += 1
    return count


def _vector_text(vector: Any) -> str:
    return base64.b64encode(np.asarray(vector, dtype=np.float32).tobytes()).decode()


def _vector_of(value: str | None) -> np.ndarray | None:
    return np.frombuffer(base64.b64decode(value), dtype=np.float32) if value else None


def _export_messages(
    mnemo: Mnemo,
    archive: zipfile.ZipFile,
    connection: Any,
    start: float | None,
    vectors: bool,
    report: Progress,
) -> int:
    where = f" WHERE created_at >= {float(start)}" if start is not None else ""
    total = connection.execute(text(f"SELECT count(*) FROM message{where}")).scalar()
    rows = connection.execute(text(f"SELECT {MESSAGE_COLUMNS} FROM message{where} ORDER BY id"))

    def with_vectors() -> Iterator[dict[str, Any]]:
        done = 0
        while chunk := [dict(row._mapping) for row in rows.fetchmany(CHUNK)]:
            if vectors:
                found = mnemo.recall.vectors_of([row["id"] for row in chunk])
                for row in chunk:
                    if row["id"] in found:
                        row["vector"] = _vector_text(found[row["id"]])
            yield from chunk
            done += len(chunk)
            report("messages", done, total)

    return _write_jsonl(archive, "data/message.jsonl", with_vectors())


def _export_passages(
    mnemo: Mnemo, archive: zipfile.ZipFile, start: float | None, vectors: bool, report: Progress
) -> int:
    total = mnemo.archival.count()
    by_source: dict[str, list[str]] = defaultdict(list)

    def rows() -> Iterator[dict[str, Any]]:
        for done, row in enumerate(mnemo.archival.rows_for_export(CHUNK), start=1):
            vector = row.pop("vector", None)
            if start is not None and row["created_at"] < start:
                continue
            if vectors and vector is not None:
                row["vector"] = _vector_text(vector)
            by_source[row["source_path"] or "notes"].append(row["text"])
            yield row
            if done % CHUNK == 0 or done == total:
                report("passages", done, total)

    count = _write_jsonl(archive, "data/passages.jsonl", rows())
    for source, texts in by_source.items():
        name = _file_name(Path(source).name if source != "notes" else "notes")
        body = f"# {source}\n\n" + "\n\n---\n\n".join(texts) + "\n"
        archive.writestr(f"passages/{name}.md", body)
    return count


def _write_core_view(archive: zipfile.ZipFile, connection: Any) -> None:
    for label, description, value in connection.execute(
        text("SELECT label, description, value FROM core_block ORDER BY position, label")
    ):
        archive.writestr(
            f"core/{_file_name(label)}.md", f"# {label}\n\n_{description}_\n\n{value}\n"
        )


def _write_conversation_view(
    archive: zipfile.ZipFile, connection: Any, start: float | None
) -> None:
    """One Markdown file per conversation and day: what was said, as a person reads it."""
    where = f" AND created_at >= {float(start)}" if start is not None else ""
    rows = connection.execute(
        text(
            "SELECT conversation_id, role, text, created_at FROM message "
            f"WHERE role IN ('user', 'assistant'){where} ORDER BY conversation_id, created_at, id"
        )
    )
    current: tuple[str, str] | None = None
    out: IO[bytes] | None = None
    for conversation_id, role, body, created_at in rows:
        when = from_timestamp(created_at).astimezone()
        key = (conversation_id, f"{when:%Y-%m-%d}")
        if key != current:
            if out is not None:
                out.close()
            current = key
            out = archive.open(f"conversations/{_file_name(conversation_id)}/{key[1]}.md", "w")
            out.write(f"# {conversation_id}, {key[1]}\n\n".encode())
        assert out is not None
        who = "You" if role == "user" else "Mnemo"
        out.write(f"**{who}** ({when:%H:%M}): {body}\n\n".encode())
    if out is not None:
        out.close()


def _file_name(name: str) -> str:
    return re.sub(r"[^\w.-]+", "_", name).strip("._")[:80] or "untitled"


# -- import ---------------------------------------------------------------------------------------


def read_manifest(archive: zipfile.ZipFile, path: Path) -> dict[str, Any]:
    """The manifest, after checking the archive is whole, within the limits and in a format
    this Mnemo reads."""
    _check_parts(archive, path)
    try:
        manifest = json.loads(archive.read(MANIFEST))
    except (KeyError, ValueError) as error:
        raise ArchiveError(
            f"{path.name} is not a Mnemo archive: it has no readable manifest."
        ) from error
    if manifest.get("format") != FORMAT:
        raise ArchiveError(
            f"{path.name} is not a Mnemo archive (its format is {manifest.get('format')!r})."
        )
    version = manifest.get("version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ArchiveError(
            f"{path.name} was made by a newer Mnemo (archive format {version}; this one reads up "
            f"to {FORMAT_VERSION}); update Mnemo to import it."
        )
    damaged = archive.testzip()
    if damaged is not None:
        raise ArchiveError(
            f"{path.name} is damaged ({damaged} does not match its checksum); nothing was imported."
        )
    return manifest


def _check_parts(archive: zipfile.ZipFile, path: Path) -> None:
    """Refuse, unread, an archive with a part past the limits: zipfile never unpacks a part
    past its declared size, so the declared sizes bound what reading costs."""
    for info in archive.infolist():
        limit = MAX_MANIFEST_BYTES if info.filename == MANIFEST else MAX_PART_BYTES
        packed_ratio = info.file_size / max(1, info.compress_size)
        if info.file_size > limit or (info.file_size > RATIO_FROM and packed_ratio > MAX_RATIO):
            raise ArchiveError(
                f"{path.name} was not imported: its part {info.filename} unpacks to "
                f"{info.file_size / 2**20:,.0f} MB ({packed_ratio:,.0f} times its packed size), "
                "more than a Mnemo archive holds; it may be damaged or built to exhaust memory."
            )


def import_archive(mnemo: Mnemo, path: Path, progress: Progress | None = None) -> ImportReport:
    """Import a `.mnemo` archive (see the module's docstring); all of it or nothing."""
    try:
        archive = zipfile.ZipFile(path)
    except FileNotFoundError as error:
        raise ArchiveError(f"There is no file {path}.") from error
    except (zipfile.BadZipFile, OSError) as error:
        raise ArchiveError(
            f"{path.name} is damaged or not a zip archive; nothing was imported."
        ) from error
    with archive:
        manifest = read_manifest(archive, path)
        report = ImportReport()
        snapshot = mnemo.snapshot_before(f"importing {path.name}")
        report.snapshot = snapshot.id if snapshot else None
        with mnemo.snapshots.needed(report.snapshot, f"importing {path.name}"):
            try:
                _import(mnemo, archive, manifest, report, progress or (lambda *_args: None))
            except Exception as error:
                if snapshot is not None:
                    mnemo.snapshots.restore(snapshot.id, keep_current=False)
                raise import_failed(path.name, error) from error
    return report


def import_failed(name: str, error: Exception) -> ArchiveError:
    """What the person reads when an import fails, after the snapshot taken first was
    restored: one sentence, never SQL or a traceback. A failure no rule foresaw is a bug,
    logged in full."""
    if isinstance(error, ArchiveError):
        return error
    sentence = user_message(error)
    integrity = (sqlite3.IntegrityError, sqlalchemy.exc.IntegrityError)
    if sentence is None and isinstance(getattr(error, "orig", None) or error, integrity):
        sentence = (  # crafted or edited rows: a key twice, a value missing, a row pointing nowhere
            "its rows do not fit together (a key given twice, a value missing, or a row that "
            "points at one the archive does not hold), so it was damaged or edited after Mnemo "
            "wrote it."
        )
    if sentence is None:
        log.error("importing %s failed", name, exc_info=error)
        sentence = (
            "Mnemo met something it did not expect in it (a bug, written to the log; "
            f"{type(error).__name__})."
        )
    if "nothing was changed" not in sentence.casefold():
        sentence = f"{sentence.rstrip('.')}. Nothing was changed."
    return ArchiveError(f"{name} could not be imported: {sentence}")


def _lines(archive: zipfile.ZipFile, name: str) -> Iterator[dict[str, Any]]:
    """The rows of one ``.jsonl`` member, read as a stream."""
    try:
        member = archive.open(name)
    except KeyError:
        return
    with member:
        while line := member.readline(MAX_ROW_BYTES + 1):
            if len(line) > MAX_ROW_BYTES:
                raise ArchiveError(
                    f"A row of {name} is larger than {MAX_ROW_BYTES // 2**20} MB, more than a "
                    "Mnemo archive holds; it may be damaged or built to exhaust memory."
                )
            if line.strip():
                yield json.loads(line)


def _import(
    mnemo: Mnemo,
    archive: zipfile.ZipFile,
    manifest: dict[str, Any],
    report: ImportReport,
    progress: Progress,
) -> None:
    same_embedder = manifest.get("embedder", {}).get("name") == mnemo.embedder.name
    # Whatever the file says of its rows' trust, they are read from a file: recalled, they
    # keep core-memory edits waiting for the person, as any text they did not type does.
    imported = f"imported from {archive.filename and Path(archive.filename).name}"
    fresh = _holds_nothing(mnemo)
    total = int(manifest.get("counts", {}).get("message", 0))
    with mnemo.recall.transaction(embed_failure_raises=True) as transaction:
        session = transaction.session
        if fresh:
            _restore_tables(session, archive, report)
        else:
            _merge_tables(mnemo, session, archive, report, imported)
        _offer_configuration(mnemo, archive, report)
        known = set() if fresh else message_keys(mnemo)
        ids: set[int] = set()  # an id twice in the file is one message stored twice
        batch: list[NewMessage] = []
        done = 0
        for row in _lines(archive, "data/message.jsonl"):
            done += 1
            key = message_key(row)
            if key in known or row["id"] in ids:
                report.skipped["messages"] += 1
                continue
            known.add(key)
            ids.add(row["id"])
            batch.append(
                NewMessage(
                    row["role"],
                    row["text"],
                    row["created_at"],
                    row["conversation_id"],
                    row.get("name"),
                    id=row["id"] if fresh else None,
                    untrusted_reason=row.get("untrusted_reason") or imported,
                    vector=_vector_of(row.get("vector")) if same_embedder else None,
                )
            )
            if len(batch) >= CHUNK:
                transaction.add_many(batch)
                report.added["messages"] += len(batch)
                batch = []
                progress("messages", done, total)
        transaction.add_many(batch)
        report.added["messages"] += len(batch)
        progress("messages", done, total)
    _import_passages(mnemo, archive, manifest, same_embedder, report, progress)
    if not same_embedder:
        report.notes.append(
            f"The archive's vectors came from {manifest.get('embedder', {}).get('name')}; "
            f"everything was embedded again with {mnemo.embedder.name}."
        )


# What a person makes in a profile besides messages and passages: a profile without any is
# empty, and an archive is restored into it as it was (else merged beside what is there).
# (A new profile's default blocks are versions written by the system.)
_OWN_ROWS = (
    "core_block_version WHERE author != 'system'",
    "proposal",
    "entity",
    "relation",
    "conversation",
    "document",
)


def _holds_nothing(mnemo: Mnemo) -> bool:
    if mnemo.recall.count() or mnemo.archival.count():
        return False
    with mnemo.database.connect() as connection:
        return not any(
            connection.execute(text(f"SELECT 1 FROM {rows} LIMIT 1")).first() for rows in _OWN_ROWS
        )


def _restore_tables(session: Any, archive: zipfile.ZipFile, report: ImportReport) -> None:
    """Into an empty profile: every table of memory as it was, ids and all (what is there, its
    default blocks, goes first: the tables that point at others before them)."""
    restored = [
        table
        for table in TABLES
        if table not in OFFERED  # configuration, not memory: ``_offer_configuration`` lists it
        and any(True for _ in _lines(archive, f"data/{table}.jsonl"))
    ]
    for table in reversed(restored):
        session.execute(text(f"DELETE FROM {table}"))
    for table in restored:
        rows = list(_lines(archive, f"data/{table}.jsonl"))
        # The columns are the table's own, never the file's keys (a key is no SQL); one the
        # file lacks takes its default, one it adds is not read.
        own = [column["name"] for column in inspect(session.connection()).get_columns(table)]
        columns = [name for name in own if name in rows[0]]
        names = ", ".join(columns)
        values = ", ".join(f":{column}" for column in columns)
        rows = [{column: row.get(column) for column in columns} for row in rows]
        pointer = SELF_REFERENCES.get(table, "")
        later = [row for row in rows if row.get(pointer) is not None]
        first = [{**row, pointer: None} for row in rows] if later else rows
        session.execute(text(f"INSERT INTO {table} ({names}) VALUES ({values})"), first)
        if later:
            session.execute(
                text(f"UPDATE {table} SET {pointer} = :{pointer} WHERE id = :id"),
                [{"id": row["id"], pointer: row[pointer]} for row in later],
            )
        if "id" in columns and on_postgres(session.get_bind()):  # ids given: move the sequence on
            session.execute(
                text(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), max(id)) FROM {table}"
                )
            )
        report.added[TABLE_NAMES[table]] += len(rows)


def _merge_tables(
    mnemo: Mnemo, session: Any, archive: zipfile.ZipFile, report: ImportReport, imported: str
) -> None:
    """Into a profile in use: nothing of its own is overwritten. A core block that differs,
    a new block and a fact that contradicts one of its own wait for the person; the rest of
    the archive's memory (people and their other names, facts and their history, titles,
    the document index) is added beside what is there."""
    _merge_blocks(mnemo, session, archive, report, imported)
    _merge_knowledge(mnemo, session, archive, report)
    for table, columns in (
        ("conversation", "id, title, origin, created_at"),
        ("document", "path, size, mtime, content_hash, status, error, chunk_count, embedder, "
         "updated_at"),
    ):  # fmt: skip
        names = [column.strip() for column in columns.split(",")]
        for row in _lines(archive, f"data/{table}.jsonl"):
            added = session.execute(
                text(
                    f"INSERT INTO {table} ({columns}) VALUES "
                    f"({', '.join(':' + name for name in names)}) ON CONFLICT DO NOTHING"
                ),
                {name: row.get(name) for name in names},
            ).rowcount
            report.added[TABLE_NAMES[table]] += added
            report.skipped[TABLE_NAMES[table]] += 1 - added
    report.notes.append(
        "Merged into a profile in use: the archive's pending proposals, core memory versions "
        "and conversation windows were left out; its messages were added after yours."
    )


def _merge_blocks(
    mnemo: Mnemo, session: Any, archive: zipfile.ZipFile, report: ImportReport, imported: str
) -> None:
    blocks = {block.label: block for block in mnemo.core.blocks()}
    waiting = waiting_proposals(mnemo)
    for row in _lines(archive, "data/core_block.jsonl"):
        label, value = row["label"], row["value"]
        block = blocks.get(label)
        try:
            if (label, value) in waiting:  # an import of the same archive before
                report.skipped["core block proposals already waiting"] += 1
            elif block is None:  # a block in every prompt: the person's to accept
                mnemo.proposals.create_block_in(
                    session,
                    label=label,
                    value=value,
                    description=row["description"],
                    char_limit=row["char_limit"],
                    read_only=bool(row["read_only"]),
                    untrusted_reason=imported,
                )
                report.added["core block proposals"] += 1
            elif block.value.strip() != value.strip() and value.strip():
                mnemo.proposals.create_in(
                    session,
                    conversation_id="default",
                    label=label,
                    action="replace" if block.value.strip() else "append",
                    new_content=value,
                    old_content=block.value if block.value.strip() else None,
                    cause_kind="import",
                    untrusted_reason=imported,
                )
                report.added["core block proposals"] += 1
            else:
                report.skipped["core blocks"] += 1
        except MnemoError as error:
            report.notes.append(f"The {label} block was not proposed: {error}")


def waiting_proposals(mnemo: Mnemo) -> set[tuple[str, str]]:
    """What waiting proposals propose (the block or subject, and the text): an archive
    imported again proposes none of it twice."""
    return {(proposal.label, proposal.new_content) for proposal in mnemo.proposals.pending()}


def _merge_knowledge(
    mnemo: Mnemo, session: Any, archive: zipfile.ZipFile, report: ImportReport
) -> None:
    knowledge = mnemo.knowledge
    entities = {row["id"]: row for row in _lines(archive, "data/entity.jsonl")}
    waiting = waiting_proposals(mnemo)

    def final(entity_id: int) -> dict[str, Any]:
        """The entity an id stands for after the archive's own merges."""
        row, seen = entities[entity_id], {entity_id}
        while row["merged_into"] is not None and row["merged_into"] not in seen:
            seen.add(row["merged_into"])
            row = entities[row["merged_into"]]
        return row

    def name(owner: dict[str, Any], alias: str | None) -> None:
        if knowledge.add_name_in(session, owner["name"], owner["kind"], alias):
            return
        report.notes.append(
            f"{alias!r} names {owner['name']} in the archive and someone else here; merge the "
            "two in People & things if they are one."
        )

    for row in entities.values():
        owner = final(row["id"])
        name(owner, row["name"] if owner is not row else None)  # a merged one: another name
    for row in _lines(archive, "data/entity_alias.jsonl"):
        name(final(row["entity_id"]), row["alias"])
    for row in _lines(archive, "data/relation.jsonl"):
        subject = final(row["subject_id"])["name"]
        literal = row["object_id"] is None
        value = row["value"] if literal else final(row["object_id"])["name"]
        if not subject or not value:
            continue
        if mnemo.tombstones.forgets_fact(subject, row["predicate"], value):
            report.skipped["facts you had asked Mnemo to forget"] += 1
            continue
        if row["status"] != "current":
            kept = knowledge.add_past_in(
                session,
                subject,
                row["predicate"],
                value,
                literal=literal,
                status=row["status"],
                valid_from=row["valid_from"],
                valid_to=row["valid_to"],
                learned_at=row["learned_at"],
                source_kind=row["source_kind"],
                source_ref=row["source_ref"],
                asserted_by=row["asserted_by"],
                expires_at=row["expires_at"],
            )
            (report.added if kept else report.skipped)["facts no longer holding"] += 1
            continue
        current = knowledge.contradicted(subject, row["predicate"], value)
        if knowledge.holds(subject, row["predicate"], value):
            report.skipped["facts"] += 1
        elif (subject, value) in waiting:
            report.skipped["fact proposals already waiting"] += 1
        elif current:
            mnemo.proposals.create_fact_in(
                session,
                conversation_id="default",
                subject=subject,
                predicate=row["predicate"],
                obj=value,
                current=current,
                source_kind="import",
                asserted_by=row["asserted_by"],
            )
            report.added["fact proposals"] += 1
        else:
            knowledge.add_in(
                session,
                subject,
                row["predicate"],
                value,
                valid_from=row["valid_from"],
                source_kind=row["source_kind"],
                source_ref=row["source_ref"],
                asserted_by=row["asserted_by"],
                literal=literal,
                expires_at=row["expires_at"],
            )
            report.added["facts"] += 1


def _offer_configuration(mnemo: Mnemo, archive: zipfile.ZipFile, report: ImportReport) -> None:
    """An archive's settings and watched folders are configuration, and an archive is data:
    applied, a crafted one would choose the model's address, approve core edits by itself, or
    read a private folder. Each one that differs from this profile is listed, with the
    command that applies it (the window offers the same as a click)."""
    for row in _lines(archive, "data/setting.jsonl"):
        key, value = str(row.get("key", "")), json.loads(row.get("value") or "null")
        if key not in DEFAULTS or key in PLACED_AT_CREATION or mnemo.settings.get(key) == value:
            continue
        report.offered.append(
            Offer(f"the setting {key} = {value!r}", ("settings", key, str(value)))
        )
    watched = {str(folder.path) for folder in WatchedFolders(mnemo).all()}
    for row in _lines(archive, "data/watched_folder.jsonl"):
        if row.get("path") and row["path"] not in watched:
            report.offered.append(Offer(f"watching {row['path']}", ("watch", "add", row["path"])))


def apply_offer(mnemo: Mnemo, offer: Offer) -> None:
    """Do what the person chose to take from an import's report (``Offer.command``)."""
    match offer.command:
        case ("settings", key, value):
            mnemo.settings.set(key, value)
        case ("watch", "add", path):
            WatchedFolders(mnemo).add(path)
        case _:
            raise InputError(f"Mnemo does not know how to apply {offer.what}.")


def message_key(row: dict[str, Any]) -> str:
    """What makes two messages the same one: where, who, when and what."""
    parts = (row["conversation_id"], row["role"], f"{float(row['created_at']):.6f}", row["text"])
    key = "\x1f".join(parts)
    return hashlib.sha1(key.encode()).hexdigest()


def new_message_key(message: NewMessage) -> str:
    """``message_key`` of a message about to be stored."""
    return message_key(
        {
            "conversation_id": message.conversation_id,
            "role": message.role,
            "created_at": message.created_at or 0.0,
            "text": message.text,
        }
    )


def message_keys(mnemo: Mnemo) -> set[str]:
    with mnemo.database.connect() as connection:
        rows = connection.execute(
            text("SELECT conversation_id, role, created_at, text FROM message")
        )
        return {message_key(dict(row._mapping)) for row in rows}


def _import_passages(
    mnemo: Mnemo,
    archive: zipfile.ZipFile,
    manifest: dict[str, Any],
    same_embedder: bool,
    report: ImportReport,
    progress: Progress,
) -> None:
    total = int(manifest.get("counts", {}).get("passage", 0))
    done = 0
    chunk: list[dict[str, Any]] = []

    seen: set[str] = set()

    def flush() -> None:
        existing = mnemo.archival.existing_ids([row["id"] for row in chunk]) | seen
        new = list({row["id"]: row for row in chunk if row["id"] not in existing}.values())
        seen.update(row["id"] for row in new)
        report.skipped["passages"] += len(chunk) - len(new)
        mnemo.archival.insert_many(
            NewPassage(
                row["text"],
                Source(
                    row["source_path"],
                    row["source_section"],
                    row["source_chunk"],
                    row["source_message_id"],
                ),
                tuple(dict.fromkeys([*(row.get("tags") or ()), IMPORTED_TAG])),
                row["created_at"],
                row["origin"],
                id=row["id"],
                vector=_vector_of(row.get("vector")) if same_embedder else None,
                expires_at=row.get("expires_at"),
            )
            for row in new
        )
        report.added["passages"] += len(new)
        progress("passages", done, total)

    for row in _lines(archive, "data/passages.jsonl"):
        chunk.append(row)
        done += 1
        if len(chunk) >= CHUNK:
            flush()
            chunk = []
    if chunk:
        flush()


def parse_since(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError as error:
        raise InputError(f"--since takes a date written YYYY-MM-DD, not {value!r}.") from error


__all__ = [
    "ArchiveError",
    "ImportReport",
    "Progress",
    "export_archive",
    "import_archive",
    "message_key",
    "message_keys",
    "new_message_key",
    "parse_since",
]
