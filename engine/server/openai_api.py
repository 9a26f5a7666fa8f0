"""``/v1/chat/completions`` and ``/v1/models`` on `mnemo serve`: any OpenAI client (Open WebUI,
the OpenAI SDKs) chats with a user's assistant, memory and all.

- Each assistant is a model, ``mnemo:NAME``.
- A request's last user message is a turn of that assistant, in its current conversation, or in
  one the request names (its ``user`` field or the ``Mnemo-Conversation`` header).
- Earlier messages of the request that the conversation does not hold yet are stored as its
  history, not answered again: clients send the whole chat each time.
- The reply streams as OpenAI chunks when asked. What memory did (function calls, proposals
  waiting for the person, notices, sources) rides in an extension field, ``mnemo``, never in the
  content.
- Errors have OpenAI's shape, ``{"error": {"message", "type", "code"}}``, so clients show them.
"""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations at run time,
# and the user dependency is the app's.
import asyncio
import hashlib
import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import Header
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from engine.errors import InputError, MnemoError, user_message
from engine.events import (
    Event,
    FunctionCalled,
    FunctionReturned,
    MessageSent,
    Notice,
    ProposalApplied,
    ProposalCreated,
    ReplyWithdrawn,
    TextStreamed,
)
from engine.server.hub import Hub, OpenAssistant

MODEL_PREFIX = "mnemo:"
PATHS = ("/v1/chat/completions", "/v1/models")
CONVERSATION_HEADER = "mnemo-conversation"
API_ORIGIN = "API"  # the origin of conversations a client names
MAX_MESSAGES = 500


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None


class ChatRequest(BaseModel):
    """The fields Mnemo reads; sampling settings and the like are the assistant's own."""

    model_config = ConfigDict(extra="ignore")

    model: str = Field(min_length=1, max_length=200)
    messages: list[ChatMessage] = Field(min_length=1, max_length=MAX_MESSAGES)
    stream: bool = False
    user: str | None = Field(default=None, max_length=200)


def error_body(status: int, sentence: str) -> dict[str, Any]:
    """OpenAI's error shape for a status and Mnemo's sentence."""
    kind = {
        401: ("authentication_error", "invalid_api_key"),
        404: ("invalid_request_error", "model_not_found"),
        409: ("invalid_request_error", "assistant_busy"),
        429: ("rate_limit_error", "rate_limit_exceeded"),
    }.get(status, ("invalid_request_error" if status < 500 else "server_error", None))
    return {"error": {"message": sentence, "type": kind[0], "param": None, "code": kind[1]}}


def assistant_of(model: str) -> str:
    """``mnemo:home`` (or ``home``) -> ``home``."""
    return model.removeprefix(MODEL_PREFIX)


def text_of(message: ChatMessage) -> str:
    """A message's text: its string, or its text parts joined; other parts are refused."""
    if message.content is None:
        return ""
    if isinstance(message.content, str):
        return message.content
    parts = []
    for part in message.content:
        if part.get("type") != "text":
            raise InputError(
                f"Mnemo reads text only; a {part.get('type', 'non-text')!r} part was sent."
            )
        parts.append(str(part.get("text", "")))
    return "\n".join(parts)


def conversation_for(opened: OpenAssistant, name: str | None) -> str:
    """The conversation a request names (made the first time), else the assistant's current."""
    conversations = opened.mnemo.conversations
    if not name:
        return conversations.current()
    conversation_id = "api-" + hashlib.sha256(name.encode()).hexdigest()[:12]
    conversations.ensure(conversation_id, name, API_ORIGIN)
    return conversation_id


def store_history(opened: OpenAssistant, conversation_id: str, earlier: list[ChatMessage]) -> int:
    """Store the request's earlier user and assistant messages that the conversation does not
    hold yet (compared by role and text); return how many were stored."""
    recall = opened.mnemo.recall
    held = Counter(
        (hit.role, hit.text.strip())
        for hit in recall.recent(2 * len(earlier) + 20, conversation_id)
    )
    stored = 0
    for message in earlier:
        text = text_of(message).strip()
        if message.role not in ("user", "assistant") or not text:
            continue  # the client's system prompt and tool messages are not the person's chat
        if held[(message.role, text)] > 0:
            held[(message.role, text)] -= 1
            continue
        recall.add(message.role, text, conversation_id=conversation_id)
        stored += 1
    return stored


class TurnRecord:
    """What a turn did besides its reply, for the ``mnemo`` extension field."""

    def __init__(self, conversation_id: str, history: int) -> None:
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


def register(app: Any, hub: Hub, user_dependency: Any) -> None:
    """Add the two routes to ``app`` (``user_dependency`` checks the token and the rate)."""

    @app.get("/v1/models")
    async def models(user: user_dependency) -> dict[str, Any]:
        found = await asyncio.to_thread(lambda: hub.assistants(user).all())
        return {
            "object": "list",
            "data": [
                {"id": MODEL_PREFIX + a.name, "object": "model", "created": 0, "owned_by": user}
                for a in found
            ],
        }

    @app.post("/v1/chat/completions", response_model=None)
    async def chat(
        user: user_dependency,
        body: ChatRequest,
        mnemo_conversation: str | None = Header(default=None, max_length=200),
    ) -> Any:
        last = body.messages[-1]
        if last.role != "user" or not text_of(last).strip():
            raise InputError("The last message must be the user's, with text to answer.")
        name = assistant_of(body.model)
        claimed = await asyncio.to_thread(lambda: hub.start_turn(user, name))
        try:
            opened = claimed.opened
            conversation_id = await asyncio.to_thread(
                lambda: conversation_for(opened, mnemo_conversation or body.user)
            )
            history = await asyncio.to_thread(
                lambda: store_history(opened, conversation_id, body.messages[:-1])
            )
        except BaseException:
            hub.release_turn(claimed)
            raise
        record = TurnRecord(conversation_id, history)
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        created = int(time.time())
        model = MODEL_PREFIX + name
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[tuple[str, Any] | None] = asyncio.Queue()

        def put(item: tuple[str, Any] | None) -> None:
            try:
                loop.call_soon_threadsafe(events.put_nowait, item)
            except RuntimeError:
                claimed.cancel.set()

        def on_event(event: Event) -> None:
            record.add(event)
            if isinstance(event, TextStreamed):
                put(("text", event.text))
            elif isinstance(event, ReplyWithdrawn):
                put(("withdrawn", None))  # streamed text cannot be taken back: the client hears

        def work() -> None:
            try:
                finished = hub.run_turn(
                    claimed, text_of(last), on_event, conversation_id=conversation_id
                )
                if not record.reply and finished.reply:
                    record.reply = finished.reply
                put(("done", None))
            except MnemoError as error:
                put(("error", user_message(error) or str(error)))
            except Exception:
                put(("error", "Something went wrong on the server."))
                raise
            finally:
                put(None)

        threading.Thread(target=work, name=f"mnemo-completion-{user}", daemon=True).start()

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
            data = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                **extra,
            }
            return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"

        if body.stream:

            async def stream() -> AsyncIterator[bytes]:
                try:
                    yield chunk({"role": "assistant", "content": ""}).encode()
                    while (item := await events.get()) is not None:
                        kind, value = item
                        if kind == "text":
                            yield chunk({"content": value}).encode()
                        elif kind == "withdrawn":  # it repeated an earlier reply; another follows
                            yield chunk({}, mnemo={"withdrawn": True}).encode()
                        elif kind == "error":
                            yield f"data: {json.dumps(error_body(500, value))}\n\n".encode()
                        elif kind == "done":
                            final = chunk({}, "stop", mnemo=record.extension())
                            yield final.encode()
                    yield b"data: [DONE]\n\n"
                finally:
                    claimed.cancel.set()  # the client went away: the turn stops too

            return StreamingResponse(stream(), media_type="text/event-stream")

        failure = None
        while (item := await events.get()) is not None:
            if item[0] == "error":
                failure = item[1]
        if failure is not None:
            return JSONResponse(error_body(500, failure), 500)
        return {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": record.reply},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            "mnemo": record.extension(),
        }


def wants_openai_errors(path: str) -> bool:
    return path.rstrip("/") in PATHS


def openai_error(status: int, sentence: str, headers: dict[str, str] | None = None) -> Any:
    return JSONResponse(error_body(status, sentence), status, headers=headers)
