"""ChatGPT's and Claude's exports (``conversations.json``, or a split export's
``conversations-000.json``, ``-001`` ..., alone, in their folder or in the zip they come in) into
recall, each conversation a past conversation with its title and times.

- ChatGPT: each conversation is a tree of messages (``mapping``), branching where a reply was
  regenerated or a message edited; the branch shown last (``current_node`` back to the root, or
  the newest leaf's where there is none) is the conversation. Voice mode's transcriptions are
  messages. System messages, tool calls and their output, and messages hidden from the
  conversation (custom instructions) are left out.
- Claude: a list of conversations with their ``chat_messages``; the branch claude.ai shows is the
  last message's chain of parents (edits and retries stay in the list). A message is its
  ``text`` parts: the message's own ``text`` runs the hidden thinking into the answer, and the
  notes the service adds to the person's message (a memory snapshot, the date) are not their
  words.

Recall keeps words: images, audio, attachments, tool output and hidden reasoning are counted in
the report by kind, never dropped without a word. The files are read as a stream, one
conversation at a time (an export of years is gigabytes), and the messages are stored in batches
through the same path as every message (``add_many``), so they are searchable at once. A message
already in recall (same conversation, role, time and text) is not stored twice. An import
stopped or failed halfway takes out what it brought; one killed halfway is resumed or undone
(``engine.exchange.unfinished``). A claude.ai export's memories and projects come in with it
(``engine.exchange.claude_extras``).
"""

from __future__ import annotations

import codecs
import json
import re
import threading
import time
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from sqlalchemy import text

from engine.errors import GenerationCancelled, MnemoError
from engine.exchange import unfinished
from engine.exchange.archive import (
    UNTRUE_TIMES,
    ArchiveError,
    ImportReport,
    Progress,
    export_timestamp,
    import_failed,
    message_keys,
    new_message_key,
)
from engine.exchange.claude_extras import import_extras
from engine.memory.recall.messages import NewMessage
from engine.text import safe_value

if TYPE_CHECKING:
    from engine.mnemo import Mnemo

READ_CHARS = 1 << 20
# How far before the end of what was read a parse error may be the cut's: the longest escape run
# (a surrogate pair, "\ud83d\ude00", 12 characters) and a literal ("false") fit in it.
CUT_REACH = 16
# Messages stored per transaction: each is committed and searchable. Their vectors are made a few
# at a time (``RecallStore.transaction``'s ``between``), so a stop or a reply waits seconds.
BATCH = 256
# The share of an export parsed before its total is estimated: one conversation says little
# about the rest (an estimate from the first one was off by a factor of 50).
ESTIMATE_AFTER = 0.02
HOLD_POLL_S = 0.1  # how often a held import looks whether it may go on


@dataclass
class Conversation:
    id: str
    title: str
    origin: str  # "ChatGPT" or "Claude"
    created_at: float | None
    messages: list[NewMessage] = field(default_factory=list)
    # What the export holds that recall does not take, by kind ("images": 3): said in the
    # report, never dropped without a word.
    left_out: Counter[str] = field(default_factory=Counter)


# -- reading the file as a stream -----------------------------------------------------------------


def iter_json_array(
    stream: IO[bytes],
    name: str,
    read_chars: int = READ_CHARS,
    consumed: Callable[[int], None] | None = None,
) -> Iterator[Any]:
    """The items of a JSON array, parsed one at a time from ``stream``: memory holds one item
    and a little more, whatever the file's size. ``consumed`` hears each item's size in bytes
    (what the parser has used, not what was read ahead: the progress estimate needs that)."""
    decoder = json.JSONDecoder()
    reader = codecs.getreader("utf-8-sig")(stream, "replace")
    buffer, position, ended = "", 0, False

    def more(at_least: int) -> bool:
        nonlocal buffer, position, ended
        buffer, position = buffer[position:], 0
        chunk = reader.read(max(read_chars, at_least))
        ended = not chunk
        buffer += chunk
        return not ended

    def skip(characters: str) -> str | None:
        """The next character that is not one of ``characters`` (reading on), None at the end."""
        nonlocal position
        while True:
            while position < len(buffer) and buffer[position] in characters:
                position += 1
            if position < len(buffer):
                return buffer[position]
            if not more(0):
                return None

    if skip(" \t\r\n") != "[":
        raise ArchiveError(f"{name} is not a conversations export: it does not hold a list.")
    position += 1
    while True:
        first = skip(" \t\r\n,")
        if first is None:
            raise ArchiveError(f"{name} ends before its list does: the file is cut short.")
        if first == "]":
            return
        try:
            item, end = decoder.raw_decode(buffer, position)
        except json.JSONDecodeError as error:
            # Cut off by the end of what was read so far: read more (twice as much each time,
            # so a very large item costs linear time). Anywhere else, the file is damaged. A
            # cut escape fails where it starts ("\ud83d\ude0" is read as an invalid escape
            # 10 characters before the end), so the end is the last ``CUT_REACH`` characters.
            at_end = error.pos >= len(buffer) - CUT_REACH or error.msg.startswith("Unterminated")
            if at_end and not ended and more(len(buffer) - position):
                continue
            raise ArchiveError(
                f"{name} is damaged near character {error.pos}: {error.msg}."
            ) from error
        if consumed is not None:
            consumed(len(buffer[position:end].encode("utf-8", "surrogatepass")))
        yield safe_value(item)  # a lone surrogate (a \ud83d cut from its pair) becomes U+FFFD
        position = end


# ChatGPT's newer exports split the list: conversations-000.json, conversations-001.json, ...
_PART = re.compile(r"conversations(?:-\d+)?\.json")


@dataclass(frozen=True)
class Part:
    """One file of an export, read as a stream: ``open`` gives it, and ``size`` is its bytes."""

    name: str
    size: int
    open: Callable[[], IO[bytes]]


def _reader(path: Path) -> Callable[[], IO[bytes]]:
    return lambda: path.open("rb")


def _member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Callable[[], IO[bytes]]:
    return lambda: archive.open(info)


MANIFEST = "export_manifest.json"  # ChatGPT's of 2026: every file the export holds


def missing_parts(names: list[str], manifest: bytes | None) -> list[str]:
    """The conversation files the export's manifest lists that are not there (a partial
    copy): said in the report, as nothing of them could be imported."""
    if manifest is None:
        return []
    try:
        listed = [str(entry.get("path", "")) for entry in json.loads(manifest)["export_files"]]
    except (ValueError, KeyError, TypeError, AttributeError):
        return []  # a manifest Mnemo cannot read lists nothing it can check
    have = {name.split("/")[-1] for name in names}
    return [name for name in listed if _PART.fullmatch(name.split("/")[-1]) and name not in have]


def export_parts(path: Path) -> tuple[list[Part], Callable[[], None]]:
    """The files of an export in order: ``conversations.json`` or the numbered files of a
    split one, alone, in the folder given, or inside the zip the export came as; and how to
    close what was opened."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if _PART.fullmatch(p.name) and p.is_file())
        parts = [Part(p.name, p.stat().st_size, _reader(p)) for p in files]
        if not parts:
            raise ArchiveError(
                f"{path.name} holds no conversations.json or conversations-000.json; nothing "
                "was imported."
            )
        return parts, lambda: None
    if zipfile.is_zipfile(path):
        archive = zipfile.ZipFile(path)
        members = sorted(
            (info for info in archive.infolist() if _PART.fullmatch(info.filename.split("/")[-1])),
            key=lambda info: info.filename,
        )
        if not members:
            archive.close()
            raise ArchiveError(f"{path.name} holds no conversations.json; nothing was imported.")
        parts = [Part(info.filename, info.file_size, _member(archive, info)) for info in members]
        return parts, archive.close
    return [Part(path.name, path.stat().st_size, _reader(path))], lambda: None


# -- the two formats ------------------------------------------------------------------------------


# ChatGPT's content types and parts, as the report names what is not imported.
_KINDS = {
    "image_asset_pointer": "images",
    "audio_asset_pointer": "audio recordings",
    "real_time_user_audio_video_asset_pointer": "audio recordings",
    "code": "code the assistant ran",
    "execution_output": "tool outputs",
    "tether_browsing_display": "web pages browsed",
    "tether_quote": "quotes from web pages",
    "thoughts": "hidden reasoning",
    "reasoning_recap": "hidden reasoning",
    "user_editable_context": "custom instructions",
    "system_error": "error notices",
}


def _kind(content_type: str) -> str:
    return _KINDS.get(content_type, content_type.replace("_", " ") + " parts")


def chatgpt_conversation(item: dict[str, Any]) -> Conversation:
    conversation_id = str(item.get("conversation_id") or item.get("id") or "")
    left_out: Counter[str] = Counter()
    result = Conversation(
        f"chatgpt:{conversation_id}",
        item.get("title") or "Untitled",
        "ChatGPT",
        export_timestamp(item.get("create_time"), left_out),
    )
    result.left_out.update(left_out)
    mapping: dict[str, Any] = item.get("mapping") or {}
    for message in _shown_branch(mapping, item.get("current_node")):
        role = (message.get("author") or {}).get("role")
        metadata = message.get("metadata") or {}
        content = message.get("content") or {}
        content_type = str(content.get("content_type") or "text")
        if role == "system" or metadata.get("is_visually_hidden_from_conversation"):
            if content_type == "user_editable_context":
                result.left_out[_kind(content_type)] += 1
            continue  # ChatGPT's own set-up, never shown
        if role not in ("user", "assistant"):  # a tool's output, named by what it was
            made = [p for p in content.get("parts") or [] if isinstance(p, dict)]  # images
            kinds = [_kind(str(p.get("content_type") or "unknown")) for p in made]
            result.left_out.update(kinds or [_KINDS.get(content_type, "tool outputs")])
            continue
        if message.get("recipient", "all") != "all":  # a call to a tool
            result.left_out["tool calls"] += 1
            continue
        if content_type not in ("text", "multimodal_text"):
            result.left_out[_kind(content_type)] += 1
            continue
        texts = []
        for part in content.get("parts") or []:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("content_type") == "audio_transcription":
                texts.append(str(part.get("text") or ""))  # voice mode: what was said
            elif isinstance(part, dict):
                result.left_out[_kind(str(part.get("content_type") or "unknown"))] += 1
        attachments = metadata.get("attachments") or []
        result.left_out["attachments"] += len(attachments) if isinstance(attachments, list) else 0
        body = "\n".join(texts).strip()
        if body:
            when = export_timestamp(message.get("create_time"), result.left_out)
            result.messages.append(NewMessage(role, body, when or result.created_at, result.id))
        else:
            result.left_out["messages without text"] += 1
    return result


def _shown_branch(mapping: dict[str, Any], current: Any) -> list[dict[str, Any]]:
    """The messages of the branch ChatGPT shows, oldest first: ``current_node`` back to the
    root; without one (older exports, some shared ones), the newest leaf's."""
    if current not in mapping:
        leaves = [
            node for node in mapping.values() if isinstance(node, dict) and not node.get("children")
        ]

        def created(node: dict[str, Any]) -> float:
            return export_timestamp((node.get("message") or {}).get("create_time")) or 0.0

        current = max(leaves, key=created).get("id") if leaves else None
    branch = []
    seen: set[str] = set()
    while isinstance(current, str) and current in mapping and current not in seen:
        seen.add(current)  # a cycle would never end
        node = mapping[current]
        if isinstance(node.get("message"), dict):
            branch.append(node["message"])
        current = node.get("parent")
    return branch[::-1]


def claude_conversation(item: dict[str, Any]) -> Conversation:
    left_out: Counter[str] = Counter()
    result = Conversation(
        f"claude:{item.get('uuid', '')}",
        item.get("name") or "Untitled",
        "Claude",
        export_timestamp(item.get("created_at"), left_out),
    )
    result.left_out.update(left_out)
    messages = [m for m in item.get("chat_messages") or [] if isinstance(m, dict)]
    shown = _claude_shown_branch(messages)
    on_branch = {id(message) for message in shown}
    result.left_out["messages on branches not shown (edits and retries)"] += sum(
        1 for m in messages if m.get("sender") in _SENDERS and id(m) not in on_branch
    )
    for message in shown:
        role = _SENDERS.get(str(message.get("sender")))
        parts = message.get("content")
        if isinstance(parts, list) and parts:
            # The message is its text parts: its own "text" is a lossy copy that runs the
            # hidden thinking into the answer and puts placeholders where tool output was.
            texts = []
            for part in parts:
                kind = part.get("type") if isinstance(part, dict) else None
                if kind == "text":
                    texts.append(str(part.get("text") or ""))
                elif kind != "token_budget":  # an empty marker, nothing in it
                    result.left_out[_CLAUDE_KINDS.get(str(kind), f"{kind} parts")] += 1
            body = "\n".join(texts)
        else:
            body = str(message.get("text") or "")
        _count_files(message, result.left_out)
        if role and body.strip():
            when = export_timestamp(message.get("created_at"), result.left_out)
            when = when or result.created_at
            result.messages.append(NewMessage(role, body.strip(), when, result.id))
        elif role:
            result.left_out["messages without text"] += 1
    return result


_SENDERS = {"human": "user", "assistant": "assistant"}

# Claude's content parts, as the report names what is not imported.
_CLAUDE_KINDS = {
    "thinking": "hidden reasoning",
    "tool_use": "tool calls and outputs",
    "tool_result": "tool calls and outputs",
    # Text Claude's service added to the person's message (a memory snapshot, the date): not
    # the person's words.
    "injected_prompt_block": "notes the service added to messages",
}


def _claude_shown_branch(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The branch claude.ai shows, oldest first. Edits and retries stay in the list and form a
    tree through ``parent_message_uuid``; the list's last message is the current leaf, so the
    branch is its chain of parents. Older exports have no parents: then the list is the
    conversation."""
    if not messages or not any("parent_message_uuid" in m for m in messages):
        return messages
    by_id = {m.get("uuid"): m for m in messages}
    branch: list[dict[str, Any]] = []
    seen: set[int] = set()
    current: dict[str, Any] | None = messages[-1]
    while current is not None and id(current) not in seen:  # a cycle would never end
        seen.add(id(current))
        branch.append(current)
        current = by_id.get(current.get("parent_message_uuid"))
    return branch[::-1]


def _count_files(message: dict[str, Any], left_out: Counter[str]) -> None:
    """Uploaded text (``attachments``) and file references (``files``), each upload once: an
    attachment is also listed in ``files`` under its name."""
    attachments = [a for a in message.get("attachments") or [] if isinstance(a, dict)]
    files = [f for f in message.get("files") or [] if isinstance(f, dict)]
    attached = Counter(str(a.get("file_name") or "") for a in attachments)
    others = 0
    for reference in files:
        name = str(reference.get("file_name") or "")
        if attached[name] > 0:
            attached[name] -= 1
        else:
            others += 1
    left_out["attachments"] += len(attachments)
    left_out["files"] += others


def read_conversation(item: Any) -> Conversation | None:
    """A conversation of either export, or None when the item is neither."""
    if isinstance(item, dict) and "mapping" in item:
        return chatgpt_conversation(item)
    if isinstance(item, dict) and "chat_messages" in item:
        return claude_conversation(item)
    return None


# -- importing -----------------------------------------------------------------------------------


def import_conversations(
    mnemo: Mnemo,
    path: Path,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    pause: threading.Event | None = None,
    hold: threading.Event | None = None,
) -> ImportReport:
    """Import a ChatGPT or Claude export (see the module's docstring). It ends whole or not at
    all: stopped by ``cancel`` or an error, what it brought is taken out again; ``pause`` (the
    window closing) or a kill leaves it to be finished by importing the same file again, or
    undone (``unfinished``). While ``hold`` is set (a reply being written) it waits before its
    next few vectors: both need the same cores (a reply took 50 s instead of 3)."""
    if not path.exists():
        raise ArchiveError(f"There is no file {path}.")
    parts, close = export_parts(path)
    journal: unfinished.Unfinished | None = None
    try:
        journal, resumed = unfinished.begin(mnemo, path)
        report = ImportReport()
        if resumed:
            report.notes.append(
                f"{journal.describe()}; it was resumed, and what was in already was kept."
            )
        else:
            snapshot = mnemo.snapshot_before(f"importing {path.name}")
            journal.snapshot = snapshot.id if snapshot else None
            if snapshot is not None:  # until it ends: a forget rewrites it, never deletes it
                mnemo.snapshots.need(snapshot.id, f"importing {path.name}")
            unfinished.write(mnemo, journal)
        report.snapshot = journal.snapshot
        missing = missing_parts([part.name for part in parts], _manifest(path))
        if missing:
            report.notes.append(
                "Not in this copy of the export, though its manifest lists them: "
                f"{', '.join(missing)}."
            )

        def wrote_source(source: str) -> None:
            journal.sources.append(source)
            unfinished.write(mnemo, journal)

        try:
            import_extras(mnemo, path, report, wrote_source)
            stop = [event for event in (cancel, pause) if event is not None]
            _import(mnemo, parts, report, progress or (lambda *_a: None), stop, journal, hold)
        except GenerationCancelled as error:
            if pause is not None and pause.is_set() and not (cancel and cancel.is_set()):
                raise MnemoError(
                    f"The import of {path.name} was paused with {journal.stored:,} messages in; "
                    "importing it again finishes it."
                ) from error
            removed = unfinished.undo(mnemo, journal)
            raise MnemoError(
                f"The import of {path.name} was stopped, and the {removed:,} messages it had "
                "brought were taken out again; nothing else was changed."
            ) from error
        except Exception as error:
            unfinished.undo(mnemo, journal)
            raise import_failed(path.name, error) from error
        unfinished.clear(mnemo)
        return report
    finally:
        if journal is not None:
            unfinished.ended(journal)
        close()


def _import(
    mnemo: Mnemo,
    parts: list[Part],
    report: ImportReport,
    progress: Progress,
    stop: list[threading.Event],
    journal: unfinished.Unfinished,
    hold: threading.Event | None = None,
) -> None:
    known = message_keys(mnemo)
    titles: dict[str, tuple[str, str, float | None]] = {}
    batch: list[NewMessage] = []
    origins: set[str] = set()
    left_out: Counter[str] = Counter()
    size = sum(part.size for part in parts)
    read = _Read()

    def stopped() -> None:
        if any(event.is_set() for event in stop):
            raise GenerationCancelled()

    def between() -> None:
        """Before each few messages' vectors: a reply being written goes first (``hold``, or
        a turn in another program on this profile), and Stop or the window closing stop
        here."""
        while hold is not None and hold.is_set():
            stopped()
            time.sleep(HOLD_POLL_S)
        mnemo.profile.wait_for_turns(lambda: any(event.is_set() for event in stop))
        stopped()

    def store() -> None:
        between()
        written = None
        try:
            with mnemo.recall.transaction(embed_failure_raises=True, between=between) as written:
                unfinished.record_batch(written.session, journal, written.add_many(batch))
                for conversation_id, (title, origin, created_at) in titles.items():
                    written.session.execute(
                        text(
                            "INSERT INTO conversation (id, title, origin, created_at) "
                            "VALUES (:id, :title, :origin, :created_at) ON CONFLICT DO NOTHING"
                        ),
                        {
                            "id": conversation_id,
                            "title": title,
                            "origin": origin,
                            "created_at": created_at,
                        },
                    )
        finally:
            # Counted once committed, also when a stop comes while their vectors are made:
            # the journal says how many are in (the next open embeds the rest).
            if written is not None and written.committed:
                report.added["messages"] += len(batch)
                journal.stored += len(batch)
                unfinished.write(mnemo, journal)
                batch.clear()
                titles.clear()

    def seen() -> int:
        return report.added["messages"] + report.skipped["messages"] + len(batch)

    def estimated_total() -> int:
        """The total is not known ahead: it is estimated from the share of the bytes parsed,
        once that share is big enough to say something (0 until then: not known yet)."""
        if read.bytes < size * ESTIMATE_AFTER:
            return 0
        return max(round(seen() * size / read.bytes), seen() + 1)

    for part, item in _items(parts, read):
        stopped()
        conversation = read_conversation(item)
        if conversation is None:
            raise ArchiveError(
                f"{part} is neither a ChatGPT nor a Claude export; nothing was imported."
            )
        origins.add(conversation.origin)
        left_out.update(conversation.left_out)
        new = 0
        for message in conversation.messages:
            key = new_message_key(message)
            if key in known:
                report.skipped["messages"] += 1
                continue
            known.add(key)
            batch.append(message)
            new += 1
        if not conversation.messages:
            left_out["conversations without a message with text"] += 1
        if new:
            report.added["conversations"] += 1
            titles[conversation.id] = (
                conversation.title,
                conversation.origin,
                conversation.created_at,
            )
        # The first conversation on its own, so that search finds it at once; then batches.
        if len(batch) >= BATCH or (batch and not report.added["messages"]):
            store()
            progress("messages", seen(), estimated_total())
    if batch or titles:
        store()
    progress("messages", seen(), seen())
    if origins:
        files = f" in {len(parts)} files" if len(parts) > 1 else ""
        report.notes.insert(
            0, f"From {' and '.join(sorted(origins))}; {size / 2**20:.1f} MB read{files}."
        )
    untrue = left_out.pop(UNTRUE_TIMES, 0)
    if untrue:
        report.notes.append(
            f"{untrue} {UNTRUE_TIMES}: their messages carry their conversation's time, or the "
            "import's."
        )
    kinds = [(count, kind) for kind, count in sorted(left_out.items()) if count]
    if kinds:
        listed = ", ".join(f"{count} {kind}" for count, kind in kinds)
        report.notes.append(f"Not imported: {listed}.")


def _manifest(path: Path) -> bytes | None:
    """The export's manifest, beside its files or in its zip; None when there is none."""
    try:
        if path.is_dir():
            return (path / MANIFEST).read_bytes() if (path / MANIFEST).is_file() else None
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                found = [i for i in archive.infolist() if i.filename.split("/")[-1] == MANIFEST]
                if not found or found[0].file_size > 2**20:  # none, or no manifest's size
                    return None
                return archive.read(found[0])
    except OSError:
        return None
    return None


class _Read:
    """The bytes of the export's items parsed so far (the progress's estimate of the total)."""

    def __init__(self) -> None:
        self.bytes = 0

    def add(self, size: int) -> None:
        self.bytes += size


def _items(parts: list[Part], read: _Read) -> Iterator[tuple[str, Any]]:
    """Every conversation of every file of the export, in order, each file read as a stream."""
    for part in parts:
        with part.open() as stream:
            for item in iter_json_array(stream, part.name, consumed=read.add):
                yield part.name, item
