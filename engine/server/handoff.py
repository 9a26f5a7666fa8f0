"""A chat-completions turn handed to Mnemo's window.

While the window is open it holds the assistant (``Profile.hold_assistant``), so `mnemo serve
--local` cannot run a turn of its own: two agents would answer the same conversation. It hands
the turn to the window instead, which runs it like a typed message, in the conversation on its
screen, where the person sees it stream; the server streams the same text to its client.

The hand-off is a few files in the profile's ``handoff/`` folder, so it needs nothing running
but the two programs:

- ``ID.ask``: the request, as JSON (written aside, then renamed into place).
- ``ID.taken``: the window took it (renamed from ``ID.ask``: one of the two wins).
- ``ID.events``: what the window tells, one JSON object a line: ``{"text": piece}`` (of the
  reply as the client gets it: ``completion_turn.ReplyForClient``), then
  ``{"done": extension, "reply": text}`` or ``{"error": sentence}`` (with ``"refused": true``
  when the window did not run the turn at all).
- ``ID.cancel``: the client went away; the window stops the turn.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import uuid
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import MnemoError

FOLDER = "handoff"
CLAIM_S = 120.0  # the window looks twice a second once idle: time for a turn of its own to end
QUIET_S = 600.0  # a turn that tells nothing this long has ended without a word (a crash)
POLL_S = 0.03
STALE_S = 3600.0  # files older than this belong to requests that ended without cleaning up
MAX_ASK_BYTES = 8_000_000


class WindowBusyError(MnemoError):
    """The window holds the assistant and did not take the turn."""


@dataclass
class HandedTurn:
    """A turn the window took: the request, and the way to tell the server how it goes."""

    id: str
    text: str
    history: list[tuple[str, str]]
    conversation: str | None
    program: str
    folder: Path
    person: bool = False  # sent with the person's own token: their word, not a program's

    def tell(self, event: dict[str, Any]) -> None:
        line = json.dumps(event, ensure_ascii=False) + "\n"
        path = self.folder / f"{self.id}.events"
        # OSError: the server gave up and removed the folder; nobody reads it any more.
        with contextlib.suppress(OSError), open(path, "a", encoding="utf-8") as out:
            out.write(line)

    def send(self, piece: str) -> None:
        """Tell a piece of the reply."""
        self.tell({"text": piece})

    def refuse(self, sentence: str) -> None:
        """Tell the server the window will not run this turn (the client hears 409)."""
        self.tell({"error": sentence, "refused": True})

    @property
    def cancelled(self) -> bool:
        return (self.folder / f"{self.id}.cancel").exists()

    def close(self) -> None:
        """After the turn: a cancelled turn's files are the window's to remove (the server
        that asked has gone)."""
        if self.cancelled:
            for suffix in (".taken", ".events", ".cancel"):
                (self.folder / f"{self.id}{suffix}").unlink(missing_ok=True)


def ask(
    root: Path,
    text: str,
    history: list[tuple[str, str]],
    conversation: str | None,
    program: str,
    person: bool = False,
) -> str:
    """Leave a turn for the window of the profile at ``root``; returns its id. ``person``: it
    came with the person's own token (else a program's, whose word it is not)."""
    folder = root / FOLDER
    folder.mkdir(exist_ok=True)
    _remove_stale(folder)
    turn_id = uuid.uuid4().hex
    request = {
        "text": text,
        "history": history,
        "conversation": conversation,
        "program": program,
        "person": person,
    }
    aside = folder / f"{turn_id}.tmp"
    aside.write_text(json.dumps(request, ensure_ascii=False), "utf-8")
    os.replace(aside, folder / f"{turn_id}.ask")
    return turn_id


def claim(root: Path) -> HandedTurn | None:
    """The oldest turn waiting for the window at ``root``, now taken; None when there is none."""
    folder = root / FOLDER
    try:
        waiting = sorted(folder.glob("*.ask"), key=lambda path: path.stat().st_mtime)
    except OSError:  # no folder yet, or one just removed
        return None
    for path in waiting:
        taken = path.with_suffix(".taken")
        try:
            os.rename(path, taken)  # the server may take it back at the same moment
            if taken.stat().st_size > MAX_ASK_BYTES:
                raise ValueError("too large")
            request = json.loads(taken.read_text("utf-8"))
            history = [(str(role), str(text)) for role, text in request.get("history", [])]
            turn = HandedTurn(
                path.stem,
                str(request["text"]),
                history,
                request.get("conversation") or None,
                str(request.get("program") or "another program"),
                folder,
                request.get("person") is True,
            )
        except FileNotFoundError:
            continue
        except (OSError, ValueError, KeyError, TypeError):
            HandedTurn(path.stem, "", [], None, "", folder).refuse(
                "Mnemo's window could not read the message it was handed."
            )
            continue
        return turn
    return None


def follow(
    root: Path, turn_id: str, cancel: threading.Event
) -> Generator[dict[str, Any], None, None]:
    """What the window tells of turn ``turn_id``, until it is done or failed. Raises
    ``WindowBusyError`` when the window does not take the turn in ``CLAIM_S``; ``cancel`` (the
    client went away) stops the window's turn too."""
    folder = root / FOLDER
    asked, events = folder / f"{turn_id}.ask", folder / f"{turn_id}.events"
    try:
        deadline = time.monotonic() + CLAIM_S
        while asked.exists():
            if cancel.is_set():
                asked.unlink(missing_ok=True)
                return
            if time.monotonic() > deadline:
                try:
                    asked.unlink()  # take the turn back, unless the window took it just now
                except FileNotFoundError:
                    break
                raise WindowBusyError(
                    "This assistant is open in Mnemo's window, which did not take the message "
                    "(it may be answering another, or waiting for its model). Try again in a "
                    "moment."
                )
            time.sleep(POLL_S)
        offset, heard = 0, time.monotonic()
        while True:
            if cancel.is_set():
                (folder / f"{turn_id}.cancel").touch()
                return
            lines, offset = _new_lines(events, offset)
            for line in lines:
                heard = time.monotonic()
                event = json.loads(line)
                yield event
                if "done" in event or "error" in event:
                    return
            if time.monotonic() - heard > QUIET_S:
                raise MnemoError("Mnemo's window stopped answering this message.")
            if not lines:
                time.sleep(POLL_S)
    finally:
        if not cancel.is_set():
            for suffix in (".taken", ".events", ".cancel"):
                (folder / f"{turn_id}{suffix}").unlink(missing_ok=True)


def _new_lines(path: Path, offset: int) -> tuple[list[str], int]:
    """The whole lines written to ``path`` after ``offset``, and the offset after them."""
    try:
        with open(path, "rb") as source:
            source.seek(offset)
            data = source.read()
    except FileNotFoundError:
        return [], offset
    end = data.rfind(b"\n") + 1
    if end == 0:
        return [], offset
    return data[:end].decode("utf-8").splitlines(), offset + end


def _remove_stale(folder: Path) -> None:
    now = time.time()
    for path in folder.iterdir():
        with contextlib.suppress(OSError):
            if now - path.stat().st_mtime > STALE_S:
                path.unlink()
