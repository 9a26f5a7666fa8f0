"""`mnemo serve`'s HTTP API: FastAPI on uvicorn.

FastAPI because it is well kept, it writes the OpenAPI description from the same type hints that
validate requests (pydantic is already here, under SQLModel), and Starlette under it streams a
turn's events as they happen. Every route needs ``Authorization: Bearer TOKEN``; a user sees and
changes only their own assistants. Errors are JSON ``{"error": "one sentence"}``.

A chat turn is ``POST /v1/assistants/{name}/turns``: the reply is a stream of server-sent events,
one per engine event (the same events the window receives), ending with ``turn_finished``.
"""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations at run time,
# and ``User`` is local to ``create_app``.
import asyncio
import json
import queue
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from engine import __version__
from engine.assistants import check_name
from engine.cli.output import jsonable
from engine.errors import CoreMemoryError, InputError, MnemoError, NotFoundError, user_message
from engine.events import Event
from engine.ingest.ingestor import Ingestor
from engine.server import wire
from engine.server.accounts import Accounts
from engine.server.hub import BusyError, Hub

MAX_JSON_BYTES = 256 * 1024
MAX_UPLOAD_BYTES = 100 * 2**20
UPLOADS = "uploads"  # in the assistant's folder: the documents sent to it


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


# -- the app --------------------------------------------------------------------------------------


def create_app(accounts: Accounts, hub: Hub, limits: Limits | None = None) -> FastAPI:
    limits = limits or Limits()
    buckets = _Buckets(limits)
    app = FastAPI(
        title="Mnemo",
        version=__version__,
        description="A personal assistant's memory, served: chat turns, memory, proposals, "
        "search and documents, each user with their own assistants.",
        # The interactive pages load their scripts from a CDN; the description is enough.
        docs_url=None,
        redoc_url=None,
    )

    @app.exception_handler(ApiError)
    async def api_error(_request: Request, error: ApiError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if error.status == 401 else None
        return JSONResponse({"error": error.sentence}, error.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, error: RequestValidationError) -> JSONResponse:
        first = error.errors()[0] if error.errors() else {}
        if first.get("type") == "json_invalid":  # its "loc" is a character offset
            return JSONResponse({"error": "The request's body is not valid JSON."}, 422)
        where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
        sentence = f"The request's {where or 'body'} is not valid: {first.get('msg', 'invalid')}."
        return JSONResponse({"error": sentence}, 422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        """Starlette's own answers (an unknown address, a wrong method), in the API's form."""
        sentences = {
            404: f"There is nothing at {request.url.path} on this server; see /openapi.json.",
            405: f"{request.url.path} does not take {request.method}; see /openapi.json.",
        }
        sentence = sentences.get(error.status_code, str(error.detail))
        return JSONResponse({"error": sentence}, error.status_code)

    @app.exception_handler(MnemoError)
    async def engine_error(_request: Request, error: MnemoError) -> JSONResponse:
        status = 422
        if isinstance(error, NotFoundError):
            status = 404
        elif isinstance(error, BusyError | CoreMemoryError) or "exists already" in str(error):
            status = 409
        kind = type(error)
        return JSONResponse(
            {
                "error": user_message(error) or str(error),
                "kind": f"{kind.__module__}:{kind.__qualname__}",  # the client raises the same
            },
            status,
        )

    @app.middleware("http")
    async def size_limit(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        upload = request.url.path.rstrip("/").split("/")[-2:-1] == ["documents"]
        cap = limits.max_upload_bytes if upload else limits.max_json_bytes
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > cap:
            return JSONResponse(
                {"error": f"The request is larger than this server takes ({cap:,} bytes)."}, 413
            )
        return await call_next(request)

    def user(request: Request) -> str:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        name = accounts.user_of(token.strip()) if scheme.lower() == "bearer" else None
        if name is None:
            raise ApiError(401, "Give a valid token as 'Authorization: Bearer TOKEN'.")
        if not buckets.take(name):
            raise ApiError(429, "Too many requests for this token; wait a moment and retry.")
        return name

    User = Annotated[str, Depends(user)]

    async def run(work: Callable[[], Any]) -> Any:
        return await asyncio.to_thread(work)

    @app.get("/v1/version")
    async def version() -> dict[str, str]:
        """Which Mnemo answers (a connected window checks it matches its own); no token."""
        return {"version": __version__}

    @app.get("/v1/assistants")
    async def list_assistants(user: User) -> list[dict[str, str]]:
        found = await run(lambda: hub.assistants(user).all())
        return [{"name": assistant.name} for assistant in found]

    @app.post("/v1/assistants", status_code=201)
    async def create_assistant(user: User, body: NewAssistant) -> dict[str, str]:
        await run(lambda: hub.create(user, body.name, body.persona))
        return {"name": check_name(body.name)}

    @app.get("/v1/assistants/{name}/messages")
    async def messages(user: User, name: str, limit: Annotated[int, Query(ge=1, le=2000)] = 50):
        opened = await run(lambda: hub.get(user, name))
        return jsonable(await run(lambda: opened.mnemo.recall.recent(limit)))

    @app.post("/v1/assistants/{name}/turns")
    async def turn(user: User, name: str, body: NewTurn) -> StreamingResponse:
        opened = await run(lambda: hub.start_turn(user, name))  # 404 or 409 before the stream
        events: queue.Queue[tuple[str, Any] | None] = queue.Queue()

        def work() -> None:
            try:
                # The engine's last event is TurnFinished, streamed like the others.
                # Typed (``wire``): a window rebuilds the very events its bridge takes.
                hub.run_turn(
                    opened, body.text, lambda e: events.put((event_name(e), wire.encode(e)))
                )
            except MnemoError as error:
                events.put(("error", {"error": user_message(error) or str(error)}))
            except Exception:  # a bug: said plainly, logged by the server
                events.put(("error", {"error": "Something went wrong on the server."}))
                raise
            finally:
                events.put(None)

        threading.Thread(target=work, name=f"mnemo-turn-{user}", daemon=True).start()

        async def stream() -> AsyncIterator[bytes]:
            while True:
                item = await asyncio.to_thread(events.get)
                if item is None:
                    return
                kind, data = item
                yield f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()

        return StreamingResponse(stream(), media_type="text/event-stream")

    @app.post("/v1/assistants/{name}/call")
    async def call(user: User, name: str, body: Call) -> dict[str, Any]:
        """A memory call of a connected window: ``store.method(*args, **kwargs)``, answered with
        the engine's own values, typed (``engine.server.wire``)."""
        if body.method not in wire.CALLS.get(body.store, ()):
            raise ApiError(404, f"There is no memory call {body.store}.{body.method}.")
        opened = await run(lambda: hub.get(user, name))
        # "mnemo": the open assistant's own calls (``Mnemo.documents``), else one of its stores.
        target = opened.mnemo if body.store == "mnemo" else getattr(opened.mnemo, body.store)
        method = getattr(target, body.method)
        args, kwargs = wire.decode(body.args), wire.decode(body.kwargs)
        try:
            result = await run(lambda: method(*args, **kwargs))
        except TypeError as error:  # the wrong arguments: the client's mistake, not a crash
            raise ApiError(422, f"The call {body.store}.{body.method} got {error}.") from error
        return {"result": wire.encode(result)}

    @app.get("/v1/assistants/{name}/core")
    async def core(user: User, name: str) -> dict[str, str]:
        opened = await run(lambda: hub.get(user, name))
        blocks = await run(lambda: opened.mnemo.core.blocks())
        return {block.label: block.value for block in blocks}

    @app.put("/v1/assistants/{name}/core/{label}")
    async def set_core(user: User, name: str, label: str, body: BlockValue) -> dict[str, str]:
        opened = await run(lambda: hub.get(user, name))
        await run(lambda: opened.mnemo.core.set(label, body.value, author="user"))
        return {"label": label, "value": body.value}

    @app.get("/v1/assistants/{name}/proposals")
    async def proposals(user: User, name: str, pending: bool = True) -> list[dict[str, Any]]:
        opened = await run(lambda: hub.get(user, name))
        found = await run(
            lambda: opened.mnemo.proposals.pending() if pending else opened.mnemo.proposals.all()
        )
        return jsonable(found)

    @app.post("/v1/assistants/{name}/proposals/{proposal_id}/{decision}")
    async def decide(
        user: User,
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
        return dict(jsonable(decided))

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
        return {"total": found.total, "page": found.page, "hits": jsonable(found.hits)}

    @app.put("/v1/assistants/{name}/documents/{filename}")
    async def upload(user: User, name: str, filename: str, request: Request) -> dict[str, Any]:
        """The request's body is the file; it is kept in the assistant's folder and ingested."""
        opened = await run(lambda: hub.get(user, name))
        if Path(filename).name != filename or filename.startswith("."):
            raise InputError("Give the document's file name only, without folders.")
        folder = opened.mnemo.profile.root / UPLOADS
        folder.mkdir(exist_ok=True)
        target = folder / filename
        partial = folder / f".{filename}.partial"
        received = 0
        with partial.open("wb") as file:
            async for chunk in request.stream():
                received += len(chunk)
                if received > limits.max_upload_bytes:
                    file.close()
                    partial.unlink()
                    raise ApiError(
                        413, f"The document is larger than {limits.max_upload_bytes:,} bytes."
                    )
                file.write(chunk)
        partial.replace(target)
        result = await run(lambda: Ingestor(opened.mnemo).ingest_file(target))
        return {**jsonable(result), "path": filename}  # where the server keeps it is its own

    return app
