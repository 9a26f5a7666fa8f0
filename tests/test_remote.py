"""The window's side of `mnemo serve`: ``RemoteMnemo`` against a real server whose assistants live
in a real PostgreSQL (pgvector) and a real S3-compatible server. A scripted model plays the agent.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from engine.errors import CoreMemoryError, NotFoundError
from engine.events import MessageSent, ProposalCreated, TextStreamed, TurnFinished
from engine.llm import ScriptedModel
from engine.memory.core import Block
from engine.memory.proposals import Proposal
from engine.memory.recall import MessageHit
from engine.memory.search import Page
from engine.profile import Profile
from engine.server.client import Connection, RemoteMnemo, ServerUnreachableError
from tests.agent_helpers import call, say
from tests.mnemo_server import Server, on_postgres_and_s3


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def server(tmp_path, model, postgres_server, s3_profile) -> Iterator[Server]:
    running = on_postgres_and_s3(tmp_path / "server", model, postgres_server, s3_profile)
    yield running
    running.stop()


def connect(server: Server, user: str, tmp_path) -> RemoteMnemo:
    connection = Connection(server.url, server.tokens[user], "home")
    connection.check()
    return RemoteMnemo(connection, Profile.resolve(tmp_path / f"window-{user}"))


def test_the_window_side_chats_approves_ingests_and_finds_on_the_server(server, model, tmp_path):
    alice = connect(server, "alice", tmp_path)
    model.enqueue(
        [
            call("core_memory_append", label="human", content="Name: Ada.", request_heartbeat=True),
            say("Hi Ada, noted."),
        ]
    )
    events = []
    finished = alice.connection.turn("I am Ada.", events.append)
    # The same event objects the local agent gives the window's bridge.
    assert isinstance(finished, TurnFinished) and finished is events[-1]
    assert any(isinstance(e, TextStreamed) for e in events)
    assert [e.text for e in events if isinstance(e, MessageSent)] == ["Hi Ada, noted."]
    created = [e for e in events if isinstance(e, ProposalCreated)]
    assert created and created[0].proposal.new_content == "Name: Ada."  # nested, typed

    pending = alice.proposals.pending()
    assert [type(p) for p in pending] == [Proposal] and pending[0].new_content == "Name: Ada."
    alice.proposals.approve(pending[0].id)
    blocks = alice.core.blocks()
    assert all(isinstance(b, Block) for b in blocks)
    assert "Name: Ada." in alice.core.get("human")

    recent = alice.recall.recent(6)
    assert all(isinstance(hit, MessageHit) for hit in recent)
    assert "Hi Ada, noted." in [hit.text for hit in recent]
    assert recent[-1].created_at.year >= 2026  # a datetime again, not a string

    manual = tmp_path / "boiler.md"
    manual.write_text("# Boiler\n\nThe boiler is serviced every October by Dana from Heatwell.\n")
    assert alice.connection.upload(manual)["outcome"] == "done"
    found = alice.archival.search("who services the boiler")
    assert isinstance(found, Page) and "Dana" in found.hits[0].text
    assert [d.path.endswith("boiler.md") for d in alice.documents()] == [True]
    assert alice.settings.memory_mode in ("auto", "self_managed", "assisted")

    bob = connect(server, "bob", tmp_path)
    assert bob.recall.count() == 0
    assert bob.archival.search("who services the boiler").total == 0
    assert bob.proposals.pending() == [] and "Ada" not in bob.core.get("human")


def test_errors_come_back_as_the_engines_own_in_words(server, tmp_path):
    alice = connect(server, "alice", tmp_path)
    with pytest.raises(NotFoundError, match="no message 999"):
        alice.recall.get(999)
    alice.core.add_block("todo", "buy milk", char_limit=20)
    with pytest.raises(CoreMemoryError, match="at most 20 characters"):
        alice.core.set("todo", "x" * 21)
    with pytest.raises(AttributeError, match="not available while connected"):
        alice.archival.reembed  # noqa: B018 (the attribute's refusal is the point)
    with pytest.raises(Exception, match="no assistant called 'work'"):
        Connection(server.url, server.tokens["alice"], "work").check()


def test_a_server_that_went_away_is_said_in_words(server, tmp_path):
    alice = connect(server, "alice", tmp_path)
    server.stop()
    with pytest.raises(ServerUnreachableError, match="Cannot reach the Mnemo server at http"):
        alice.core.blocks()
    with pytest.raises(ServerUnreachableError):
        alice.connection.turn("Are you there?", lambda _event: None)


def test_only_the_engines_own_values_are_built_from_what_a_peer_sends():
    from engine.server import wire

    for name in ("os:system", "engine.cli.__main__:main", "engine.memory.core:Block.__init__"):
        with pytest.raises(ValueError, match="which Mnemo does not build"):
            wire.decode({"$type": name})
    block = Block("human", "Name: Ada", "about the user", 500, False, datetime.now(UTC))
    assert wire.decode(wire.encode([block, {3: "three"}])) == [block, {3: "three"}]
