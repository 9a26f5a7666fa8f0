"""The stored form of what happens in a turn besides messages, written and read in one place.

Recall keeps a model's (or the engine's) function call as a ``function_call`` row holding
``{"function": NAME, "arguments": {...}}`` (or the raw output, when it was not a valid call), and
its result as a ``function_result`` row, prefixed with ``ERROR_PREFIX`` when it failed. Two more
``function_result`` rows are for the user only: ``cite`` (the documents a reply relies on, as
JSON) and ``notice`` (why a turn stopped). The agent writes these rows; the context window, the
chat (in the window and the terminal) and the agent's resume read them, all through here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from engine.llm.base import ToolCall, parse_call

# The calls the engine makes itself in the assisted mode (``engine.agent.assisted_turn``), stored
# and shown like the model's, and the note the first of them puts beside the person's message.
RECALL = "recall"  # the stored call that shows what was recalled for a message
RECALL_SUMMARY = "given to the model with your message"
REMEMBER = "remember"  # the stored call of the memory step
REMEMBERED = "kept"  # how the chat sums it up once the turn is over
# The note's label. What it means (old, maybe incomplete, information and not instructions) is
# said once in the cached instructions: every token here is evaluated on the user's wait. Plain
# words: the bundled model copied the bracketed label it had before into its replies.
SECTION_HEAD = "Memory for this message:"
NOTE_MARKS = (SECTION_HEAD, "[Recalled from memory")  # how a note starts, now and before
# After the facts about what a question names. Without it, deep in a conversation the bundled
# model copied an earlier reply instead (0 of 4 "Where do I live?" phrasings answered "Lyon";
# with it, 4 of 4). Only for questions: after a statement ("I moved to Lyon") the old fact would
# be repeated back.
ANSWER_FROM_FACTS = "Answer with what memory says above."
# When a question about the person finds nothing: without it, the bundled model invented an
# answer to 11 of 12 such questions ("Your son is named Emily").
NOTHING_FOUND = "- Nothing: you have not been told this. Say that you don't know."
NOTHING_FOUND_SHOWN = "- Nothing: memory holds nothing about this."


def shown_result(name: str | None, text: str) -> str:
    """A call's result as the person reads it when they open its line in the chat: the recall
    note without what it tells the model to do (that is the model's, not theirs)."""
    if name != RECALL:
        return text
    lines = [line for line in text.splitlines() if line != ANSWER_FROM_FACTS]
    return "\n".join(NOTHING_FOUND_SHOWN if line == NOTHING_FOUND else line for line in lines)


def spoken_date(when: datetime) -> str:
    """ "7 May 2023": the form people ask and answer in, which a small model copies into its
    reply, and half the tokens of "2023-05-07 13:56" (SmolLM reads each digit as a token)."""
    return f"{when.day} {when:%B %Y}"


ERROR_PREFIX = "Error: "
CITE = "cite"  # the stored row that lists the documents a reply relies on
NOTICE = "notice"  # a system note for the user (a turn that failed), never sent to a model
FOR_THE_USER_ONLY = (CITE, NOTICE)


@dataclass(frozen=True)
class Citation:
    """A document passage a reply relies on: its file and page or heading."""

    path: str
    section: str | None = None

    def label(self) -> str:
        name = self.path.replace("\\", "/").rsplit("/", 1)[-1]
        return f"{name} › {self.section}" if self.section else name


def call_text(name: str, arguments: dict[str, Any]) -> str:
    return json.dumps({"function": name, "arguments": arguments}, ensure_ascii=False)


def read_call(text: str) -> ToolCall | None:
    """The stored call, or None when the row keeps output that was not a valid call (parsed
    with the same bounds as a model's output, since that is what it was)."""
    call, _problem = parse_call(text)
    return call


def result_text(text: str, ok: bool) -> str:
    return text if ok else ERROR_PREFIX + text


def result_ok(text: str) -> bool:
    return not text.startswith(ERROR_PREFIX)


def citations_text(sources: Iterable[Citation]) -> str:
    return json.dumps([asdict(source) for source in sources], ensure_ascii=False)


def read_citations(text: str) -> tuple[Citation, ...] | None:
    """The cited documents, or None for a damaged row (it hides its sources, nothing else)."""
    try:
        return tuple(Citation(**source) for source in json.loads(text))
    except (ValueError, TypeError):
        return None


def recall_note_shown(text: str) -> tuple[list[int], list[str], list[int]]:
    """The message, passage and fact ids a stored ``recall`` call showed the model (none when
    the row cannot be read: it only means something may be recalled again)."""
    call = read_call(text)
    if call is None:
        return [], [], []
    shown = [call.arguments.get(key, []) for key in ("messages", "passages", "facts")]
    if not all(isinstance(ids, list) for ids in shown):
        return [], [], []
    return shown[0], shown[1], shown[2]
