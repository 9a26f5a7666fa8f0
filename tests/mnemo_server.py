"""A real `mnemo serve` (uvicorn on 127.0.0.1, a free port) over real profiles, for the tests."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import uvicorn

from engine.server.accounts import Accounts
from engine.server.app import Limits, create_app, server_config
from engine.server.hub import Hub


class Server:
    def __init__(
        self,
        root: Path,
        models: Any,
        limits: Limits | None = None,
        archival_url: str | None = None,
        database_url: str | None = None,
        *,
        port: int = 0,
        tokens: dict[str, str] | None = None,
    ) -> None:
        """``port`` and ``tokens``: the same server started again (after ``stop``)."""
        self.accounts = Accounts(root)
        self.tokens = tokens or {name: self.accounts.add(name) for name in ("alice", "bob")}
        self.hub = Hub(self.accounts.folder, models, archival_url, database_url)
        app = create_app(self.accounts, self.hub, limits)
        self._server = uvicorn.Server(server_config(app, "127.0.0.1", port))
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def client(self, user: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.tokens[user]}"} if user else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=20)
        self.hub.close()


def on_postgres_and_s3(root: Path, model: Any, database_url: str, archival_url: str) -> Server:
    """A server whose assistants live in PostgreSQL and S3, with alice's and bob's "home"."""
    running = Server(root, lambda: model, archival_url=archival_url, database_url=database_url)
    for user in ("alice", "bob"):
        running.client(user).post("/v1/assistants", json={"name": "home"})
    return running


@contextmanager
def serve_local(env: dict[str, str] | None = None) -> Iterator[openai.OpenAI]:
    """`mnemo serve --local` in a process of its own, on the assistants of ``$MNEMO_DATA`` (or
    what ``env`` adds to the environment); yields an `openai` client with the token it printed,
    once it answers."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "serve", "--local", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        # The tests' $MNEMO_HOME chooses one profile, as a person's would: left out, it serves
        # the data folder's assistants.
        env={**{k: v for k, v in os.environ.items() if k != "MNEMO_HOME"}, **(env or {})},
    )
    try:
        assert server.stdout is not None
        printed = "".join(server.stdout.readline() for _ in range(5))
        token = re.search(r"API key (mnemo_\S+)", printed)
        assert token, printed
        local = openai.OpenAI(
            api_key=token[1], base_url=f"http://127.0.0.1:{port}/v1", max_retries=0, timeout=300
        )
        local.printed = printed  # type: ignore[attr-defined]
        for _ in range(100):  # uvicorn starts a moment after the lines are printed
            try:
                local.models.list()
                break
            except openai.APIConnectionError:
                time.sleep(0.1)
        yield local
    finally:
        server.terminate()
        server.wait(timeout=30)
