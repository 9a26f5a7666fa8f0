"""Another program reaches the open window's memory over MCP, as a person would set it up.

The real window opens on a fresh profile with the bundled model, and the person tells it
something. Then, in a second process started the way Claude Desktop starts it (`mnemo mcp`,
through the MCP SDK's own client), a client searches the conversation for it and proposes a
core-memory edit. The edit must show in the window's proposal panel, named by the client; the
screenshot (``mcp-proposal.png``) is there to be looked at. One JSON line out.

    QT_QPA_PLATFORM=offscreen uv run python tests/benchmarks/mcp_drive.py [--out /tmp/mcp-drive]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import REPO, emit
from PySide6.QtWidgets import QApplication
from window_drive import Driver

CLIENT = "Claude Desktop"
FACT = "I keep bees on the roof of my flat in Lisbon."


def as_client(profile: Path) -> tuple[str, str]:
    from mcp import Client, StdioServerParameters
    from mcp_types import Implementation

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "engine.cli", "--profile", str(profile), "mcp"],
        cwd=str(REPO),
    )

    async def run() -> tuple[str, str]:
        info = Implementation(name=CLIENT, version="1")
        async with Client(params, client_info=info) as client:
            found = await client.call_tool("search_conversations", {"query": "Where are my bees?"})
            edit = await client.call_tool(
                "propose_core_edit",
                {"label": "human", "content": "Keeps bees on the roof of a flat in Lisbon."},
            )
            return found.content[0].text, edit.content[0].text  # type: ignore[union-attr]

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="where the screenshot goes")
    args = parser.parse_args()
    out: Path = args.out or Path(tempfile.mkdtemp(prefix="mnemo-mcp-drive-"))
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication(sys.argv)
    drive = Driver(app, out / "profile", out)  # type: ignore[arg-type]
    mnemo, window = drive.open()
    drive.say(window, FACT)
    began = time.monotonic()
    found, proposed = as_client(out / "profile")
    drive.wait(lambda: window.proposals.count >= 1, timeout=30)
    shown_s = time.monotonic() - began
    drive.shoot(window, "mcp-proposal.png")
    (proposal,) = mnemo.proposals.pending()
    result: dict[str, Any] = {
        "benchmark": "mcp_drive",
        "fact_found_over_mcp": FACT in found,
        "proposal": proposed,
        "shown_in_window": window.proposals.count == 1,
        "source": [proposal.cause_kind, proposal.cause_ref],
        "client_to_panel_s": round(shown_s, 2),
        "screenshot": str(out / "mcp-proposal.png"),
    }
    window.close()
    drive.pump(0.5)
    mnemo.close()
    emit(result)


if __name__ == "__main__":
    main()
