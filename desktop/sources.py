"""Where something in memory came from, said to the person: the words of the message it was
taken from, never "message 71" (an id means nothing to them)."""

from __future__ import annotations

from desktop.assistant_memory import AssistantMemory
from engine.agent.assisted_rules import own_words
from engine.memory.archival import Source
from engine.transcript import Citation

QUOTED_CHARS = 120
SPEAKERS = {"user": "you said", "assistant": "the assistant said"}


def from_message(memory: AssistantMemory, message_id: int) -> str:
    """ "you said: “I live in Porto”", or that the message was deleted since."""
    try:
        message = memory.recall.get(message_id)
    except Exception:  # deleted or forgotten since: what came from it stays
        return "a message deleted since"
    words = " ".join(message.text.split())
    if len(words) > QUOTED_CHARS:
        words = words[:QUOTED_CHARS].rstrip() + "…"
    return f"{SPEAKERS.get(message.role, 'a search in the conversation')}: “{words}”"


def passage_source(memory: AssistantMemory, source: Source) -> str:
    """A passage's origin: its file and place ("lease.md › Rent", as a reply cites it; not
    "/home/…/lease.md, Rent, chunk 0"), the message it was noted from, or by hand."""
    if source.path:
        return Citation(source.path, source.section).label()
    if source.message_id is None:
        return source.describe()
    return from_message(memory, source.message_id)


def note_as_said(text: str) -> str:
    """A note kept of the person's own words as they read it: "You said: “…”", not the
    model's "The user said: …"."""
    words = own_words(text)
    return f"You said: “{words}.”" if words is not None else text
