"""A chat-completions turn without its HTTP: the conversation it goes to, the request's earlier
messages stored as history, and the record of what memory did. The server runs it with its own
agent; Mnemo's window runs it when it holds the assistant (``engine.server.handoff``)."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from engine.agent.loop import sent_by
from engine.events import (
    Event,
    FunctionCalled,
    FunctionReturned,
    MessageSent,
    Notice,
    ProposalApplied,
    ProposalCreated,
    TextStreamed,
    TurnFinished,
)
from engine.mnemo import Mnemo

API_ORIGIN = "API"  # the origin of conversations a client names


def program_name(user_agent: str | None) -> str:
    """How a program that chats through the server is named to the person: its User-Agent's
    product ("OpenAI/Python"), else "another program"."""
    return (user_agent or "another program").split(" ")[0][:80] or "another program"


def named_conversation(mnemo: Mnemo, name: str) -> str:
    """The id of the conversation a client names (its ``user`` field or header): a keyed hash
    of the name, like a tombstone's, so that the id gives no name away (a forgotten one least)."""
    return "api-" + mnemo.tombstones.keyed(name)


def _unkeyed(name: str) -> str:
    """The id an older Mnemo gave the conversation a client names."""
    return "api-" + hashlib.sha256(name.encode()).hexdigest()[:12]


def conversation_for(mnemo: Mnemo, name: str | None) -> str:
    """The conversation a request names (made the first time), else the assistant's current.
    One an older Mnemo named by an unkeyed hash moves to its keyed id."""
    if not name:
        return mnemo.conversations.current()
    conversation_id = named_conversation(mnemo, name)
    older = _unkeyed(name)
    if not mnemo.conversations.exists(conversation_id) and mnemo.conversations.exists(older):
        mnemo.recall.move_conversation(older, conversation_id)
    return mnemo.conversations.ensure(conversation_id, name, API_ORIGIN)


def store_history(
    mnemo: Mnemo,
    conversation_id: str,
    earlier: Sequence[tuple[str, str]],
    program: str | None = None,
) -> list[tuple[str, str]]:
    """Store the request's earlier (role, text) user and assistant messages that the
    conversation does not hold yet (compared by role and text); return those stored. A
    ``program``'s history is its word, not the person's (``sent_by``)."""
    recall = mnemo.recall
    held = Counter(
        (hit.role, hit.text.strip())
        for hit in recall.recent(2 * len(earlier) + 20, conversation_id)
    )
    stored = []
    for role, raw in earlier:
        text = raw.strip()
        if role not in ("user", "assistant") or not text:
            continue  # the client's system prompt and tool messages are not the person's chat
        if held[(role, text)] > 0:
            held[(role, text)] -= 1
            continue
        reason = None if program is None else sent_by(program)
        recall.add(role, text, conversation_id=conversation_id, untrusted_reason=reason)
        stored.append((role, text))
    return stored


class TurnRecord:
    """What a turn did besides its reply, for the ``mnemo`` extension field."""

    def __init__(self, conversation_id: str, history: int = 0) -> None:
        self.conversation_id = conversation_id
        self.history = history
        self.calls: list[dict[str, Any]] = []
        self.proposals: list[dict[str, Any]] = []
        self.notices: list[str] = []
        self.sources: list[str] = []
        self.reply = ""

    def add(self, event: Event) -> None:
        if isinstance(event, FunctionCalled):
            self.calls.append({"name": event.name, "description": event.description})
        elif isinstance(event, FunctionReturned) and self.calls:
            self.calls[-1].update(ok=event.ok, summary=event.summary)
        elif isinstance(event, ProposalCreated | ProposalApplied):
            proposal = event.proposal
            self.proposals.append(
                {"id": proposal.id, "status": proposal.status, "change": proposal.describe()}
            )
        elif isinstance(event, Notice):
            self.notices.append(event.text)
        elif isinstance(event, MessageSent):
            self.reply = event.text
            self.sources = [citation.label() for citation in event.sources]

    def extension(self) -> dict[str, Any]:
        return {
            "conversation": self.conversation_id,
            "history_stored": self.history,
            "calls": self.calls,
            "proposals": self.proposals,
            "notices": self.notices,
            "sources": self.sources,
        }

    def failure(self, finished: TurnFinished) -> str | None:
        """Why a turn that ended without a reply gave none (the notice the window shows), for
        the client's error; None when it replied."""
        if self.reply or finished.reply:
            return None
        return self.notices[-1] if self.notices else "The assistant gave no reply."

    def take(self, extension: dict[str, Any], reply: str) -> None:
        """Fill the record from another process's (the window's) finished turn."""
        self.conversation_id = str(extension.get("conversation", self.conversation_id))
        self.history = int(extension.get("history_stored", 0))
        for key in ("calls", "proposals", "notices", "sources"):
            value = extension.get(key)
            if isinstance(value, list):
                setattr(self, key, value)
        self.reply = reply


class ReplyForClient:
    """What an API client is sent of the reply, piece by piece (``send``).

    In assisted mode a reply that repeated an earlier one, read its prompt back or ignored what
    memory found is written again, and the window takes the shown text back; an API client
    cannot, and would send the mixed text back as history on its next request. So in assisted
    mode the client gets the reply once it is settled (the ``MessageSent``), while a
    self-managed model's reply, never written twice, streams as it is written. ``live`` says
    which, asked at the first piece (the agent exists by then)."""

    def __init__(self, live: Callable[[], bool], send: Callable[[str], None]) -> None:
        self._live = live
        self._send = send
        self._streaming: bool | None = None

    def add(self, event: Event) -> None:
        if isinstance(event, TextStreamed):
            if self._streaming is None:
                self._streaming = self._live()
            if self._streaming:
                self._send(event.text)
        elif isinstance(event, MessageSent) and not self._streaming:
            self._send(event.text)
