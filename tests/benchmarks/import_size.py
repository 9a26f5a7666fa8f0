"""An export of years through `mnemo import`: throughput, memory, first search, and kill -9.

A large ChatGPT export is built from the shapes of a real one (``../shared/data/real/
chatgpt_2026``): its conversations copied, each copy with new ids and its dates moved back by
30 days a copy, into numbered shards with the manifest ChatGPT writes, until it holds
``--messages`` visible messages. Then, in one run on the same machine:

- the embedder's own rate on the messages' texts (a sample, in the importer's batch size);
- `mnemo import` of the export in a process of its own, its peak memory (VmHWM) and the time
  until a message of the first conversation is stored with its vector (searchable);
- a kill -9 of that process once ``--kill-at`` of the messages are in; what the profile holds
  then (whole conversations only? the journal?), what `mnemo check` says, and the same import
  run again, which resumes;
- the end state: every visible message stored word for word, once.

One JSON line. Run: uv run python tests/benchmarks/import_size.py [--messages 50000]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from _common import REPO, emit
from chat_export_files import chatgpt_visible, conversations

from engine.embed import default_embedder
from engine.exchange.chat_exports import read_conversation
from engine.memory.recall.vectors import sentence_parts

REAL = REPO.parent / "shared" / "data" / "real" / "chatgpt_2026"
SHARD = 300  # conversations a shard
DAY = 86_400.0


def _renamed(item: dict[str, Any], copy_number: int) -> dict[str, Any]:
    """The conversation with every id made new and its times moved back ``copy_number``
    months: the same shape and words, another conversation."""
    if copy_number == 0:
        return item
    made = copy.deepcopy(item)
    ids: dict[str, str] = {}

    def new(old: Any) -> Any:
        if not isinstance(old, str):
            return old
        return ids.setdefault(old, str(uuid.uuid5(uuid.NAMESPACE_URL, f"{old}/{copy_number}")))

    shift = copy_number * 30 * DAY
    for key in ("id", "conversation_id"):
        made[key] = new(made.get(key))
    made["current_node"] = new(made.get("current_node"))
    for key in ("create_time", "update_time"):
        if isinstance(made.get(key), int | float):
            made[key] -= shift
    mapping = {}
    for node_id, node in (made.get("mapping") or {}).items():
        node["id"] = new(node.get("id", node_id))
        node["parent"] = new(node.get("parent"))
        if "children" in node:
            node["children"] = [new(child) for child in node["children"]]
        message = node.get("message")
        if isinstance(message, dict):
            message["id"] = new(message.get("id"))
            for key in ("create_time", "update_time"):
                if isinstance(message.get(key), int | float):
                    message[key] -= shift
        mapping[new(node_id)] = node
    made["mapping"] = mapping
    return made


def build(folder: Path, wanted: int, real_export: Path) -> tuple[list[dict[str, Any]], int]:
    """The export in ``folder``, made from ``real_export``: its conversations and visible
    messages."""
    real = conversations(real_export)
    made: list[dict[str, Any]] = []
    visible = 0
    copy_number = 0
    while visible < wanted:
        for item in real:
            made.append(_renamed(item, copy_number))
            visible += len(chatgpt_visible(made[-1]))
            if visible >= wanted:
                break
        copy_number += 1
    files = []
    for number, start in enumerate(range(0, len(made), SHARD)):
        name = f"conversations-{number:03d}.json"
        (folder / name).write_text(json.dumps(made[start : start + SHARD]), encoding="utf-8")
        files.append({"path": name})
    (folder / "export_manifest.json").write_text(json.dumps({"export_files": files}))
    return made, visible


def embedder_rate(texts: list[str]) -> float:
    """Texts a second, embedded as the importer does (batches of its size)."""
    embedder = default_embedder()
    embedder.embed(texts[:64])  # warm
    started = time.perf_counter()
    for start in range(0, len(texts), 256):
        embedder.embed(texts[start : start + 256])
    return len(texts) / (time.perf_counter() - started)


def embedded_texts(item: dict[str, Any]) -> list[str]:
    """What the importer embeds of a conversation: each message, and its sentences."""
    conversation = read_conversation(item)
    messages = conversation.messages if conversation is not None else []
    return [
        text
        for message in messages
        for text in [message.text, *sentence_parts(message.role, message.text)]
    ]


def _count(database: Path, sql: str) -> int:
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=1) as connection:
            return int(connection.execute(sql).fetchone()[0] or 0)
    except sqlite3.Error:
        return 0


def _peak_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_import(profile: Path, export: Path, kill_at: int | None, first_id: str) -> dict[str, Any]:
    """`mnemo import` in a process of its own, watched; killed with SIGKILL once ``kill_at``
    messages are in."""
    command = [sys.executable, "-m", "engine.cli", "--profile", str(profile), "import"]
    started = time.perf_counter()
    process = subprocess.Popen(
        [*command, str(export)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    database = profile / "mnemo.sqlite"
    first_search = None
    peak = 0
    killed = False
    while process.poll() is None:
        time.sleep(0.5)
        peak = max(peak, _peak_kb(process.pid))
        if first_search is None and _count(
            database,
            f"SELECT count(*) FROM message WHERE embedded = 1 AND conversation_id = '{first_id}'",
        ):
            first_search = time.perf_counter() - started
        if kill_at is not None and _count(database, "SELECT count(*) FROM message") >= kill_at:
            os.kill(process.pid, signal.SIGKILL)
            killed = True
    out, err = process.communicate()
    return {
        "seconds": time.perf_counter() - started,
        "peak_mb": round(peak / 1024),
        "first_search_s": round(first_search, 1) if first_search is not None else None,
        "killed": killed,
        "returncode": process.returncode,
        "stdout": out.strip().splitlines()[-12:],
        "progress_lines": len([line for line in err.splitlines() if line.startswith("messages")]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--kill-at", type=float, default=0.5)
    parser.add_argument("--sample", type=int, default=1024, help="texts for the embedder's rate")
    parser.add_argument("--real", type=Path, default=REAL, help="the real export to copy")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as temporary:
        folder = Path(temporary)
        export = folder / "export"
        export.mkdir()
        items, visible = build(export, args.messages, args.real)
        size_mb = sum(f.stat().st_size for f in export.iterdir()) / 2**20
        texts = [text for item in items for text in chatgpt_visible(item)]
        rate = embedder_rate(texts[:: max(1, len(texts) // args.sample)][: args.sample])
        # What the importer embeds: each message, and the sentences of the person's own
        # (``sentence_parts``), about two texts a message; their rate is the fair measure.
        everything = [text for item in items for text in embedded_texts(item)]
        mixed_rate = embedder_rate(
            everything[:: max(1, len(everything) // args.sample)][: args.sample]
        )
        profile = folder / "profile"
        first_id = f"chatgpt:{items[0].get('conversation_id') or items[0].get('id')}"
        database = profile / "mnemo.sqlite"
        first = run_import(profile, export, int(visible * args.kill_at), first_id)
        held = _count(database, "SELECT count(*) FROM message")
        embedded = _count(database, "SELECT count(*) FROM message WHERE embedded = 1")
        # Whole conversations only: each one stored holds all its visible messages.
        per_conversation = Counter(
            f"chatgpt:{item.get('conversation_id') or item.get('id')}" for item in items
        )
        expected = {
            f"chatgpt:{item.get('conversation_id') or item.get('id')}": len(chatgpt_visible(item))
            for item in items
        }
        with sqlite3.connect(database) as connection:
            stored = Counter(
                row[0]
                for row in connection.execute(
                    "SELECT conversation_id FROM message WHERE conversation_id LIKE 'chatgpt:%'"
                )
            )
        partial = [c for c, n in stored.items() if n != expected.get(c)]
        journal = (profile / "import-unfinished.json").exists()
        check = subprocess.run(
            [sys.executable, "-m", "engine.cli", "--profile", str(profile), "check"],
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        second = run_import(profile, export, None, first_id)
        with sqlite3.connect(database) as connection:
            rows = connection.execute(
                "SELECT conversation_id, text FROM message WHERE conversation_id LIKE 'chatgpt:%'"
            ).fetchall()
        wanted = Counter(
            (f"chatgpt:{item.get('conversation_id') or item.get('id')}", text)
            for item in items
            for text in chatgpt_visible(item)
        )
        got = Counter(rows)
        first_rate = embedded / first["seconds"]  # stored with their vectors, start included
        emit(
            {
                "benchmark": "import_size",
                "export_mb": round(size_mb, 1),
                "conversations": len(per_conversation),
                "visible_messages": visible,
                "embedder_texts_per_s": round(rate, 1),
                "import_messages_per_s": round(first_rate, 1),
                "throughput_ratio": round(first_rate / rate, 2),
                "texts_per_message": round(len(everything) / visible, 2),
                "embedder_mixed_texts_per_s": round(mixed_rate, 1),
                "import_texts_per_s": round(first_rate * len(everything) / visible, 1),
                "texts_throughput_ratio": round(
                    first_rate * len(everything) / visible / mixed_rate, 2
                ),
                "peak_mb": max(first["peak_mb"], second["peak_mb"]),
                "first_search_s": first["first_search_s"],
                "killed_at_messages": held if first["killed"] else None,
                "conversations_cut_by_the_kill": len(partial),
                "journal_after_kill": journal,
                "check_after_kill": check.stdout.strip().splitlines()[-3:],
                "resume_s": round(second["seconds"], 1),
                "resume_returncode": second["returncode"],
                "resume_report": second["stdout"],
                "stored_word_for_word": sum((wanted & got).values()),
                "stored_twice": sum((got - wanted).values()),
                "missing": sum((wanted - got).values()),
                "journal_after_resume": (profile / "import-unfinished.json").exists(),
                "progress_lines": first["progress_lines"] + second["progress_lines"],
                "first_leg_s": round(first["seconds"], 1),
            }
        )


if __name__ == "__main__":
    main()
