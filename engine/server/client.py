"""An assistant on a Mnemo server, as the window sees a local one.

``RemoteMnemo`` has the attributes of ``Mnemo`` that the window uses (core, recall, archival,
knowledge, proposals, settings), each a stand-in whose calls go to ``POST …/call`` and come back
as the engine's own objects (``engine.server.wire``). A chat turn streams the same events the
local agent emits; a dropped document is uploaded and ingested there. When the server cannot be
reached, every call raises ``ServerUnreachableError``, in words, and nothing is changed.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from engine import __version__, keys
from engine.errors import MnemoError
from engine.events import Event, TurnFinished
from engine.memory.snapshots import SnapshotError
from engine.profile import Profile
from engine.server import wire
from engine.settings import Settings

TOKEN_USER = "server:"  # keyring user name of a server's token: this + the server's address
CONNECT_TIMEOUT_S = 5.0
CALL_TIMEOUT_S = 60.0  # a search on a loaded server, an approval that re-embeds a note


UNREACHABLE = "Cannot reach the Mnemo server"  # how ServerUnreachableError's sentence begins


class ServerUnreachableError(MnemoError):
    """The server did not answer: it is down, or the network is."""


class ServerError(MnemoError):
    """The server answered with an error it could not name more precisely."""


def save_token(url: str, token: str) -> None:
    """Keep a server's token in the keyring (never in a file); ``KeyringUnavailableError`` when
    this computer has none."""
    keys.save_secret(TOKEN_USER + url.rstrip("/"), token)


def saved_token(url: str) -> str | None:
    return keys.get_secret(TOKEN_USER + url.rstrip("/"))


class Connection:
    """One user's connection to one assistant on a server."""

    def __init__(self, url: str, token: str, assistant: str) -> None:
        self.url = url.rstrip("/")
        self.assistant = assistant
        self._http = httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx.Timeout(CALL_TIMEOUT_S, connect=CONNECT_TIMEOUT_S),
        )
        self._base = f"/v1/assistants/{quote(assistant, safe='')}"

    # -- requests ------------------------------------------------------------------------------

    def _request(self, method: str, path: str, **options: Any) -> Any:
        try:
            response = self._http.request(method, path, **options)
        except httpx.TransportError as error:
            raise self._unreachable(error) from error
        _raise_for(response)
        return response.json()

    def _unreachable(self, error: Exception) -> ServerUnreachableError:
        return ServerUnreachableError(
            f"{UNREACHABLE} at {self.url} ({type(error).__name__}); check that "
            "it is running and that this computer can reach it. Nothing was changed."
        )

    def check(self) -> None:
        """Raise in words unless the server answers, knows this user's token and assistant,
        and runs this version of Mnemo."""
        version = self._request("GET", "/v1/version")["version"]
        if version != __version__:
            raise MnemoError(
                f"The server runs Mnemo {version} and this window {__version__}; use the same "
                "version on both."
            )
        names = self.assistants()
        if self.assistant not in names:
            raise MnemoError(
                f"The server has no assistant called {self.assistant!r} for you"
                + (f" (yours: {', '.join(names)})." if names else "; create one first.")
            )

    def assistants(self) -> list[str]:
        return [item["name"] for item in self._request("GET", "/v1/assistants")]

    def call(self, store: str, method: str, *args: Any, **kwargs: Any) -> Any:
        body = {"store": store, "method": method, "args": wire.encode(list(args))}
        body["kwargs"] = wire.encode(kwargs)
        return wire.decode(self._request("POST", f"{self._base}/call", json=body)["result"])

    def upload(self, path: Path) -> Any:
        """Send a document; the server ingests it and answers with the ``FileResult``."""
        with path.open("rb") as file:
            data = self._request(
                "PUT",
                f"{self._base}/documents/{quote(path.name, safe='')}",
                content=file,
                timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT_S),
            )
        return data

    def turn(
        self, text: str, on_event: Callable[[Event], None], cancel: threading.Event | None = None
    ) -> TurnFinished | None:
        """Send a message and pass each event of the reply to ``on_event`` as it arrives."""
        finished: TurnFinished | None = None
        try:
            with self._http.stream(
                "POST",
                f"{self._base}/turns",
                json={"text": text},
                timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT_S),
            ) as response:
                if response.status_code >= 400:
                    response.read()
                    _raise_for(response)
                for kind, data in _server_sent_events(response.iter_lines()):
                    if kind == "error":
                        raise MnemoError(data.get("error", "The server could not answer."))
                    event = wire.decode(data)
                    if isinstance(event, TurnFinished):
                        finished = event
                    on_event(event)
                    if cancel is not None and cancel.is_set():
                        break  # the server finishes the step; the window stops listening
        except httpx.TransportError as error:
            raise self._unreachable(error) from error
        return finished

    def close(self) -> None:
        self._http.close()


def _server_sent_events(lines: Iterator[str]) -> Iterator[tuple[str, Any]]:
    kind, data = "message", ""
    for line in lines:
        if not line:
            if data:
                yield kind, json.loads(data)
            kind, data = "message", ""
        elif line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data += line[5:].strip()


def _raise_for(response: httpx.Response) -> None:
    """The server's error as the exception the engine would have raised, with its sentence."""
    if response.status_code < 400:
        return
    try:
        body = response.json()
    except ValueError:
        body = {}
    sentence = body.get("error") or f"The server answered {response.status_code}."
    kind = _error_class(str(body.get("kind", "")))
    raise kind(sentence)


def _error_class(name: str) -> type[MnemoError]:
    module_name, _, qualname = name.partition(":")
    if module_name == "engine" or module_name.startswith("engine."):
        import importlib

        try:
            found = getattr(importlib.import_module(module_name), qualname, None)
        except ImportError:
            found = None
        if isinstance(found, type) and issubclass(found, MnemoError):
            return found
    return ServerError


class RemoteStore:
    """Stands in for one of ``Mnemo``'s stores: ``store.method(…)`` runs on the server."""

    def __init__(self, connection: Connection, store: str) -> None:
        self._connection = connection
        self._store = store

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method.startswith("_") or method not in wire.CALLS.get(self._store, ()):
            raise AttributeError(
                f"{self._store}.{method} is not available while connected to a Mnemo server"
            )
        return partial(self._connection.call, self._store, method)


class RemoteSettings(Settings):
    """The assistant's settings, kept on the server (the same keys and checks)."""

    def __init__(self, connection: Connection) -> None:  # no database here
        self._connection = connection

    def get(self, key: str) -> Any:
        return self._connection.call("settings", "get", key)

    def set(self, key: str, value: Any) -> Any:
        return self._connection.call("settings", "set", key, value)

    def is_set(self, key: str) -> bool:
        return bool(self._connection.call("settings", "is_set", key))

    def all(self) -> dict[str, Any]:
        return dict(self._connection.call("settings", "all"))


class ServerSnapshots:
    """Snapshots are the server's backups: none are listed here, and none can be taken."""

    def all(self) -> list[Any]:
        return []

    def _refuse(self, *_args: Any, **_kwargs: Any) -> Any:
        raise SnapshotError(
            "Snapshots are kept for assistants stored on this computer; this one is on a Mnemo "
            "server, whose own backups cover it."
        )

    create = restore = delete = get = _refuse


class RemoteMnemo:
    """An assistant on a Mnemo server with the attributes of ``Mnemo`` the window uses.

    ``profile`` is a local folder for what stays on this computer (the window's log)."""

    def __init__(self, connection: Connection, profile: Profile) -> None:
        self.connection = connection
        self.profile = profile
        self.read_only: str | None = None
        self.core: Any = RemoteStore(connection, "core")
        self.recall: Any = RemoteStore(connection, "recall")
        self.archival: Any = RemoteStore(connection, "archival")
        self.knowledge: Any = RemoteStore(connection, "knowledge")
        self.proposals: Any = RemoteStore(connection, "proposals")
        self.settings: Settings = RemoteSettings(connection)
        self.snapshots: Any = ServerSnapshots()

    @property
    def where(self) -> str:
        """How the window names this assistant: "home on http://host:8765"."""
        return f"{self.connection.assistant} on {self.connection.url}"

    def documents(self) -> list[Any]:
        """The assistant's ingested documents, as ``Mnemo.documents`` lists them."""
        return list(self.connection.call("mnemo", "documents"))

    def snapshot_before(self, what: str) -> None:
        return None  # the server's storage keeps its own backups

    def close(self) -> None:
        self.connection.close()
