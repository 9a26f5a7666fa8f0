"""An import of a chat export in progress, written down in the profile, so that one stopped
halfway (by the person, an error, or the process killed) is never half-kept.

A ChatGPT or Claude export of years takes many minutes to import, and the person chats
meanwhile. So the import stores whole conversations in batches, each committed, and its journal
(``import-unfinished.json``) says where it began: the first message id and proposal id it could
have written, and the archival sources it wrote. Then:

- importing the same file again resumes it: what is already in is skipped (as in any re-import);
- ``undo`` takes out exactly what it brought, and nothing the person wrote meanwhile (a snapshot
  restore would take their new messages too): each batch records the ids it wrote in the same
  transaction (``record_batch``), and the undo takes out those ids only (a journal planted or
  left by another import names no batch of this one, and takes nothing out);
- the journal is removed when the import ends either way. While it is there, another import is
  refused, and the health check says so (its repair is the undo).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlmodel import Session

from engine.db import writing
from engine.exchange.archive import ArchiveError
from engine.memory.recall import keyword_text
from engine.memory.search import chunked

if TYPE_CHECKING:
    from engine.mnemo import Mnemo

JOURNAL = "import-unfinished.json"
# An import writes its journal after every batch (seconds apart): one silent this long is dead.
QUIET_S = 600


@dataclass
class Unfinished:
    path: str  # the export, resolved
    first_message_id: int
    first_proposal_id: int
    started_at: float
    pid: int
    snapshot: str | None = None
    stored: int = 0  # messages stored so far
    sources: list[str] = field(default_factory=list)  # archival passages' source paths it wrote
    id: str = ""  # names its batches (``record_batch``); a journal without one names none
    fingerprint: str = ""  # of the export as it began (``fingerprint``): a resume needs the same

    @property
    def name(self) -> str:
        return Path(self.path).name

    def describe(self) -> str:
        when = time.strftime("%d %b %H:%M", time.localtime(self.started_at)).lstrip("0")
        return (
            f"The import of {self.name} (started {when}) stopped halfway, with "
            f"{self.stored:,} messages in"
        )


def _journal(mnemo: Mnemo) -> Path:
    return Path(mnemo.profile.root) / JOURNAL


def read(mnemo: Mnemo) -> Unfinished | None:
    """The import that has not ended, or None (a journal Mnemo cannot read is none). Its
    ``stored`` is counted again in the database: a kill -9 between a batch's commit and the
    journal's write left it a batch short."""
    try:
        journal = Unfinished(**json.loads(_journal(mnemo).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None
    journal.stored = max(journal.stored, _brought(mnemo, journal))
    return journal


_IN_BATCHES = (
    "SELECT m.id, m.conversation_id FROM message m JOIN import_batch b "
    "ON m.id BETWEEN b.first_id AND b.last_id WHERE b.import_id = :import"
)


def _brought(mnemo: Mnemo, journal: Unfinished) -> int:
    """The messages in the database that the import brought (its batches' ids)."""
    with mnemo.database.connect() as connection:
        rows = connection.execute(text(_IN_BATCHES), {"import": journal.id}).all()
    return len(rows)


def record_batch(session: Session, journal: Unfinished, ids: list[int]) -> None:
    """Record the ids a batch wrote, in the batch's own transaction (a kill after its commit
    leaves them recorded): each run of consecutive ids is one row."""
    runs: list[list[int]] = []
    for message_id in sorted(ids):
        if runs and message_id == runs[-1][1] + 1:
            runs[-1][1] = message_id
        else:
            runs.append([message_id, message_id])
    for first, last in runs:
        session.execute(
            text(
                "INSERT INTO import_batch (import_id, first_id, last_id) "
                "VALUES (:import, :first, :last)"
            ),
            {"import": journal.id, "first": first, "last": last},
        )


def write(mnemo: Mnemo, journal: Unfinished) -> None:
    """Written whole or not at all: a kill mid-write leaves the previous journal."""
    path = _journal(mnemo)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(asdict(journal)), encoding="utf-8")
    os.replace(partial, path)


def clear(mnemo: Mnemo) -> None:
    """The import has ended (finished or undone): its snapshot and its batches' record are no
    longer needed."""
    journal = read(mnemo)
    if journal is not None:
        mnemo.snapshots.release(journal.snapshot)
        with writing(mnemo.database).begin() as connection:
            connection.execute(
                text("DELETE FROM import_batch WHERE import_id = :import"), {"import": journal.id}
            )
    _journal(mnemo).unlink(missing_ok=True)


def ended(journal: Unfinished) -> None:
    """This process is no longer importing it (finished, undone, or left for a resume)."""
    _RUNNING_HERE.discard(journal.path)


_RUNNING_HERE: set[str] = set()  # the exports this process is importing now


def running(mnemo: Mnemo, journal: Unfinished) -> bool:
    """Whether it is being imported now, by this process or another of this machine: one whose
    journal has not been written for ``QUIET_S`` is not (its process id may be another's now)."""
    if journal.pid == os.getpid():
        return journal.path in _RUNNING_HERE
    try:
        if time.time() - _journal(mnemo).stat().st_mtime > QUIET_S:
            return False
        os.kill(journal.pid, 0)
    except (ProcessLookupError, FileNotFoundError):
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def refuse_another(mnemo: Mnemo, path: Path) -> Unfinished | None:
    """The unfinished import of ``path`` to resume, if any; refused while another file's import
    is unfinished (one at a time: the undo takes out what came after it began) or this one is
    running."""
    journal = read(mnemo)
    if journal is not None and running(mnemo, journal):
        raise ArchiveError(
            f"{journal.name} is being imported already; wait for it to end, or stop it."
        )
    if journal is not None and journal.path != str(path.resolve()):
        raise ArchiveError(
            f"{journal.describe()}. Import it again to finish it, or take out what it brought "
            "(`mnemo import --undo`, or Repair in the window's banner), before importing "
            f"{path.name}."
        )
    if journal is not None and journal.fingerprint not in ("", fingerprint(path)):
        raise ArchiveError(  # resumed with another file, it finished without the rest
            f"{journal.describe()}, and {path.name} has been replaced since by another file. "
            "Take out what that import brought (`mnemo import --undo`, or Repair in the "
            f"window's banner), then import {path.name} anew."
        )
    return journal


FINGERPRINT_BYTES = 2**20  # read from each end of a file for its fingerprint


def fingerprint(path: Path) -> str:
    """What tells an export from another at the same path: each file's name, size, and first
    and last MiB (a folder: each of its files), without reading gigabytes."""
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        size = file.stat().st_size
        digest.update(f"{file.name}\0{size}\0".encode())
        with file.open("rb") as read:
            digest.update(read.read(FINGERPRINT_BYTES))
            if size > FINGERPRINT_BYTES:
                read.seek(max(FINGERPRINT_BYTES, size - FINGERPRINT_BYTES))
                digest.update(read.read(FINGERPRINT_BYTES))
    return digest.hexdigest()[:32]


def begin(mnemo: Mnemo, path: Path) -> tuple[Unfinished, bool]:
    """The journal of an import of ``path``, and whether it resumes one that stopped."""
    journal = refuse_another(mnemo, path)
    resolved = str(path.resolve())
    _RUNNING_HERE.add(resolved)
    if journal is not None:
        journal.pid = os.getpid()
        write(mnemo, journal)
        return journal, True
    with mnemo.database.connect() as connection:
        first_proposal = connection.execute(
            text("SELECT coalesce(max(id), 0) + 1 FROM proposal")
        ).scalar_one()
    journal = Unfinished(
        path=resolved,
        first_message_id=mnemo.recall.latest_id() + 1,
        first_proposal_id=int(first_proposal),
        started_at=time.time(),
        pid=os.getpid(),
        id=uuid.uuid4().hex,
        fingerprint=fingerprint(path),
    )
    write(mnemo, journal)
    return journal, False


def undo(mnemo: Mnemo, journal: Unfinished) -> int:
    """Take out what the import brought, and only that (its batches' ids): return how many
    messages went.

    Vectors go first: were the process killed before the rows, the rows keep their ids (SQLite
    reuses a deleted top id), the journal stays, and the next undo finishes the work."""
    with mnemo.database.connect() as connection:
        brought = [row[0] for row in connection.execute(text(_IN_BATCHES), {"import": journal.id})]
    for ids in chunked(brought, 500):
        mnemo.recall_vectors.delete(f"id IN ({', '.join(str(int(i)) for i in ids)})")
    for source in journal.sources:
        mnemo.archival.delete_by_source(source)
    with writing(mnemo.database).begin() as connection:
        rows = connection.execute(text(_IN_BATCHES), {"import": journal.id}).all()
        first_removed: dict[str, int] = {}
        for message_id, conversation_id in rows:
            first_removed.setdefault(conversation_id, message_id)
        for ids in chunked([row[0] for row in rows], 500):
            listed = ", ".join(str(int(i)) for i in ids)
            connection.execute(text(f"DELETE FROM message WHERE id IN ({listed})"))
        for conversation_id, removed_id in first_removed.items():
            left = connection.execute(
                text("SELECT 1 FROM message WHERE conversation_id = :c LIMIT 1"),
                {"c": conversation_id},
            ).first()
            if left is not None:  # an earlier import's conversation that this one added to
                keyword_text.refresh_around(
                    lambda sql, params: connection.execute(text(sql), params).all(),
                    lambda sql, params: connection.execute(text(sql), params),
                    conversation_id,
                    removed_id,
                )
                continue
            for table, key in (
                ("conversation", "id"),
                ("agent_state", "conversation_id"),
                ("message_sentences_pending", "conversation_id"),
            ):
                connection.execute(
                    text(f"DELETE FROM {table} WHERE {key} = :c"), {"c": conversation_id}
                )
        connection.execute(
            text(
                "DELETE FROM proposal WHERE id >= :first AND cause_kind = 'import' "
                "AND status = 'pending'"
            ),
            {"first": journal.first_proposal_id},
        )
    clear(mnemo)
    return len(rows)


def undo_unfinished(mnemo: Mnemo) -> tuple[str, int] | None:
    """Undo the import that did not end, if there is one: its file's name and the messages
    taken out."""
    journal = read(mnemo)
    if journal is None:
        return None
    if running(mnemo, journal):
        raise ArchiveError(f"{journal.name} is being imported now; stop it to undo it.")
    return journal.name, undo(mnemo, journal)
