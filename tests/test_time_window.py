"""The dates a question's time phrase names, and the search that reads them."""

from datetime import datetime, timedelta
from unittest import mock

import pytest

from engine.memory import recall_search
from engine.memory.time_window import named_window
from engine.tools import search_conversation

NOW = datetime(2023, 5, 5, 18, 0)  # a Friday


@pytest.mark.parametrize(
    ("question", "inside", "outside"),
    [
        ("What gardening-related activity did I do two weeks ago?", [14, 11, 17], [7, 25]),
        ("Which book did I finish a week ago?", [7, 5, 10], [1, 14]),
        ("I mentioned cooking for my friend a couple of days ago. What?", [2, 1, 4], [8]),
        ("Who did I meet with during the lunch last Tuesday?", [3, 4], [10]),
        ("I received a piece of jewelry last Friday from whom?", [7], [1, 14]),
        ("What did I do yesterday?", [1], [4]),
        ("The concerts I attended in the past two months, earliest first?", [1, 30, 59], [70]),
        ("The sports events I took part in during the past month?", [3, 29], [40]),
        ("What was the first BBQ I went to in June 2022?", [325, 335], [30, 370]),
        ("What did I watch in January, 2023?", [100, 120], [60, 150]),
    ],
)
def test_a_time_phrase_names_its_dates_with_slack(question, inside, outside):
    start, end = named_window(question, NOW)
    for days in inside:
        assert start <= NOW - timedelta(days=days) <= end, days
    for days in outside:
        assert not start <= NOW - timedelta(days=days) <= end, days


@pytest.mark.parametrize(
    "question",
    [
        "How many days ago did I attend a networking event?",  # asks for the date
        "Which event happened first, the wedding or the party?",
        "What did I say about the last time I went camping?",
        "Can you remind me what I may need for the trip?",
        "Where am I flying in March?",  # a plan, told before March
        "What will I do in June 2024?",  # after the question
        "",
    ],
)
def test_a_question_that_names_no_dates_has_no_window(question):
    assert named_window(question, NOW) is None


def test_search_prefers_turns_said_since_the_dates_the_question_names(mnemo):
    """Two turns about planting: with "two weeks ago" the one said 15 days before the question
    comes first, as the better-worded one said 40 days before cannot tell of it; with the dates
    not read, the better-worded one does."""
    said = [
        ("I planted basil in the garden bed by the fence.", NOW - timedelta(days=15)),
        ("I planted tomatoes in the raised garden bed.", NOW - timedelta(days=40)),
        ("The quarterly report is due on Monday.", NOW - timedelta(days=30)),
        ("My sister Ana is visiting in June.", NOW - timedelta(days=20)),
        ("I bought a new bike helmet.", NOW - timedelta(days=9)),
        ("The garden centre was closed.", NOW - timedelta(days=50)),
    ]
    ids = mnemo.recall.add_many(
        [{"role": "user", "text": text, "created_at": when} for text, when in said]
    )
    mnemo.wait_for_background_work()
    question = "What did I plant in the garden bed two weeks ago?"
    assert search_conversation(mnemo, question, limit=3, now=NOW)[0].id == ids[0]
    with mock.patch.object(recall_search, "named_window", lambda query, now: None):
        assert search_conversation(mnemo, question, limit=3, now=NOW)[0].id == ids[1]


def test_a_turn_said_after_the_named_dates_can_tell_of_them(mnemo):
    """ "I bought a new bicycle last week", said today, answers "What did I buy last week?"."""
    told = mnemo.recall.add("user", "I bought a new bicycle last week.", created_at=NOW)
    mnemo.recall.add("user", "I bought a kettle.", created_at=NOW - timedelta(days=60))
    mnemo.wait_for_background_work()
    asked = NOW + timedelta(hours=1)
    assert search_conversation(mnemo, "What did I buy last week?", now=asked)[0].id == told
