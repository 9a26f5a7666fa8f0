"""A hostile OpenAI-compatible server on 127.0.0.1 cannot hold or flood a turn: each test is one
of the shapes that held a turn for minutes, stored 50 MB, or ended in an internal error."""

from __future__ import annotations

import itertools
import json
import math
import random
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from agent_helpers import Recorder

from engine.agent import Agent
from engine.errors import GenerationCancelled, ModelError, register_secret
from engine.events import MessageSent, Notice
from engine.functions import function_schemas
from engine.llm import ChatMessage, Prompt
from engine.llm.api import MAX_STEP_CHARS
from engine.llm.openai_api import OpenAIModel

Lines = Callable[[], Iterator[bytes]]


class HostileServer:
    """Answers every request with 200 and the lines ``lines()`` makes, as slowly as it likes;
    ``answer=False``: accepts the request and never answers at all."""

    def __init__(self, lines: Lines | None = None, answer: bool = True) -> None:
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
                server.requests += 1
                self.rfile.read(int(self.headers.get("content-length") or 0))
                if not answer:
                    time.sleep(30)
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                try:
                    for line in lines() if lines else ():
                        self.wfile.write(line)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def hostile() -> Iterator[Callable[..., HostileServer]]:
    started: list[HostileServer] = []

    def start(lines: Lines | None = None, answer: bool = True) -> HostileServer:
        started.append(HostileServer(lines, answer))
        return started[-1]

    yield start
    for server in started:
        server.close()


def data(chunk: Any) -> bytes:
    return f"data: {json.dumps(chunk)}\n\n".encode()


def content(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"content": text}}]}


def arguments(piece: str) -> dict[str, Any]:
    call = {"index": 0, "id": "c1", "function": {"name": "send_message", "arguments": piece}}
    return {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}


def prompt() -> Prompt:
    return Prompt("Be brief.", function_schemas(["human"]), "", [ChatMessage("user", "Hi")])


def model_at(server: HostileServer, **options: Any) -> OpenAIModel:
    return OpenAIModel("hostile", base_url=server.url, context_length=8192, **options)


def forever(chunk: dict[str, Any], gap_s: float = 0.0) -> Lines:
    def lines() -> Iterator[bytes]:
        while True:
            yield data(chunk)
            if gap_s:
                time.sleep(gap_s)

    return lines


def forever_lines(line: bytes, gap_s: float) -> Lines:
    def lines() -> Iterator[bytes]:
        while True:
            yield line
            time.sleep(gap_s)

    return lines


def timed(work: Callable[[], Any]) -> tuple[Any, float]:
    started = time.monotonic()
    try:
        result: Any = work()
    except Exception as error:  # the test looks at which
        result = error
    return result, time.monotonic() - started


# -- 11: no turn is held ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        forever(content("a"), gap_s=20),  # a chunk every 20 s
        forever(arguments('{"message": "a'), gap_s=20),
        forever_lines(b": keep-alive\n\n", gap_s=0.01),  # comments only, forever
    ],
    ids=["content every 20 s", "arguments every 20 s", "comments only"],
)
def test_a_step_ends_by_its_deadline_whatever_the_server_streams(hostile, lines):
    server = hostile(lines)
    result, took = timed(lambda: model_at(server, deadline_s=2).step(prompt()))
    assert isinstance(result, ModelError) and "within 2 s" in str(result)
    assert took < 4


def test_a_server_that_never_answers_is_given_up_on_after_one_timeout(hostile):
    server = hostile(answer=False)
    result, took = timed(lambda: model_at(server, timeout_s=1, retries=3).step(prompt()))
    assert isinstance(result, ModelError) and "did not answer within 1 s" in str(result)
    assert took < 2.5 and server.requests == 1  # not 4 tries of 60 s each


def test_a_silent_server_lets_the_person_stop_the_reply(hostile):
    server = hostile(forever(content("a"), gap_s=20))
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    result, took = timed(lambda: model_at(server).step(prompt(), cancel=cancel))
    assert isinstance(result, GenerationCancelled) and took < 2


# -- 12: no step is flooded ------------------------------------------------------------------


def test_an_endless_reply_is_cut_with_a_notice_and_never_stored_whole(hostile, mnemo):
    server = hostile(forever(content("x" * 65536)))
    events = Recorder()
    result = Agent(mnemo, model_at(server)).send("Hi", on_event=events)
    assert result.reason == "replied"
    (sent,) = events.of(MessageSent)
    assert len(sent.text) < MAX_STEP_CHARS + 200 and "the rest was cut" in sent.text
    longest = max(len(hit.text) for hit in mnemo.recall.recent(20))
    assert longest < MAX_STEP_CHARS + 200


def test_endless_arguments_are_cut_and_streamed_to_the_screen_only_up_to_the_cap(hostile):
    opening = [data(arguments('{"message": "'))]
    server = hostile(lambda: itertools.chain(opening, forever(arguments("y" * 65536))()))
    shown: list[str] = []
    step = model_at(server).step(prompt(), on_text=shown.append)
    assert step.call is None and step.error  # cut arguments are not JSON: the model is told
    assert sum(map(len, shown)) <= MAX_STEP_CHARS


# -- 13: a wrongly typed chunk is the server's fault, in one sentence ---------------------------

VALID = {
    "id": "c",
    "choices": [
        {
            "index": 0,
            "delta": {
                "content": "Hi",
                "tool_calls": [
                    {"index": 0, "id": "t", "function": {"name": "send_message", "arguments": "{}"}}
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1},
}
ODD_VALUES: list[Any] = [
    None, "lots", "", 7, -1, 2.5, math.nan, math.inf, True, [], [1, 2], {}, {"a": 1},
    "x" * 1000, [None], [[]],
]  # fmt: skip


def _paths(value: Any, path: tuple = ()) -> Iterator[tuple]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))


def _with(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    target = copy
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return copy


def test_every_wrongly_typed_chunk_is_a_model_error_in_one_sentence(monkeypatch):
    """Each place of a valid chunk given each odd value, plus random mixtures of them: the
    step either works or raises a ModelError that names the server; nothing else escapes."""
    paths = list(_paths(VALID))
    cases = [[_with(VALID, path, odd)] for path in paths for odd in ODD_VALUES]
    rng = random.Random(35)
    for _ in range(300):
        chunk = VALID
        for _ in range(rng.randint(1, 4)):
            chunk = _with(chunk, rng.choice(list(_paths(chunk))), rng.choice(ODD_VALUES))
        cases.append([chunk, content("more")])
    model = OpenAIModel("fuzz", base_url="http://127.0.0.1:9/v1", context_length=8192)
    outcomes = {"step": 0, "model error": 0}
    for chunks in cases:
        json_safe = json.loads(
            json.dumps(chunks).replace("NaN", "null").replace("Infinity", "null")
        )
        for sent in (chunks, json_safe):
            monkeypatch.setattr(
                model._client,
                "stream_events",
                lambda *_a, sent=sent, **_k: ((None, c) for c in sent),
            )
            try:
                model.step(prompt())
                outcomes["step"] += 1
            except ModelError as error:
                assert "not a chat completion chunk" in str(error) or "server" in str(error)
                outcomes["model error"] += 1
    assert outcomes["step"] > 0 and outcomes["model error"] > 0


@pytest.mark.parametrize(
    "chunk",
    [
        ["a", "list"],
        "a string",
        {"choices": [{"delta": "a string"}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": {}}}]}}]},
        {"choices": [], "usage": "lots"},
        {"choices": [{"delta": {"tool_calls": [{"index": [0]}]}}]},
    ],
    ids=["list", "string", "delta string", "arguments object", "usage lots", "index list"],
)
def test_the_shapes_hostile_testing_sent_end_the_turn_in_one_sentence(hostile, mnemo, chunk):
    server = hostile(lambda: iter([data(chunk), b"data: [DONE]\n\n"]))
    events = Recorder()
    result = Agent(mnemo, model_at(server)).send("Hi", on_event=events)
    assert result.reason == "error"
    (notice,) = [n for n in events.of(Notice) if n.kind == "error"]
    assert "not a chat completion chunk" in notice.text
    assert "inside Mnemo" not in notice.text


# -- 14: a key in an ordinary reply is stored nowhere ------------------------------------------


def test_a_key_the_server_puts_in_a_reply_is_stored_nowhere(hostile, mnemo):
    key = "sk-test-0123456789abcdefghijklmnop"
    register_secret(key)
    server = hostile(
        lambda: iter([data(content(f"Your key is {key}, keep it safe.")), b"data: [DONE]\n\n"])
    )
    Agent(mnemo, model_at(server)).send("What is my key?")
    stored = "\n".join(hit.text for hit in mnemo.recall.recent(20))
    assert "keep it safe" in stored and key[:12] not in stored
    mnemo.archival.insert(f"note: {key}", origin="model")
    assert all(key[:12] not in passage.text for passage in mnemo.archival.recent(5))
