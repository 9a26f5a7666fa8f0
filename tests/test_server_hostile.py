"""`mnemo serve` against hostile users: each test is one way a user tried to take the server's
keys, read its files, or hold it up for everyone, on the real server (uvicorn on 127.0.0.1)."""

from __future__ import annotations

import contextlib
import inspect
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine.llm import ScriptedModel, ScriptedStep
from engine.memory.archival import ArchivalStore
from engine.memory.core import CoreMemory
from engine.memory.knowledge import KnowledgeStore
from engine.memory.proposals import ProposalStore
from engine.memory.recall import RecallStore
from engine.server import app as served_app
from engine.server import wire
from engine.server.app import Limits
from engine.settings import DEFAULTS, PLACED_AT_CREATION, Settings, touches_the_machine
from tests.agent_helpers import say
from tests.fake_servers import FakeServer, Reply
from tests.mnemo_server import Server
from tests.test_server import events_of

# A value each setting takes, to try through the wire.
TRY = {
    "agent.step_limit": 5,
    "agent.reply_tokens": 64,
    "agent.mode": "self",
    "chat.conversation": "other",
    "memory.core_write_policy": "auto",
    "mcp.notes": "apply",
    "model.backend": "openai",
    "model.path": "/etc/passwd",
    "model.name": "gpt-4o",
    "model.base_url": "http://attacker.invalid/v1",
    "model.context_length": 65537,
    "model.gpu_layers": 99,
    "model.threads": 64,
    "model.seed": 1,
    "models.folder": "/",
    "models.reranker": "/etc/passwd",
    "models.embedder": "/etc/shadow",
    "ingest.max_file_mb": 100000,
    "ingest.seconds_per_mb": 100000,
    "storage.archival_url": "s3://attacker/x",
}


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def server(tmp_path: Path, model: ScriptedModel) -> Iterator[Server]:
    running = Server(tmp_path / "server", lambda: model, Limits(rate=1000, burst=1000))
    for user in ("alice", "bob"):
        running.client(user).post("/v1/assistants", json={"name": "home"})
    yield running
    running.stop()


def wire_call(client: httpx.Client, store: str, method: str, *args: Any) -> httpx.Response:
    body = {"store": store, "method": method, "args": list(args)}
    return client.post("/v1/assistants/home/call", json=body)


# -- 1: the server serves memory, not its machine ------------------------------------------------


def test_every_setting_through_the_wire_a_user_changes_only_the_assistants_own(server):
    assert set(TRY) == set(DEFAULTS)  # a new setting gets a line here, and a decision
    alice = server.client("alice")
    settings = server.hub.get("alice", "home").mnemo.settings
    for key, value in TRY.items():
        answer = wire_call(alice, "settings", "set", key, value)
        if touches_the_machine(key):
            assert answer.status_code == 403, key
            assert "operator" in answer.json()["error"]
            assert settings.get(key) == DEFAULTS[key], key
        elif key in PLACED_AT_CREATION:
            assert answer.status_code == 422, key
        else:
            assert answer.status_code == 200, (key, answer.text)
            assert settings.get(key) == value, key
    assert wire_call(alice, "settings", "store", "model.backend", "openai").status_code == 404


def test_a_user_cannot_send_the_servers_key_to_their_own_address(tmp_path, monkeypatch, model):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-operator-secret")
    catcher = FakeServer()  # where the attacker wants the server's requests to go
    running = Server(tmp_path / "server", lambda: model)
    try:
        alice = running.client("alice")
        alice.post("/v1/assistants", json={"name": "home"})
        for key, value in (("model.backend", "openai"), ("model.base_url", catcher.url + "/v1")):
            assert wire_call(alice, "settings", "set", key, value).status_code == 403
        model.enqueue([say("The operator's model answers.")])
        events = events_of(alice.post("/v1/assistants/home/turns", json={"text": "Hi"}))
        sent = [data["text"] for name, data in events if name == "message_sent"]
        assert sent == ["The operator's model answers."]
        assert catcher.received == []
    finally:
        running.stop()
        catcher.close()


STORES = {
    "core": CoreMemory,
    "recall": RecallStore,
    "archival": ArchivalStore,
    "knowledge": KnowledgeStore,
    "proposals": ProposalStore,
    "settings": Settings,
}


def test_every_store_method_through_the_wire_is_served_only_when_listed(server):
    """Each public method of each store: a listed one is reached (it may refuse its arguments,
    never with 404 or a 500); any other, such as a transaction or a bulk write, is 404."""
    alice = server.client("alice")
    for store, kind in STORES.items():
        methods = [name for name, _ in inspect.getmembers(kind, callable) if name[0] != "_"]
        for method in methods:
            status = wire_call(alice, store, method).status_code
            if method in wire.CALLS[store]:
                assert status not in (404, 500), (store, method, status)
            else:
                assert status == 404, (store, method, status)


def test_a_value_sent_is_built_only_from_the_engines_value_classes(server):
    alice = server.client("alice")
    for kind in ("engine.memory.core:func", "engine.memory.core:Session", "os:system"):
        body = {
            "store": "settings",
            "method": "set",
            "args": ["chat.conversation", {"$type": kind}],
        }
        answer = alice.post("/v1/assistants/home/call", json=body)
        assert answer.status_code == 422, (kind, answer.text)
    assert server.hub.get("alice", "home").mnemo.settings.get("chat.conversation") == ""
    nested: Any = "x"
    for _ in range(900):
        nested = [nested]
    answer = alice.post(
        "/v1/assistants/home/call",
        json={"store": "settings", "method": "set", "args": ["chat.conversation", nested]},
    )
    assert answer.status_code == 422


def test_paths_reach_a_user_as_names_of_their_uploads(server):
    alice = server.client("alice")
    text = "# Boiler\n\nThe boiler service code is 7731.\n"
    assert alice.put("/v1/assistants/home/documents/boiler.md", content=text).status_code == 200
    root = str(server.hub.get("alice", "home").mnemo.profile.root)
    found = alice.get("/v1/assistants/home/search", params={"q": "boiler service code"})
    assert found.json()["hits"] and root not in found.text
    assert found.json()["hits"][0]["source"]["path"] == "boiler.md"
    listed = wire_call(alice, "mnemo", "documents")
    assert listed.status_code == 200 and "boiler.md" in listed.text and root not in listed.text


def test_upload_names_a_file_system_cannot_take_are_refused_and_parallel_ones_all_land(server):
    alice = server.client("alice")
    for name in ("bad%00name.md", "a" * 300 + ".md"):
        answer = alice.put(f"/v1/assistants/home/documents/{name}", content="Hello.")
        assert answer.status_code == 422, (name, answer.text)
    statuses: list[int] = []

    def upload(n: int) -> None:
        with server.client("alice") as client:
            body = f"Version {n} of the same notes.\n" * 50
            statuses.append(
                client.put("/v1/assistants/home/documents/same.md", content=body).status_code
            )

    threads = [threading.Thread(target=upload, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert statuses == [200, 200, 200]
    uploads = server.hub.get("alice", "home").mnemo.profile.root / "uploads"
    assert [path.name for path in uploads.iterdir()] == ["same.md"]  # no partial left behind


# -- 2: no user can starve another ---------------------------------------------------------------


def test_a_body_past_the_cap_is_refused_as_it_arrives_before_the_token_is_checked(server):
    sent = 0

    def chunks() -> Iterator[bytes]:
        nonlocal sent
        for _ in range(300):  # 300 MB if it were all read
            sent += 2**20
            yield b"x" * 2**20

    with httpx.Client(base_url=server.url, timeout=30) as anonymous:
        try:
            answer = anonymous.post("/v1/assistants", content=chunks())
            assert answer.status_code == 413
        except httpx.HTTPError:
            pass  # the server closed the connection on the rest of the body: refused too
    assert sent < 20 * 2**20  # it stopped reading long before the end


def test_a_users_share_of_turns_is_capped_and_their_slow_turns_hold_up_no_one(server, model):
    alice, bob = server.client("alice"), server.client("bob")
    for name in ("two", "three"):
        alice.post("/v1/assistants", json={"name": name})
    model.enqueue([ScriptedStep(say("slow"), delay_s=30) for _ in range(4)])
    answers: list[int] = []

    def turn(assistant: str) -> None:
        with (
            contextlib.suppress(httpx.HTTPError),  # the server stops under it at the end
            server.client("alice") as client,
            client.stream(
                "POST", f"/v1/assistants/{assistant}/turns", json={"text": "Hi"}
            ) as response,
        ):
            answers.append(response.status_code)
            if response.status_code == 200:
                for _line in response.iter_lines():
                    pass

    threads = [threading.Thread(target=turn, args=(name,), daemon=True) for name in ("home", "two")]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 10
    while len(server.hub._turns) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    third = alice.post("/v1/assistants/three/turns", json={"text": "Hi"})
    assert third.status_code == 429 and "turns running" in third.json()["error"]
    started = time.monotonic()
    for _ in range(5):
        assert bob.get("/v1/assistants").status_code == 200
    assert time.monotonic() - started < 5  # bob is not behind alice's turns
    assert alice.get("/v1/assistants").status_code == 200


def test_a_client_that_goes_away_cancels_its_turn(server, model):
    model.enqueue([ScriptedStep(say("never read"), delay_s=60)])
    with (
        server.client("alice") as client,
        client.stream("POST", "/v1/assistants/home/turns", json={"text": "Hi"}) as response,
    ):
        assert response.status_code == 200
        next(response.iter_lines())  # the first event: the turn runs
    deadline = time.monotonic() + 10
    while server.hub._turns and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not server.hub._turns  # cancelled, not left running for 60 s
    model.enqueue([say("Hello again.")])
    events = events_of(
        server.client("alice").post("/v1/assistants/home/turns", json={"text": "Hi"})
    )
    assert events[-1][0] == "turn_finished"


def test_idle_and_slow_sockets_are_closed(server, monkeypatch):
    monkeypatch.setattr(served_app, "HEADER_TIMEOUT_S", 0.5)
    idle = socket.create_connection(("127.0.0.1", server.port))
    slow = socket.create_connection(("127.0.0.1", server.port))
    slow.sendall(b"GET /v1/version HTTP/1.1\r\nHost: x\r\n")  # and never the end of the headers
    for sock in (idle, slow):
        sock.settimeout(5)
        assert sock.recv(1024) == b""  # closed by the server, well before the 5 s
        sock.close()
    with socket.create_connection(("127.0.0.1", server.port)) as polite:
        polite.sendall(b"GET /v1/version HTTP/1.1\r\nHost: x\r\n\r\n")
        assert polite.recv(1024).startswith(b"HTTP/1.1 200")


def test_one_model_is_loaded_for_every_assistant(tmp_path, model):
    loads: list[int] = []

    def load() -> ScriptedModel:
        loads.append(1)
        return model

    running = Server(tmp_path / "server", load)
    try:
        for user in ("alice", "bob"):
            client = running.client(user)
            client.post("/v1/assistants", json={"name": "home"})
            model.enqueue([say("Hi.")])
            assert events_of(client.post("/v1/assistants/home/turns", json={"text": "Hi"}))
        assert loads == [1]
    finally:
        running.stop()


def test_sigterm_stops_the_server_within_seconds_while_a_turn_waits_on_a_slow_model(tmp_path):
    root = tmp_path / "server"
    environment = dict(os.environ)
    added = subprocess.run(
        [sys.executable, "-m", "engine.cli", "server-users", "--root", str(root), "add", "ann"],
        capture_output=True, text=True, check=True, env=environment,
    )  # fmt: skip
    token = added.stdout.strip().splitlines()[-1]
    slow = FakeServer()  # an OpenAI-compatible server that sends one chunk in 20 s
    slow.replies.append(Reply(delay_s=20, body="{}"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "serve", "--root", str(root), "--port", str(port),
         "--model", "openai:slow", "--base-url", slow.url + "/v1"],
        env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        headers = {"Authorization": f"Bearer {token}"}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(url + "/v1/version", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        httpx.post(url + "/v1/assistants", json={"name": "home"}, headers=headers, timeout=10)

        def turn() -> None:
            with contextlib.suppress(httpx.HTTPError):  # the server stops under it
                httpx.post(
                    url + "/v1/assistants/home/turns",
                    json={"text": "Hi"},
                    headers=headers,
                    timeout=60,
                )

        threading.Thread(target=turn, daemon=True).start()
        deadline = time.monotonic() + 10
        while not slow.received and time.monotonic() < deadline:
            time.sleep(0.05)
        assert slow.received  # the turn waits on the model server
        stopping = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=15)
        assert time.monotonic() - stopping < 8
    finally:
        if process.poll() is None:
            process.kill()
        slow.close()


# -- 4: round two: what a program sends --------------------------------------------------------


def test_a_request_to_forget_through_a_programs_chat_reaches_neither_the_model_nor_memory(
    server, model
):
    """A request to forget over /v1/chat/completions reached the model and was kept as a note;
    a program's chat has no preview, so it is told where to forget."""
    alice = server.client("alice")
    request = "Please forget that I work at a bakery."
    answer = alice.post(
        "/v1/chat/completions",
        json={"model": "mnemo:home", "messages": [{"role": "user", "content": request}]},
    )
    assert answer.status_code == 200, answer.text
    reply = answer.json()["choices"][0]["message"]["content"]
    assert "mnemo forget" in reply and "Nothing of this message was kept" in reply
    turn = alice.post("/v1/assistants/home/turns", json={"text": "Forget my passport number."})
    assert "mnemo forget" in dict(events_of(turn))["message_sent"]["text"]
    assert model.prompts == []  # the model saw neither
    mnemo = server.hub.get("alice", "home").mnemo
    assert mnemo.recall.count() == 0 and mnemo.archival.count() == 0


def test_a_lone_surrogate_in_a_request_is_refused_in_words(server):
    alice = server.client("alice")
    body = '{"model": "mnemo:home", "messages": [{"role": "user", "content": "Hi \\ud800"}]}'
    headers = {"content-type": "application/json"}
    answer = alice.post("/v1/chat/completions", content=body, headers=headers)
    assert answer.status_code == 422
    assert "lone surrogate" in answer.json()["error"]["message"]
    answer = alice.post("/v1/assistants/home/turns", content='{"text": "\\udfff"}', headers=headers)
    assert answer.status_code == 422 and "is not valid" in answer.json()["error"]
