"""Expiry: a passage leaves search at its time, stays listed (and restorable) for a grace
period, then is purged; a document's passages never expire by age."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import pytest
from agent_helpers import call, say

from engine.agent import Agent
from engine.cli import main
from engine.errors import InputError
from engine.llm.scripted import ScriptedModel
from engine.memory import archival


def texts(mnemo, query: str) -> list[str]:
    return [p.text for p in mnemo.archival.search(query)]


def test_an_expired_passage_leaves_search_at_once_can_come_back_and_is_purged_later(mnemo):
    spot = mnemo.archival.insert("The car is parked on level 3, spot B12.")
    mnemo.archival.insert("The spare key is under the blue pot.")
    assert texts(mnemo, "where is the car parked")[0] == "The car is parked on level 3, spot B12."

    passage = mnemo.archival.set_expiry(spot, time.time() - 1)
    assert passage.expires_at is not None
    assert "The car is parked" not in " ".join(texts(mnemo, "where is the car parked"))
    assert [p.id for p in mnemo.archival.recent()] != [] and spot not in [
        p.id for p in mnemo.archival.recent()
    ]
    assert [p.id for p in mnemo.archival.expired()] == [spot]

    mnemo.archival.set_expiry(spot, None)  # restored from "Expired"
    assert texts(mnemo, "where is the car parked")[0].startswith("The car is parked")
    assert mnemo.archival.expired() == []

    mnemo.archival.set_expiry(spot, time.time() - archival.EXPIRED_GRACE_S - 1)
    assert mnemo.archival.purge_expired() == 1
    assert mnemo.archival.count() == 1 and mnemo.archival.expired() == []


def test_a_day_alone_expires_at_its_end_and_a_document_never_expires(mnemo):
    today = datetime.now().date().isoformat()
    note = mnemo.archival.insert("Lunch with Ana today.")
    assert mnemo.archival.set_expiry(note, today).expires_at.strftime("%H:%M") == "23:59"
    document = mnemo.archival.insert("Chapter 1.", source="book.txt", origin="document")
    with pytest.raises(InputError, match="do not expire"):
        mnemo.archival.set_expiry(document, today)


def test_the_model_can_save_a_note_until_a_time(mnemo):
    soon = (datetime.now() + timedelta(hours=3)).strftime("%Y-%m-%d %H:%M")
    model = ScriptedModel(context_length=8192, max_step_tokens=64)
    model.enqueue(
        [
            call(
                "archival_memory_insert",
                content="Parking spot: B12.",
                expires_at=soon,
                request_heartbeat=True,
            ),
            say("Noted until tonight."),
        ]
    )
    Agent(mnemo, model).send("Remember my parking spot B12 until tonight.")
    (passage,) = mnemo.archival.recent()
    assert f"{passage.expires_at:%Y-%m-%d %H:%M}" == soon
    assert f"until {soon}" in mnemo.recall.recent(3)[1].text


def test_the_expiry_commands(profile_dir, capsys):
    base = ["--profile", str(profile_dir), "archival"]
    hour_ago = (datetime.now() - timedelta(hours=1)).strftime("%Y-%m-%d %H:%M")
    assert main([*base, "insert", "Parking spot B12.", "--expires", hour_ago]) == 0
    passage_id = capsys.readouterr().out.split()[2].rstrip(";.")
    assert main([*base, "expired"]) == 0
    assert f"expired {hour_ago}: Parking spot B12." in capsys.readouterr().out
    assert main([*base, "expire", passage_id, "never"]) == 0
    assert "kept for good" in capsys.readouterr().out
    assert main([*base, "expire", passage_id, "tomorrow"]) == 1
    assert "YYYY-MM-DD" in capsys.readouterr().err


def test_a_fact_expires_too_and_can_come_back(mnemo):
    knowledge = mnemo.knowledge
    knowledge.add("user", "lives_in", "Porto")
    trip = knowledge.add("user", "staying_at", "Hotel Lisboa", expires_at=time.time() + 3600)
    assert {f.object for f in knowledge.facts("user")} == {"Porto", "Hotel Lisboa"}
    knowledge.set_expiry(trip.id, time.time() - 1)
    assert [f.object for f in knowledge.facts("user")] == ["Porto"]
    assert [f.id for f in knowledge.expired()] == [trip.id]
    knowledge.set_expiry(trip.id, None)
    assert "Hotel Lisboa" in {f.object for f in knowledge.facts("user")}
    knowledge.set_expiry(trip.id, time.time() - archival.EXPIRED_GRACE_S - 1)
    assert knowledge.purge_expired() == 1
    assert [f.object for f in knowledge.history("user")] == ["Porto"]
