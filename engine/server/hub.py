"""The server's open assistants: each user's profiles, opened on first use and kept open, with
one agent each and the models they share.

A model is loaded once per configuration (``ModelConfig``) and shared by every assistant that
names it; its generation is not thread-safe, so a turn holds that model's lock while it runs.
An assistant runs one turn at a time: a second one is refused (409), not queued behind it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from engine.agent import Agent
from engine.assistants import Assistants, check_name, is_profile
from engine.errors import MnemoError, NotFoundError
from engine.events import Event, TurnFinished
from engine.llm import ChatModel, ModelConfig, load_model, model_settings
from engine.mnemo import Mnemo
from engine.settings import Settings

ModelFactory = Callable[[Settings], ChatModel]


class BusyError(MnemoError):
    """The assistant is answering another message."""


@dataclass
class OpenAssistant:
    mnemo: Mnemo
    agent: Agent | None = None
    turn: threading.Lock = field(default_factory=threading.Lock)


class Hub:
    def __init__(
        self,
        folder_of: Callable[[str], Path],
        models: ModelFactory = load_model,
        archival_url: str | None = None,
        database_url: str | None = None,
    ) -> None:
        """``archival_url``: object storage (``s3://bucket/prefix?endpoint=…``) under which each
        new assistant's archival memory goes, in ``prefix/USER/ASSISTANT``; ``database_url``:
        the PostgreSQL server that holds each new assistant's other tables (a schema each);
        None: each assistant's own folder."""
        self._folder_of = folder_of
        self._load_model = models
        self._archival_url = archival_url
        self._database_url = database_url
        self._open: dict[tuple[str, str], OpenAssistant] = {}
        self._models: dict[ModelConfig, tuple[ChatModel, threading.Lock]] = {}
        self._loading: dict[ModelConfig, threading.Lock] = {}
        self._lock = threading.Lock()

    def assistants(self, user: str) -> Assistants:
        return Assistants(self._folder_of(user))

    def create(self, user: str, name: str, persona: str | None = None) -> None:
        archival = None
        if self._archival_url:
            parts = urlsplit(self._archival_url)
            path = f"{parts.path.rstrip('/')}/{user}/{check_name(name)}"
            archival = urlunsplit(parts._replace(path=path))
        self.assistants(user).create(
            name, persona, archival_url=archival, database_url=self._database_url
        )

    def get(self, user: str, name: str) -> OpenAssistant:
        key = (user, check_name(name))
        with self._lock:
            if key not in self._open:
                path = self.assistants(user).folder / name
                if not is_profile(path):
                    raise NotFoundError(f"You have no assistant called {name!r}.")
                self._open[key] = OpenAssistant(Mnemo.open(path))
            return self._open[key]

    def start_turn(self, user: str, name: str) -> OpenAssistant:
        """Claim the assistant for one turn (``run_turn`` gives it back); refused while it is
        answering another message, so the client hears 409 before any stream starts."""
        opened = self.get(user, name)
        if not opened.turn.acquire(blocking=False):
            raise BusyError(
                f"{name} is still answering another message; send this one when it has finished."
            )
        return opened

    def run_turn(
        self, opened: OpenAssistant, text: str, on_event: Callable[[Event], None]
    ) -> TurnFinished:
        try:
            model, model_lock = self._model_for(opened.mnemo.settings)
            with model_lock:
                if opened.agent is None or opened.agent.model is not model:
                    opened.agent = Agent(opened.mnemo, model)
                return opened.agent.send(text, on_event=on_event)
        finally:
            opened.turn.release()

    def _model_for(self, settings: Settings) -> tuple[ChatModel, threading.Lock]:
        """The loaded model these settings name, loaded once; while it loads (seconds), only
        turns that need the same model wait, never other users' requests."""
        config = model_settings(settings)
        with self._lock:
            loading = self._loading.setdefault(config, threading.Lock())
        with loading:
            with self._lock:
                if config in self._models:
                    return self._models[config]
            model = self._load_model(settings)
            with self._lock:
                self._models[config] = (model, threading.Lock())
                return self._models[config]

    def close(self) -> None:
        with self._lock:
            opened, self._open = list(self._open.values()), {}
            models, self._models = list(self._models.values()), {}
        for assistant in opened:
            assistant.mnemo.close()
        for model, _lock in models:
            close = getattr(model, "close", None)
            if close is not None:
                close()
