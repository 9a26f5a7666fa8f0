"""Time in answers (engine/agent/timeline.py): questions along the person's timeline answered
from knowledge history with the days things happened and were said."""

from __future__ import annotations

from datetime import date

import pytest

from engine import Mnemo, clock
from engine.agent import Agent, timeline
from engine.llm import ScriptedModel
from engine.memory.knowledge import USER

LIFE = [
    (date(2026, 1, 17), "lives_in", "Krakow"),  # told after mid-January: still January's
    (date(2026, 1, 5), "works_at", "Tailspin"),
    (date(2026, 2, 1), "lives_in", "Aarhus"),
    (date(2026, 2, 28), "works_at", "Wingtip"),
    (date(2026, 5, 24), "lives_in", "Lisbon"),
]


@pytest.fixture
def lived(mnemo: Mnemo) -> Mnemo:
    """Two moves and a job change, each learned on its day (the later replacing the earlier),
    and a cat that died and a new one."""
    for day, predicate, value in LIFE:
        with clock.travel(day):
            mnemo.knowledge.add(USER, predicate, value, supersede=True)
    with clock.travel(date(2026, 1, 11)):
        tofu = mnemo.knowledge.add(USER, "cat", "Tofu")
    with clock.travel(date(2026, 3, 15)):
        mnemo.knowledge.end(tofu.id)  # type: ignore[union-attr]
    with clock.travel(date(2026, 4, 30)):
        mnemo.knowledge.add(USER, "cat", "Olive")
    return mnemo


@pytest.mark.parametrize(
    ("question", "said"),
    [
        (
            "Where did I live before Lisbon?",
            "You lived in Aarhus from 1 February until you moved to Lisbon on 24 May (you told "
            "me on 24 May).",
        ),
        ("Which town did I move to Lisbon from?", "You lived in Aarhus from 1 February"),
        ("Where did I live in January?", "You lived in Krakow from 17 January until you moved"),
        ("Where did I live in March?", "You lived in Aarhus from 1 February until you moved"),
        ("Where did I live at first?", "You lived in Krakow from 17 January"),
        ("What was my old employer?", "You worked at Tailspin from 5 January until you started"),
        ("Where did I work before Wingtip?", "You worked at Tailspin"),
        (
            "When did I move to Aarhus?",
            "You moved to Aarhus on 1 February (you told me on 1 February); before that you "
            "lived in Krakow.",
        ),
        ("When was my last move?", "You moved to Lisbon on 24 May"),
        ("When did I change jobs?", "You started at Wingtip on 28 February"),
        ("How many times have I moved this year?", "Two moves: you lived in Krakow at first"),
        ("How often did I move?", "Two moves"),
        ("How many jobs have I had this year?", "Two jobs that you told me of: Tailspin, then"),
        ("Do I still live in Krakow?", "No: you lived in Krakow from 17 January until you moved"),
        ("Am I still at Wingtip?", "Yes: you work at Wingtip (you told me on 28 February)."),
        (
            "Which came first, my move to Aarhus or my job at Wingtip?",
            "You moved to Aarhus first, on 1 February, and started at Wingtip later, on 28 "
            "February.",
        ),
        ("Did I move to Lisbon before or after I started at Wingtip?", "After: you moved to"),
        ("Where do I live now?", "You live in Lisbon (since 24 May; you told me on 24 May)."),
        ("What company am I at?", "You work at Wingtip (since 28 February;"),
        ("What was my first pet called?", "You had Tofu from 11 January until 15 March."),
        ("What was the name of the pet I lost?", "You had Tofu from 11 January until 15"),
        ("How many pets have I had?", "Two pets that you told me of: Tofu, then Olive."),
        ("When did I get Olive?", "You got Olive on 30 April (you told me on 30 April)"),
        ("Is Tofu still with me?", "No: you had Tofu from 11 January until 15 March."),
        ("Do I still have Olive?", "Yes: you have Olive (you told me on 30 April)."),
        ("What's my pet called now?", "Your cat is Olive (since 30 April; you told me on 30"),
        ("Do I live in Marrakesh?", "No: you live in Lisbon (you told me on 24 May); you never"),
        ("Have I moved to Berlin?", "No: you live in Lisbon"),
        (
            "Which came first, getting Olive or moving to Lisbon?",
            "You got Olive first, on 30 April, and moved to Lisbon later, on 24 May.",
        ),
    ],
)
def test_a_question_along_the_timeline_is_answered_with_its_days(lived, question, said):
    assert (timeline.answer(lived, question) or "").startswith(said)


@pytest.mark.parametrize(
    "question",
    [
        "Where does my sister live?",  # someone else's home
        "What is my job?",  # a title, not where they work
        "Where did I live before Paris?",  # a value it never held
        "What is my favourite movie?",
        "When did I get my degree?",  # no pet of theirs named
        "Where do people live longest?",  # not about the person
        "What do I do for a living now?",  # work, not home
        "Which do I like more now, cats or dogs?",  # a taste, not a pet
        "When is Olive's vet appointment?",  # of the pet, not when they got it
        "I moved to Lisbon.",  # news, not a question
    ],
)
def test_what_the_timeline_cannot_answer_is_left_to_the_turn(lived, question):
    assert timeline.answer(lived, question) is None


def test_the_assisted_turn_answers_from_the_timeline_without_a_draft(lived):
    model = ScriptedModel(parameter_count=135_000_000, default="You live in Krakow.")
    with clock.travel(date(2026, 6, 27)):
        reply = Agent(lived, model).send("Where did I live before Lisbon?").reply
    assert reply == (
        "You lived in Aarhus from 1 February until you moved to Lisbon on 24 May (you told me "
        "on 24 May)."
    )
    assert not model.prompts  # no draft was asked for
    with clock.travel(date(2026, 6, 27)):
        asked = Agent(lived, model).send("Which came first, getting Olive or moving to Lisbon?")
    assert asked.reply.startswith("You got Olive first")  # no "I" in it: asked by its values


def test_news_of_the_day_that_lasts_is_kept_and_a_pet_that_died_is_no_longer_current(mnemo):
    """ "I started a new job at Wingtip today!" was dropped as a remark of the moment (its
    "today"); "We lost Tofu today" left Tofu a current pet for months."""
    model = ScriptedModel(parameter_count=135_000_000, default="Okay.")
    with clock.travel(date(2026, 1, 5)):
        agent = Agent(mnemo, model, conversation_id=mnemo.conversations.start())
        agent.send("I work at Tailspin as a data analyst.")
        agent.send("I have a cat called Tofu.")
        mnemo.wait_for_background_work()
    with clock.travel(date(2026, 2, 28)):
        agent = Agent(mnemo, model, conversation_id=mnemo.conversations.start())
        agent.send("I started a new job at Wingtip today!")
        agent.send("We lost Tofu today. I'll miss that cat so much.")
        agent.send("I am tired today.")  # of the moment: not kept
        mnemo.wait_for_background_work()
    assert [f.object for f in mnemo.knowledge.facts(USER, "works_at")] == ["Wingtip"]
    assert list(mnemo.knowledge.facts(USER, "cat")) == []
    (tofu,) = [f for f in mnemo.knowledge.history(USER) if f.object == "Tofu"]
    assert tofu.status == "ended" and tofu.valid_to and tofu.valid_to.date() == date(2026, 2, 28)
    assert not [p for p in mnemo.archival.recent(50) if "tired" in p.text]
    with clock.travel(date(2026, 3, 1)):
        said = timeline.answer(mnemo, "When did I start at Wingtip?")
    assert said and said.startswith("You started at Wingtip on 28 February")


def test_a_pet_of_any_kind_is_a_pet_and_a_goodbye_ends_it(mnemo):
    """Only cats and dogs were pets: "Our rabbit is called Clover" gave no fact, so "How many
    pets have I had?" counted one, and "I had to say goodbye to Clover" ended nothing."""
    model = ScriptedModel(parameter_count=135_000_000, default="Okay.")
    with clock.travel(date(2026, 1, 5)):
        agent = Agent(mnemo, model, conversation_id=mnemo.conversations.start())
        agent.send("Our rabbit is called Clover.")
        mnemo.wait_for_background_work()
    with clock.travel(date(2026, 4, 17)):
        agent = Agent(mnemo, model, conversation_id=mnemo.conversations.start())
        agent.send("I had to say goodbye to Clover today, my rabbit.")
        mnemo.wait_for_background_work()
    with clock.travel(date(2026, 5, 25)):
        agent = Agent(mnemo, model, conversation_id=mnemo.conversations.start())
        agent.send("We brought home a hamster named Pip.")
        mnemo.wait_for_background_work()
    assert list(mnemo.knowledge.facts(USER, "rabbit")) == []
    assert [f.object for f in mnemo.knowledge.facts(USER, "hamster")] == ["Pip"]
    with clock.travel(date(2026, 6, 1)):
        counted = timeline.answer(mnemo, "How many pets have I had?") or ""
        now = timeline.answer(mnemo, "What's my pet called now?") or ""
    assert counted.startswith("Two pets that you told me of: Clover, then Pip")
    assert now.startswith("Your hamster is Pip")


def test_a_value_is_dated_by_the_day_the_person_first_told_of_it(lived):
    """The move was told on 28 January in words knowledge memory learns nothing from; the
    fact came from a later message, on 1 February: the move is dated 28 January (a musing
    about Aarhus before that dates nothing). A partner is a timeline too."""
    lived.recall.add(
        "user", "The boxes are finally unpacked in Aarhus, the move is done.",
        created_at=date(2026, 1, 28),
    )  # fmt: skip
    lived.recall.add("user", "Sometimes I dream of Aarhus.", created_at=date(2026, 1, 10))
    with clock.travel(date(2026, 6, 1)):
        lived.knowledge.add(USER, "partner", "Alex")
    lived.recall.add("user", "Alex and I are together now.", created_at=date(2026, 5, 6))
    assert (timeline.answer(lived, "When did I move to Aarhus?") or "").startswith(
        "You moved to Aarhus on 28 January (you told me on 28 January)"
    )
    assert timeline.answer(lived, "Who am I seeing?") == "You are with Alex (you told me on 6 May)."
    assert "6 May" in (timeline.answer(lived, "When did I start seeing Alex?") or "")


def test_a_loss_in_a_pasted_text_ends_no_fact(mnemo):
    """Pasted text is not trusted: a story that says "we lost Tofu" leaves the cat current."""
    model = ScriptedModel(parameter_count=135_000_000, default="Okay.")
    agent = Agent(mnemo, model)
    agent.send("I have a cat called Tofu.")
    agent.send(
        "Here is a story I read. " + "It was a long and quiet winter. " * 80 + "We lost Tofu."
    )
    assert [f.object for f in mnemo.knowledge.facts(USER, "cat")] == ["Tofu"]


def test_a_title_is_a_timeline_and_one_told_with_its_employer_ends_with_it(mnemo: Mnemo):
    """ "I work at Tailspin as a data analyst", then a new job at Wingtip, then "being a nurse
    is busy": the title is asked as the job ("What is my job?"), the employer as where."""

    def told(day: date, predicate: str, value: str, message: str) -> None:
        with clock.travel(day):
            mnemo.knowledge.add(
                USER, predicate, value, supersede=True, source_kind="message", source_ref=message
            )

    told(date(2026, 1, 22), "works_at", "Tailspin", "1")
    told(date(2026, 1, 22), "job_title", "data analyst", "1")
    told(date(2026, 2, 28), "works_at", "Wingtip", "2")
    told(date(2026, 5, 31), "job_title", "nurse", "3")
    assert (timeline.answer(mnemo, "What is my job?") or "").startswith(
        "You work as a nurse (since 31 May;"
    )
    assert (timeline.answer(mnemo, "What do I do for a living now?") or "").startswith(
        "You work as a nurse"
    )
    assert (timeline.answer(mnemo, "Where do I work?") or "").startswith("You work at Wingtip")
    assert timeline.answer(mnemo, "Am I still a data analyst?") == (
        "No: you worked as a data analyst from 22 January until 28 February."
    )
