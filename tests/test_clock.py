"""Memory's clock: what is stored on a day a benchmark or test travels to carries that day."""

from __future__ import annotations

from datetime import date

from engine import clock
from engine.agent import Agent
from engine.llm import ScriptedModel


def test_a_turn_on_a_day_travelled_to_is_stored_with_that_day(mnemo):
    """The six-months benchmark plays a person's life on their own days: each message, fact
    and proposal carries the day it was said, and the model is told that day."""
    model = ScriptedModel(parameter_count=135_000_000)  # assisted: facts kept by rule
    model.enqueue(["Lisbon, lovely."])
    with clock.travel(date(2026, 3, 14)):
        assert clock.today() == date(2026, 3, 14)
        Agent(mnemo, model).send("I live in Lisbon.")
    said = [m for m in mnemo.recall.recent(10) if m.role == "user"]
    assert [m.created_at.date() for m in said] == [date(2026, 3, 14)]
    (fact,) = mnemo.knowledge.facts("user")
    assert fact.object == "Lisbon" and fact.learned_at.date() == date(2026, 3, 14)
    assert "Saturday 14 March 2026" in model.prompts[-1].memory
    with clock.travel(date(2026, 3, 15)):
        noted = mnemo.archival.insert('The user said: "I keep bees."')
    assert mnemo.archival.get(noted).created_at.date() == date(2026, 3, 15)
    assert clock.today() != date(2026, 3, 14)  # back to the wall clock after
