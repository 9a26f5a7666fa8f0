"""Replies a person can trust: grounded in memory, without the recall note's frame, ending, and
corrections and statements kept as people say them (issue 53). The agent runs with the scripted
model here; tests/test_local_model.py and tests/benchmarks/conversation.py run the real one."""

from __future__ import annotations

from datetime import datetime

import pytest
from agent_helpers import Recorder, call, say

from engine.agent import Agent
from engine.agent import assisted_rules as assisted
from engine.agent.grounding import (
    Grounds,
    Record,
    loop_start,
    same_shape,
    strip_frame,
    to_second_person,
)
from engine.events import MessageSent, ProposalApplied, ProposalCreated, TextStreamed
from engine.ingest.ingestor import Ingestor
from engine.llm import ScriptedModel

SMALL = 135_000_000  # the assisted mode


@pytest.fixture
def model():
    return ScriptedModel(parameter_count=SMALL)


# -- the frame ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "shown"),
    [
        (
            "### Core memory\nThe user's sister Ines lives in Ghent.",
            "Your sister Ines lives in Ghent.",
        ),
        ("[Recalled from memory for this message] The user is allergic.", "You are allergic."),
        (
            "4 December 2026, the user said: the rent is 1,200 (14 March 2027, from "
            "/home/ana/lease.md, chunk 3) a month.",
            "On 4 December 2026 you said: the rent is 1,200 a month.",  # the date may be asked
        ),
        ("Mnemo: The user lives in Leeds.", "You live in Leeds."),
        ("See lease.md for the details.", "See lease for the details."),
        ("The user has a dog. the user works at Acme.", "You have a dog. You work at Acme."),
        ('<human chars="40/2000">Ines</human> is your sister.', "Ines is your sister."),
        (
            "Memory for this message:\nYour car is a 2012 Honda Jazz.",
            "Your car is a 2012 Honda Jazz.",
        ),
    ],
)
def test_the_recall_notes_frame_never_reaches_the_person(reply, shown):
    assert strip_frame(reply) == shown


def test_the_persons_own_words_are_said_back_to_them_as_you():
    said = "My sister lives in Ghent. I am sure I was there with my mum, and we loved it."
    assert to_second_person(said) == (
        "Your sister lives in Ghent. You are sure you were there with your mum, and you loved it."
    )
    assert to_second_person("If I ever moved I'd learn German") == (
        "If you ever moved you'd learn German"
    )


# -- every reply ends ---------------------------------------------------------------------------


def test_a_loop_is_found_where_it_starts():
    looping = "Here is an idea. Bake bread at home today. Bake bread at home today. Bake"
    assert looping[: loop_start(looping)] == "Here is an idea. Bake bread at home today. "
    words = "you can try the park near the river on a sunny day " * 2
    assert loop_start(words) == len("you can try the park near the river on a sunny day ")
    assert loop_start("One thing. Another thing entirely. A third, different thing.") is None


def test_the_same_shape_with_one_phrase_changed_is_a_repeat():
    a = "I'm sorry, I'm not familiar with the term \"blorp\" but I can help you find out."
    b = "I'm sorry, I'm not familiar with the term \"zing\" but I can help you find out."
    assert same_shape(a, b)
    assert not same_shape("You live in Leeds with Sam.", "Your dog Biscuit is a beagle.")


def test_a_reply_that_loops_stops_there_and_ends(mnemo, model):
    sentence = "Grey days are good for a cup of tea and a book. "
    model.enqueue([sentence * 30])
    events = Recorder()
    result = Agent(mnemo, model).send("Tell me something cheerful, it's grey out.", on_event=events)
    assert result.reply == sentence.strip()
    assert "".join(e.text for e in events.of(TextStreamed)) == sentence.strip()


def test_an_assisted_reply_is_capped_by_the_setting(mnemo, model):
    mnemo.settings.set("agent.reply_tokens", 20)
    model.enqueue([" ".join(f"word{n}" for n in range(100))])
    result = Agent(mnemo, model).send("Tell me a long story.")
    assert len(result.reply.split()) == 20
    assert model.prompts[-1].max_tokens == 20


def test_a_capped_reply_ends_where_a_sentence_did(mnemo, model):
    mnemo.settings.set("agent.reply_tokens", 20)
    story = "Once there was a fox. " + " ".join(f"word{n}" for n in range(100))
    model.enqueue([story])
    events = Recorder()
    result = Agent(mnemo, model).send("Tell me a long story.", on_event=events)
    assert result.reply == "Once there was a fox."
    assert "".join(e.text for e in events.of(TextStreamed)) == result.reply


def test_an_answer_cut_off_before_a_sentence_ended_is_not_shown(mnemo, model):
    mnemo.settings.set("agent.reply_tokens", 20)
    agent = Agent(mnemo, model)
    tell(agent, model, "I'm allergic to peanuts.")
    model.enqueue(["You are allergic to " + "very " * 30])
    reply = agent.send("What am I allergic to?").reply
    assert reply.startswith("You told me on") and reply.endswith(": you are allergic to peanuts.")
    assert not assisted.ends_a_sentence("Your landlord's name is Mr.")  # no end: cut off too


def test_an_answer_from_memory_gets_half_the_cap_and_a_remark_less(mnemo, model):
    mnemo.settings.set("agent.reply_tokens", 100)
    agent = Agent(mnemo, model)
    tell(agent, model, "I'm allergic to peanuts.")
    assert model.prompts[-1].max_tokens == 30  # news, thanks, a greeting: a sentence or two
    model.enqueue(["You're allergic to peanuts."])
    agent.send("What am I allergic to?")
    assert model.prompts[-1].max_tokens == 50
    model.enqueue(["A crisp apple and a walk."])
    agent.send("Any ideas for a healthy snack?")
    assert model.prompts[-1].max_tokens == 100


def test_a_draft_written_again_gets_what_the_first_left_of_the_cap(mnemo, model):
    mnemo.settings.set("agent.reply_tokens", 40)
    agent = Agent(mnemo, model)
    model.enqueue(["Goodbye for now, and I'm sorry for your loss. " + "word " * 30, "Bye!"])
    assert agent.send("Tell me a joke, then goodbye.").reply == "Bye!"
    first, second = model.prompts[-2:]
    assert (first.max_tokens, second.max_tokens) == (40, 40 - 9)  # stopped after 9 words
    # With less than a draft's worth left, none is written: the turn says so.
    mnemo.settings.set("agent.reply_tokens", 20)
    model.enqueue(["Goodbye again, my friend, and I am so very sorry for your loss. ", "Bye!"])
    reply = agent.send("Tell me another joke, then goodbye.").reply
    assert reply == assisted.NO_NEW_REPLY and model.prompts[-1].max_tokens == 20


def test_the_same_reply_shape_is_written_again(mnemo, model):
    model.enqueue(
        [
            "I'm sorry, I'm not familiar with the term \"blorp\" but I can look into it for you.",
            "I'm sorry, I'm not familiar with the term \"zing\" but I can look into it for you.",
            "Zing is a sound word: a short, sharp ringing noise.",
        ]
    )
    agent = Agent(mnemo, model)
    agent.send("What does blorp mean?")
    assert agent.send("What does zing mean?").reply.startswith("Zing is a sound word")


def test_a_draft_that_opens_like_an_earlier_reply_stops_at_its_first_sentence():
    earlier = ["That's a wonderful way to celebrate your birthday. I'm sure you'd be thrilled."]
    stops: list[bool] = []
    stream = assisted.ReplyStream(earlier, lambda text: None, on_stop=lambda: stops.append(True))
    for piece in "That's a wonderful way to celebrate your move. I'm sure it".split(" "):
        stream.feed(piece + " ")
    assert stops == [True] and stream.failed == assisted.REPEATED
    # A short opening ("Sure!") may open many replies.
    fresh = assisted.ReplyStream(["Sure! Here is a recipe."], lambda text: None)
    for piece in "Sure! Here are three tips for sleeping well.".split(" "):
        fresh.feed(piece + " ")
    assert fresh.failed is None


# -- grounded -----------------------------------------------------------------------------------


def test_a_draft_is_checked_against_what_memory_holds():
    grounds = Grounds(
        "Where does Ines live?",
        [Record("Your sister Ines lives in Antwerp", "4 December", before="Ghent")],
        superseded={"ghent"},
    )
    assert grounds.problem("Ines lives in Antwerp.") is None
    assert grounds.problem("She lives in Antwerp now, not Ghent.") is None  # history
    assert grounds.problem("Ines lives in Ghent.") == "gave a value that was replaced"
    assert "paris" in (grounds.problem("Ines lives in Paris.") or "")
    assert grounds.problem("She is doing well.") == "left out what memory holds"
    assert grounds.record_reply() == (
        "You told me on 4 December: your sister Ines lives in Antwerp (before that, Ghent)."
    )


def test_a_value_after_a_label_is_a_value():
    grounds = Grounds("What's my job?", [Record("You work as a pharmacist in Accra", "5 December")])
    # The bundled model wrote "Your job: Pharmacos", and the capital after the colon was taken
    # for a sentence's first word.
    assert "pharmacos" in (grounds.problem("Your job: Pharmacos") or "")
    assert grounds.problem("Got it: You work as a pharmacist in Accra.") is None


def test_an_answer_neither_claims_the_persons_life_nor_counts_from_nowhere():
    # Both seen in the window: the lease says nothing of "4 days", and the assistant has no
    # sister.
    lease = Grounds(
        "How much is my monthly rent?",
        [Record("The monthly rent is 1,200 euros, due on the first day of each month.")],
    )
    assert "4" in (lease.problem("It's 1,200 euros (4 days per month).") or "")
    assert lease.problem("Your monthly rent is 1,200 euros.") is None
    sister = Grounds(
        "Where does my sister live now?", [Record("Your sister Ines lives in Antwerp", "5 Dec")]
    )
    assert sister.problem("My sister is Ines, in Antwerp.") == "spoke as the person"
    assert sister.problem("Your sister Ines lives in Antwerp.") is None


def test_what_memory_holds_of_the_person_is_not_told_of_their_sister():
    records = [
        Record("Your sister Ines lives in Antwerp", "5 Dec", before="Ghent"),
        Record("You work at St. Mary's hospital", "5 Dec"),
    ]
    for question in ("Where does my sister live now?", "Where does Ines live?"):
        grounds = Grounds(question, records)
        mixed = grounds.problem("Your sister lives in Antwerp and works at St. Mary's.") or ""
        assert mixed.startswith("told of them what memory holds of others: ")
        assert grounds.problem("Ines lives in Antwerp now (before that, Ghent).") is None
        # And what memory holds of her is not told of the person.
        told = "Your sister is Ines.\n- Your memory:\nYour memory says you live in Antwerp."
        assert "antwerp" in (grounds.problem(strip_frame(told)) or "")
    # A question about the person may name what memory holds of them.
    assert Grounds("Where do I work?", records).problem("At St. Mary's hospital.") is None
    allergy = Grounds("What am I allergic to?", [Record("You're allergic to peanuts", "5 Dec")])
    assert allergy.problem("Your family is allergic to peanuts.") == "spoke of someone else"


@pytest.mark.parametrize(
    ("message", "reply", "problem"),
    [
        (
            "Actually, Ines moved to Antwerp last month.",
            "Your sister is Ines.",  # states a value, not the news
            "left out what memory holds",
        ),
        ("Actually, Ines moved to Antwerp last month.", "Noted, she's in Antwerp now.", None),
        ("Actually, Ines moved to Antwerp last month.", "Okay, noted.", None),
        (
            "I work as a pharmacist in Accra.",
            "I will help with any questions you may have about my work as a pharmacist in Accra.",
            "spoke as the person",
        ),
        ("I work as a pharmacist in Accra.", "I'll remember you work as a pharmacist.", None),
        (
            "Scratch that, training moved to Sunday.",
            "Okay, training on Saturday it is.",
            "stated what memory does not hold: saturday",
        ),
    ],
)
def test_the_reply_to_news_states_the_news_and_not_as_its_own(message, reply, problem):
    grounds = assisted.grounds_for(
        message, False, assisted.Recalled(query=message), "", "Ines".__eq__
    )
    assert grounds is not None and grounds.problem(reply) == problem


def test_sympathy_for_a_loss_nobody_told_of_is_written_again(mnemo, model):
    model.enqueue(["I'm sorry for your loss.", "Goodbye! Talk soon."])
    assert Agent(mnemo, model).send("Goodbye!").reply == "Goodbye! Talk soon."
    model.enqueue(["I'm so sorry for your loss."])
    assert "sorry" in Agent(mnemo, model).send("Our old cat died last night.").reply


def test_a_reply_that_was_not_checked_quotes_no_memory(mnemo, model):
    model.enqueue(["You said: You're not happy.", "Sunflowers turn to follow the sun."])
    reply = Agent(mnemo, model).send("Tell me something cheerful, it's grey out.").reply
    assert reply == "Sunflowers turn to follow the sun."


def test_a_draft_stops_at_the_first_sentence_that_dooms_it():
    grounds = Grounds("What car do I have?", [Record("Your car is a 2012 Honda Jazz")])
    stops: list[bool] = []
    stream = assisted.ReplyStream(
        [], lambda text: None, hold=True, on_stop=lambda: stops.append(True), doomed=grounds.doomed
    )
    for piece in "Your car is a 2018 Honda Jazz. It is a small car that".split(" "):
        stream.feed(piece + " ")
    # Stopped where the value from nowhere was said; what came after was not even read.
    assert stops == [True] and stream.failed == "stated what memory does not hold: 2018"
    assert stream.text == "Your car is a 2018 Honda Jazz. "


def test_an_invented_value_is_never_shown_and_the_record_answers(mnemo, model):
    agent = Agent(mnemo, model)
    model.enqueue(["Lovely car!"])
    agent.send("My car is a 2012 Honda Jazz.")
    # The bundled model said "a 2018 Honda Jazz", then repeated its own invention.
    model.enqueue(["Your car is a 2018 Honda Jazz."] * assisted.REPLY_ATTEMPTS)
    events = Recorder()
    result = agent.send("What car do I have?", on_event=events)
    day = f"{mnemo.recall.recent(1)[0].created_at.astimezone():%-d %B}"
    assert result.reply == f"You told me on {day}: your car is a 2012 Honda Jazz."
    shown = "".join(e.text for e in events.of(TextStreamed))
    assert shown == result.reply and "2018" not in shown


def test_an_answer_ends_where_it_was_given(mnemo, model):
    """The bundled model went wrong after the answer ("You are allergic to peanuts. Your
    family is allergic to peanuts, so…"): the draft stops there, and is shown up to there."""
    agent = Agent(mnemo, model)
    model.enqueue(["Lovely car!"])
    agent.send("My car is a 2012 Honda Jazz.")
    model.enqueue(["Your car is a 2012 Honda Jazz. Your family drives a 2018 Fiat Panda too."])
    events = Recorder()
    result = agent.send("What car do I have?", on_event=events)
    assert result.reply == "Your car is a 2012 Honda Jazz."
    assert "".join(e.text for e in events.of(TextStreamed)) == result.reply
    assert len(model.prompts) == 2  # one draft, stopped at the answer
    grounds = Grounds("What car do I have?", [Record("Your car is a 2012 Honda Jazz", "5 Dec")])
    assert grounds.up_to_answer("Let me see. It's a Honda Jazz from 2012. Enjoy!") == (
        "Let me see. It's a Honda Jazz from 2012."
    )
    assert grounds.up_to_answer("Let me see. It's a 2018 Jazz.") is None  # not an answer


def test_a_statements_reply_states_nothing_the_person_did_not_say(mnemo, model):
    model.enqueue(["Ines is a famous artist in Belgium."] * assisted.REPLY_ATTEMPTS)
    result = Agent(mnemo, model).send("My sister Ines lives in Ghent.")
    assert result.reply == "Got it: your sister Ines lives in Ghent."


# -- corrections and statements as people say them ---------------------------------------------


ACKNOWLEDGEMENTS = ["Noted.", "Okay, thanks for telling me.", "Understood, I will keep that."]


def tell(agent: Agent, model: ScriptedModel, *texts: str, events: Recorder | None = None) -> None:
    """Send ``texts``, each answered with a different acknowledgement (a repeat is rewritten)."""
    for text, reply in zip(texts, ACKNOWLEDGEMENTS, strict=False):
        model.enqueue([reply])
        agent.send(text, on_event=events)


def ask(agent: Agent, model: ScriptedModel, question: str) -> str:
    """What the model was shown for ``question`` (the recall note), after it answers."""
    model.enqueue(["Let me think."] * assisted.REPLY_ATTEMPTS)
    agent.send(question)
    return model.prompts[-1].messages[-1].content


def test_a_correction_about_someone_else_in_everyday_words_gives_the_new_value(mnemo, model):
    agent = Agent(mnemo, model)
    tell(
        agent, model, "My sister Ines lives in Ghent.", "Actually she moved to Antwerp last month."
    )
    assert [f.object for f in mnemo.knowledge.facts("Ines", "lives_in")] == ["Antwerp"]
    later = Agent(mnemo, model, conversation_id="later")
    note = ask(later, model, "Where does Ines live?")
    assert "Ines lives in Antwerp" in note and "Ghent" not in note
    # The drafts said nothing of Antwerp: the reply is the record, with Ghent as history.
    (reply,) = [hit for hit in mnemo.recall.recent(10, "later") if hit.role == "assistant"]
    assert reply.text.endswith("Ines lives in Antwerp (before that, Ghent).")


@pytest.mark.parametrize(
    ("said", "correction", "asked", "now", "before"),
    [
        (
            "My football training is on Saturdays.",
            "Scratch that, training moved to Sunday.",
            "When is my training?",
            "Sunday",
            "Saturdays",
        ),
        (
            "My dentist appointment is on the 9th.",
            "No wait, it's the 14th.",
            "When is my dentist appointment?",
            "14th",
            "9th",
        ),
        (
            "My cat's vet appointment is on the 14th.",
            "Oh wait, sorry, the vet moved it to the 21st.",
            "When is the vet appointment?",
            "21st",
            "14th",
        ),
    ],
)
def test_a_correction_puts_right_the_note_it_corrects(
    mnemo, model, said, correction, asked, now, before
):
    agent = Agent(mnemo, model)
    tell(agent, model, said, correction)
    notes = [p.text for p in mnemo.archival.recent(10, origin="user")]
    # The old value is left only beside the new one ("switched from violin to cello").
    assert any(now in note for note in notes)
    assert not any(before in note and now not in note for note in notes)
    assert now in ask(Agent(mnemo, model, conversation_id="later"), model, asked)


def test_leaving_a_job_in_everyday_words_replaces_it(mnemo, model):
    agent = Agent(mnemo, model)
    tell(agent, model, "I work at Contoso.", "I'm not at Contoso any more, I joined Fabrikam.")
    assert [f.object for f in mnemo.knowledge.facts("user", "works_at")] == ["Fabrikam"]


@pytest.mark.parametrize(
    ("message", "kept"),
    [
        ("Been vegan since 2019.", "I've been vegan since 2019"),
        ("Can't stand cilantro.", "I can't stand cilantro"),
        ("Strawberries bring me out in hives.", "Strawberries bring me out in hives"),
        ("At the moment I'm training for a half marathon.", None),  # kept as said
    ],
)
def test_everyday_statements_are_kept(message, kept):
    (statement,) = assisted.user_statements(message)
    assert assisted.lasting(statement)
    assert assisted.first_person(statement) == (kept or statement)


@pytest.mark.parametrize(
    "musing",
    [
        "If I ever moved to Berlin I'd learn German.",
        "Maybe one day I'll open a bakery.",
        "I wish I had a boat.",
    ],
)
def test_a_musing_is_no_fact(mnemo, model, musing):
    model.enqueue(["What a thought!"])
    Agent(mnemo, model).send(musing)
    assert mnemo.archival.count() == 0 and not mnemo.proposals.pending()
    assert not [e for e, _ in mnemo.knowledge.entities() if e.name == "Berlin"]


@pytest.mark.parametrize(
    ("question", "about"),
    [
        ("What street do we live on?", True),
        ("Remind me, what's my landlord called?", True),
        ("What's a good present for my son?", False),
        ("Can you help me write a toast for my brother's wedding?", False),
        ("How long have I lived in Lisbon?", True),
        ("How long should I steep green tea?", False),  # advice: got "I don't know … told me"
        ("How much should I tip in Lisbon?", False),
    ],
)
def test_questions_about_the_person_are_told_from_requests(question, about):
    assert assisted.asks_about_the_user(question) is about


@pytest.mark.parametrize(
    ("said", "correction", "asked", "now", "before"),
    [
        (
            "My son Filip plays the violin.",
            "Filip switched from violin to cello last spring.",
            "What instrument does Filip play?",
            "cello",
            "violin",
        ),
        (
            "My book club meets on the first Monday of the month.",
            "Actually book club is now the first Tuesday.",
            "When does my book club meet?",
            "Tuesday",
            "Monday",
        ),
        (
            "The vet appointment for Miso is on the 3rd.",
            "oh no wait, the vet said the 5th",
            "When is the vet appointment?",
            "5th",
            "3rd",
        ),
    ],
)
def test_more_corrections_as_people_say_them(mnemo, model, said, correction, asked, now, before):
    test_a_correction_puts_right_the_note_it_corrects(
        mnemo, model, said, correction, asked, now, before
    )


def test_a_correction_without_a_topic_in_memory_changes_nothing_else(mnemo, model):
    agent = Agent(mnemo, model)
    tell(agent, model, "My dentist appointment is on Tuesday.", "I now go to the gym on Mondays.")
    notes = [p.text for p in mnemo.archival.recent(10, origin="user")]
    assert any("dentist appointment is on Tuesday" in note for note in notes)


def test_a_change_about_someone_makes_the_older_note_history(mnemo, model):
    agent = Agent(mnemo, model)
    tell(
        agent,
        model,
        "My daughter Efua started university in Kumasi.",
        "Oh, Efua switched to a university in Accra actually.",
    )
    replaced = [
        p for p in mnemo.archival.recent(10, origin="user") if assisted.REPLACED_TAG in p.tags
    ]
    assert [p.text for p in replaced] == [
        'The user said: "My daughter Efua started university in Kumasi."'
    ]
    # The bundled model answered with Kumasi: a superseded value is no answer.
    later = Agent(mnemo, model, conversation_id="later")
    model.enqueue(["Efua studies in Kumasi."] * assisted.REPLY_ATTEMPTS)
    reply = later.send("Where does Efua study?").reply
    assert "Accra" in reply and "Kumasi" not in reply


def test_a_right_answer_said_before_is_given_as_the_record_at_once(mnemo, model):
    agent = Agent(mnemo, model)
    model.enqueue(["You're lactose intolerant."])
    agent.send("I'm lactose intolerant.")
    model.enqueue(["You're lactose intolerant."])  # one draft only: a second would fail
    reply = agent.send("Am I lactose intolerant?").reply
    day = f"{mnemo.recall.recent(1)[0].created_at.astimezone():%-d %B}"
    assert reply == f"You told me on {day}: you're lactose intolerant."
    assert len(model.prompts) == 2


def test_a_reply_that_denies_what_was_said_is_not_shown(mnemo, model):
    model.enqueue(["No worries, you're not allergic to peanuts. You have a rare allergy."])
    reply = Agent(mnemo, model).send("I'm allergic to peanuts, so I have to be careful.").reply
    assert reply == "Got it: you're allergic to peanuts, so you have to be careful."


def test_an_answer_neither_asks_the_question_back_nor_copies_a_note_line(mnemo, model):
    agent = Agent(mnemo, model)
    tell(agent, model, "I'm allergic to peanuts, so I have to be careful.")
    model.enqueue(
        [
            "You're referring to your allergy?\nYou are allergic to peanuts.\n"
            "- You said: You're allergic to peanuts, so you have to be careful."
        ]
    )
    assert agent.send("What am I allergic to?").reply == "You are allergic to peanuts."
    model.enqueue(["Got it: You're allergic to peanuts."])  # the shape of a reply to a statement
    later = Agent(mnemo, model, conversation_id="later")
    assert later.send("What am I allergic to?").reply == "You're allergic to peanuts."


def test_an_answer_about_someone_gives_what_was_asked_not_who_it_is(mnemo, model):
    agent = Agent(mnemo, model)
    tell(agent, model, "My son Filip plays the violin.", "Filip switched from violin to cello.")
    model.enqueue(["Your son is Filip."] * assisted.REPLY_ATTEMPTS)
    reply = Agent(mnemo, model, conversation_id="later").send("What instrument does Filip play?")
    assert "cello" in reply.reply and "violin" not in reply.reply


def test_what_is_true_of_a_relative_is_no_answer_about_the_person(mnemo, model):
    agent = Agent(mnemo, model)
    tell(agent, model, "My son Kofi is a radiographer at Korle Bu.")
    later = Agent(mnemo, model, conversation_id="later")
    # Memory holds only the son's job: no draft is written, and nothing is made up.
    before = len(model.prompts)
    reply = later.send("What's my job?").reply
    assert reply.startswith("I don't know your job") and len(model.prompts) == before
    tell(agent, model, "I work as a pharmacist in Accra.")
    # The bundled model gave the person's job to their son.
    model.enqueue(["Your son Kofi is a pharmacist."] * assisted.REPLY_ATTEMPTS)
    reply = later.send("What's my job?").reply
    assert "pharmacist" in reply and "son" not in reply


def test_a_statement_is_not_answered_with_confusion(mnemo, model):
    model.enqueue(["A pharmacist, a chemist. I'm not sure what you're talking about."] * 3)
    reply = Agent(mnemo, model).send("I work as a pharmacist in Accra.").reply
    assert reply == "Got it: you work as a pharmacist in Accra."


def test_the_persons_own_question_is_no_memory_for_the_same_question(mnemo, model):
    agent = Agent(mnemo, model)
    tell(agent, model, "My sister Ines lives in Ghent.")
    model.enqueue(["Ines lives in Ghent."])
    agent.send("Where does Ines live?")
    later = Agent(mnemo, model, conversation_id="later")
    note = ask(later, model, "Where does Ines live now?")
    assert "Ghent" in note and "Where does Ines live" not in note


def test_a_name_nobody_gave_is_not_known(mnemo, model):
    agent = Agent(mnemo, model)
    tell(agent, model, "We live on Elm Street, me and my husband.")
    model.enqueue(["Your husband's name is your husband."])
    reply = agent.send("What's my husband's name?").reply
    assert reply.startswith("I don't know your husband's name")
    tell(agent, model, "My husband Tom is a nurse.")
    model.enqueue(["Your husband is Tom."])
    assert agent.send("What's my husband called?").reply == "Your husband is Tom."


def test_things_never_told_are_not_answered_with_one_template(mnemo, model):
    agent = Agent(mnemo, model)
    tell(agent, model, "I live in Leeds.")
    replies = [agent.send(q).reply for q in ("What's my cat called?", "What's my dog called?")]
    assert replies[0].startswith("I don't know your cat's name")
    assert "your dog's name" in replies[1] and not same_shape(replies[0], replies[1])


def test_people_named_in_passing_are_kept(mnemo, model):
    model.enqueue(["Here is a toast."])
    Agent(mnemo, model).send("Can you help me write a toast for my brother Paolo's wedding?")
    assert [f.object for f in mnemo.knowledge.facts("user", "brother")] == ["Paolo"]


@pytest.mark.parametrize(
    ("message", "job"),
    [
        ("Just got back from my shift at Korle Bu hospital, I'm a radiographer.", "radiographer"),
        ("ugh long week. being a vet in Galway is never boring", "vet"),
        ("I'm a graphic designer, freelance.", "graphic designer"),
        ("I'm a big fan of jazz.", None),
        ("I'm a better cook now.", None),
        ("I'm a bit under the weather.", None),
        ("I have a plumber coming on Friday.", None),
    ],
)
def test_an_occupation_is_a_fact(mnemo, model, message, job):
    model.enqueue(["Noted."])
    Agent(mnemo, model).send(message)
    jobs = [f.sentence() for f in mnemo.knowledge.facts("user", "job_title")]
    assert jobs == ([f"User works as a {job}"] if job else [])


# -- core memory --------------------------------------------------------------------------------


def test_lasting_statements_reach_the_human_block_as_short_proposals(mnemo, model):
    agent = Agent(mnemo, model)
    events = Recorder()
    tell(
        agent,
        model,
        "I'm allergic to penicillin, so I have to be careful.",
        "My dentist appointment is on Tuesday.",  # an appointment: a note, not core memory
        "I'm allergic to penicillin, so I have to be careful.",  # said again: proposed once
        events=events,
    )
    (proposal,) = [e.proposal for e in events.of(ProposalCreated)]
    assert (proposal.label, proposal.new_content) == ("human", "You're allergic to penicillin.")
    mnemo.proposals.approve(proposal.id)
    # The first line known replaces "Nothing is known about the user yet.".
    assert mnemo.core.get("human") == "You're allergic to penicillin."


def test_under_the_auto_policy_a_change_replaces_its_line(mnemo, model):
    mnemo.settings.set("memory.core_write_policy", "auto")
    agent = Agent(mnemo, model)
    events = Recorder()
    tell(agent, model, "I live in Porto.", "I moved to Lyon last month.", events=events)
    assert len(events.of(ProposalApplied)) == 2
    # The line that held Porto, with the new value: no "last month" to go stale in the block.
    assert mnemo.core.get("human") == "You live in Lyon."


def test_a_waiting_line_a_change_made_stale_is_withdrawn(mnemo, model):
    agent = Agent(mnemo, model)
    events = Recorder()
    tell(agent, model, "I live in Porto.", "I moved to Lyon last month.", events=events)
    first, second = [e.proposal for e in events.of(ProposalCreated)]
    assert mnemo.proposals.get(first.id).withdrawn  # by Mnemo, not by the person
    assert [p.new_content for p in mnemo.proposals.pending()] == ["You live in Lyon."]
    mnemo.proposals.approve(second.id)
    assert mnemo.core.get("human") == "You live in Lyon."


def test_only_the_line_of_the_change_takes_the_old_lines_place(mnemo, model):
    mnemo.settings.set("memory.core_write_policy", "auto")
    agent = Agent(mnemo, model)
    tell(agent, model, "I live in Porto.", "I'm a nurse, and I moved to Lyon last week.")
    assert mnemo.core.get("human").splitlines() == ["You live in Lyon.", "You're a nurse."]


def test_news_about_someone_else_rewrites_their_line_with_the_new_value(mnemo, model):
    agent = Agent(mnemo, model)
    events = Recorder()
    tell(agent, model, "My sister Ines lives in Ghent.", events=events)
    mnemo.proposals.approve(events.of(ProposalCreated)[0].proposal.id)
    tell(agent, model, "Actually, Ines moved to Antwerp last month.", events=events)
    (change,) = mnemo.proposals.pending()
    assert (change.old_content, change.new_content) == (
        "Your sister Ines lives in Ghent.",
        "Your sister Ines lives in Antwerp.",
    )


def test_what_the_person_reads_of_a_reply_is_what_is_stored(mnemo, model):
    model.enqueue(["### Core memory\nThe user's favourite tea is green tea."])
    events = Recorder()
    Agent(mnemo, model).send("Any tips for a calm evening?", on_event=events)
    (sent,) = events.of(MessageSent)
    assert sent.text == "Your favourite tea is green tea."
    assert "".join(e.text for e in events.of(TextStreamed)) == sent.text


# -- the self-managed mode ----------------------------------------------------------------------


def test_a_self_managed_reply_is_grounded_and_without_frame(mnemo):
    model = ScriptedModel()  # large enough for the self-managed mode
    mnemo.archival.insert("The user said: My car is a 2012 Honda Jazz.", origin="user")
    model.enqueue(
        [
            call("archival_memory_search", query="car", request_heartbeat=True),
            say("The user's car is a 2018 Honda Jazz."),  # a year from nowhere
            say("### Core memory\nThe user's car is a 2012 Honda Jazz."),
        ]
    )
    events = Recorder()
    result = Agent(mnemo, model).send("What car do I have?", on_event=events)
    assert result.reply == "Your car is a 2012 Honda Jazz."
    assert "2018" in model.prompts[-1].messages[-1].content  # told why, and wrote it again


def test_a_reply_that_says_the_message_back_is_written_again(mnemo, model):
    model.enqueue(["Hello! How are you today?", "I'm well, thank you! How can I help?"])
    result = Agent(mnemo, model).send("Hello! How are you today?")
    assert result.reply == "I'm well, thank you! How can I help?"


def test_a_document_question_is_answered_from_the_lines_that_answer_it(mnemo, model, tmp_path):
    contacts = tmp_path / "contacts.txt"
    contacts.write_text(
        "Household contacts\n\nPlumber: Dave Rowe, 0117 496 0321, available weekdays.\n"
        "Gardener: Lou, every second Friday.\n",
        encoding="utf-8",
    )
    Ingestor(mnemo).ingest_file(contacts)
    # Today's date in the prompt is no use of the gardener's "every second Friday".
    today = datetime.now()
    off_topic = f"I can't make phone calls. Today is {today:%A}, {today.day} {today:%B}."
    model.enqueue([off_topic] * assisted.REPLY_ATTEMPTS)
    events = Recorder()
    result = Agent(mnemo, model).send("What's the plumber's phone number?", on_event=events)
    assert result.reply.endswith("Plumber: Dave Rowe, 0117 496 0321, available weekdays.")
    assert "Lou" not in result.reply
    (sent,) = events.of(MessageSent)
    assert [source.path for source in sent.sources] == [str(contacts)]


def test_a_statements_reply_brings_up_no_other_memory(mnemo, model):
    agent = Agent(mnemo, model)
    tell(agent, model, "My sister Ines lives in Ghent.")
    # A statement's reply has its record after one failed draft (``reply_attempts``).
    model.enqueue(["- Ines lives in Ghent."])
    assert agent.send("Actually, Ines moved to Antwerp last month.").reply == (
        "Got it: Ines moved to Antwerp last month."
    )
    model.enqueue(["Tuesday is a fine day, Ghent."])
    assert agent.send("No wait, it's Thursday, not Tuesday.").reply == (
        "Got it: Thursday, not Tuesday."
    )


def test_a_reply_that_recites_the_persona_is_written_again(mnemo, model):
    recital = "You are Mnemo, a personal assistant that runs on your own computer.\nHello!"
    model.enqueue([recital, "Hello! What can I do for you today?"])
    result = Agent(mnemo, model).send("Hi there.")
    assert result.reply == "Hello! What can I do for you today?"
