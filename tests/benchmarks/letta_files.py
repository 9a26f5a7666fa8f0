"""Real Letta Agent Files through Mnemo's importer: every block and every visible message?

Give it folders of ``.af`` files written by Letta (a checkout of letta-ai/agent-file, the
``tests/test_agent_files`` of letta-ai/letta). Each file goes into a fresh profile; one JSON
line per file: its format, its blocks and what became of them (core blocks, kept in archival
memory as too long for core memory, refused), its visible messages (the person's messages, not
MemGPT's heartbeats and login notices, and the assistant's replies: ``send_message`` calls or
plain text) against the messages stored, and the system reminders taken out.

    uv run python tests/benchmarks/letta_files.py FOLDER [FOLDER ...]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from _common import emit

from engine import Mnemo
from engine.embed import default_embedder
from engine.exchange.letta import import_agent_file, read_agent_file

NOT_SAID = {"heartbeat", "login", "system_alert"}


def visible(agent: dict[str, Any]) -> int:
    """Messages a person saw in Letta, counted from the file alone."""
    count = 0
    for message in agent.get("messages") or []:
        parts = message.get("content") or []
        text = parts if isinstance(parts, str) else " ".join(p.get("text", "") for p in parts)
        if message.get("role") == "user":
            try:
                wrapped = json.loads(text)
            except ValueError:
                wrapped = None
            said = not (isinstance(wrapped, dict) and wrapped.get("type") in NOT_SAID)
            count += said and bool(text.strip())
        elif message.get("role") == "assistant":
            calls = message.get("tool_calls") or []
            names = [call.get("function", {}).get("name") for call in calls]
            count += names.count("send_message") if calls else bool(text.strip())
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args()
    embedder = default_embedder()
    for path in sorted(p for folder in args.folders for p in folder.glob("*.af")):
        data = read_agent_file(path)
        agent = data["agents"][0]
        listed = {block.get("id") for block in data.get("blocks") or []}
        blocks = [i for i in agent.get("block_ids") or [] if i in listed]
        blocks += agent.get("memory_blocks") or []
        with (
            tempfile.TemporaryDirectory() as folder,
            Mnemo.open(Path(folder) / "profile", embedder=embedder) as mnemo,
        ):
            report = import_agent_file(mnemo, path)
            stored = mnemo.recall.count()
        reminders = next((n.split()[0] for n in report.notes if "system reminders" in n), "0")
        emit(
            {
                "benchmark": "letta_files",
                "file": path.name,
                "format": "earlier" if data.get("legacy") else "current",
                "blocks": len(blocks),
                "core_blocks": report.added["core blocks"],
                "kept_in_archival": report.added["blocks kept in archival memory"],
                "refused_blocks": report.skipped["core blocks"],
                "visible_messages": visible(agent),
                "stored_messages": stored,
                "system_reminders_removed": int(reminders),
            }
        )


if __name__ == "__main__":
    main()
