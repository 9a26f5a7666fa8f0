"""Local HTTP servers on 127.0.0.1 for the API back-ends' tests.

``FakeServer`` answers each request with the next queued reply and records what it received.
``check_messages_request`` holds a request to the rules of Anthropic's Messages API, so a test
fails when the back-end sends something the real API would reject.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"


@dataclass
class Reply:
    status: int = 200
    body: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # before answering (a hung server)


# What `models use` and an automatic context size ask first (GET /props, GET /models), answered
# as llama-cpp-python's server does: no size, so the replies queued after them go to the turn.
NO_CONTEXT_SIZE = (Reply(404, '{"detail": "Not Found"}'), Reply(404, '{"detail": "Not Found"}'))


def sse(events: list[dict[str, Any]], named: bool = False) -> str:
    """Server-sent events: OpenAI sends bare data lines, Anthropic names each event."""
    lines = []
    for event in events:
        if named:
            lines.append(f"event: {event['type']}")
        lines.append(f"data: {json.dumps(event)}")
        lines.append("")
    return "\n".join(lines) + "\n"


def recorded(name: str) -> Reply:
    """A reply stored under tests/data (written in the API's documented stream format)."""
    return Reply(
        body=(DATA / name).read_text("utf-8"), headers={"content-type": "text/event-stream"}
    )


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeServer:
    def __init__(self, check: Any = None) -> None:
        self.replies: list[Reply] = []
        self.received: list[Received] = []
        self.problems: list[str] = []
        self._check = check
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                headers = {key.lower(): value for key, value in self.headers.items()}
                server.received.append(Received(self.command, self.path, headers, body))
                if server._check is not None:
                    found = server._check(self.command, self.path, headers, body)
                    if found:
                        server.problems.extend(found)
                        reply = Reply(
                            400,
                            json.dumps(
                                {
                                    "type": "error",
                                    "error": {
                                        "type": "invalid_request_error",
                                        "message": "; ".join(found),
                                    },
                                }
                            ),
                        )
                        return self._send(reply)
                reply = server.replies.pop(0) if server.replies else Reply(500, "no reply queued")
                time.sleep(reply.delay_s)
                self._send(reply)

            def _send(self, reply: Reply) -> None:
                data = reply.body.encode()
                try:
                    self.send_response(reply.status)
                    for key, value in {"content-type": "application/json", **reply.headers}.items():
                        self.send_header(key, value)
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            do_GET = _answer
            do_POST = _answer

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


# -- the Messages API's rules ------------------------------------------------------------------

_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_BLOCK_TYPES = {"text", "tool_use", "tool_result", "image"}


def check_messages_request(
    method: str, path: str, headers: dict[str, str], body: Any, key: str = "test-key"
) -> list[str]:
    """What the real API would refuse in this request (empty when it is well formed)."""
    problems: list[str] = []
    if (method, path) != ("POST", "/v1/messages"):
        return [f"unexpected endpoint {method} {path}"]
    if headers.get("x-api-key") != key:
        problems.append("missing or wrong x-api-key header")
    if not headers.get("anthropic-version"):
        problems.append("missing anthropic-version header")
    if "application/json" not in headers.get("content-type", ""):
        problems.append("content-type is not JSON")
    if not isinstance(body, dict):
        return [*problems, "the body is not a JSON object"]
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model must be a non-empty string")
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        problems.append("max_tokens must be a positive integer")
    system = body.get("system")
    if system is not None and not isinstance(system, str | list):
        problems.append("system must be a string or a list of text blocks")
    tools = body.get("tools") or []
    names = set()
    for tool in tools:
        if not _TOOL_NAME.match(tool.get("name", "")):
            problems.append(f"bad tool name {tool.get('name')!r}")
        names.add(tool.get("name"))
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            problems.append(f"tool {tool.get('name')} needs an input_schema of type object")
        if set(tool) - {"name", "description", "input_schema", "cache_control"}:
            problems.append(f"tool {tool.get('name')} has unknown fields")
    choice = body.get("tool_choice")
    if choice is not None:
        if choice.get("type") not in ("auto", "any", "tool", "none"):
            problems.append("bad tool_choice type")
        if choice.get("type") == "tool" and choice.get("name") not in names:
            problems.append("tool_choice names a tool that is not offered")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*problems, "messages must be a non-empty list"]
    if messages[0].get("role") != "user":
        problems.append("the first message must come from the user")
    pending_uses: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role")
        if role not in ("user", "assistant"):
            problems.append(f"message {index} has role {role!r}")
        if index and messages[index - 1].get("role") == role:
            problems.append(f"messages {index - 1} and {index} have the same role")
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list) or not blocks:
            problems.append(f"message {index} has no content")
            continue
        answered = set()
        for block in blocks:
            kind = block.get("type")
            if kind not in _BLOCK_TYPES:
                problems.append(f"message {index} has a block of type {kind!r}")
            if kind == "text" and not block.get("text"):
                problems.append(f"message {index} has an empty text block")
            if kind == "tool_use":
                if role != "assistant" or block.get("name") not in names:
                    problems.append(f"message {index}: tool_use of unknown tool or wrong role")
                if not isinstance(block.get("input"), dict):
                    problems.append(f"message {index}: tool_use input must be an object")
            if kind == "tool_result":
                if role != "user" or block.get("tool_use_id") not in pending_uses:
                    problems.append(f"message {index}: tool_result without its tool_use before it")
                answered.add(block.get("tool_use_id"))
        if role == "user" and pending_uses - answered:
            problems.append(f"message {index}: tool_use ids without tool_result: {pending_uses}")
        pending_uses = {b["id"] for b in blocks if b.get("type") == "tool_use"}
    return problems


class ModelFileServer:
    """Serves one model file as Hugging Face does, with Range support, on 127.0.0.1.

    ``/OWNER/REPO/resolve/REV/FILE`` redirects (302) to ``/storage/FILE`` and states the file's
    SHA-256 and length in ``X-Linked-Etag`` and ``X-Linked-Size``, as Hugging Face does for LFS
    files. ``drop_after`` makes the first answer close the connection after that many bytes;
    ``corrupt`` sends damaged bytes under the true hash; ``chunk_delay_s`` slows the body down so
    a test can pause it in flight; ``proxy`` records requests whose target is a full URL (what a
    client sends to a proxy) and serves them too. Anything else is a 404.
    """

    CHUNK = 64 * 1024

    def __init__(
        self,
        body: bytes,
        file_name: str,
        *,
        drop_after: int | None = None,
        corrupt: bool = False,
        chunk_delay_s: float = 0.0,
        state_hash: bool = True,
    ) -> None:
        import hashlib

        self.body = body
        self.file_name = file_name
        self.sha256 = hashlib.sha256(body).hexdigest()
        self.drop_after = drop_after
        self.corrupt = corrupt
        self.chunk_delay_s = chunk_delay_s
        self.state_hash = state_hash  # False: no X-Linked-Etag (a server that states none)
        self.sent = 0  # body bytes, all answers together
        self.sent_per_answer: list[int] = []  # body bytes of each file answer, in order
        self.requests: list[dict[str, str]] = []
        self.proxied: list[str] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def resolve_url(self, owner: str = "mnemo-test", repo: str = "model-GGUF") -> str:
        return f"{self.url}/{owner}/{repo}/resolve/main/{self.file_name}"

    def __enter__(self) -> ModelFileServer:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
                path = self.path
                if path.startswith("http://"):
                    owner.proxied.append(path)
                    path = "/" + path.split("/", 3)[3]
                owner.requests.append({"path": path, **dict(self.headers.items())})
                if re.fullmatch(rf"/[^/]+/[^/]+/resolve/[^/]+/{re.escape(owner.file_name)}", path):
                    self.send_response(302)
                    self.send_header("Location", f"/storage/{owner.file_name}")
                    if owner.state_hash:
                        self.send_header("X-Linked-Etag", f'"{owner.sha256}"')
                        self.send_header("X-Linked-Size", str(len(owner.body)))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif path == f"/storage/{owner.file_name}":
                    self._send_file()
                else:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()

            def _send_file(self) -> None:
                body = owner.body
                if owner.corrupt:
                    middle = len(body) // 2
                    body = body[:middle] + bytes(b ^ 0xFF for b in body[middle : middle + 4096])
                    body += owner.body[middle + 4096 :]
                start = 0
                match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))
                etag = f'"{owner.sha256}"' if owner.state_hash else '"v1"'
                if match and self.headers.get("If-Range", etag) == etag:
                    start = int(match.group(1))
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(body) - start))
                self.send_header("ETag", etag)
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                drop_after, owner.drop_after = owner.drop_after, None  # only the first answer
                answer = len(owner.sent_per_answer)
                owner.sent_per_answer.append(0)
                position = start
                while position < len(body):
                    piece = body[position : position + owner.CHUNK]
                    if drop_after is not None and position - start + len(piece) > drop_after:
                        piece = piece[: max(drop_after - (position - start), 0)]
                        self.wfile.write(piece)
                        owner.sent += len(piece)
                        owner.sent_per_answer[answer] += len(piece)
                        self.wfile.flush()
                        self.close_connection = True
                        self.connection.shutdown(2)  # a dropped connection, mid-body
                        return
                    try:
                        self.wfile.write(piece)
                    except OSError:  # the client went away (paused or cancelled)
                        return
                    owner.sent += len(piece)
                    owner.sent_per_answer[answer] += len(piece)
                    position += len(piece)
                    if owner.chunk_delay_s:
                        time.sleep(owner.chunk_delay_s)

        return Handler
