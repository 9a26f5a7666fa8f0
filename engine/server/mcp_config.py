"""What a person pastes into another program so that it starts `mnemo mcp` for their assistant:
the command that runs Mnemo here, and the ``mcpServers`` entry that Claude Desktop
(``claude_desktop_config.json``), LM Studio (``mcp.json``) and Jan read. Light on purpose: the
Settings page shows it without loading the MCP SDK."""

from __future__ import annotations

import json
import sys
from pathlib import Path

SERVER_NAME = "mnemo"


def launch_command(profile_root: Path) -> list[str]:
    """The command line that starts `mnemo mcp` on ``profile_root`` from this installation: the
    app itself when frozen, the ``mnemo`` script beside this Python, or this Python with
    ``-m engine.cli``."""
    if getattr(sys, "frozen", False):
        base = [sys.executable]
    else:
        script = Path(sys.executable).with_name("mnemo.exe" if sys.platform == "win32" else "mnemo")
        base = [str(script)] if script.exists() else [sys.executable, "-m", "engine.cli"]
    return [*base, "--profile", str(profile_root), "mcp"]


def client_config(profile_root: Path) -> str:
    """The JSON to paste into an MCP client's configuration."""
    command = launch_command(profile_root)
    entry = {"command": command[0], "args": command[1:]}
    return json.dumps({"mcpServers": {SERVER_NAME: entry}}, indent=2)
