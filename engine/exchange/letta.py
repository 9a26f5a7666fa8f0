"""Letta's Agent File (``.af``): an agent's memory blocks and messages, in and out.

The mapping (also in docs/user-guide.md):
- the agent's memory blocks (``block_ids`` into ``blocks``) become core blocks: label, value,
  limit, description, read-only;
- ``messages``, in their order and with their ``created_at``, become recall messages: a user
  message's text (or the ``message`` of MemGPT's ``{"type": "user_message"}`` JSON), and an
  assistant's ``send_message`` call or its plain text;
- the agent's ``name`` becomes the conversation's title;
- left out: the system prompt, heartbeats and login notices, inner thoughts, other tool calls
  and their results (Mnemo has its own prompt and memory functions), and the file's ``tools``,
  ``tool_rules``, ``mcp_servers``, ``files``, ``sources`` and ``groups``, one report line each.

Exporting writes one agent with the core blocks and the conversation's user and assistant
messages, in the field set of Letta's ``AgentFileSchema`` (``letta/schemas/agent_file.py``); Letta's
archival memory is not part of the format, so passages stay in Mnemo's own archive.
"""

from __future__ import annotations

import io
import json
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from engine.errors import CoreMemoryError
from engine.exchange.archive import (
    ArchiveError,
    ImportReport,
    import_failed,
    message_keys,
    new_message_key,
    waiting_proposals,
)
from engine.ingest.chunking import chunk_sections
from engine.loaders import Section, text_pieces
from engine.memory.archival import IMPORTED_TAG, NewPassage, Source
from engine.memory.core import DEFAULT_CHAR_LIMIT, MAX_CHAR_LIMIT
from engine.memory.recall import DEFAULT_CONVERSATION
from engine.memory.recall.messages import NewMessage
from engine.memory.search import from_timestamp
from engine.resources import resource_path
from engine.settings import BUNDLED_MODEL

if TYPE_CHECKING:
    from engine.mnemo import Mnemo

SKIPPED_USER_TYPES = {"heartbeat", "system_alert", "login"}


def _text(content: Any) -> str:
    """A message's text: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and part.get("type", "text") == "text"
        )
    return ""


def _timestamp(value: Any) -> float | None:
    if isinstance(value, str) and value:
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()
    return None


LEGACY = "Letta's earlier Agent File format (one agent, its blocks under core_memory)"


def read_agent_file(path: Path) -> dict[str, Any]:
    """The file as Letta's current format: ``agents`` and ``blocks``. JSON encoded twice (as
    Letta's own export sometimes writes it) is read again, as Letta's import does; the earlier
    one-agent format is read into the same shape and marked ``legacy``."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        for _ in range(2):
            if isinstance(data, str):
                data = json.loads(data)
    except FileNotFoundError as error:
        raise ArchiveError(f"There is no file {path}.") from error
    except (OSError, ValueError) as error:
        raise ArchiveError(f"{path.name} is not a readable Agent File ({error}).") from error
    except RecursionError as error:  # brackets nested thousands deep
        raise ArchiveError(
            f"{path.name} is not a readable Agent File (it nests too deep to be JSON of an agent)."
        ) from error
    if isinstance(data, dict) and "agents" not in data and "core_memory" in data:
        agent = {**data, "memory_blocks": data.get("core_memory") or []}
        return {"agents": [agent], "blocks": [], "legacy": True, **_extras(data)}
    if not isinstance(data, dict) or not isinstance(data.get("agents"), list) or not data["agents"]:
        raise ArchiveError(f"{path.name} is not a Letta Agent File: it holds no agent.")
    return data


def _extras(legacy: dict[str, Any]) -> dict[str, Any]:
    """What the earlier format kept inside the agent and the current one beside it."""
    return {key: legacy[key] for key in ("tools",) if isinstance(legacy.get(key), list)}


# Parts Letta Code puts into the user's message for its model: reminders, not the person's words.
INJECTED = re.compile(r"<(system-reminder|system-alert)>.*?</\1>", re.DOTALL)


@dataclass
class AgentMessages:
    """An agent's conversation as Mnemo messages, and what was left out of it."""

    messages: list[NewMessage] = field(default_factory=list)
    left_out: int = 0  # system prompt, heartbeats, tool calls and results
    injected: int = 0  # system reminders taken out of the person's messages


def agent_messages(agent: dict[str, Any], conversation_id: str) -> AgentMessages:
    found = AgentMessages()
    for message in agent.get("messages") or []:
        role, when = message.get("role"), _timestamp(message.get("created_at"))
        body = _text(message.get("content")).strip()
        injected = 0
        if role == "user":
            body, injected = INJECTED.subn("", body)
            found.injected += injected
            body = body.strip()
            wrapped = _json_object(body)
            if wrapped is not None and "type" in wrapped:
                if wrapped["type"] in SKIPPED_USER_TYPES:
                    found.left_out += 1
                    continue
                body = str(wrapped.get("message", "")).strip()
        elif role == "assistant":
            calls = message.get("tool_calls") or []
            if calls:
                replies = [
                    str(
                        (_json_object(call["function"].get("arguments") or "") or {}).get(
                            "message", ""
                        )
                    )
                    for call in calls
                    if isinstance(call, dict)
                    and isinstance(call.get("function"), dict)
                    and call["function"].get("name") == "send_message"
                ]
                body = "\n".join(reply for reply in replies if reply).strip()
        else:  # system prompt, tool results
            found.left_out += 1
            continue
        if body:
            found.messages.append(NewMessage(role, body, when, conversation_id))
        elif not injected:  # a message of reminders alone is counted as those
            found.left_out += 1
    return found


def _json_object(text_: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text_)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def import_agent_file(mnemo: Mnemo, path: Path) -> ImportReport:
    """Import the first agent of an Agent File (see the module's docstring)."""
    data = read_agent_file(path)
    agent = data["agents"][0]
    report = ImportReport()
    snapshot = mnemo.snapshot_before(f"importing {path.name}")
    report.snapshot = snapshot.id if snapshot else None
    name = str(agent.get("name") or "Letta agent")
    fresh = mnemo.recall.count() == 0
    with mnemo.database.connect() as connection:  # imported before: the same conversation
        earlier = connection.execute(
            text("SELECT id FROM conversation WHERE origin = 'Letta' AND title = :name"),
            {"name": name},
        ).scalar()
    conversation_id = earlier or (
        DEFAULT_CONVERSATION if fresh else f"letta:{agent.get('id', name)}"
    )
    with mnemo.snapshots.needed(report.snapshot, f"importing {path.name}"):
        try:
            _import_blocks(mnemo, data, agent, fresh, report, path.name)
            conversation = agent_messages(agent, conversation_id)
            known = message_keys(mnemo)
            new = []
            for message in conversation.messages:
                key = new_message_key(message)
                if key in known:
                    report.skipped["messages"] += 1
                else:
                    known.add(key)
                    new.append(message)
            with mnemo.recall.transaction(embed_failure_raises=True) as transaction:
                transaction.add_many(new)
                transaction.session.execute(
                    text(
                        "INSERT INTO conversation (id, title, origin, created_at) "
                        "VALUES (:id, :title, 'Letta', :created_at) ON CONFLICT DO NOTHING"
                    ),
                    {"id": conversation_id, "title": name, "created_at": time.time()},
                )
            report.added["messages"] += len(new)
        except Exception as error:
            if snapshot is not None:
                mnemo.snapshots.restore(snapshot.id, keep_current=False)
            raise import_failed(path.name, error) from error
    if data.get("legacy"):
        report.notes.insert(0, f"{path.name} is in {LEGACY}; it was read as such.")
    if conversation.left_out:
        report.notes.append(
            f"{conversation.left_out} messages were left out: the system prompt, heartbeats, "
            "tool calls and their results (Mnemo has its own memory functions)."
        )
    if conversation.injected:
        report.notes.append(
            f"{conversation.injected} system reminders were taken out of your messages: Letta "
            "Code adds them for its model, and they are not your words."
        )
    for key, what in (
        ("tools", "tools"),
        ("mcp_servers", "MCP servers"),
        ("files", "files"),
        ("sources", "sources"),
        ("groups", "groups"),
    ):
        items = data.get(key) or []
        if items:
            names = ", ".join(
                str(i.get("name") or i.get("server_name") or i.get("id")) for i in items[:8]
            )
            report.notes.append(f"Not imported: {len(items)} {what} ({names}).")
    if agent.get("tool_rules"):
        report.notes.append(f"Not imported: {len(agent['tool_rules'])} tool rules.")
    if len(data["agents"]) > 1:
        report.notes.append(
            f"The file holds {len(data['agents'])} agents; the first, {name}, was imported."
        )
    return report


def _import_blocks(
    mnemo: Mnemo,
    data: dict[str, Any],
    agent: dict[str, Any],
    fresh: bool,
    report: ImportReport,
    path_name: str,
) -> None:
    """Each block of the agent, on its own, with its label (a path stays a path), value,
    limit and description: one that cannot be taken (a name Mnemo refuses) is reported by name
    and the rest go on. In a profile in use, a new or changed block waits for the person as a
    proposal. A block longer than any core block may be is kept whole in archival memory."""
    blocks = {block.get("id"): block for block in data.get("blocks") or []}
    chosen = [blocks[i] for i in agent.get("block_ids") or [] if i in blocks]
    chosen += agent.get("memory_blocks") or []
    current = {block.label: block for block in mnemo.core.blocks()}
    waiting = waiting_proposals(mnemo)  # imported again: a block waiting is not proposed twice
    untrusted = f"from the Agent File {path_name}"
    for block in chosen:
        if not isinstance(block, dict):
            continue
        label, value = str(block.get("label") or ""), str(block.get("value") or "")
        description = str(block.get("description") or "")
        if not label:
            continue
        if (label, value) in waiting:
            report.skipped["core block proposals"] += 1
            continue
        try:
            if len(value) > MAX_CHAR_LIMIT:
                _keep_in_archival(mnemo, label, value, path_name)
                report.added["blocks kept in archival memory"] += 1
                report.notes.append(
                    f"The block {label[:60]!r} holds {len(value):,} characters, more than a "
                    f"core block may ({MAX_CHAR_LIMIT:,}, as every block is in every prompt); "
                    "it was kept in archival memory, where search finds it."
                )
                continue
            # The file's limit, raised to the text where the file let the text outgrow it.
            limit = min(max(_limit(block.get("limit")), len(value)), MAX_CHAR_LIMIT)
            if _limit(block.get("limit")) > MAX_CHAR_LIMIT:
                report.notes.append(
                    f"The block {label[:60]!r} may hold {_limit(block.get('limit')):,} "
                    f"characters in its file; a core block holds at most {MAX_CHAR_LIMIT:,} "
                    "here, so that is its limit."
                )
            if label not in current and fresh:
                mnemo.core.add_block(
                    label,
                    value,
                    description=description,
                    char_limit=limit,
                    read_only=bool(block.get("read_only")),
                )
                report.added["core blocks"] += 1
            elif label not in current:  # a block in every prompt: the person's to accept
                with mnemo.recall.transaction() as transaction:
                    mnemo.proposals.create_block_in(
                        transaction.session,
                        label=label,
                        value=value,
                        description=description,
                        char_limit=limit,
                        read_only=bool(block.get("read_only")),
                        untrusted_reason=untrusted,
                    )
                report.added["core block proposals"] += 1
            elif current[label].value.strip() == value.strip():
                report.skipped["core blocks"] += 1
            elif fresh:  # the new profile's default block gives way, settings and all
                mnemo.core.configure(
                    label,
                    description=description or None,
                    char_limit=max(limit, DEFAULT_CHAR_LIMIT),
                )
                mnemo.core.set(label, value)
                report.added["core blocks"] += 1
            else:
                with mnemo.recall.transaction() as transaction:
                    mnemo.proposals.create_in(
                        transaction.session,
                        conversation_id=DEFAULT_CONVERSATION,
                        label=label,
                        action="replace",
                        new_content=value,
                        old_content=current[label].value,
                        cause_kind="import",
                        untrusted_reason=untrusted,
                    )
                report.added["core block proposals"] += 1
        except CoreMemoryError as error:
            report.notes.append(f"The block {label[:60]!r} was not imported: {error}")
            report.skipped["core blocks"] += 1


def _limit(value: Any) -> int:
    """A block's limit as the file gives it (Letta writes a number; anything else: ours)."""
    try:
        return max(1, int(value))
    except (TypeError, ValueError, OverflowError):
        return DEFAULT_CHAR_LIMIT


def _keep_in_archival(mnemo: Mnemo, label: str, value: str, path_name: str) -> None:
    """A block too long for core memory, as passages of archival memory (read from a file:
    untrusted, as every import)."""
    mnemo.archival.insert_many(
        NewPassage(
            chunk.text,
            Source(path=path_name, section=f"block {label}", chunk=chunk.position),
            ("letta", IMPORTED_TAG),
            origin="document",
        )
        for chunk in chunk_sections(
            Section(piece, f"block {label}") for piece in text_pieces(io.StringIO(value))
        )
    )


def export_agent_file(mnemo: Mnemo, path: Path, conversation_id: str = DEFAULT_CONVERSATION) -> int:
    """Write the core blocks and one conversation as a Letta Agent File; returns the message
    count."""
    blocks = mnemo.core.blocks()
    block_items: list[dict[str, Any]] = [
        {
            "id": f"block-{i}",
            "label": block.label,
            "value": block.value,
            "limit": block.char_limit,
            "description": block.description,
            "read_only": block.read_only,
            "metadata": {},
            "is_template": False,
            "template_name": None,
            "preserve_on_migration": False,
        }
        for i, block in enumerate(blocks)
    ]
    with mnemo.database.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT role, text, created_at FROM message WHERE conversation_id = :c "
                "AND role IN ('user', 'assistant') ORDER BY id"
            ),
            {"c": conversation_id},
        ).all()
    system = resource_path("prompts/system.txt").read_text(encoding="utf-8")
    messages = [_message("message-0", "system", system, time.time())]
    messages[0]["created_at"] = _iso(rows[0][2] if rows else time.time())
    for role, body, created_at in rows:
        number = len(messages)
        if role == "user":
            messages.append(_message(f"message-{number}", "user", body, created_at))
            continue
        # Letta's agents reply by calling send_message, and each call has its result.
        call_id = f"call-{number}"
        reply = _message(f"message-{number}", "assistant", "", created_at)
        reply["content"] = []
        reply["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": "send_message",
                    "arguments": json.dumps({"message": body}, ensure_ascii=False),
                },
            }
        ]
        result = json.dumps({"status": "OK", "message": "None", "time": _iso(created_at)})
        done = _message(f"message-{number + 1}", "tool", result, created_at)
        done.update(name="send_message", tool_call_id=call_id)
        messages += [reply, done]
    agent = {
        "id": "agent-0",
        "name": mnemo.profile.root.name,
        "description": "Exported from Mnemo",
        "system": system,
        "agent_type": "memgpt_agent",
        "llm_config": _llm_config(mnemo),
        "embedding_config": {
            # Letta embeds again with its own model on import; this names Mnemo's.
            "embedding_endpoint_type": "hugging-face",
            "embedding_endpoint": None,
            "embedding_model": "sentence-transformers/all-MiniLM-L6-v2",
            "embedding_dim": mnemo.embedder.dim,
            "embedding_chunk_size": 300,
        },
        "memory_blocks": [],
        "block_ids": [block["id"] for block in block_items],
        "tools": [],
        "tool_ids": [],
        "source_ids": [],
        "tool_rules": [],
        "tags": [],
        "metadata": {},
        "include_base_tools": True,
        "messages": messages,
        # The system message first, as Letta's agents assume, then the newest exchanges.
        "in_context_message_ids": ["message-0"] + [m["id"] for m in messages[1:][-40:]],
        "files_agents": [],
        "group_ids": [],
        "timezone": "UTC",
    }
    document = {
        "agents": [agent],
        "groups": [],
        "blocks": block_items,
        "files": [],
        "sources": [],
        "tools": [],
        "mcp_servers": [],
        "metadata": {"exported_by": "Mnemo"},
        "created_at": datetime.now(UTC).isoformat(),
    }
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(document, indent=2, ensure_ascii=False), encoding="utf-8")
    partial.replace(path)
    return len(rows)


def _iso(timestamp: float) -> str:
    return from_timestamp(timestamp).astimezone(UTC).isoformat()


def _message(message_id: str, role: str, body: str, created_at: float) -> dict[str, Any]:
    return {
        "id": message_id,
        "role": role,
        "content": [{"type": "text", "text": body}],
        "name": None,
        "tool_calls": None,
        "tool_call_id": None,
        "created_at": _iso(created_at),
    }


def _llm_config(mnemo: Mnemo) -> dict[str, Any]:
    """The model in use, as Letta names one. A local GGUF becomes the model of a llama.cpp
    server, reached through its OpenAI-compatible API at `llama-server`'s default address:
    Letta has no in-process models, and its import (0.16.8) refuses an agent whose endpoint
    type it has no model settings for, ``llamacpp`` among them."""
    settings = mnemo.settings
    backend = str(settings.get("model.backend"))
    context = int(settings.get("model.context_length"))
    if backend == "local":
        gguf = str(settings.get("model.path")) or BUNDLED_MODEL
        return {
            "model": Path(gguf).name,
            "model_endpoint_type": "openai",
            "model_endpoint": "http://localhost:8080/v1",
            "context_window": context,
        }
    endpoints = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com/v1"}
    return {
        "model": str(settings.get("model.name")) or backend,
        "model_endpoint_type": backend,
        "model_endpoint": str(settings.get("model.base_url")) or endpoints[backend],
        "context_window": context,
    }
