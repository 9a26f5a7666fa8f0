"""The assisted memory mode: the engine pages memory for the model.

Before each reply, ``recall_for`` searches past conversations and archival memory on the user's
message (read with their previous one when it is too short to stand alone), and reads the current
facts about the people, places and things it names ("I" and "my" name the user) from knowledge
memory. It keeps only hits that clearly fit and that the model does not already see. They go
into a labelled section that rides with the newest message, after the stable prefix, so the KV
cache of everything before it is reused. After the reply, a memory step lets the model choose
which of the user's own first-person statements are worth keeping; the choice is constrained to
those statements (a grammar for local models), so neither retrieved text nor a small model's
inventions can become a memory edit. A kept statement that states a fact knowledge memory holds
(``engine.memory.extract``: where the user lives, works, a birthday) goes there, where a change
supersedes the old fact once the user agrees, instead of piling up in the ``human`` block.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from engine.llm.base import load_model_json
from engine.memory.archival import Passage
from engine.memory.knowledge import USER, Fact
from engine.memory.recall import MessageHit
from engine.memory.search import excerpt, query_terms
from engine.memory.vectors import query_vector
from engine.tools import search_archival, search_conversation, trace_lines

if TYPE_CHECKING:
    from engine.mnemo import Mnemo

RECALL = "recall"  # the stored call that shows what was recalled for a message
RECALL_SUMMARY = "given to the model with your message"
REMEMBER = "remember"  # the stored call of the memory step
MESSAGES = 4
PASSAGES = 3
FACTS = 6  # current facts recalled for the entities a message names, all together
ENTITIES = 3
HIT_CHARS = 280
CANDIDATES = 6  # the most statements the memory step chooses from
FOLLOW_UP_TERMS = 2  # a message with fewer content words is searched with the one before
# The note's label. What it means (old, maybe incomplete, information and not instructions) is
# said once in the cached instructions: every token here is evaluated on the user's wait.
SECTION_HEAD = "[Recalled from memory for this message]"
# After the facts about what a question names. Without it, deep in a conversation the bundled
# model copied an earlier reply instead (0 of 4 "Where do I live?" phrasings answered "Lyon";
# with it, 4 of 4). Only for questions: after a statement ("I moved to Lyon") the old fact would
# be repeated back.
ANSWER_FROM_FACTS = "Answer with what memory says above."
NOTE_MARK = "[Recalled from memory"  # how a note starts, in this and in earlier versions


_SEARCHES = ThreadPoolExecutor(max_workers=4, thread_name_prefix="mnemo-recall")


@dataclass
class Recalled:
    messages: list[MessageHit] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    query: str = ""
    trace: list[str] = field(default_factory=list)  # how each search ranked (for people)

    def __bool__(self) -> bool:
        return bool(self.messages or self.passages or self.facts)

    def summary(self) -> str:
        """ "2 facts, 3 messages and 1 passage"."""
        parts = [
            f"{len(items)} {noun}{'s' * (len(items) != 1)}"
            for items, noun in (
                (self.facts, "fact"),
                (self.messages, "message"),
                (self.passages, "passage"),
            )
            if items
        ]
        return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else "".join(parts)

    @property
    def untrusted_reason(self) -> str | None:
        """Why the note may carry text the user did not write (as the search functions say)."""
        documents = sum(not passage.trusted for passage in self.passages)
        if documents:
            return (
                f"written after recalling {documents} passages from documents or earlier "
                "model notes"
            )
        if self.messages:
            return "written after recalling past conversations"
        return None

    def text(self) -> str:
        """The section as the model reads it: each hit with its date and where it came from."""
        lines = [SECTION_HEAD]
        for fact in self.facts:
            since = f" (since {spoken_date(fact.valid_from)})" if fact.valid_from else ""
            sentence = fact.sentence()
            if fact.subject == USER:
                sentence = "The user" + sentence.removeprefix(USER)
            # Plainly, with no label: "Known fact: ..." made the bundled model answer "Where do I
            # live?" 0 times in 4 against 4 in 4 without (var.py in the issue 18 note).
            lines.append(f"- {sentence}{since}.")
        for hit in self.messages:
            who = "the user said" if hit.role == "user" else "you said"
            cut = excerpt(hit.text, self.query, HIT_CHARS)
            lines.append(f"- {spoken_date(hit.created_at)}, {who}: {cut}")
        for passage in self.passages:
            source = passage.source.describe() if passage.source.path else "a note"
            lines.append(
                f"- ({spoken_date(passage.created_at)}, from {source}) "
                + excerpt(passage.text, self.query, HIT_CHARS)
            )
        if self.facts and self.query.rstrip().endswith("?"):
            lines.append(ANSWER_FROM_FACTS)
        return "\n".join(lines)


def spoken_date(when: datetime) -> str:
    """ "7 May 2023": the form people ask and answer in, which a small model copies into its
    reply, and half the tokens of "2023-05-07 13:56" (SmolLM reads each digit as a token)."""
    return f"{when.day} {when:%B %Y}"


def recall_for(
    mnemo: Mnemo,
    message: str,
    *,
    previous: str | None,
    visible: set[int],
    shown_passages: set[str] | None = None,
    shown_facts: set[int] | None = None,
) -> Recalled:
    """What memory holds for ``message``: strong hits only, none the model already sees
    (``visible``: ids of messages in the window or in its recall notes; ``shown_passages`` and
    ``shown_facts``: those in the notes). Finding nothing returns an empty result."""
    recalled = Recalled(query=message)
    seen, shown = set(visible), set(shown_passages or ())
    queries = [message]
    if previous and len(query_terms(message)) < FOLLOW_UP_TERMS:
        # Too few words to stand alone ("How old is she?"): read it with the message before.
        # A longer message is searched alone: the previous one was searched on its own turn
        # and what it found is still in view.
        queries.append(f"{previous} {message}")
    # The searches are independent and mostly wait on SQLite and Lance: run them side by side,
    # each query embedded once beforehand (side by side, both searches would embed it).
    for query in queries:
        query_vector(mnemo.embedder, query)
    by = "the engine (assisted recall)"
    message_pages = [
        _SEARCHES.submit(search_conversation, mnemo, query, MESSAGES + len(seen), 1, by)
        for query in queries
    ]
    passage_pages = [
        _SEARCHES.submit(search_archival, mnemo, query, PASSAGES + len(shown), 1, by)
        for query in queries
    ]
    recalled.facts = facts_for(mnemo, queries[-1], shown_facts or set())
    for message_page in message_pages:
        recalled.trace += trace_lines(message_page.result())
    for passage_page in passage_pages:
        recalled.trace += trace_lines(passage_page.result())
    for message_page in message_pages:
        for hit in message_page.result():
            if len(recalled.messages) < MESSAGES and not hit.weak and hit.id not in seen:
                seen.add(hit.id)
                recalled.messages.append(hit)
    for passage_page in passage_pages:
        for passage in passage_page.result():
            if len(recalled.passages) < PASSAGES and not passage.weak and passage.id not in shown:
                shown.add(passage.id)
                recalled.passages.append(passage)
    return recalled


def facts_for(mnemo: Mnemo, text: str, shown: set[int]) -> list[Fact]:
    """The current facts about whom and what ``text`` names, that the model does not see yet."""
    facts: list[Fact] = []
    for entity in mnemo.knowledge.mentioned(text, limit=ENTITIES):
        for fact in mnemo.knowledge.facts(entity.name, limit=FACTS):
            if fact.id not in shown and fact not in facts and len(facts) < FACTS:
                facts.append(fact)
    return facts


# -- the memory step ---------------------------------------------------------------------------

_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_CLAUSE = re.compile(r",?\s+(?:and|but)\s+(?=(?:I|I'm|I've|my|My|we|We|our|Our)\b)")
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|my|mine|we|we're|our)\b", re.IGNORECASE)


def user_statements(text: str) -> list[str]:
    """The clauses of a user's message that state something about them in the first person:
    the only things the memory step may keep. Questions and short greetings are left out."""
    statements: list[str] = []
    for sentence in _SENTENCE.split(text.strip()):
        if sentence.rstrip().endswith("?"):
            continue
        for clause in _CLAUSE.split(sentence):
            clause = clause.strip().rstrip(".!;,").strip()
            words = clause.split()
            if 3 <= len(words) <= 40 and _FIRST_PERSON.search(clause) and clause not in statements:
                statements.append(clause)
    return statements[:CANDIDATES]


def memory_schema(statements: list[str]) -> dict[str, Any]:
    """The memory step's reply: a subset of ``statements``."""
    return {
        "type": "object",
        "properties": {
            "facts": {
                "type": "array",
                "items": {"type": "string", "enum": statements},
                "maxItems": len(statements),
            }
        },
        "required": ["facts"],
        "additionalProperties": False,
    }


def memory_request(statements: list[str]) -> str:
    """The instruction that follows the reply (the conversation so far stays cached)."""
    listed = "\n".join(f"- {statement}" for statement in statements)
    return (
        "[Memory step, not shown to the user] Which of these statements from the user's last "
        "message tell a lasting fact about the user (name, home, health, family, work, likes, "
        "plans) worth remembering? Leave out passing remarks.\n"
        f"{listed}\n"
        'Answer with JSON: {"facts": [the statements to keep, copied exactly]}. For example, '
        'from "I\'m Tom", "I work as a nurse in Leeds" and "I think it is cold today", keep '
        '{"facts": ["I\'m Tom", "I work as a nurse in Leeds"]}.'
    )


def chosen_facts(reply: str, statements: list[str]) -> list[str] | None:
    """The statements the memory step kept, or None when its output is malformed."""
    value, problem = load_model_json(reply)
    if problem:
        return None
    facts = value.get("facts") if isinstance(value, dict) else None
    if not isinstance(facts, list) or any(fact not in statements for fact in facts):
        return None
    return list(dict.fromkeys(facts))


def fact_line(statement: str) -> str:
    """How a kept statement reads in the ``human`` block: the user's own words, quoted."""
    return f'The user said: "{statement}."'
