"""`mnemo serve`'s HTTP API: FastAPI on uvicorn.

FastAPI because it is well kept, it writes the OpenAPI description from the same type hints that
validate requests (pydantic is already here, under SQLModel), and Starlette under it streams a
turn's events as they happen. Every route needs ``Authorization: Bearer TOKEN``; a user sees and
changes only their own assistants. Errors are JSON ``{"error": "one sentence"}``.

A chat turn is ``POST /v1/assistants/{name}/turns``: the reply is a stream of server-sent events,
one per engine event (the same events the window receives), ending with ``turn_finished``.

``/v1/chat/completions`` and ``/v1/models`` speak OpenAI's API (``engine.server.openai_api``),
with OpenAI's error shape. ``/mcp`` is the same memory over MCP (Streamable HTTP,
``engine.server.mcp_server``): the bearer token names the user, ``?assistant=NAME`` (or the
``Mnemo-Assistant`` header) one of their assistants, by default their only one.
"""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations at run time,
# and ``User`` is local to ``create_app``.
import asyncio
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import uvicorn
from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route
from uvicorn.protocols.http.h11_impl import H11Protocol

from engine import __version__
from engine.assistants import check_name
from engine.errors import CoreMemoryError, InputError, MnemoError, NotFoundError, user_message
from engine.events import Event
from engine.ingest.ingestor import Ingestor
from engine.profile import ProfileBusyError
from engine.server import openai_api, wire
from engine.server.accounts import Accounts, Credential
from engine.server.completion_turn import program_name
from engine.server.handoff import WindowBusyError
from engine.server.hub import (
    BusyError,
    Hub,
    OpenAssistant,
    OperatorSettingError,
    TooManyTurnsError,
)

log = logging.getLogger("mnemo.server")

MAX_JSON_BYTES = 256 * 1024
MAX_UPLOAD_BYTES = 100 * 2**20
UPLOADS = "uploads"  # in the assistant's folder: the documents sent to it
MAX_NAME_BYTES = 200  # an uploaded file's name (file systems take 255)


@dataclass(frozen=True)
class Limits:
    """Per token: ``rate`` requests a second on average, bursts of up to ``burst``."""

    rate: float = 20.0
    burst: int = 60
    max_json_bytes: int = MAX_JSON_BYTES
    max_upload_bytes: int = MAX_UPLOAD_BYTES


class ApiError(Exception):
    def __init__(self, status: int, sentence: str) -> None:
        super().__init__(sentence)
        self.status = status
        self.sentence = sentence


class _Buckets:
    """Token buckets, one per user: a steady rate with room for a burst."""

    def __init__(self, limits: Limits) -> None:
        self._limits = limits
        self._state: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, user: str) -> bool:
        now = time.monotonic()
        with self._lock:
            tokens, last = self._state.get(user, (float(self._limits.burst), now))
            tokens = min(self._limits.burst, tokens + (now - last) * self._limits.rate)
            allowed = tokens >= 1
            self._state[user] = (tokens - 1 if allowed else tokens, now)
            return allowed


def event_name(event: Event) -> str:
    """``TextStreamed`` -> ``text_streamed``."""
    name = type(event).__name__
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


# -- request bodies -----------------------------------------------------------------------------


class NewAssistant(BaseModel):
    name: str = Field(min_length=1, max_length=60)
    persona: str | None = None


class NewTurn(BaseModel):
    text: str = Field(min_length=1, max_length=100_000)


class BlockValue(BaseModel):
    value: str = Field(max_length=100_000)


class Decision(BaseModel):
    content: str | None = Field(default=None, max_length=100_000)


class Call(BaseModel):
    """One memory call of a connected window (``wire.CALLS`` lists what may be called)."""

    store: str = Field(max_length=40)
    method: str = Field(max_length=40)
    args: list[Any] = Field(default_factory=list)
    kwargs: dict[str, Any] = Field(default_factory=dict)


def served(data: Any, opened: OpenAssistant) -> Any:
    """``data`` as a user may see it: where the server keeps their files is its own, so a path
    under the assistant's uploads reads as the uploaded file's name, and one elsewhere in its
    folder as relative to it (in values and inside texts alike)."""
    root = str(opened.mnemo.profile.root)
    uploads = os.path.join(root, UPLOADS) + os.sep

    def hide(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(uploads, "").replace(root + os.sep, "") if root in value else value
        if isinstance(value, list):
            return [hide(item) for item in value]
        if isinstance(value, dict):
            return {key: hide(item) for key, item in value.items()}
        return value

    return hide(data)


# -- the app --------------------------------------------------------------------------------------


class BodyLimit:
    """Refuse a body past the cap as it arrives, chunked or not, before any route (or the
    token check) reads it: ``Content-Length`` is checked first, then each chunk counted."""

    def __init__(self, app: Any, limits: Limits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        upload = scope["path"].rstrip("/").split("/")[-2:-1] == ["documents"]
        cap = self.limits.max_upload_bytes if upload else self.limits.max_json_bytes
        sentence = f"The request is larger than this server takes ({cap:,} bytes)."
        length = dict(scope["headers"]).get(b"content-length", b"")
        if length.isdigit() and int(length) > cap:
            refused = JSONResponse({"error": sentence}, 413, headers={"connection": "close"})
            await refused(scope, receive, send)
            return
        received = 0

        async def counted() -> Any:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > cap:
                    raise StarletteHTTPException(413, sentence)
            return message

        await self.app(scope, counted, send)


NO_TOKEN = "Give a valid token as 'Authorization: Bearer TOKEN'."
PERSON_ONLY = (
    "Only the person decides this, in Mnemo's window or the mnemo command; a program's token "
    "reads, searches, chats and proposes."
)


def authorized(accounts: Accounts, buckets: "_Buckets", header: str) -> Credential:
    """Whose token an ``Authorization`` header holds, with room in their bucket; else
    ApiError 401 or 429 (every route, ``/mcp`` included, asks here)."""
    scheme, _, token = header.partition(" ")
    credential = accounts.credential(token.strip()) if scheme.lower() == "bearer" else None
    if credential is None:
        raise ApiError(401, NO_TOKEN)
    if not buckets.take(credential.user):
        raise ApiError(429, "Too many requests for this token; wait a moment and retry.")
    return credential


class McpGate:
    """In front of ``/mcp``: a valid token and room in its bucket, else the API's own 401 or 429
    before the MCP layer reads anything; the user rides on in the request's scope."""

    def __init__(self, app: Any, accounts: Accounts, buckets: "_Buckets") -> None:
        self.app, self.accounts, self.buckets = app, accounts, buckets

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers = {key.decode("latin-1").lower(): value for key, value in scope["headers"]}
        try:
            user = authorized(
                self.accounts, self.buckets, headers.get("authorization", b"").decode("latin-1")
            )
        except ApiError as error:
            challenge = {"WWW-Authenticate": "Bearer"} if error.status == 401 else None
            refused = JSONResponse({"error": error.sentence}, error.status, headers=challenge)
            await refused(scope, receive, send)
            return
        scope.setdefault("state", {})["mnemo_user"] = user.user  # MCP only reads and proposes
        await self.app(scope, receive, send)


def _mcp_route(hub: Hub, accounts: Accounts, buckets: "_Buckets") -> tuple[Route, Any]:
    """``/mcp`` and the MCP session manager whose life the app's lifespan holds."""
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
    from mcp.server.transport_security import TransportSecuritySettings

    from engine.server.mcp_server import build_server

    def mnemo_for(ctx: Any) -> Any:
        request = ctx.request_context.request if ctx is not None else None
        if request is None:
            raise InputError("Reach the memory over /mcp with a token.")
        user = request.scope["state"]["mnemo_user"]
        name = request.query_params.get("assistant") or request.headers.get("mnemo-assistant")
        if not name:
            names = [assistant.name for assistant in hub.assistants(user).all()]
            if len(names) != 1:
                raise InputError(
                    "Name the assistant: /mcp?assistant=NAME (yours: "
                    f"{', '.join(names) or 'none yet'})."
                )
            name = names[0]
        return hub.get(user, name).mnemo

    server = build_server(mnemo_for)
    # The token guards every request, so the SDK's Host-header check (made for token-less local
    # servers) would only refuse the names a server is reached by.
    server.streamable_http_app(
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    manager = server.session_manager
    route = Route(
        "/mcp",
        McpGate(StreamableHTTPASGIApp(manager), accounts, buckets),
        methods=["GET", "POST", "DELETE"],
    )
    return route, manager


def create_app(accounts: Accounts, hub: Hub, limits: Limits | None = None) -> FastAPI:
    limits = limits or Limits()
    buckets = _Buckets(limits)
    mcp_route, mcp_sessions = _mcp_route(hub, accounts, buckets)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        async with mcp_sessions.run():
            yield

    app = FastAPI(
        lifespan=lifespan,
        title="Mnemo",
        version=__version__,
        description="A personal assistant's memory, served: chat turns, memory, proposals, "
        "search and documents, each user with their own assistants.",
        # The interactive pages load their scripts from a CDN; the description is enough.
        docs_url=None,
        redoc_url=None,
    )

    def refusal(
        request: Request, status: int, sentence: str, headers: dict[str, str] | None = None
    ) -> JSONResponse:
        """The API's error: one sentence, in OpenAI's shape on the OpenAI routes."""
        if openai_api.wants_openai_errors(request.url.path):
            return openai_api.openai_error(status, sentence, headers)
        return JSONResponse({"error": sentence}, status, headers=headers)

    @app.exception_handler(ApiError)
    async def api_error(request: Request, error: ApiError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if error.status == 401 else None
        return refusal(request, error.status, error.sentence, headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError) -> JSONResponse:
        first = error.errors()[0] if error.errors() else {}
        if first.get("type") == "json_invalid":  # its "loc" is a character offset
            return refusal(request, 422, "The request's body is not valid JSON.")
        where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
        sentence = f"The request's {where or 'body'} is not valid: {first.get('msg', 'invalid')}."
        return refusal(request, 422, sentence)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        """Starlette's own answers (an unknown address, a wrong method), in the API's form."""
        sentences = {
            404: f"There is nothing at {request.url.path} on this server; see /openapi.json.",
            405: f"{request.url.path} does not take {request.method}; see /openapi.json.",
        }
        sentence = sentences.get(error.status_code, str(error.detail))
        # Past the size cap, the rest of the body is not read: the connection closes.
        headers = {"connection": "close"} if error.status_code == 413 else None
        return refusal(request, error.status_code, sentence, headers)

    app.add_middleware(BodyLimit, limits=limits)
    app.router.routes.append(mcp_route)

    @app.exception_handler(MnemoError)
    async def engine_error(request: Request, error: MnemoError) -> JSONResponse:
        status = 422
        if isinstance(error, NotFoundError):
            status = 404
        elif isinstance(error, OperatorSettingError):
            status = 403
        elif isinstance(error, TooManyTurnsError):
            status = 429
        elif isinstance(
            error, BusyError | CoreMemoryError | ProfileBusyError | WindowBusyError
        ) or ("exists already" in str(error)):
            status = 409
        kind = type(error)
        if openai_api.wants_openai_errors(request.url.path):
            return refusal(request, status, user_message(error) or str(error))
        return JSONResponse(
            {
                "error": user_message(error) or str(error),
                "kind": f"{kind.__module__}:{kind.__qualname__}",  # the client raises the same
            },
            status,
        )

    def caller(request: Request) -> Credential:
        return authorized(accounts, buckets, request.headers.get("authorization", ""))

    Caller = Annotated[Credential, Depends(caller)]  # /call: the call made decides (wire.READS)

    def program(credential: Caller) -> str:
        """The user of any valid token: what a program may do (read, search, chat, propose)."""
        return credential.user

    def person(credential: Caller) -> str:
        """The user of their own token: what only the person decides."""
        if not credential.person:
            raise ApiError(403, PERSON_ONLY)
        return credential.user

    # Each route takes one of these (tests/test_server.py lists them): a new route is
    # classified before it lands.
    User = Annotated[str, Depends(program)]
    Person = Annotated[str, Depends(person)]

    async def run(work: Callable[[], Any]) -> Any:
        return await asyncio.to_thread(work)

    openai_api.register(app, hub, User, Caller)

    @app.get("/v1/version")
    async def version() -> dict[str, str]:
        """Which Mnemo answers (a connected window checks it matches its own); no token."""
        return {"version": __version__}

    @app.get("/v1/assistants")
    async def list_assistants(user: User) -> list[dict[str, str]]:
        found = await run(lambda: hub.assistants(user).all())
        return [{"name": assistant.name} for assistant in found]

    @app.post("/v1/assistants", status_code=201)
    async def create_assistant(user: Person, body: NewAssistant) -> dict[str, str]:
        await run(lambda: hub.create(user, body.name, body.persona))
        return {"name": check_name(body.name)}

    @app.get("/v1/assistants/{name}/messages")
    async def messages(user: User, name: str, limit: Annotated[int, Query(ge=1, le=2000)] = 50):
        opened = await run(lambda: hub.get(user, name))
        return served(wire.plain(await run(lambda: opened.mnemo.recall.recent(limit))), opened)

    @app.post("/v1/assistants/{name}/turns")
    async def turn(
        caller: Caller,
        name: str,
        body: NewTurn,
        user_agent: str | None = Header(default=None),
    ) -> StreamingResponse:
        user = caller.user
        sender = None if caller.person else program_name(user_agent)  # not the person's word
        claimed = await run(lambda: hub.start_turn(user, name))  # 404, 409, 429 before the stream
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[tuple[str, Any] | None] = asyncio.Queue()

        def put(item: tuple[str, Any] | None) -> None:
            try:
                loop.call_soon_threadsafe(events.put_nowait, item)
            except RuntimeError:  # the server is shutting down: nobody is listening
                claimed.cancel.set()

        def work() -> None:
            try:
                # The engine's last event is TurnFinished, streamed like the others.
                # Typed (``wire``): a window rebuilds the very events its bridge takes.
                hub.run_turn(
                    claimed,
                    body.text,
                    lambda e: put((event_name(e), served(wire.encode(e), claimed.opened))),
                    program=sender,
                )
            except MnemoError as error:
                put(("error", {"error": user_message(error) or str(error)}))
            except Exception:  # a bug: said plainly, logged by the server
                put(("error", {"error": "Something went wrong on the server."}))
                raise
            finally:
                put(None)

        # A thread of the hub's, not one of asyncio's few shared workers: a turn waits on its
        # model for as long as it takes, and the other users' requests need those workers.
        threading.Thread(target=work, name=f"mnemo-turn-{user}", daemon=True).start()

        async def stream() -> AsyncIterator[bytes]:
            try:
                while True:
                    item = await events.get()
                    if item is None:
                        return
                    kind, data = item
                    line = f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
                    yield line.encode()
            finally:  # the client went away (or the stream ended): the turn stops too
                claimed.cancel.set()

        return StreamingResponse(stream(), media_type="text/event-stream")

    @app.post("/v1/assistants/{name}/call")
    async def call(caller: Caller, name: str, body: Call) -> dict[str, Any]:
        """A memory call of a connected window: ``store.method(*args, **kwargs)``, answered with
        the engine's own values, typed (``engine.server.wire``). A program's token makes only
        the calls that change nothing."""
        if body.method not in wire.CALLS.get(body.store, ()):
            raise ApiError(404, f"There is no memory call {body.store}.{body.method}.")
        if not caller.person and body.method not in wire.READS[body.store]:
            raise ApiError(403, PERSON_ONLY)
        user = caller.user
        opened = await run(lambda: hub.get(user, name))
        # "mnemo": the open assistant's own calls (``Mnemo.documents``), "settings" those a user
        # may change (``ServedSettings``), else one of its stores.
        if body.store == "mnemo":
            target: Any = opened.mnemo
        elif body.store == "settings":
            target = opened.settings
        else:
            target = getattr(opened.mnemo, body.store)
        method = getattr(target, body.method)
        try:
            args, kwargs = wire.decode(body.args), wire.decode(body.kwargs)
        except (ValueError, TypeError, KeyError) as error:
            raise ApiError(
                422, f"The call's arguments are not values Mnemo takes: {error}"
            ) from error
        try:
            result = await run(lambda: method(*args, **kwargs))
        except (TypeError, ValueError, AttributeError) as error:
            # Arguments of the wrong kind: the client's mistake, not a crash of the server.
            log.info("call %s.%s refused: %r", body.store, body.method, error)
            raise ApiError(422, f"The call {body.store}.{body.method} got {error}.") from error
        return {"result": served(wire.encode(result), opened)}

    @app.get("/v1/assistants/{name}/core")
    async def core(user: User, name: str) -> dict[str, str]:
        opened = await run(lambda: hub.get(user, name))
        blocks = await run(lambda: opened.mnemo.core.blocks())
        return {block.label: block.value for block in blocks}

    @app.put("/v1/assistants/{name}/core/{label}")
    async def set_core(user: Person, name: str, label: str, body: BlockValue) -> dict[str, str]:
        opened = await run(lambda: hub.get(user, name))
        await run(lambda: opened.mnemo.core.set(label, body.value, author="user"))
        return {"label": label, "value": body.value}

    @app.get("/v1/assistants/{name}/proposals")
    async def proposals(user: User, name: str, pending: bool = True) -> list[dict[str, Any]]:
        opened = await run(lambda: hub.get(user, name))
        found = await run(
            lambda: opened.mnemo.proposals.pending() if pending else opened.mnemo.proposals.all()
        )
        return served(wire.plain(found), opened)

    @app.post("/v1/assistants/{name}/proposals/{proposal_id}/{decision}")
    async def decide(
        user: Person,
        name: str,
        proposal_id: int,
        decision: Literal["approve", "reject"],
        body: Decision | None = None,
    ) -> dict[str, Any]:
        opened = await run(lambda: hub.get(user, name))
        proposals = opened.mnemo.proposals
        if decision == "approve":
            content = body.content if body else None
            decided = await run(lambda: proposals.approve(proposal_id, content))
        else:
            decided = await run(lambda: proposals.reject(proposal_id))
        return served(dict(wire.plain(decided)), opened)

    @app.get("/v1/assistants/{name}/search")
    async def search(
        user: User,
        name: str,
        q: Annotated[str, Query(min_length=1, max_length=2000)],
        store: Literal["recall", "archival"] = "archival",
        limit: Annotated[int, Query(ge=1, le=100)] = 10,
        page: Annotated[int, Query(ge=1)] = 1,
    ) -> dict[str, Any]:
        opened = await run(lambda: hub.get(user, name))
        memory = opened.mnemo.recall if store == "recall" else opened.mnemo.archival
        found = await run(lambda: memory.search(q, limit, page))
        hits = served(wire.plain(found.hits), opened)
        return {"total": found.total, "page": found.page, "hits": hits}

    @app.put("/v1/assistants/{name}/documents/{filename}")
    async def upload(user: Person, name: str, filename: str, request: Request) -> dict[str, Any]:
        """The request's body is the file; it is kept in the assistant's folder and ingested."""
        opened = await run(lambda: hub.get(user, name))
        if Path(filename).name != filename or filename.startswith("."):
            raise InputError("Give the document's file name only, without folders.")
        if len(filename.encode()) > MAX_NAME_BYTES or not filename.isprintable():
            raise InputError(
                f"Give the document a name of printable characters, at most {MAX_NAME_BYTES} "
                "bytes long."
            )
        folder = opened.mnemo.profile.root / UPLOADS
        folder.mkdir(exist_ok=True)
        target = folder / filename
        partial = folder / f".{uuid.uuid4().hex}.partial"  # each upload its own, even of one name
        try:  # ``BodyLimit`` stops a document past the cap as it arrives
            with partial.open("wb") as file:
                async for chunk in request.stream():
                    file.write(chunk)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise

        def keep_and_ingest() -> Any:
            with opened.uploading:  # uploads of one name, at once: one after the other
                partial.replace(target)
                return Ingestor(opened.mnemo).ingest_file(target)

        result = await run(keep_and_ingest)
        return served({**wire.plain(result), "path": filename}, opened)

    return app


# -- serving ------------------------------------------------------------------------------------

HEADER_TIMEOUT_S = 10.0  # a connection that sends no request headers in this time is closed
KEEP_ALIVE_S = 5.0  # an idle connection between requests
SHUTDOWN_S = 3.0  # on SIGTERM: how long open streams (turns) get to finish before they are cut


class _HeaderTimeout(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a limit on waiting for a request's headers, which it
    lacks: an idle socket, or one that sends a header a byte a minute, is closed."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_headers()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._await_headers()

    def _await_headers(self) -> None:
        waiting = self.cycle  # a new request replaces it once its headers are in

        def check() -> None:
            if self.cycle is waiting and not self.transport.is_closing():
                self.transport.close()

        self.loop.call_later(HEADER_TIMEOUT_S, check)


def server_config(app: FastAPI, host: str, port: int) -> uvicorn.Config:
    """How `mnemo serve` (and the tests) run the app: idle and slow sockets are closed, and
    SIGTERM ends open turns within seconds instead of waiting for them."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        http=_HeaderTimeout,
        timeout_keep_alive=int(KEEP_ALIVE_S),
        timeout_graceful_shutdown=int(SHUTDOWN_S),
    )
