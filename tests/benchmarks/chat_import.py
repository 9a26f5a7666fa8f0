"""Importing a ChatGPT export against storing the same messages with ``recall.add_many``.

A synthetic ``conversations.json`` (ChatGPT's tree format, one regenerated answer per
conversation) is imported into a fresh profile with ``engine.exchange.import_file``; the same
messages, already parsed, are stored into another fresh profile with ``recall.add_many``. Both
embed every message, as a real import does. Rounds alternate; medians are reported, with the
ratio of speeds (target: import >= 0.8x add_many). One JSON line.

    uv run python tests/benchmarks/chat_import.py [--messages 10000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from _common import TextGenerator, emit

from engine import Mnemo
from engine.embed import default_embedder
from engine.exchange import import_file
from engine.exchange.chat_exports import chatgpt_conversation

TURNS = 20  # messages per conversation


def export(messages: int, words: TextGenerator) -> list[dict]:
    conversations = []
    for c in range(messages // TURNS):
        mapping = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
        parent = "root"
        for t in range(TURNS):
            node_id = f"{c}-{t}"
            role = "user" if t % 2 == 0 else "assistant"
            body = " ".join(words.sentences(1, 8, 30 if role == "user" else 80))
            mapping[node_id] = {
                "id": node_id,
                "parent": parent,
                "children": [],
                "message": {
                    "author": {"role": role},
                    "create_time": 1_700_000_000 + c * 3600 + t * 30,
                    "content": {"content_type": "text", "parts": [body]},
                    "recipient": "all",
                },
            }
            mapping[parent]["children"].append(node_id)
            if role == "assistant":  # a regenerated answer that is not shown
                mapping[f"{node_id}-old"] = {
                    "id": f"{node_id}-old",
                    "parent": parent,
                    "children": [],
                    "message": {
                        "author": {"role": "assistant"},
                        "create_time": 1_700_000_000 + c * 3600 + t * 30 - 5,
                        "content": {"content_type": "text", "parts": ["an older draft"]},
                    },
                }
            parent = node_id
        conversations.append(
            {
                "title": f"Chat {c}",
                "create_time": 1_700_000_000 + c * 3600,
                "mapping": mapping,
                "current_node": parent,
                "conversation_id": f"conv-{c}",
            }
        )
    return conversations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    embedder = default_embedder()
    data = export(args.messages, TextGenerator(seed=31))
    messages = [m for item in data for m in chatgpt_conversation(item).messages]
    imports, add_manys = [], []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "conversations.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        size = path.stat().st_size
        for round_ in range(args.rounds):
            with Mnemo.open(Path(folder) / f"import{round_}", embedder=embedder) as m:
                started = time.perf_counter()
                report = import_file(m, path)
                imports.append(time.perf_counter() - started)
                assert report.added["messages"] == len(messages)
            with Mnemo.open(Path(folder) / f"plain{round_}", embedder=embedder) as m:
                started = time.perf_counter()
                for start in range(0, len(messages), 2000):
                    m.recall.add_many(messages[start : start + 2000])
                add_manys.append(time.perf_counter() - started)
    imported, plain = statistics.median(imports), statistics.median(add_manys)
    emit(
        {
            "benchmark": "chat_import",
            "messages": len(messages),
            "file_mb": round(size / 2**20, 1),
            "import_s_median": round(imported, 2),
            "add_many_s_median": round(plain, 2),
            "import_messages_per_s": round(len(messages) / imported),
            "speed_vs_add_many": round(plain / imported, 2),
            "target": 0.8,
        }
    )


if __name__ == "__main__":
    main()
