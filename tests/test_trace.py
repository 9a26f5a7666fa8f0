"""The retrieval trace: per hit, its keyword and vector scores and ranks, the fused score and
whether it fell below the relevance floor; who searched; the last 200 kept in memory."""

from __future__ import annotations

from agent_helpers import Recorder, say, search

from engine.agent import Agent
from engine.cli import main
from engine.events import FunctionReturned
from engine.llm.scripted import ScriptedModel
from engine.memory import trace


def test_a_search_explains_each_hit(mnemo):
    plumber = mnemo.archival.insert("The boiler service code is 7731 and the plumber is Ana Ruiz.")
    mnemo.archival.insert("Milk, eggs and bread for Sunday.")
    page = mnemo.archival.search("who repairs the boiler")
    explained = page.trace
    assert explained.store == "archival" and explained.by == "user"
    first = explained.hits[0]
    assert first.key == plumber and first.rank == 1
    assert first.keyword_rank == 1 and first.keyword_score is not None  # "boiler"
    assert first.vector_rank == 1 and first.vector_relevance > 0
    assert "fused" in first.line() and "words" in first.line() and "meaning" in first.line()
    # The shopping note is nowhere near in meaning: it fell below the floor, and says so.
    assert [text for _id, text, _score in explained.below_floor] == [
        "Milk, eggs and bread for Sunday."
    ]
    assert explained.lines()[-1].startswith("below the relevance floor: ")
    assert trace.recent_traces()[-1] is explained


def test_only_the_last_200_searches_are_kept(mnemo):
    mnemo.recall.add("user", "I like jazz.")
    for i in range(trace.KEPT + 5):
        mnemo.recall.search(f"jazz {i}")
    kept = trace.recent_traces()
    assert len(kept) == trace.KEPT and kept[-1].query == f"jazz {trace.KEPT + 4}"


def test_the_model_s_and_the_engine_s_searches_carry_their_trace_to_the_window(mnemo):
    mnemo.archival.insert("The spare key is under the blue pot.")
    model = ScriptedModel(context_length=8192, max_step_tokens=64)
    model.enqueue([search("spare key"), say("Under the blue pot.")])
    events = Recorder()
    Agent(mnemo, model).send("Where is the spare key?", on_event=events)
    (returned,) = events.of(FunctionReturned)
    assert returned.trace[0].startswith("archival search for 'spare key' by the model")
    assert "#1 fused" in returned.trace[1] and "spare key" in returned.trace[1]
    assert "fused" not in mnemo.recall.recent(3)[1].text  # the model never reads it

    assisted = ScriptedModel(parameter_count=135_000_000)
    assisted.enqueue(["Under the blue pot."])
    events = Recorder()
    Agent(mnemo, assisted, conversation_id="later").send(
        "Where did I put the spare key?", on_event=events
    )
    recall = next(e for e in events.of(FunctionReturned) if e.name == "recall")
    assert any("by the engine (assisted recall)" in line for line in recall.trace)


def test_mnemo_search_explain(profile_dir, capsys):
    base = ["--profile", str(profile_dir)]
    assert main([*base, "archival", "insert", "The spare key is under the blue pot."]) == 0
    capsys.readouterr()
    assert main([*base, "search", "archival", "spare key", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "#1 fused" in out and "words" in out and "meaning" in out


def test_a_message_below_the_floor_is_listed_once_though_each_sentence_has_a_vector(mnemo):
    mnemo.recall.add(
        "user",
        "I bought milk, eggs and bread for the whole week at the market. "
        "My sister's dog barked at the postman again early this morning.",
    )
    mnemo.recall.add("user", "The plumber Ana Ruiz repaired the boiler on Monday.")
    explained = mnemo.recall.search("who repairs the heating").trace
    assert [key for key, _text, _score in explained.below_floor] == ["1"]


def test_a_weak_hit_says_weak_match_not_below_the_floor_which_is_for_those_left_out():
    hit = trace.TracedHit("k", "text", None, None, 3.1, 1, 3.1, 1, weak=True)
    assert hit.line().endswith("· weak match") and "floor" not in hit.line()
