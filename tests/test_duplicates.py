"""Duplicates: a note saved twice is stored once (same content words in order), a note that
differs by one word is not, and the browser's clusters merge."""

from __future__ import annotations

from agent_helpers import call, say

from engine.agent import Agent
from engine.llm.scripted import ScriptedModel
from engine.memory.archival import duplicate_key


def test_the_same_words_in_order_are_the_same_note_and_one_word_is_not():
    same = duplicate_key("The spare key is under the blue pot.")
    assert duplicate_key("Note: the spare key is under the blue pot!") == same
    assert duplicate_key("spare  key under blue pot") == same
    assert duplicate_key("The spare key is under the red pot.") != same
    assert duplicate_key("Ana owes Rui 20 euros.") != duplicate_key("Rui owes Ana 20 euros.")


def test_the_model_saving_a_note_twice_is_told_it_exists(mnemo):
    model = ScriptedModel(context_length=8192, max_step_tokens=64)
    agent = Agent(mnemo, model)
    for content in ("Wifi password: tulip42.", "wifi password tulip42"):
        model.enqueue(
            [
                call("archival_memory_insert", content=content, request_heartbeat=True),
                say("Saved."),
            ]
        )
        agent.send("Remember the wifi password is tulip42.")
    assert mnemo.archival.count() == 1
    assert "Already in archival memory (passage" in mnemo.recall.recent(3)[1].text
    model.enqueue(
        [
            call(
                "archival_memory_insert", content="Wifi password: rose77.", request_heartbeat=True
            ),
            say("Saved."),
        ]
    )
    agent.send("The wifi password changed to rose77.")
    assert mnemo.archival.count() == 2  # one word differs: another note


def test_clusters_of_duplicates_merge_into_the_oldest_with_every_tag(mnemo):
    first = mnemo.archival.insert("Dentist on Friday at 10.", tags=["health"])
    mnemo.archival.insert("dentist on friday at 10", tags=["week"])
    mnemo.archival.insert("Note: Dentist on Friday, at 10!")
    mnemo.archival.insert("Dentist on Monday at 10.")
    mnemo.archival.insert("Dentist on Friday at 10.", source="letter.txt", origin="document")
    (cluster,) = mnemo.archival.duplicate_clusters()  # the document's passage is not a note
    assert len(cluster) == 3 and cluster[0].id == first
    kept = mnemo.archival.merge([p.id for p in cluster])
    assert kept.id == first and kept.tags == ["health", "week"]
    assert mnemo.archival.count() == 3
    assert mnemo.archival.duplicate_clusters() == []
