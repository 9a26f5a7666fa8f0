"""The server's users: a name, tokens, and a data folder of their own.

A user holds two kinds of token. Their own (``add``) is the person's: it is what their window
connects with, and it may do anything the window does. A program's (``add_program``: Open
WebUI, a notebook, an MCP client) reads, searches, chats and proposes; only the person approves,
rejects, edits core memory, changes settings or forgets (``engine.server.app`` checks each
route). Only a SHA-256 of each token is stored (``users.json`` in the server's folder), so the
file does not let anyone in; a token is shown once, when it is made. Each user's assistants live
in ``users/NAME`` under the server's folder, one profile folder each, as on a desktop.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from engine.assistants import check_name
from engine.errors import InputError, NotFoundError

USERS_FILE = "users.json"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _new_token() -> str:
    return "mnemo_" + secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Credential:
    """Whose a token is, and whether it is the person's own (else a program's)."""

    user: str
    person: bool


class Accounts:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()

    @property
    def _file(self) -> Path:
        return self.root / USERS_FILE

    def _read(self) -> dict[str, dict[str, object]]:
        try:
            return dict(json.loads(self._file.read_text(encoding="utf-8")))
        except FileNotFoundError:
            return {}

    def _write(self, users: dict[str, dict[str, object]]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", dir=self.root, delete=False, encoding="utf-8", suffix=".tmp"
        ) as file:
            json.dump(users, file, indent=2)
        os.chmod(file.name, 0o600)
        os.replace(file.name, self._file)

    def names(self) -> list[str]:
        return sorted(self._read())

    def add(self, name: str) -> str:
        """Add a user and return their token (shown once; only its hash is kept)."""
        check_name(name)
        with self._lock:
            users = self._read()
            if name in users:
                raise InputError(f"There is a user called {name!r} already; choose another name.")
            token = _new_token()
            users[name] = {"token_sha256": _digest(token), "created_at": time.time()}
            self._write(users)
        self.folder(name).mkdir(parents=True, exist_ok=True)
        return token

    def add_program(self, name: str) -> str:
        """A new program token of user ``name`` (shown once): it reads, searches, chats and
        proposes, and nothing the person alone decides."""
        with self._lock:
            users = self._read()
            if name not in users:
                raise NotFoundError(f"There is no user called {name!r}.")
            token = _new_token()
            programs = list(users[name].get("program_tokens_sha256") or [])  # type: ignore[call-overload]
            users[name]["program_tokens_sha256"] = [*programs, _digest(token)]
            self._write(users)
        return token

    def remove(self, name: str) -> None:
        """Take the user's token away; their memory stays in their folder."""
        with self._lock:
            users = self._read()
            if name not in users:
                raise NotFoundError(f"There is no user called {name!r}.")
            del users[name]
            self._write(users)

    def credential(self, token: str) -> Credential | None:
        """Whose ``token`` is and of which kind, or None (every stored hash is compared, so
        the time taken does not tell how close a guess came)."""
        wanted = _digest(token)
        found = None
        for name, user in self._read().items():
            if hmac.compare_digest(str(user.get("token_sha256", "")), wanted):
                found = Credential(name, person=True)
            for program in user.get("program_tokens_sha256") or []:  # type: ignore[attr-defined]
                if hmac.compare_digest(str(program), wanted):
                    found = Credential(name, person=False)
        return found

    def folder(self, name: str) -> Path:
        return self.root / "users" / check_name(name)
