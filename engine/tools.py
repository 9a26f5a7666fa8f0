"""The memory functions the model calls: their JSON schemas and what they do.

Descriptions are written for the model (short, imperative). Results are short text with paging
("showing 5 of 37, page 1 of 8") and a size cap, so one call can never flood the context window.
Arguments are checked against the schema first; a bad call returns an error the model can fix.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import date
from functools import cache
from typing import TYPE_CHECKING, Any

from engine.errors import MnemoError
from engine.llm.base import FunctionSchema
from engine.memory.archival import Passage
from engine.memory.proposals import Proposal
from engine.memory.recall import MessageHit, RecallTransaction
from engine.memory.search import Page, excerpt, query_terms
from engine.resources import resource_path
from engine.text import one_line

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

_HEARTBEAT = {
    "type": "boolean",
    "description": "true to act again right after this returns (e.g. to answer after a search); "
    "false to wait for the user",
}
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


@cache
def _examples() -> dict[str, dict[str, Any]]:
    examples: dict[str, dict[str, Any]] = json.loads(
        resource_path("prompts/examples.json").read_text("utf-8")
    )
    return examples


def function_schemas(labels: list[str]) -> list[FunctionSchema]:
    """Every memory function; ``labels`` are the core blocks the model may propose edits to."""
    label = {"type": "string", "enum": labels, "description": "the core memory block"}
    schemas = [
        FunctionSchema(
            SEND_MESSAGE,
            "Send a message to the user. The user sees nothing else you write.",
            _object({"message": _text("what to say", MESSAGE_CHARS)}),
        ),
        FunctionSchema(
            "core_memory_append",
            "Propose adding a line to a core memory block (the user approves it).",
            _object(
                {
                    "label": label,
                    "content": _text("the line to add", CONTENT_CHARS),
                    "request_heartbeat": _HEARTBEAT,
                }
            ),
        ),
        FunctionSchema(
            "core_memory_replace",
            "Propose replacing exact text in a core memory block; empty new_content deletes it.",
            _object(
                {
                    "label": label,
                    "old_content": _text("the exact text to replace", CONTENT_CHARS),
                    "new_content": _text("the new text", CONTENT_CHARS, min_length=0),
                    "request_heartbeat": _HEARTBEAT,
                }
            ),
        ),
        FunctionSchema(
            "archival_memory_insert",
            "Store a fact or note in archival memory, to find it later by search.",
            _object(
                {
                    "content": _text("the text to store", PASSAGE_CHARS),
                    "tags": {
                        "type": "array",
                        "items": _text("a tag", 30),
                        "maxItems": 5,
                        "description": "optional short tags",
                    },
                    "request_heartbeat": _HEARTBEAT,
                },
                optional=("tags",),
            ),
        ),
        FunctionSchema(
            "archival_memory_search",
            "Search archival memory (stored facts and the user's documents) by meaning and words.",
            _object(
                {
                    "query": _text("what to look for", QUERY_CHARS),
                    "page": _PAGE,
                    "request_heartbeat": _HEARTBEAT,
                },
                optional=("page",),
            ),
        ),
        FunctionSchema(
            "conversation_search",
            "Search all past conversation messages by words and meaning.",
            _object(
                {
                    "query": _text("what to look for", QUERY_CHARS),
                    "page": _PAGE,
                    "request_heartbeat": _HEARTBEAT,
                },
                optional=("page",),
            ),
        ),
        FunctionSchema(
            "conversation_search_date",
            "List past conversation messages between two dates (YYYY-MM-DD, inclusive).",
            _object(
                {
                    "start_date": {"type": "string", "format": "date", "description": "first day"},
                    "end_date": {"type": "string", "format": "date", "description": "last day"},
                    "page": _PAGE,
                    "request_heartbeat": _HEARTBEAT,
                },
                optional=("page",),
            ),
        ),
    ]
    return [replace(schema, example=_examples().get(schema.name)) for schema in schemas]


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
    untrusted_reason: str | None = None  # this result brought untrusted text into the context
    passages: list[Passage] = field(default_factory=list)  # what the model read (citations)


def _paged(page: Page[Any], lines: list[str], what: str) -> str:
    if page.total == 0:
        return f"No {what} found." + "".join(f" {note}" for note in page.notes)
    head = page.describe()
    if page.page < page.pages:
        head += f"; call again with page={page.page + 1} for more"
    notes = list(page.notes)
    if any(hit.weak for hit in page):
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
    passage_id = ctx.mnemo.archival.insert(
        arguments["content"],
        source=ctx.call_message_id,
        tags=arguments.get("tags", []),
        origin="model",
    )
    return ToolResult(f"Stored in archival memory (passage {passage_id[:8]}).", summary="stored")


def search_archival(
    mnemo: Mnemo, query: str, limit: int = PAGE_SIZE, page: int = 1
) -> Page[Passage]:
    """The search behind `archival_memory_search` (benchmarks call exactly this)."""
    return mnemo.archival.search(query, limit=limit, page=page)


def search_conversation(
    mnemo: Mnemo, query: str, limit: int = PAGE_SIZE, page: int = 1
) -> Page[MessageHit]:
    """The search behind `conversation_search` (benchmarks call exactly this)."""
    return mnemo.recall.search(query, limit=limit, page=page, roles=SEARCHED_ROLES)


def _archival_search(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    page = search_archival(ctx.mnemo, arguments["query"], page=arguments.get("page", 1))
    lines = []
    for hit in page:
        origin = {"document": "from a document", "model": "saved by you"}.get(hit.origin, "")
        source = hit.source.describe() if hit.source.path else ""
        where = ", ".join(
            part
            for part in (hit.created_at.date().isoformat(), origin, source, _WEAK * hit.weak)
            if part
        )
        lines.append(f"- ({where}) {excerpt(hit.text, arguments['query'], HIT_CHARS)}")
    untrusted = [hit for hit in page if not hit.trusted]
    return ToolResult(
        _paged(page, lines, "passages"),
        summary=f"{len(page)} of {page.total} passages",
        passages=list(page),
        untrusted_reason=(
            f"written after reading {len(untrusted)} archival passages from documents or earlier "
            "model notes"
            if untrusted
            else None
        ),
    )


def _message_lines(page: Page[Any], query: str = "") -> list[str]:
    """One line per message: its date, its role, and the part of it that matched ``query``."""
    return [
        f"- [{hit.created_at:%Y-%m-%d %H:%M}{', ' + _WEAK if hit.weak else ''}] {hit.role}: "
        + excerpt(hit.text, query, HIT_CHARS)
        for hit in page
    ]


def _conversation_search(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    page = search_conversation(ctx.mnemo, arguments["query"], page=arguments.get("page", 1))
    return ToolResult(
        _paged(page, _message_lines(page, arguments["query"]), "messages"),
        summary=f"{len(page)} of {page.total} messages",
        untrusted_reason="written after reading conversation search results"
        if page.total
        else None,
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
        _paged(page, _message_lines(page), f"messages between {start} and {end}"),
        summary=f"{len(page)} of {page.total} messages",
        untrusted_reason="written after reading conversation search results"
        if page.total
        else None,
    )


_HANDLERS: dict[str, Callable[[ToolContext, dict[str, Any]], ToolResult]] = {
    "core_memory_append": lambda ctx, args: _propose(ctx, args, "append"),
    "core_memory_replace": lambda ctx, args: _propose(ctx, args, "replace"),
    "archival_memory_insert": _archival_insert,
    "archival_memory_search": _archival_search,
    "conversation_search": _conversation_search,
    "conversation_search_date": _conversation_search_date,
}


def run_function(ctx: ToolContext, name: str, arguments: dict[str, Any]) -> ToolResult:
    """Run a checked call; failures become results the model can read and act on."""
    try:
        result = _HANDLERS[name](ctx, arguments)
    except MnemoError as error:
        return ToolResult(f"{name} failed: {error}", ok=False, summary="failed")
    except Exception as error:
        log.exception("%s failed", name)
        return ToolResult(
            f"{name} failed unexpectedly ({type(error).__name__}: {error}).",
            ok=False,
            summary="failed",
        )
    if len(result.text) > ctx.max_result_chars:
        result.text = (
            result.text[: ctx.max_result_chars - 60].rstrip()
            + "\n… (cut to fit the context window; search more narrowly)"
        )
    return result


CITE = "cite"  # the stored row that lists the documents a reply relies on
NOTICE = "notice"  # a system note for the user (a turn that failed), never sent to a model
CITED_SHARED_WORDS = 2


def cited_passages(reply: str, passages: list[Passage]) -> list[Passage]:
    """The document passages the model read this turn that its reply uses: those sharing at
    least two content words with it (one shared word is too often a coincidence)."""
    words = set(query_terms(reply, max_terms=10**6))
    cited: dict[tuple[str, str | None], Passage] = {}
    for passage in passages:
        if not passage.source.path:
            continue  # a note has no file to open
        shared = words & set(query_terms(passage.text, max_terms=10**6))
        if len(shared) >= CITED_SHARED_WORDS:
            cited.setdefault((passage.source.path, passage.source.section), passage)
    return list(cited.values())


def describe_call(name: str, arguments: dict[str, Any]) -> str:
    """A compact line for the user: what the model did."""

    def quoted(key: str) -> str:
        return repr(one_line(str(arguments.get(key, "")), 60))

    match name:
        case "send_message":
            return "replied"
        case "recall":
            return f"recalled {arguments.get('found', 'memory')}"
        case "remember":
            facts = arguments.get("facts") or []
            return f"noted from your message: {one_line('; '.join(map(str, facts)), 80)!r}"
        case "core_memory_append":
            return f"proposed adding to {arguments.get('label')}: {quoted('content')}"
        case "core_memory_replace":
            return f"proposed changing {arguments.get('label')}: {quoted('old_content')} → " + (
                quoted("new_content")
            )
        case "archival_memory_insert":
            return f"saved to archival memory: {quoted('content')}"
        case "archival_memory_search":
            return f"searched archival memory for {quoted('query')}"
        case "conversation_search":
            return f"searched past conversations for {quoted('query')}"
        case "conversation_search_date":
            return (
                f"looked up conversations from {arguments.get('start_date')} "
                f"to {arguments.get('end_date')}"
            )
    return f"called {name}"
