"""Real ChatGPT and Claude exports through Mnemo's importer: is every visible message kept?

Give it exports that the services wrote: ``conversations.json`` files, zips, or single
conversations as some tools save them (one JSON object each). Every file goes into a fresh
profile. A message counts as visible when the service showed it: on the branch ChatGPT shows
(``current_node`` back to the root) or Claude shows (the last message back to the root), said
by the person or the assistant (not a tool, not a call to one), not hidden, with words in it.
One JSON line per file: its conversations, the visible messages, how many of them were stored
word for word, and what the report says was left out.

The files are imported as the service wrote them (a split export by its folder, with its
manifest). Run on the real files beside the checkout:

    uv run python tests/benchmarks/chat_export_files.py ../shared/data/real/chatgpt_2026 \
        ../shared/data/real/claude/claude_example.json
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import emit

from engine import Mnemo
from engine.embed import default_embedder
from engine.exchange import import_file


def chatgpt_visible(item: dict[str, Any]) -> list[str]:
    mapping = item.get("mapping") or {}
    current, branch = item.get("current_node"), []
    while current in mapping:
        branch.append(mapping[current].get("message") or {})
        current = mapping[current].get("parent")
    said = []
    for message in reversed(branch):
        content = message.get("content") or {}
        if (
            (message.get("author") or {}).get("role") in ("user", "assistant")
            and message.get("recipient", "all") == "all"
            and not (message.get("metadata") or {}).get("is_visually_hidden_from_conversation")
            and content.get("content_type") in ("text", "multimodal_text")
        ):
            words = [
                p if isinstance(p, str) else str(p.get("text") or "")
                for p in content.get("parts") or []
                if isinstance(p, str) or p.get("content_type") == "audio_transcription"
            ]
            said.append("\n".join(words).strip())
    return [text for text in said if text]


def claude_visible(item: dict[str, Any]) -> list[str]:
    messages = item.get("chat_messages") or []
    if any("parent_message_uuid" in message for message in messages):  # the last one's branch
        by_id = {message.get("uuid"): message for message in messages}
        branch, current = [], messages[-1]
        while current is not None and len(branch) <= len(messages):
            branch.append(current)
            current = by_id.get(current.get("parent_message_uuid"))
        messages = branch[::-1]
    said = []
    for message in messages:
        parts = message.get("content")
        if isinstance(parts, list) and parts:
            text = "\n".join(str(p.get("text") or "") for p in parts if p.get("type") == "text")
        else:
            text = str(message.get("text") or "")
        said.append(text.strip())
    return [text for text in said if text]


EXPORT_FILE = re.compile(r"conversations(?:-\d+)?\.json")


def conversations(path: Path) -> list[dict[str, Any]]:
    """Every conversation of an export: a file, or a folder of a split export's shards."""
    files = (
        sorted(p for p in path.iterdir() if EXPORT_FILE.fullmatch(p.name))
        if path.is_dir()
        else [path]
    )
    items: list[dict[str, Any]] = []
    for file in files:
        data = json.loads(file.read_text(encoding="utf-8"))
        items += data if isinstance(data, list) else [data]
    return items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    args = parser.parse_args()
    embedder = default_embedder()
    for path in args.paths:
        items = conversations(path)
        visible = [
            text
            for item in items
            for text in (claude_visible(item) if "chat_messages" in item else chatgpt_visible(item))
        ]
        with (
            tempfile.TemporaryDirectory() as folder,
            Mnemo.open(Path(folder) / "profile", embedder=embedder) as mnemo,
        ):
            export = path  # as the service wrote it: a file, or the folder of its shards
            if path.is_file() and not isinstance(json.loads(path.read_bytes()), list):
                export = Path(folder) / "conversations.json"  # one conversation, as tools save
                export.write_text(json.dumps(items), encoding="utf-8")
            started = time.perf_counter()
            report = import_file(mnemo, export)
            seconds = time.perf_counter() - started
            stored = [
                message.text
                for conversation in mnemo.conversations.all()
                for message in mnemo.recall.recent(100_000, conversation.id)
            ]
        missing = [text for text in visible if text not in stored]
        emit(
            {
                "benchmark": "chat_export_files",
                "file": path.name,
                "conversations": len(items),
                "visible_messages": len(visible),
                "stored_word_for_word": len(visible) - len(missing),
                "stored_messages": len(stored),
                "left_out": next((n for n in report.notes if n.startswith("Not imported")), ""),
                "notes": [n for n in report.notes if not n.startswith("Not imported")],
                "import_s": round(seconds, 1),
            }
        )


if __name__ == "__main__":
    main()
