"""The server's open assistants: each user's profiles, opened on first use and kept open, with
one agent each and the one model the operator chose.

The model is the operator's (``mnemo serve --model``), loaded once and shared by every
assistant: a user changes their assistants' memory and preferences, never what the server
loads or where it connects (``ServedSettings``). Its generation is not thread-safe, so a turn
holds the model's lock while it runs. An assistant runs one turn at a time, a user at most
``TURNS_PER_USER`` (more are refused, not queued), and the server ``TURN_WORKERS`` in all.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from engine import forget
from engine.agent import Agent
from engine.assistants import Assistants, check_name
from engine.errors import MnemoError, NotFoundError
from engine.events import Event, MessageSent, TextStreamed, TurnFinished
from engine.llm import ChatModel
from engine.memory.recall.messages import DEFAULT_CONVERSATION
from engine.mnemo import Mnemo
from engine.settings import Settings, touches_the_machine

ModelLoader = Callable[[], ChatModel]  # the operator's model, loaded on the first turn
TURN_WORKERS = 8  # turns running at once on the server; more wait for a free worker
TURNS_PER_USER = 2  # one user's share of them: more are refused at once
CLOSE_WAIT_S = 3.0  # how long closing waits for cancelled turns to end


class BusyError(MnemoError):
    """The assistant is answering another message."""


class TooManyTurnsError(MnemoError):
    """The user already has their share of the server's turns running."""


class OperatorSettingError(MnemoError):
    """A server user tried to change a setting that belongs to the server's operator."""


class ServedSettings:
    """An assistant's settings as a server user reaches them: they read every one, and change
    only what shapes the assistant. The model, its address, keys, paths, sizes and storage
    (``touches_the_machine``) are the operator's, so no user can make the server load a file,
    connect to an address, or send its keys anywhere."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings

    def get(self, key: str) -> Any:
        return self._settings.get(key)

    def is_set(self, key: str) -> bool:
        return self._settings.is_set(key)

    def all(self) -> dict[str, Any]:
        return self._settings.all()

    def set(self, key: str, value: Any) -> Any:
        if touches_the_machine(key):
            raise OperatorSettingError(
                f"{key} is chosen by the server's operator (`mnemo serve` options), not by an "
                "assistant's settings."
            )
        return self._settings.set(key, value)


@dataclass
class OpenAssistant:
    mnemo: Mnemo
    agent: Agent | None = None
    turn: threading.Lock = field(default_factory=threading.Lock)
    uploading: threading.Lock = field(default_factory=threading.Lock)

    @property
    def settings(self) -> ServedSettings:
        return ServedSettings(self.mnemo.settings)


@dataclass
class Turn:
    """A claimed turn: its user (for their share) and the event that cancels it."""

    user: str
    opened: OpenAssistant
    cancel: threading.Event = field(default_factory=threading.Event)
    held: ExitStack = field(default_factory=ExitStack)  # the profile's own lock, when taken


class Hub:
    def __init__(
        self,
        folder_of: Callable[[str], Path],
        model: ModelLoader | None = None,
        archival_url: str | None = None,
        database_url: str | None = None,
        program: str | None = None,
        only: str | None = None,
    ) -> None:
        """``model``: loads the operator's model (default: the bundled one); ``archival_url``:
        object storage (``s3://bucket/prefix?endpoint=…``) under which each new assistant's
        archival memory goes, in ``prefix/USER/ASSISTANT``; ``database_url``: the PostgreSQL
        server that holds each new assistant's other tables (a schema each); None: each
        assistant's own folder. ``program``: a turn also takes the profile's own lock under
        this name (`mnemo serve --local` serves the person's assistants, which a window or
        `mnemo chat` may hold: one of them answers at a time). ``only``: the one assistant of
        the folder that is served (`mnemo serve --local` on a profile chosen by path)."""
        self._folder_of = folder_of
        self._only = only
        self._load_model = model or _bundled_model
        self._archival_url = archival_url
        self._database_url = database_url
        self._program = program
        self._open: dict[tuple[str, str], OpenAssistant] = {}
        self._model: ChatModel | None = None
        self._model_lock = threading.Lock()  # one generation at a time
        self._loading = threading.Lock()
        self._workers = threading.BoundedSemaphore(TURN_WORKERS)
        self._turns: list[Turn] = []
        self._lock = threading.Lock()

    def assistants(self, user: str) -> Assistants:
        return Assistants(self._folder_of(user), self._only)

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
                assistants = self.assistants(user)
                if not assistants.holds(key[1]):
                    raise NotFoundError(f"You have no assistant called {name!r}.")
                self._open[key] = OpenAssistant(Mnemo.open(assistants.folder / key[1]))
            return self._open[key]

    def start_turn(self, user: str, name: str) -> Turn:
        """Claim the assistant for one turn (``run_turn`` gives it back); refused while it is
        answering another message, or while the user has their share of turns running, so
        the client hears 409 or 429 before any stream starts."""
        opened = self.get(user, name)
        with self._lock:
            running = Counter(turn.user for turn in self._turns)[user]
            if running >= TURNS_PER_USER:
                raise TooManyTurnsError(
                    f"You have {running} turns running on this server; send this message "
                    "when one has finished."
                )
            if not opened.turn.acquire(blocking=False):
                raise BusyError(
                    f"{name} is still answering another message; send this one when it has "
                    "finished."
                )
            turn = Turn(user, opened)
            if self._program is not None:
                try:
                    turn.held.enter_context(opened.mnemo.profile.hold_assistant(self._program))
                except MnemoError:
                    opened.turn.release()
                    raise
            self._turns.append(turn)
        return turn

    def run_turn(
        self,
        turn: Turn,
        text: str,
        on_event: Callable[[Event], None],
        conversation_id: str = DEFAULT_CONVERSATION,
        program: str | None = None,
    ) -> TurnFinished:
        """Run a claimed turn once a worker is free (``turn.cancel`` ends it early). A request
        to forget is not a turn: it is said where the person forgets, and nothing is kept. A
        ``program``'s message is its word, not the person's (``Agent.send``)."""
        try:
            if (what := forget.requested(text)) is not None:
                reply = forget.ELSEWHERE.format(what=what)
                for event in (TextStreamed(reply), MessageSent(reply, 0)):
                    on_event(event)
                finished = TurnFinished(reply, 0, "replied")
                on_event(finished)
                return finished
            with self._workers:
                model = self._shared_model()
                with self._model_lock:
                    opened = turn.opened
                    agent = opened.agent
                    if (
                        agent is None
                        or agent.model is not model
                        or agent.conversation_id != conversation_id
                    ):
                        opened.agent = Agent(opened.mnemo, model, conversation_id=conversation_id)
                    assert opened.agent is not None
                    return opened.agent.send(
                        text, on_event=on_event, cancel=turn.cancel, program=program
                    )
        finally:
            self.release_turn(turn)

    def release_turn(self, turn: Turn) -> None:
        """Give a claimed assistant back (``run_turn`` does; a caller that fails before it
        runs the turn must)."""
        with self._lock:
            if turn in self._turns:
                self._turns.remove(turn)
                turn.held.close()
                turn.opened.turn.release()

    def _shared_model(self) -> ChatModel:
        """The operator's model, loaded once; while it loads (seconds), only turns wait."""
        with self._loading:
            if self._model is None:
                self._model = self._load_model()
            return self._model

    def close(self) -> None:
        """Cancel the running turns, give them a moment to end cleanly, and close."""
        with self._lock:
            turns = list(self._turns)
        for turn in turns:
            turn.cancel.set()
        deadline = time.monotonic() + CLOSE_WAIT_S
        while time.monotonic() < deadline:
            with self._lock:
                if not self._turns:
                    break
            time.sleep(0.02)
        with self._lock:
            busy = {id(turn.opened) for turn in self._turns}
            opened, self._open = list(self._open.values()), {}
            model, self._model = self._model, None
        for assistant in opened:
            if id(assistant) not in busy:  # a turn still running closes nothing under it
                assistant.mnemo.close()
        close = getattr(model, "close", None)
        if close is not None and not busy:
            close()


def _bundled_model() -> ChatModel:
    from engine.llm import ModelConfig, load_config

    return load_config(ModelConfig("local", "", "", "", 4096, 0, 0))
