"""What a claude.ai export holds beside its conversations: Claude's own memory of the person
(``memories.json``) and the person's projects (``projects.json``).

- A memory is what Claude kept about the person, for the account and for each project, in
  sections ("**Work context**", "**Personal context**", ...). Each section becomes a proposal
  the person reviews like any other: to add it to the human block where it fits, or else to keep
  it as an archival note. Its provenance (Claude, the project, the date) is the proposal's
  reason, so the person sees where it came from.
- A project's documents and instructions go to archival memory, each under
  ``Claude project NAME/FILE``, where search finds them. The projects Anthropic ships as
  examples are left out, and counted.

Both are read whole (they are small beside the conversations), and importing them again adds
nothing: a section already proposed (whatever the person decided) or already in the block is
not proposed again, and a document already in archival memory is not stored again.
"""

from __future__ import annotations

import io
import itertools
import json
import re
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from engine.errors import CoreMemoryError
from engine.exchange.archive import ArchiveError, ImportReport, export_timestamp
from engine.ingest.chunking import chunk_sections
from engine.loaders import Section, text_pieces
from engine.memory.archival import IMPORTED_TAG, NewPassage, Source
from engine.memory.recall.messages import DEFAULT_CONVERSATION
from engine.memory.vectors import quote_sql

if TYPE_CHECKING:
    from engine.mnemo import Mnemo

MEMORIES = "memories.json"
PROJECTS = "projects.json"
EXTRAS = (MEMORIES, PROJECTS)
MAX_EXTRA_BYTES = 256 * 2**20  # read whole: larger is no file claude.ai writes
HUMAN = "human"
# What Claude keeps is a few kilobytes of short sections. Each is one proposal the person reads,
# so a section longer than this is proposed in pieces, and no more than so many are proposed:
# a memory of 30 MB (damaged, or made to flood the panel) became one 31 MB proposal.
MEMORY_CHARS = 4000
MEMORY_PROPOSALS = 100
# A heading line of Claude's memory: "**Work context**", "## Work context", "*Recent months*".
_HEADING = re.compile(r"^\s*(?:#{1,6}\s*|\*{1,2}|__)(?P<title>[^*#_\n][^*\n]*?)(?:\*{1,2}|__)?\s*$")


@dataclass(frozen=True)
class ClaudeMemory:
    text: str
    project: str | None  # the project's name; None for what Claude kept about the account
    when: float | None


def read_extras(path: Path) -> dict[str, bytes]:
    """``memories.json`` and ``projects.json`` of the export at ``path`` (its folder, its zip, or
    the folder of its ``conversations.json``), those that are there."""
    found: dict[str, bytes] = {}
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                name = info.filename.split("/")[-1]
                if name in EXTRAS and name not in found:
                    if info.file_size > MAX_EXTRA_BYTES:
                        raise ArchiveError(f"{name} in {path.name} is too large to be Claude's.")
                    found[name] = archive.read(info)
        return found
    folder = path if path.is_dir() else path.parent
    for name in EXTRAS:
        file = folder / name
        if file.is_file():
            if file.stat().st_size > MAX_EXTRA_BYTES:
                raise ArchiveError(f"{name} is too large to be Claude's.")
            found[name] = file.read_bytes()
    return found


def _json(name: str, data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ArchiveError(f"{name} is damaged and was not read.") from error


def sections(memory: str) -> list[str]:
    """A memory's sections, each "Heading: what it says" on one line; a memory without
    headings is cut at its paragraphs."""
    found: list[str] = []
    heading: str | None = None
    body: list[str] = []

    def close() -> None:
        said = " ".join(" ".join(body).split())
        if said:
            found.append(f"{heading}: {said}" if heading else said)
        body.clear()

    for line in memory.splitlines():
        match = _HEADING.match(line)
        if match:
            close()
            heading = match.group("title").strip().rstrip(":")
        elif not line.strip() and heading is None:
            close()  # no headings: a paragraph is a section
        else:
            body.append(line.strip().lstrip("-• ").strip() if line.strip() else "")
    close()
    return found


def memories(data: Any, projects: dict[str, str], when: float | None) -> list[ClaudeMemory]:
    """Every memory section of ``memories.json``: the account's first, then each project's
    (named from ``projects``, its id where the project is not in the export)."""
    entries = data if isinstance(data, list) else [data]
    found: list[ClaudeMemory] = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        dated = export_timestamp(entry.get("updated_at") or entry.get("created_at")) or when
        account = entry.get("conversations_memory")
        if isinstance(account, str):
            found += [ClaudeMemory(s, None, dated) for s in sections(account)]
        per_project = entry.get("project_memories") or {}
        if isinstance(per_project, list):  # some exports: [{"project_uuid": ..., "memory": ...}]
            per_project = {
                str(item.get("project_uuid") or item.get("uuid") or ""): item.get("memory")
                for item in per_project
                if isinstance(item, dict)
            }
        for project_id, memory in per_project.items() if isinstance(per_project, dict) else ():
            if isinstance(memory, dict):
                memory = memory.get("memory") or memory.get("content")
            if isinstance(memory, str):
                name = projects.get(project_id, project_id)
                found += [ClaudeMemory(s, name, dated) for s in sections(memory)]
    return found


def import_extras(
    mnemo: Mnemo,
    path: Path,
    report: ImportReport,
    wrote_source: Callable[[str], None],
) -> None:
    """Claude's memories as proposals and its projects into archival memory (see the module's
    docstring). ``wrote_source`` hears of each archival source before it is written (the
    import's journal keeps them, so a stopped import can take them out)."""
    extras = read_extras(path)
    if not extras:
        return
    exported = path.stat().st_mtime
    read: dict[str, Any] = {}
    for name, data in extras.items():
        try:
            read[name] = _json(name, data)
        except ArchiveError as error:  # the conversations are still worth having
            report.notes.append(f"{error} The conversations were imported without it.")
    projects = read.get(PROJECTS, [])
    # Claude's projects only: a file of that name some other program left beside the export
    # has another shape, and is not read as one.
    projects = [
        p
        for p in (projects if isinstance(projects, list) else [])
        if isinstance(p, dict) and "uuid" in p and ("docs" in p or "prompt_template" in p)
    ]
    names = {str(p.get("uuid")): str(p.get("name") or "Untitled project") for p in projects}
    if MEMORIES in read:
        _propose(mnemo, memories(read[MEMORIES], names, exported), report)
    for project in projects:
        if project.get("is_starter_project"):
            report.skipped["example projects made by Anthropic"] += 1
            continue
        _store_project(mnemo, project, report, wrote_source)


def _pieces(found: list[ClaudeMemory]) -> Iterator[ClaudeMemory]:
    """Each memory section at most ``MEMORY_CHARS`` long: a longer one in pieces, cut where a
    sentence ends (else at a space, else anywhere)."""
    for memory in found:
        text, at = memory.text, 0
        while len(text) - at > MEMORY_CHARS:
            window = text[at : at + MEMORY_CHARS]
            cut = max(window.rfind(". "), window.rfind("! "), window.rfind("? ")) + 1
            cut = cut if cut > MEMORY_CHARS // 2 else window.rfind(" ")
            cut = cut if cut > MEMORY_CHARS // 2 else MEMORY_CHARS
            yield replace(memory, text=window[:cut].strip())
            at += cut
        if text[at:].strip():
            yield replace(memory, text=text[at:].strip())


def _propose(mnemo: Mnemo, found: list[ClaudeMemory], report: ImportReport) -> None:
    total = sum(len(memory.text) for memory in found)
    found = list(itertools.islice(_pieces(found), MEMORY_PROPOSALS + 1))
    if len(found) > MEMORY_PROPOSALS:
        found = found[:MEMORY_PROPOSALS]
        left = total - sum(len(memory.text) for memory in found)
        report.notes.append(
            f"Claude's memory held far more than Claude keeps: its first {MEMORY_PROPOSALS} "
            f"sections were proposed, and the rest ({left:,} characters) left out; the file "
            "may be damaged."
        )
    with mnemo.database.connect() as connection:
        proposed = {
            row[0]
            for row in connection.execute(
                text("SELECT new_content FROM proposal WHERE cause_kind = 'import'")
            )
        }
    block = {b.label: b.value for b in mnemo.core.blocks()}.get(HUMAN, "")
    with mnemo.recall.transaction() as transaction:
        for memory in found:
            if memory.text in proposed or memory.text in block:
                report.skipped["memories Claude kept"] += 1
                continue
            proposed.add(memory.text)
            day = (
                datetime.fromtimestamp(memory.when, UTC).strftime("%Y-%m-%d")
                if memory.when
                else "no date"
            )
            about = f'of the project "{memory.project}"' if memory.project else "of you"
            reason = f"from Claude's memory {about} (exported {day})"
            where = f"Claude project {memory.project}" if memory.project else "Claude"
            try:
                mnemo.proposals.create_in(
                    transaction.session,
                    conversation_id=DEFAULT_CONVERSATION,
                    label=HUMAN,
                    action="append",
                    new_content=memory.text,
                    cause_kind="import",
                    cause_ref=where,
                    untrusted_reason=reason,
                )
            except CoreMemoryError:  # no room in the block: a note in archival memory
                mnemo.proposals.create_note_in(
                    transaction.session,
                    text=memory.text,
                    client=f"{where}'s memory ({day})",
                    untrusted_reason=reason,
                    cause_kind="import",
                )
            report.added["memories Claude kept, to review"] += 1


def _store_project(
    mnemo: Mnemo,
    project: dict[str, Any],
    report: ImportReport,
    wrote_source: Callable[[str], None],
) -> None:
    name = str(project.get("name") or "Untitled project")
    when = export_timestamp(project.get("created_at"))
    texts: list[tuple[str, str]] = []
    instructions = "\n\n".join(
        str(project.get(key) or "").strip()
        for key in ("description", "prompt_template")
        if str(project.get(key) or "").strip()
    )
    if instructions:
        texts.append(("instructions", instructions))
    for doc in project.get("docs") or []:
        if isinstance(doc, dict) and str(doc.get("content") or "").strip():
            texts.append((str(doc.get("filename") or "document"), str(doc["content"])))
        elif isinstance(doc, dict):
            report.skipped["project documents without text"] += 1
    for filename, body in texts:
        source = f"Claude project {name}/{filename}"
        if mnemo.passage_vectors.count(f"source_path = {quote_sql(source)}"):
            report.skipped["project documents"] += 1
            continue
        wrote_source(source)
        mnemo.archival.insert_many(
            NewPassage(
                chunk.text,
                Source(path=source, section=chunk.section, chunk=chunk.position),
                ("claude", IMPORTED_TAG),
                created_at=when,
                origin="document",
            )
            for chunk in chunk_sections(
                Section(piece, filename) for piece in text_pieces(io.StringIO(body))
            )
        )
        report.added["project documents"] += 1
