"""ChatGPT's and Claude's exports (``conversations.json``, alone or in the zip they come in) into
recall, each conversation a past conversation with its title and times.

- ChatGPT: each conversation is a tree of messages (``mapping``), branching where a reply was
  regenerated or a message edited; the branch shown last (``current_node`` back to the root) is
  the conversation. System messages, tool messages, the assistant's calls to tools and messages
  hidden from the conversation are left out.
- Claude: a list of conversations with their ``chat_messages`` in order.

The file is read as a stream, one conversation at a time (an export of years is gigabytes), and
the messages are stored in batches through the same path as every message (``add_many``), so they
are searchable at once. A message already in recall (same conversation, role, time and text) is
not stored twice; a snapshot is taken first and restored if anything fails.
"""

from __future__ import annotations

import codecs
import json
import threading
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from sqlalchemy import text

from engine.errors import GenerationCancelled, MnemoError
from engine.exchange.archive import (
    ArchiveError,
    ImportReport,
    Progress,
    import_failed,
    message_keys,
    new_message_key,
)
from engine.memory.messages import NewMessage
from engine.text import safe_value

if TYPE_CHECKING:
    from engine.mnemo import Mnemo

READ_CHARS = 1 << 20
BATCH = 2000  # messages stored per transaction


@dataclass
class Conversation:
    id: str
    title: str
    origin: str  # "ChatGPT" or "Claude"
    created_at: float | None
    messages: list[NewMessage] = field(default_factory=list)


# -- reading the file as a stream -----------------------------------------------------------------


def iter_json_array(stream: IO[bytes], name: str, read_chars: int = READ_CHARS) -> Iterator[Any]:
    """The items of a JSON array, parsed one at a time from ``stream``: memory holds one item
    and a little more, whatever the file's size."""
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
            # so a very large item costs linear time). Anywhere else, the file is damaged.
            at_end = error.pos >= len(buffer) - 1 or error.msg.startswith("Unterminated")
            if at_end and not ended and more(len(buffer) - position):
                continue
            raise ArchiveError(
                f"{name} is damaged near character {error.pos}: {error.msg}."
            ) from error
        yield safe_value(item)  # a lone surrogate (a \ud83d cut from its pair) becomes U+FFFD
        position = end


def open_conversations(path: Path) -> tuple[IO[bytes], Callable[[], None]]:
    """``conversations.json``, alone or inside the zip the export came as; and how to close."""
    if zipfile.is_zipfile(path):
        archive = zipfile.ZipFile(path)
        member = next(
            (n for n in archive.namelist() if n.rsplit("/", 1)[-1] == "conversations.json"), None
        )
        if member is None:
            archive.close()
            raise ArchiveError(f"{path.name} holds no conversations.json; nothing was imported.")
        stream = archive.open(member)

        def close() -> None:
            stream.close()
            archive.close()

        return stream, close
    stream = path.open("rb")
    return stream, stream.close


# -- the two formats ------------------------------------------------------------------------------


def chatgpt_conversation(item: dict[str, Any]) -> Conversation:
    conversation_id = str(item.get("conversation_id") or item.get("id") or "")
    result = Conversation(
        f"chatgpt:{conversation_id}",
        item.get("title") or "Untitled",
        "ChatGPT",
        item.get("create_time"),
    )
    mapping: dict[str, Any] = item.get("mapping") or {}
    node_id = item.get("current_node")
    branch = []
    seen: set[str] = set()
    while node_id and node_id in mapping and node_id not in seen:  # a cycle would never end
        seen.add(node_id)
        node = mapping[node_id]
        branch.append(node.get("message"))
        node_id = node.get("parent")
    for message in reversed(branch):
        if not message:
            continue
        role = (message.get("author") or {}).get("role")
        metadata = message.get("metadata") or {}
        if (
            role not in ("user", "assistant")
            or metadata.get("is_visually_hidden_from_conversation")
            or message.get("recipient", "all") != "all"  # a call to a tool
        ):
            continue
        content = message.get("content") or {}
        parts = content.get("parts") or (
            [content["text"]] if isinstance(content.get("text"), str) else []
        )
        body = "\n".join(part for part in parts if isinstance(part, str)).strip()
        if body:
            when = message.get("create_time") or result.created_at
            result.messages.append(NewMessage(role, body, when, result.id))
    return result


def claude_conversation(item: dict[str, Any]) -> Conversation:
    result = Conversation(
        f"claude:{item.get('uuid', '')}",
        item.get("name") or "Untitled",
        "Claude",
        _timestamp(item.get("created_at")),
    )
    for message in item.get("chat_messages") or []:
        role = {"human": "user", "assistant": "assistant"}.get(message.get("sender"))
        body = message.get("text") or "\n".join(
            part.get("text", "")
            for part in message.get("content") or []
            if isinstance(part, dict) and part.get("type") == "text"
        )
        if role and body.strip():
            when = _timestamp(message.get("created_at")) or result.created_at
            result.messages.append(NewMessage(role, body.strip(), when, result.id))
    return result


def _timestamp(value: Any) -> float | None:
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


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
) -> ImportReport:
    """Import a ChatGPT or Claude export (see the module's docstring); all of it or nothing."""
    if not path.is_file():
        raise ArchiveError(f"There is no file {path}.")
    report = ImportReport()
    snapshot = mnemo.snapshot_before(f"importing {path.name}")
    report.snapshot = snapshot.id if snapshot else None
    stream, close = open_conversations(path)
    size = path.stat().st_size
    try:
        _import(mnemo, stream, path.name, report, size, progress or (lambda *_a: None), cancel)
    except Exception as error:
        if snapshot is not None:
            mnemo.snapshots.restore(snapshot.id, keep_current=False)
        if isinstance(error, GenerationCancelled):
            raise MnemoError(
                f"The import of {path.name} was stopped; nothing was changed."
            ) from error
        raise import_failed(path.name, error) from error
    finally:
        close()
    return report


def _import(
    mnemo: Mnemo,
    stream: IO[bytes],
    name: str,
    report: ImportReport,
    size: int,
    progress: Progress,
    cancel: threading.Event | None,
) -> None:
    known = message_keys(mnemo)
    titles: dict[str, tuple[str, str, float | None]] = {}
    batch: list[NewMessage] = []
    origins: set[str] = set()

    def store() -> None:
        if cancel is not None and cancel.is_set():
            raise GenerationCancelled()
        with mnemo.recall.transaction(embed_failure_raises=True) as transaction:
            transaction.add_many(batch)
            for conversation_id, (title, origin, created_at) in titles.items():
                transaction.session.execute(
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
        report.added["messages"] += len(batch)
        batch.clear()
        titles.clear()

    for item in iter_json_array(stream, name):
        conversation = read_conversation(item)
        if conversation is None:
            raise ArchiveError(
                f"{name} is neither a ChatGPT nor a Claude export; nothing was imported."
            )
        origins.add(conversation.origin)
        new = 0
        for message in conversation.messages:
            key = new_message_key(message)
            if key in known:
                report.skipped["messages"] += 1
                continue
            known.add(key)
            batch.append(message)
            new += 1
        if new:
            report.added["conversations"] += 1
            titles[conversation.id] = (
                conversation.title,
                conversation.origin,
                conversation.created_at,
            )
        if len(batch) >= BATCH:
            store()
            progress("messages", report.added["messages"], 0)
    if batch or titles:
        store()
    progress("messages", report.added["messages"], report.added["messages"])
    if origins:
        report.notes.insert(0, f"From {' and '.join(sorted(origins))}; {size / 2**20:.1f} MB read.")
