"""The context window: pressure warning, eviction into a recursive summary, summaries in pieces."""

from __future__ import annotations

import re
from datetime import datetime

from agent_helpers import Recorder, call, say

from engine.agent import Agent
from engine.context.summary import summarize
from engine.context.window import PRESSURE_FRACTION, load_state
from engine.events import (
    ContextEvicted,
    FunctionReturned,
    MemoryPressure,
    MessageSent,
    StepStarted,
    TurnFinished,
)
from engine.llm import Prompt, ScriptedModel
from engine.memory.recall import MessageHit

WORDS = "amber basil cedar dune ember fjord garnet harbor iris juniper kelp lotus meadow".split()


def search_then_reply(prompt: Prompt):
    """Search past conversations for each new user message, then answer it."""
    users = [i for i, message in enumerate(prompt.messages) if message.role == "user"]
    user = users[-1] if users else len(prompt.messages)
    if users and all(message.role != "assistant" for message in prompt.messages[user:]):
        topic = re.findall(r"\w+", prompt.messages[user].content)[2]
        return call("conversation_search", query=topic, request_heartbeat=True)
    return say("Noted, thank you for telling me about that.")


def check_calls_keep_their_results(prompt: Prompt) -> None:
    for index, message in enumerate(prompt.messages):
        if message.role == "tool":
            assert index > 0, "a window starts with a result whose call was evicted"
            before = prompt.messages[index - 1]
            assert before.role == "assistant" and before.call is not None
            assert before.call.id == message.call_id


def test_long_conversation_in_a_small_window_evicts_into_a_summary(mnemo):
    # The smallest window our prompt works in: the fixed part (instructions, functions with
    # examples, core memory) takes about 1130 of its tokens.
    model = ScriptedModel(context_length=1600, max_step_tokens=64, default=search_then_reply)
    agent = Agent(mnemo, model)
    events = Recorder()
    turns = 30
    for turn in range(turns):
        word = WORDS[turn % len(WORDS)]
        result = agent.send(
            f"Story {turn}: {word}{turn} is the word I picked today, and I want you to "
            "remember the little story that goes with it.",
            on_event=events,
        )
        assert result.reason == "replied", result

    evictions = events.of(ContextEvicted)
    assert len(evictions) >= 3
    state = load_state(mnemo, agent.conversation_id)
    assert state.summarized_count > 0 and state.summary
    # Every prompt fitted (the scripted model refuses one that does not) and kept pairs whole.
    for prompt in model.prompts:
        check_calls_keep_their_results(prompt)
    for stats in (event.stats for event in events.of(StepStarted)):
        assert stats.total <= stats.limit
    # Every summary request fitted too, and the previous summary went into the next one.
    assert len(model.summary_requests) >= len(evictions)
    # Nothing was deleted: every message is still in recall, and the oldest can be found.
    stored = turns + 2 * len(events.of(FunctionReturned)) + len(events.of(MessageSent))
    assert mnemo.recall.count() == stored + len(events.of(MemoryPressure))
    assert len(events.of(FunctionReturned)) == turns  # every turn searched, then replied
    oldest = model.prompts[-1].messages[0]
    assert "Story 0:" not in (oldest.content or "")
    model.enqueue(
        [
            call("conversation_search", query="amber0", request_heartbeat=True),
            say("You picked amber0 first."),
        ]
    )
    agent.send("Which word did I pick first?")
    result = [hit for hit in mnemo.recall.recent(5) if hit.role == "function_result"][-1]
    assert "Story 0: amber0" in result.text
    assert "older messages are in conversation history" in model.prompts[-1].memory


def test_the_pressure_warning_comes_once_at_its_threshold(mnemo):
    model = ScriptedModel(context_length=2048, max_step_tokens=64)
    agent = Agent(mnemo, model)
    events = Recorder()
    for turn in range(40):
        model.enqueue([say(f"Reply {turn}, a reasonably long answer to keep the window busy.")])
        agent.send(f"Message {turn}: " + "tell me more about the sea " * 3, on_event=events)
        if events.of(ContextEvicted):
            break
    (warning,) = [e for e in events.of(MemoryPressure)]
    position = events.index(warning)
    before = [e.stats for e in events[:position] if isinstance(e, StepStarted)]
    assert before and all(stats.fraction < PRESSURE_FRACTION for stats in before)
    assert warning.stats.fraction >= PRESSURE_FRACTION
    warnings = [hit for hit in mnemo.recall.recent(500) if hit.role == "system"]
    assert len(warnings) == 1 and "Memory pressure" in warnings[0].text
    assert events.of(ContextEvicted), "the conversation never filled the window"


def test_summaries_are_made_in_pieces_that_fit_the_model(mnemo):
    model = ScriptedModel(context_length=600)
    model.enqueue_summary("FIRST-PIECE-SUMMARY")
    messages = [
        MessageHit(
            i,
            "user",
            f"Message {i}: " + "words about the weather and the sea " * 12,
            datetime(2026, 1, 1),
        )
        for i in range(1, 41)
    ]
    summary = summarize(model, "Earlier: the user likes boats.", messages, max_tokens=60)
    assert len(model.summary_requests) > 2
    assert "the user likes boats" in model.summary_requests[0][1]
    assert "FIRST-PIECE-SUMMARY" in model.summary_requests[1][1]
    assert "Message 40" in model.summary_requests[-1][1]
    assert model.count_tokens(summary) <= 60


def test_one_huge_message_is_cut_in_the_window_but_kept_whole_in_recall(mnemo):
    model = ScriptedModel(context_length=3072, max_step_tokens=64)
    model.enqueue([say("That is a lot of text.")])
    huge = "lorem ipsum dolor sit amet " * 2000
    result = Agent(mnemo, model).send(huge)
    assert result == TurnFinished("That is a lot of text.", 1, "replied")
    seen = model.prompts[0].messages[0].content
    assert "cut to fit the context window" in seen and len(seen) < len(huge)
    assert mnemo.recall.recent(2)[0].text == huge.strip()


def test_context_stats_break_the_prompt_down(mnemo):
    model = ScriptedModel()
    agent = Agent(mnemo, model)
    stats = agent.context_stats()
    assert stats.instructions > 50 and stats.functions > 100 and stats.core > 10
    assert stats.summary == 0 and stats.message_count == 0
    assert stats.limit == model.context_length - model.max_step_tokens
    assert stats.pressure == "ok"
    assert abs(stats.total - (stats.instructions + stats.functions + stats.core)) < 20
