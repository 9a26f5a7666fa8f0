"""Memory in and out of Mnemo: its own archive, Letta Agent Files, ChatGPT and Claude exports."""

from __future__ import annotations

import logging
import threading
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from engine.exchange.archive import (
    MANIFEST,
    ArchiveError,
    ImportReport,
    Progress,
    import_archive,
)
from engine.exchange.chat_exports import import_conversations
from engine.exchange.letta import import_agent_file
from engine.exchange.unfinished import refuse_another
from engine.memory.redaction import sweep

if TYPE_CHECKING:
    from engine.mnemo import Mnemo

log = logging.getLogger("mnemo.exchange")


def import_file(
    mnemo: Mnemo,
    path: Path,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    pause: threading.Event | None = None,
    hold: threading.Event | None = None,
) -> ImportReport:
    """Import whatever ``path`` is: a `.mnemo` archive, a Letta Agent File (`.af`), or a
    ChatGPT or Claude export (its ``conversations.json``, the numbered files of a split one or
    their folder, or the zip it came in). A file shaped in a way no reader expected is refused
    in one sentence, never with a traceback. ``cancel`` and ``pause`` stop a chat export's
    import, and ``hold`` makes it wait (see ``import_conversations``); the other kinds are
    short and run to their end."""
    kept_out = mnemo.tombstones.kept_out
    try:
        report = _import_by_kind(mnemo, path, progress, cancel, pause, hold)
    except (
        KeyError,
        TypeError,
        AttributeError,
        IndexError,
        RecursionError,
        zipfile.BadZipFile,
    ) as error:
        log.exception("importing %s failed on an unexpected shape", path.name)
        raise ArchiveError(
            f"{path.name} could not be imported: it is shaped in a way Mnemo does not read "
            f"({type(error).__name__}); nothing was changed."
        ) from error
    again = sum(sweep(mnemo).values())  # rows an importer wrote as they were: none comes back
    again += mnemo.tombstones.kept_out - kept_out  # and what the stores kept out as it came
    if again:
        report.notes.append(
            f"{again} things you had asked Mnemo to forget were in the file; they were "
            "forgotten again."
        )
    return report


def _import_by_kind(
    mnemo: Mnemo,
    path: Path,
    progress: Progress | None,
    cancel: threading.Event | None,
    pause: threading.Event | None,
    hold: threading.Event | None,
) -> ImportReport:
    refuse_another(mnemo, path)
    if path.suffix.lower() == ".af":
        return import_agent_file(mnemo, path)
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            is_mnemo = MANIFEST in archive.namelist()
        if is_mnemo:
            return import_archive(mnemo, path, progress)
        return import_conversations(mnemo, path, progress, cancel, pause, hold)
    if path.suffix.lower() == ".json" or path.is_dir():  # a split export's folder too
        return import_conversations(mnemo, path, progress, cancel, pause, hold)
    return import_archive(mnemo, path, progress)  # says in words what is wrong with it
