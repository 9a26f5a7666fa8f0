"""Memory in and out of Mnemo: its own archive, Letta Agent Files, ChatGPT and Claude exports."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from engine.exchange.archive import MANIFEST, ImportReport, Progress, import_archive
from engine.exchange.chat_exports import import_conversations
from engine.exchange.letta import import_agent_file

if TYPE_CHECKING:
    from engine.mnemo import Mnemo


def import_file(mnemo: Mnemo, path: Path, progress: Progress | None = None) -> ImportReport:
    """Import whatever ``path`` is: a `.mnemo` archive, a Letta Agent File (`.af`), or a
    ChatGPT or Claude export (its ``conversations.json``, or the zip it came in)."""
    if path.suffix.lower() == ".af":
        return import_agent_file(mnemo, path)
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            is_mnemo = MANIFEST in archive.namelist()
        if is_mnemo:
            return import_archive(mnemo, path, progress)
        return import_conversations(mnemo, path, progress)
    if path.suffix.lower() == ".json":
        return import_conversations(mnemo, path, progress)
    return import_archive(mnemo, path, progress)  # says in words what is wrong with it
