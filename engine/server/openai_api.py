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
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

from fastapi import Header
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from engine import forget
from engine.errors import InputError, MnemoError, user_message
from engine.events import Event
from engine.profile import WINDOW, ProfileBusyError
from engine.server import handoff
from engine.server.completion_turn import (
    ReplyForClient,
    TurnRecord,
    conversation_for,
    program_name,
    store_history,
)
from engine.server.hub import Hub
from engine.text import LONE_SURROGATE, has_lone_surrogate

MODEL_PREFIX = "mnemo:"
PATHS = ("/v1/chat/completions", "/v1/models")
CONVERSATION_HEADER = "mnemo-conversation"
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


def register(app: Any, hub: Hub, user_dependency: Any, caller_dependency: Any) -> None:
    """Add the two routes to ``app`` (``user_dependency`` checks the token and the rate;
    ``caller_dependency`` also says whether it is the person's own token or a program's)."""

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
        caller: caller_dependency,
        body: ChatRequest,
        mnemo_conversation: str | None = Header(default=None, max_length=200),
        user_agent: str | None = Header(default=None),
    ) -> Any:
        user = caller.user
        # A program's message is its word, not the person's: what it says of them waits.
        sender = None if caller.person else program_name(user_agent)
        last = body.messages[-1]
        texts = [text_of(message) for message in body.messages]
        if has_lone_surrogate(*texts, body.model, body.user, mnemo_conversation, user_agent):
            raise InputError(LONE_SURROGATE)
        if last.role != "user" or not text_of(last).strip():
            raise InputError("The last message must be the user's, with text to answer.")
        earlier = [(str(message.role), text_of(message)) for message in body.messages[:-1]]
        named = mnemo_conversation or body.user
        name = assistant_of(body.model)
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[tuple[str, Any] | None] = asyncio.Queue()
        cancel = threading.Event()
        if (what := forget.requested(text_of(last))) is not None:
            # Forgetting is the person's, with its preview: the request is neither answered by
            # the model nor kept (it names what is to go).
            await asyncio.to_thread(lambda: hub.get(user, name))  # a known assistant, or 404
            told = TurnRecord("")
            told.reply = forget.ELSEWHERE.format(what=what)
            for item in (("text", told.reply), ("done", None), None):
                events.put_nowait(item)
            return await _respond(body.stream, MODEL_PREFIX + name, told, events, cancel)

        def put(item: tuple[str, Any] | None) -> None:
            try:
                loop.call_soon_threadsafe(events.put_nowait, item)
            except RuntimeError:
                cancel.set()

        try:
            claimed = await asyncio.to_thread(lambda: hub.start_turn(user, name))
        except ProfileBusyError as busy:
            if busy.holder.get("program") != WINDOW:
                raise
            root = hub.get(user, name).mnemo.profile.root
            program = program_name(user_agent)
            turn_id = await asyncio.to_thread(
                lambda: handoff.ask(root, text_of(last), earlier, named, program, caller.person)
            )
            record = TurnRecord(named or "", 0)
            await asyncio.to_thread(lambda: _handed(root, turn_id, cancel, record, put))
        else:
            cancel = claimed.cancel
            try:
                opened = claimed.opened
                conversation_id = await asyncio.to_thread(
                    lambda: conversation_for(opened.mnemo, named)
                )
                history = await asyncio.to_thread(
                    lambda: store_history(opened.mnemo, conversation_id, earlier, sender)
                )
            except BaseException:
                hub.release_turn(claimed)
                raise
            record = TurnRecord(conversation_id, len(history))
            reply = ReplyForClient(
                lambda: opened.agent is not None and opened.agent.mode.mode == "self",
                lambda piece: put(("text", piece)),
            )

            def on_event(event: Event) -> None:
                record.add(event)
                reply.add(event)

            def work() -> None:
                try:
                    finished = hub.run_turn(
                        claimed,
                        text_of(last),
                        on_event,
                        conversation_id=conversation_id,
                        program=sender,
                    )
                    if not record.reply and finished.reply:
                        record.reply = finished.reply
                    problem = record.failure(finished)
                    put(("error", problem) if problem else ("done", None))
                except MnemoError as error:
                    put(("error", user_message(error) or str(error)))
                except Exception:
                    put(("error", "Something went wrong on the server."))
                    raise
                finally:
                    put(None)

            threading.Thread(target=work, name=f"mnemo-completion-{user}", daemon=True).start()
        return await _respond(body.stream, MODEL_PREFIX + name, record, events, cancel)


def _handed(
    root: Any,
    turn_id: str,
    cancel: threading.Event,
    record: TurnRecord,
    put: Callable[[tuple[str, Any] | None], None],
) -> None:
    """Start following a turn handed to the window, once the window took it and told its first
    piece (a window that did not take it, or refused it, is the client's 409); the rest is
    followed on a thread of its own."""
    told = handoff.follow(root, turn_id, cancel)
    try:
        first = next(told, None)
        if first is not None and first.get("refused"):
            raise handoff.WindowBusyError(str(first["error"]))
    except BaseException:
        told.close()
        raise

    def pass_on(event: dict[str, Any] | None) -> bool:
        if event is None:
            return False
        if "text" in event:
            put(("text", str(event["text"])))
        elif "error" in event:
            put(("error", str(event["error"])))
        elif "done" in event:
            record.take(event["done"], str(event.get("reply", "")))
            put(("done", None))
        return True

    def work() -> None:
        try:
            if pass_on(first):
                for event in told:
                    pass_on(event)
        except MnemoError as error:
            put(("error", user_message(error) or str(error)))
        finally:
            put(None)

    threading.Thread(target=work, name="mnemo-completion-window", daemon=True).start()


async def _respond(
    stream: bool,
    model: str,
    record: TurnRecord,
    events: "asyncio.Queue[tuple[str, Any] | None]",
    cancel: threading.Event,
) -> Any:
    """The completion from a turn's ``events``: streamed as OpenAI chunks, or whole."""
    completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
    created = int(time.time())

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

    if stream:

        async def chunks() -> AsyncIterator[bytes]:
            try:
                yield chunk({"role": "assistant", "content": ""}).encode()
                while (item := await events.get()) is not None:
                    kind, value = item
                    if kind == "text":
                        yield chunk({"content": value}).encode()
                    elif kind == "error":
                        yield f"data: {json.dumps(error_body(500, value))}\n\n".encode()
                    elif kind == "done":
                        yield chunk({}, "stop", mnemo=record.extension()).encode()
                yield b"data: [DONE]\n\n"
            finally:
                cancel.set()  # the client went away: the turn stops too

        return StreamingResponse(chunks(), media_type="text/event-stream")

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
