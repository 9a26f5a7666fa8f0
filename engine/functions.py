"""The memory functions the model calls, one record each (``FUNCTIONS``): the description and
JSON schema the model reads, an example call, the handler that runs it, the trust rule for its
results, and the line the user sees. A new function is one new record at the end of this file.

Descriptions are written for the model (short, imperative). Results are short text with paging
("showing 5 of 37, page 1 of 8") and a size cap, so one call can never flood the context window.
Arguments are checked against the schema first; a bad call returns an error the model can fix.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

import regex

from engine.errors import MnemoError
from engine.llm.base import FunctionSchema
from engine.memory.archival import NewPassage, Passage
from engine.memory.knowledge import Fact, relation_words, said_to_person
from engine.memory.proposals import Proposal
from engine.memory.recall import MessageHit, RecallTransaction
from engine.memory.search import Page, excerpt
from engine.text import CAPITAL, one_line

if TYPE_CHECKING:
    from engine.mnemo import Mnemo

log = logging.getLogger("mnemo.tools")

SEND_MESSAGE = "send_message"
PAGE_SIZE = 5
HIT_CHARS = 300  # each search hit is cut to this many characters
_WEAK = "weak match"
MESSAGE_CHARS = 1200
CONTENT_CHARS = 400
PASSAGE_CHARS = 1000
QUERY_CHARS = 200
SEARCHED_ROLES = ("user", "assistant")

# What it means is said once, in the system prompt; repeated in all ten functions it cost ~240
# tokens of every prompt.
_HEARTBEAT = {"type": "boolean", "description": "true: act again after this returns"}
_PAGE = {"type": "integer", "minimum": 1, "description": "results page, from 1"}


def _object(properties: dict[str, Any], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": [name for name in properties if name not in optional],
        "additionalProperties": False,
    }


def _text(description: str, max_length: int, min_length: int = 1) -> dict[str, Any]:
    return {
        "type": "string",
        "description": description,
        "minLength": min_length,
        "maxLength": max_length,
    }


# -- checking arguments ------------------------------------------------------------------------


def _check_value(name: str, schema: dict[str, Any], value: Any) -> str | None:
    kind = schema.get("type")
    if kind == "string":
        if not isinstance(value, str):
            return f"{name} must be a string"
        if "enum" in schema and value not in schema["enum"]:
            return f"{name} must be one of {', '.join(map(repr, schema['enum']))}"
        if schema.get("format") == "date":
            try:
                date.fromisoformat(value)
            except ValueError:
                return f"{name} must be a date written YYYY-MM-DD, not {value!r}"
        if schema.get("format") == "date-time":
            try:
                datetime.fromisoformat(value)
            except ValueError:
                return f"{name} must be written YYYY-MM-DD or YYYY-MM-DD HH:MM, not {value!r}"
        if len(value) < schema.get("minLength", 0):
            return f"{name} must not be empty"
        if len(value) > schema.get("maxLength", 10**9):
            return f"{name} is {len(value)} characters; the most is {schema['maxLength']}"
    elif kind == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            return f"{name} must be a whole number"
        if value < schema.get("minimum", value):
            return f"{name} must be at least {schema['minimum']}"
    elif kind == "boolean":
        if not isinstance(value, bool):
            return f"{name} must be true or false"
    elif kind == "array":
        if not isinstance(value, list):
            return f"{name} must be a list"
        if len(value) > schema.get("maxItems", 10**9):
            return f"{name} holds at most {schema['maxItems']} items"
        for item in value:
            problem = _check_value(f"each item of {name}", schema["items"], item)
            if problem:
                return problem
    return None


def check_arguments(function: FunctionSchema, arguments: dict[str, Any]) -> str | None:
    """A sentence listing what is wrong with a call's arguments, or None when they fit."""
    properties: dict[str, Any] = function.parameters["properties"]
    problems = [f"unknown argument {name!r}" for name in arguments if name not in properties]
    problems += [
        f"missing argument {name!r}"
        for name in function.parameters["required"]
        if name not in arguments
    ]
    for name, value in arguments.items():
        if name in properties:
            problem = _check_value(name, properties[name], value)
            if problem:
                problems.append(problem)
    if not problems:
        return None
    return (
        f"{function.name} was called wrongly: {'; '.join(problems)}. "
        f"It takes ({', '.join(properties)})."
    )


# -- running functions -------------------------------------------------------------------------


@dataclass
class ToolContext:
    mnemo: Mnemo
    transaction: RecallTransaction
    conversation_id: str
    call_message_id: int
    untrusted_reason: str | None  # set once this turn has read search results
    max_result_chars: int


@dataclass
class ToolResult:
    text: str
    ok: bool = True
    summary: str = ""  # a few words for the user: "3 of 12 results"
    proposal: Proposal | None = None
    # How many results brought in text the user did not write (documents, earlier model notes,
    # past conversations); the record's trust rule turns it into ``untrusted_reason``.
    untrusted_count: int = 0
    untrusted_reason: str | None = None  # this result brought untrusted text into the context
    passages: list[Passage] = field(default_factory=list)  # what the model read (citations)
    trace: tuple[str, ...] = ()  # how the search ranked its hits, shown to people only


Handler = Callable[[ToolContext, dict[str, Any]], ToolResult]


@dataclass(frozen=True)
class MemoryFunction:
    """Everything about one function the model can call, in one place."""

    name: str
    description: str  # for the model: short and imperative
    # The JSON schema of its arguments, given the schema of a core block label (the labels the
    # model may propose edits to change with the profile).
    parameters: Callable[[dict[str, Any]], dict[str, Any]]
    example: dict[str, Any]  # one typical call's arguments, shown to the model
    handler: Handler | None  # None: the agent itself handles it (send_message ends the step)
    describe: Callable[[dict[str, Any]], str]  # the line the user sees for a call
    # Why a result that brought in text the user did not write makes the conversation's
    # core-memory edits wait for them ("{count}": how many such results); None: it never does.
    untrusted: str | None = None


def _paged(page: Page[Any], lines: list[str], what: str) -> str:
    if page.total == 0:
        return f"No {what} found." + "".join(f" {note}" for note in page.notes)
    head = page.describe()
    if page.page < page.pages:
        head += f"; call again with page={page.page + 1} for more"
    notes = list(page.notes)
    if any(getattr(hit, "weak", False) for hit in page):  # facts are never weak
        notes.append(
            f"Results marked '{_WEAK}' only loosely fit the query: nothing may be stored about it."
        )
    return "\n".join([f"{head}:", *lines, *notes])


def _propose(ctx: ToolContext, arguments: dict[str, Any], action: str) -> ToolResult:
    label = arguments["label"]
    content = arguments["new_content"] if action == "replace" else arguments["content"]
    proposal = ctx.mnemo.proposals.create_in(
        ctx.transaction.session,
        conversation_id=ctx.conversation_id,
        label=label,
        action="replace" if action == "replace" else "append",
        new_content=content,
        old_content=arguments.get("old_content"),
        cause_kind="message",
        cause_ref=str(ctx.call_message_id),
        untrusted_reason=ctx.untrusted_reason,
        auto_approve=ctx.mnemo.settings.core_write_policy == "auto",
    )
    if proposal.status == "approved":
        return ToolResult(f"The {label} block was updated.", summary="applied", proposal=proposal)
    what = "add to" if action == "append" else "change"
    return ToolResult(
        f"Proposal {proposal.id} to {what} the {label} block is pending the user's approval; "
        "core memory changes once they approve.",
        summary=f"proposal {proposal.id} waits for approval",
        proposal=proposal,
    )


def _archival_insert(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    until = arguments.get("expires_at")
    same = ctx.mnemo.archival.find_duplicate(arguments["content"], "model")
    if same is not None:
        return ToolResult(
            f"Already in archival memory (passage {same.id[:8]}: "
            f"{excerpt(same.text, '', 120)}); nothing was added.",
            summary="already stored",
        )
    passage_id = ctx.mnemo.archival.insert_many(
        [
            NewPassage(
                arguments["content"],
                source=ctx.call_message_id,
                tags=arguments.get("tags", []),
                origin="model",
                expires_at=until,
            )
        ]
    )[0]
    kept = f", until {until}" if until else ""
    return ToolResult(
        f"Stored in archival memory (passage {passage_id[:8]}{kept}).", summary="stored"
    )


def search_archival(
    mnemo: Mnemo, query: str, limit: int = PAGE_SIZE, page: int = 1, by: str = "the model"
) -> Page[Passage]:
    """The search behind `archival_memory_search` (benchmarks call exactly this)."""
    found = mnemo.archival.search(query, limit=limit, page=page)
    if found.trace is not None:
        found.trace.by = by
    return found


def search_conversation(
    mnemo: Mnemo,
    query: str,
    limit: int = PAGE_SIZE,
    page: int = 1,
    by: str = "the model",
) -> Page[MessageHit]:
    """The search behind `conversation_search` (benchmarks call exactly this)."""
    found = mnemo.recall.search(query, limit=limit, page=page, roles=SEARCHED_ROLES)
    if found.trace is not None:
        found.trace.by = by
    return found


def trace_lines(page: Page[Any]) -> tuple[str, ...]:
    return tuple(page.trace.lines()) if page.trace is not None else ()


def _archival_search(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    page = search_archival(ctx.mnemo, arguments["query"], page=arguments.get("page", 1))
    lines = []
    for hit in page:
        origin = {"document": "from a document", "model": "saved by you"}.get(hit.origin, "")
        source = hit.source.describe() if hit.source.path else ""
        where = ", ".join(
            part
            for part in (
                f"id {hit.id[:8]}",
                hit.created_at.date().isoformat(),
                f"until {hit.expires_at:%Y-%m-%d %H:%M}" if hit.expires_at else "",
                origin,
                source,
                _WEAK * hit.weak,
            )
            if part
        )
        lines.append(f"- ({where}) {excerpt(hit.text, arguments['query'], HIT_CHARS)}")
    return ToolResult(
        _paged(page, lines, "passages"),
        summary=f"{len(page)} of {page.total} passages",
        passages=list(page),
        untrusted_count=sum(not hit.trusted for hit in page),
        trace=trace_lines(page),
    )


def _message_lines(page: Page[Any], query: str = "") -> list[str]:
    """One line per message: its date, its role, and the part of it that matched ``query``."""
    return [
        f"- [{hit.created_at:%Y-%m-%d %H:%M}{', ' + _WEAK if hit.weak else ''}] {hit.role}: "
        + excerpt(hit.text, query, HIT_CHARS)
        for hit in page
    ]


def messages_text(page: Page[Any], what: str, query: str = "") -> str:
    """A page of messages as the model reads it (and an MCP client): one line each, paged."""
    return _paged(page, _message_lines(page, query), what)


def _conversation_search(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    page = search_conversation(ctx.mnemo, arguments["query"], page=arguments.get("page", 1))
    return ToolResult(
        messages_text(page, "messages", arguments["query"]),
        summary=f"{len(page)} of {page.total} messages",
        untrusted_count=len(page),
        trace=trace_lines(page),
    )


def _conversation_search_date(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    start, end = arguments["start_date"], arguments["end_date"]
    if start > end:
        return ToolResult(
            f"start_date {start} is after end_date {end}; swap them.", ok=False, summary="error"
        )
    page = ctx.mnemo.recall.search_by_date(
        start, end, limit=PAGE_SIZE, page=arguments.get("page", 1), roles=SEARCHED_ROLES
    )
    return ToolResult(
        messages_text(page, f"messages between {start} and {end}"),
        summary=f"{len(page)} of {page.total} messages",
        untrusted_count=len(page),
    )


def fact_source(fact: Fact) -> str:
    """Where a fact came from, in a few words."""
    who = {"user": "the user", "model": "you", "document": "a document"}.get(
        fact.asserted_by, fact.asserted_by
    )
    where = f" in message {fact.source_ref}" if fact.source_kind == "message" else ""
    if fact.source_kind == "document" and fact.source_ref:
        where = f" in {fact.source_ref}"
    return f"said by {who}{where}, {fact.learned_at:%Y-%m-%d}"


def _knowledge_search(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    knowledge = ctx.mnemo.knowledge
    name, relation = arguments["entity"], arguments.get("relation")
    entity = knowledge.resolve(name)
    if entity is None:
        close = [found.name for found in knowledge.find(name, limit=3)]
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        return ToolResult(f"Knowledge memory knows no one and nothing called {name!r}.{hint}")
    page = knowledge.facts(entity.name, relation, limit=PAGE_SIZE, page=arguments.get("page", 1))
    lines = [
        f"- [fact {fact.id}] {fact.sentence()}"
        + (f" (since {fact.valid_from:%Y-%m-%d})" if fact.valid_from else "")
        + f"; {fact_source(fact)}"
        for fact in page
    ]
    what = f"current facts about {entity.name}" + (
        f" ({relation_words(relation)})" if relation else ""
    )
    return ToolResult(
        _paged(page, lines, what),
        summary=f"{len(page)} of {page.total} facts",
        untrusted_count=sum(fact.asserted_by != "user" for fact in page),
    )


def _knowledge_add(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """Store a fact at once when the turn is trusted and nothing contradicts it; else the user
    decides (a contradiction shows old and new side by side)."""
    subject, relation, obj = arguments["subject"], arguments["relation"], arguments["object"]
    valid_from, until = arguments.get("valid_from"), arguments.get("expires_at")
    source = {"source_kind": "message", "source_ref": str(ctx.call_message_id)}
    knowledge = ctx.mnemo.knowledge
    if knowledge.holds(subject, relation, obj):
        return ToolResult(f"Already known: {subject} {relation_words(relation)} {obj}.")
    current = knowledge.contradicted(subject, relation, obj)
    if ctx.untrusted_reason is None:
        stored = ctx.mnemo.knowledge.add_in(
            ctx.transaction.session,
            subject,
            relation,
            obj,
            valid_from=valid_from,
            asserted_by="model",
            expires_at=until,
            **source,  # type: ignore[arg-type]
        )
        if isinstance(stored, Fact):
            return ToolResult(f"Stored: {stored.sentence()} (fact {stored.id}).", summary="stored")
        current = stored.current
    return propose_fact(
        ctx.mnemo,
        ctx.transaction.session,
        ctx.conversation_id,
        subject=subject,
        relation=relation,
        obj=obj,
        current=current,
        valid_from=valid_from,
        asserted_by="model",
        untrusted_reason=ctx.untrusted_reason,
        **source,
    )


def propose_fact(
    mnemo: Mnemo,
    session: Any,
    conversation_id: str,
    *,
    subject: str,
    relation: str,
    obj: str,
    current: tuple[Fact, ...],
    valid_from: str | None,
    asserted_by: str,
    untrusted_reason: str | None,
    source_kind: str,
    source_ref: str | None,
) -> ToolResult:
    """A fact that waits for the user, as the model is told of it (the assisted memory step
    and document extraction propose the same way)."""
    entity = mnemo.knowledge.resolve(subject)
    proposal = mnemo.proposals.create_fact_in(
        session,
        conversation_id=conversation_id,
        subject=entity.name if entity else subject,
        predicate=relation,
        obj=obj,
        current=current,
        valid_from=valid_from,
        source_kind=source_kind,
        source_ref=source_ref,
        asserted_by=asserted_by,
        untrusted_reason=untrusted_reason,
        auto_approve=mnemo.settings.core_write_policy == "auto",
    )
    if proposal.status == "approved":
        return ToolResult(f"Stored: {proposal.new_fact()}.", summary="applied", proposal=proposal)
    why = (
        f"it contradicts what is known ({proposal.old_content})"
        if current
        else "it comes from text the user did not write"
    )
    return ToolResult(
        f"Proposal {proposal.id} ({proposal.new_fact()}) waits for the user's approval, "
        f"because {why}.",
        summary=f"proposal {proposal.id} waits for approval",
        proposal=proposal,
    )


def _own_note(ctx: ToolContext, short_id: str) -> Passage:
    """A passage the model may change: a note, not a document's text."""
    passage = ctx.mnemo.archival.by_short_id(short_id)
    if passage.origin == "document":
        raise MnemoError(
            f"Passage {short_id} comes from the document {passage.source.describe()} and changes "
            "only with that file; store a correction with archival_memory_insert instead."
        )
    return passage


def _archival_change(ctx: ToolContext, short_id: str, text: str) -> ToolResult:
    """Correct (``text``) or delete (empty) a note: at once in a trusted turn, else proposed."""
    passage = _own_note(ctx, short_id)
    verb = "corrected" if text else "deleted"
    if ctx.untrusted_reason is None:
        if text:
            ctx.mnemo.archival.update(passage.id, text)
        else:
            ctx.mnemo.archival.delete(passage.id)
        return ToolResult(f"Passage {passage.id[:8]} was {verb}.", summary=verb)
    proposal = ctx.mnemo.proposals.create_passage_in(
        ctx.transaction.session,
        conversation_id=ctx.conversation_id,
        passage_id=passage.id,
        old_text=passage.text,
        new_text=text,
        cause_ref=str(ctx.call_message_id),
        untrusted_reason=ctx.untrusted_reason,
    )
    return ToolResult(
        f"Proposal {proposal.id} to {'correct' if text else 'delete'} passage {passage.id[:8]} "
        "waits for the user's approval (you read text the user did not write this turn).",
        summary=f"proposal {proposal.id} waits for approval",
        proposal=proposal,
    )


# A number, or a date or time written with - / : ("2026-12-23", "01:35"): one value, never
# its parts, which would match any "12" or "23" a document holds.
_NUMBER = re.compile(r"\d(?:[\d,.:/-]*\d)?")
_SENTENCE = re.compile(r"(?<=[.!?:\n])\s+")
_CAPITALISED = regex.compile(rf"\b{CAPITAL}[\w'-]+")


_WORD = re.compile(r"\w+")


def specific_values(text: str) -> set[str]:
    """What only a source can tell: its numbers ("1,200" as "1200"; a date as one value; not a
    lone digit) and the names it gives (words capitalised inside a sentence), casefolded.
    Common words are shared by chance; an answer taken from a document carries one of these."""
    numbers = {
        number.replace(",", "")
        for number in _NUMBER.findall(text)
        if len(number) > 1  # a lone digit ("1 January", "step 2") is in every text
    }
    names = {
        name.casefold()
        for sentence in _SENTENCE.split(text)
        for word in sentence.split()[1:]  # a sentence's first word is capitalised anyway
        for name in _CAPITALISED.findall(word)
    }
    return numbers | names


def cited_passages(reply: str, passages: list[Passage], question: str = "") -> list[Passage]:
    """The document passages the model read this turn that its reply uses: those that hold a
    value the reply states and the question did not bring, a number or a name
    (``specific_values``). Shared common words prove nothing: a reply that echoes "the
    plumber's phone number", or retells the lease in words of its own, has used no document;
    one that says "0117 496 0321", or "your electrician is Kim", has."""
    asked = specific_values(question) | {word.casefold() for word in _WORD.findall(question)}
    said = specific_values(reply) - asked
    cited: dict[tuple[str, str | None], Passage] = {}
    for passage in passages:
        if not passage.source.path:
            continue  # a note has no file to open
        if specific_values(passage.text) & said:
            cited.setdefault((passage.source.path, passage.source.section), passage)
    return list(cited.values())


# -- the functions ---------------------------------------------------------------------------------


def _quoted(arguments: dict[str, Any], key: str) -> str:
    return repr(one_line(str(arguments.get(key, "")), 60))


def _searched(arguments: dict[str, Any], what: str) -> str:
    return f"searched {what} for {_quoted(arguments, 'query')}"


def _search_parameters(_label: dict[str, Any]) -> dict[str, Any]:
    return _object(
        {
            "query": _text("what to look for", QUERY_CHARS),
            "page": _PAGE,
            "request_heartbeat": _HEARTBEAT,
        },
        optional=("page",),
    )


CONVERSATION_RESULTS = "written after reading conversation search results"

FUNCTIONS: tuple[MemoryFunction, ...] = (
    MemoryFunction(
        SEND_MESSAGE,
        "Send a message to the user. The user sees nothing else you write.",
        lambda _label: _object({"message": _text("what to say", MESSAGE_CHARS)}),
        {"message": "Hello! How can I help you today?"},
        None,
        lambda _arguments: "replied",
    ),
    MemoryFunction(
        "core_memory_append",
        "Propose adding a line to a core memory block (the user approves it).",
        lambda label: _object(
            {
                "label": label,
                "content": _text("the line to add", CONTENT_CHARS),
                "request_heartbeat": _HEARTBEAT,
            }
        ),
        {"label": "human", "content": "Is vegetarian.", "request_heartbeat": True},
        lambda ctx, arguments: _propose(ctx, arguments, "append"),
        lambda arguments: (
            f"proposed adding to {arguments.get('label')}: {_quoted(arguments, 'content')}"
        ),
    ),
    MemoryFunction(
        "core_memory_replace",
        "Propose replacing exact text in a core memory block; empty new_content deletes it.",
        lambda label: _object(
            {
                "label": label,
                "old_content": _text("the exact text to replace", CONTENT_CHARS),
                "new_content": _text("the new text", CONTENT_CHARS, min_length=0),
                "request_heartbeat": _HEARTBEAT,
            }
        ),
        {
            "label": "human",
            "old_content": "Lives in Paris.",
            "new_content": "Lives in Lyon.",
            "request_heartbeat": True,
        },
        lambda ctx, arguments: _propose(ctx, arguments, "replace"),
        lambda arguments: (
            f"proposed changing {arguments.get('label')}: {_quoted(arguments, 'old_content')} → "
            + _quoted(arguments, "new_content")
        ),
    ),
    MemoryFunction(
        "archival_memory_insert",
        "Store a fact or note in archival memory, to find it later by search.",
        lambda _label: _object(
            {
                "content": _text("the text to store", PASSAGE_CHARS),
                "tags": {
                    "type": "array",
                    "items": _text("a tag", 30),
                    "maxItems": 5,
                    "description": "optional short tags",
                },
                "expires_at": {
                    "type": "string",
                    "format": "date-time",
                    "description": "when it stops mattering (YYYY-MM-DD HH:MM), if it does",
                },
                "request_heartbeat": _HEARTBEAT,
            },
            optional=("tags", "expires_at"),
        ),
        {"content": "Wifi password: tulip42.", "request_heartbeat": True},
        _archival_insert,
        lambda arguments: f"saved to archival memory: {_quoted(arguments, 'content')}",
    ),
    MemoryFunction(
        "archival_memory_search",
        "Search archival memory (stored facts and the user's documents) by meaning and words.",
        _search_parameters,
        {"query": "tax documents", "request_heartbeat": True},
        _archival_search,
        lambda arguments: _searched(arguments, "archival memory"),
        untrusted="written after reading {count} archival passages from documents or earlier "
        "model notes",
    ),
    MemoryFunction(
        "conversation_search",
        "Search all past conversation messages by words and meaning.",
        _search_parameters,
        {"query": "car repair", "request_heartbeat": True},
        _conversation_search,
        lambda arguments: _searched(arguments, "past conversations"),
        untrusted=CONVERSATION_RESULTS,
    ),
    MemoryFunction(
        "conversation_search_date",
        "List past conversation messages between two dates (YYYY-MM-DD, inclusive).",
        lambda _label: _object(
            {
                "start_date": {"type": "string", "format": "date", "description": "first day"},
                "end_date": {"type": "string", "format": "date", "description": "last day"},
                "page": _PAGE,
                "request_heartbeat": _HEARTBEAT,
            },
            optional=("page",),
        ),
        {"start_date": "2026-03-01", "end_date": "2026-03-07", "request_heartbeat": True},
        _conversation_search_date,
        lambda arguments: (
            f"looked up conversations from {arguments.get('start_date')} "
            f"to {arguments.get('end_date')}"
        ),
        untrusted=CONVERSATION_RESULTS,
    ),
    MemoryFunction(
        "archival_memory_update",
        "Correct a note in archival memory, by the id shown in search results.",
        lambda _label: _object(
            {
                "passage_id": _text("the passage id", 36),
                "content": _text("the corrected text", PASSAGE_CHARS),
                "request_heartbeat": _HEARTBEAT,
            }
        ),
        {"passage_id": "1a2b3c4d", "content": "Wifi password: rose77.", "request_heartbeat": True},
        lambda ctx, arguments: _archival_change(ctx, arguments["passage_id"], arguments["content"]),
        lambda arguments: f"corrected archival note {arguments.get('passage_id')}",
    ),
    MemoryFunction(
        "archival_memory_delete",
        "Delete a wrong or outdated note from archival memory, by its id.",
        lambda _label: _object(
            {"passage_id": _text("the passage id", 36), "request_heartbeat": _HEARTBEAT}
        ),
        {"passage_id": "1a2b3c4d", "request_heartbeat": True},
        lambda ctx, arguments: _archival_change(ctx, arguments["passage_id"], ""),
        lambda arguments: f"deleted archival note {arguments.get('passage_id')}",
    ),
    MemoryFunction(
        "knowledge_search",
        "List what is known about a person, place or thing (optionally one relation).",
        lambda _label: _object(
            {
                "entity": _text("a name, or 'user' for the user", 200),
                "relation": _text("e.g. lives_in, works_at, birthday", 60),
                "page": _PAGE,
                "request_heartbeat": _HEARTBEAT,
            },
            optional=("relation", "page"),
        ),
        {"entity": "user", "relation": "lives_in", "request_heartbeat": True},
        _knowledge_search,
        lambda arguments: f"looked up what is known about {_quoted(arguments, 'entity')}",
        untrusted="written after reading {count} facts that a model or a document asserted",
    ),
    MemoryFunction(
        "knowledge_add",
        "Record a fact about a person, place or thing (a change the user confirms).",
        lambda _label: _object(
            {
                "subject": _text("who or what: a name, or 'user'", 200),
                "relation": _text("e.g. lives_in, works_at, birthday, sister", 60),
                "object": _text("the value: a name, place or date", 200),
                "valid_from": {
                    "type": "string",
                    "format": "date",
                    "description": "since when it holds (YYYY-MM-DD), if known",
                },
                "expires_at": {
                    "type": "string",
                    "format": "date-time",
                    "description": "when it stops holding (YYYY-MM-DD HH:MM), if known",
                },
                "request_heartbeat": _HEARTBEAT,
            },
            optional=("valid_from", "expires_at"),
        ),
        {"subject": "user", "relation": "lives_in", "object": "Lyon", "request_heartbeat": True},
        _knowledge_add,
        lambda arguments: (
            f"recorded: {arguments.get('subject')} "
            f"{relation_words(str(arguments.get('relation', '')))} {_quoted(arguments, 'object')}"
        ),
    ),
)
BY_NAME = {function.name: function for function in FUNCTIONS}

# The calls the engine makes itself in the assisted mode (engine.agent.assisted_turn): stored and
# shown like the model's, never offered to it.
ENGINE_CALLS: dict[str, Callable[[dict[str, Any]], str]] = {
    "recall": lambda arguments: f"recalled {arguments.get('found', 'memory')}",
    "remember": lambda arguments: (
        "noted from your message: "
        + repr(
            one_line(
                "; ".join(
                    said_to_person(str(said))
                    for said in arguments.get("knowledge") or arguments.get("facts") or []
                ),
                80,
            )
        )
        if arguments.get("knowledge") or arguments.get("facts")
        else f"corrected from your message: {arguments.get('correction', '')}"
    ),
}


def function_schemas(labels: list[str]) -> list[FunctionSchema]:
    """Every memory function; ``labels`` are the core blocks the model may propose edits to."""
    label = {"type": "string", "enum": labels, "description": "the core memory block"}
    return [
        FunctionSchema(
            function.name,
            function.description,
            function.parameters(label),
            example=function.example,
        )
        for function in FUNCTIONS
    ]


def run_function(ctx: ToolContext, name: str, arguments: dict[str, Any]) -> ToolResult:
    """Run a checked call; failures become results the model can read and act on."""
    function = BY_NAME[name]
    assert function.handler is not None, f"{name} is handled by the agent"
    try:
        result = function.handler(ctx, arguments)
    except MnemoError as error:
        return ToolResult(f"{name} failed: {error}", ok=False, summary="failed")
    except Exception as error:
        log.exception("%s failed", name)
        return ToolResult(
            f"{name} failed unexpectedly ({type(error).__name__}: {error}).",
            ok=False,
            summary="failed",
        )
    if function.untrusted and result.untrusted_count:
        result.untrusted_reason = function.untrusted.format(count=result.untrusted_count)
    if len(result.text) > ctx.max_result_chars:
        result.text = (
            result.text[: ctx.max_result_chars - 60].rstrip()
            + "\n… (cut to fit the context window; search more narrowly)"
        )
    return result


def describe_call(name: str, arguments: dict[str, Any]) -> str:
    """A compact line for the user: what the model (or the engine, for it) did."""
    if name in BY_NAME:
        return BY_NAME[name].describe(arguments)
    if name in ENGINE_CALLS:
        return ENGINE_CALLS[name](arguments)
    return f"called {name}"
