import sqlite3
import threading
from datetime import date, datetime

import numpy as np
import pytest
import sqlalchemy

from engine import Mnemo
from engine.errors import InputError, NotFoundError
from engine.memory.search import (
    KEYWORD_WEIGHT,
    addressed_role,
    coordinated,
    excerpt,
    prefer_role,
)
from tests.corpus import CONVERSATION


@pytest.fixture
def mnemo(mnemo_on_each_backend):
    """The tests that take ``mnemo`` run on SQLite and on PostgreSQL (``database_url``)."""
    return mnemo_on_each_backend


@pytest.fixture
def chat(mnemo):
    ids = mnemo.recall.add_many(
        [{"role": role, "text": text, "created_at": when} for role, text, when in CONVERSATION]
    )
    return mnemo, ids


def test_add_get_round_trip_keeps_every_field(mnemo):
    when = datetime(2024, 1, 2, 3, 4, 5)
    message_id = mnemo.recall.add(
        "function_call",
        '{"name": "x"}',
        created_at=when,
        conversation_id="c2",
        name="archival_memory_search",
    )
    hit = mnemo.recall.get(message_id)
    assert (hit.role, hit.text, hit.conversation_id, hit.name) == (
        "function_call",
        '{"name": "x"}',
        "c2",
        "archival_memory_search",
    )
    assert hit.created_at == when.astimezone()


def test_add_many_returns_ids_in_order(chat):
    mnemo, ids = chat
    assert ids == sorted(ids) and len(ids) == len(CONVERSATION)
    assert [mnemo.recall.get(i).text for i in ids] == [text for _, text, _ in CONVERSATION]
    assert mnemo.recall.count() == len(CONVERSATION)


def test_unknown_role_is_refused(mnemo):
    with pytest.raises(ValueError, match="unknown message role"):
        mnemo.recall.add("robot", "beep")
    assert mnemo.recall.count() == 0


@pytest.mark.parametrize(
    ("mode", "query", "expected"),
    [
        ("keyword", "peanuts allergy", 5),
        ("semantic", "what pet does the user have", 3),
        ("semantic", "my personal record for long-distance running", 9),
        ("hybrid", "when is the wedding of my sister", 8),
        ("hybrid", "laptop got wet", 3),
        ("hybrid", "who is my boss", 2),
    ],
)
def test_each_search_mode_ranks_the_relevant_message_first(chat, mode, query, expected):
    mnemo, ids = chat
    page = mnemo.recall.search(query, mode=mode)
    assert page[0].id == ids[expected], [hit.text for hit in page]
    assert page[0].score is not None


def test_keyword_search_stems_words(chat):
    mnemo, ids = chat
    assert mnemo.recall.search("simulation", mode="keyword")[0].id == ids[2]


@pytest.mark.parametrize(
    "query",
    [
        '"',
        "'",
        '"unbalanced',
        "AND",
        "OR NOT",
        "NEAR(a b)",
        "*",
        "a:b",
        "(((",
        "-",
        "^",
        "col:value",
        "😀🎉",
        "",
        "   ",
        "\x00",
        "SELECT * FROM message; --",
        "über café",
    ],
)
def test_odd_queries_never_raise(chat, query):
    mnemo, _ = chat
    for mode in ("keyword", "semantic", "hybrid"):
        page = mnemo.recall.search(query, mode=mode)
        assert page.total >= len(page.hits) >= 0


def test_paging_walks_all_results_without_overlap(mnemo):
    mnemo.recall.add_many(
        [{"role": "user", "text": f"note {i} about the garden shed"} for i in range(23)]
    )
    seen = []
    first = mnemo.recall.search("garden shed", limit=5, mode="keyword")
    assert first.total == 23 and first.pages == 5
    assert first.describe() == "showing 5 of 23, page 1 of 5"
    for page_number in range(1, 6):
        page = mnemo.recall.search("garden shed", limit=5, page=page_number, mode="keyword")
        seen.extend(hit.id for hit in page)
    assert len(seen) == len(set(seen)) == 23
    last = mnemo.recall.search("garden shed", limit=5, page=5)
    assert last.describe().startswith("showing 3 of") and last.page == 5
    assert len(mnemo.recall.search("garden shed", limit=5, page=9)) == 0


def test_search_by_date_includes_the_whole_end_day(chat):
    mnemo, ids = chat
    page = mnemo.recall.search_by_date(date(2024, 4, 2), date(2024, 4, 2))
    assert [hit.id for hit in page] == ids[5:8]
    page = mnemo.recall.search_by_date("2024-05-01", "2024-06-30", limit=2)
    assert page.total == 4 and page.pages == 2
    assert [hit.id for hit in page] == ids[8:10]
    everything = mnemo.recall.search_by_date(None, None, limit=100)
    assert everything.total == len(CONVERSATION)


def test_search_respects_date_and_role_filters(chat):
    mnemo, ids = chat
    page = mnemo.recall.search(
        "dinner recipes food", start=date(2024, 4, 1), end=date(2024, 4, 30), roles=["assistant"]
    )
    assert [hit.id for hit in page] == [ids[7]]
    assert len(mnemo.recall.search("wedding", start=date(2024, 6, 1))) == 0


def test_bad_date_is_a_clear_error(chat):
    mnemo, _ = chat
    with pytest.raises(InputError, match="is not a date"):
        mnemo.recall.search_by_date("last tuesday", None)


def test_delete_removes_message_from_every_search(chat):
    mnemo, ids = chat
    mnemo.recall.delete(ids[5])
    assert all(hit.id != ids[5] for hit in mnemo.recall.search("peanut allergy"))
    with pytest.raises(NotFoundError):
        mnemo.recall.get(ids[5])
    with pytest.raises(NotFoundError):
        mnemo.recall.delete(ids[5])


def test_a_deleted_message_leaves_no_words_in_its_neighbours_index(mnemo):
    ids = [
        mnemo.recall.add("user" if n % 2 else "assistant", text)
        for n, text in enumerate(
            [
                "Morning!",
                "How was the weekend?",
                "My bank PIN is zebra-quartz-91, do not tell anyone.",
                "Noted.",
                "Let's plan the week.",
                "Sure, Monday first.",
            ]
        )
    ]
    assert len(mnemo.recall.search("zebra quartz", mode="keyword")) == 5  # it and 4 neighbours
    mnemo.recall.delete(ids[2])
    assert len(mnemo.recall.search("zebra quartz", mode="keyword")) == 0
    hits = mnemo.recall.search("weekend", mode="keyword")  # neighbours keep each other
    assert {hit.id for hit in hits} >= {ids[1], ids[3]}


def test_message_left_without_vector_by_a_crash_is_embedded_on_reopen(profile_dir, embedder):
    with Mnemo.open(profile_dir, embedder=embedder) as m:
        m.recall.add("user", "I play the cello in a community orchestra")
    # What a crash between the SQLite commit and the vector write leaves behind:
    connection = sqlite3.connect(profile_dir / "mnemo.sqlite")
    connection.execute(
        "INSERT INTO message (role, text, created_at) VALUES "
        "('user', 'My favourite painter is Frida Kahlo', 1700000000)"
    )
    connection.commit()
    connection.close()
    with Mnemo.open(profile_dir, embedder=embedder) as m:
        m.wait_for_background_work()
        hits = m.recall.search("which artist do I admire", mode="semantic")
        assert hits[0].text == "My favourite painter is Frida Kahlo"
        assert m._message_vectors.count() == 2


def test_only_the_users_and_the_assistants_messages_get_vectors(mnemo):
    """A function result quotes memory that has vectors of its own: it is found by its words,
    never a second time by meaning; and it is not left for the start-up repair either."""
    with mnemo.recall.transaction() as transaction:
        transaction.add("user", "My favourite painter is Frida Kahlo")
        transaction.add("function_call", '{"function": "conversation_search"}')
        transaction.add("function_result", "Found: My favourite painter is Frida Kahlo")
        transaction.add("assistant", "You admire Frida Kahlo.")
    assert mnemo._message_vectors.count() == 2
    assert {row["role"] for row in mnemo._message_vectors.rows(None, ["role"])} == {
        "user",
        "assistant",
    }
    semantic = mnemo.recall.search("which artist do I admire", mode="semantic")
    assert {hit.role for hit in semantic} <= {"user", "assistant"}
    keyword = mnemo.recall.search("painter Kahlo", mode="keyword")
    assert "function_result" in {hit.role for hit in keyword}
    unembedded = mnemo.database.connect().execute(
        sqlalchemy.text("SELECT count(*) FROM message WHERE embedded = 0")
    )
    assert unembedded.scalar() == 0


def test_vectors_an_older_version_gave_function_rows_are_removed_on_open(profile_dir, embedder):
    with Mnemo.open(profile_dir, embedder=embedder) as m:
        m.recall.add("user", "My favourite painter is Frida Kahlo")
        result_id = m.recall.add("function_result", "Found: My favourite painter is Frida Kahlo")
        # What an older version stored: a vector for the function result too.
        m._message_vectors.add(
            [
                {
                    "id": result_id,
                    "conversation_id": "default",
                    "role": "function_result",
                    "created_at": 0.0,
                    "vector": embedder.embed(["Found: Frida Kahlo"])[0],
                }
            ]
        )
        assert m._message_vectors.count() == 2
    with Mnemo.open(profile_dir, embedder=embedder) as m:
        m.wait_for_background_work()
        assert m._message_vectors.count() == 1
        hits = m.recall.search("which artist do I admire", roles=["user", "assistant"])
        assert [hit.role for hit in hits] == ["user"]


def test_reading_while_another_thread_writes(mnemo):
    errors: list[BaseException] = []
    stop = threading.Event()

    def writer() -> None:
        try:
            for i in range(60):
                mnemo.recall.add("user", f"background message {i} about sailing")
        except BaseException as error:  # noqa: BLE001 - reported by the assertion below
            errors.append(error)
        finally:
            stop.set()

    thread = threading.Thread(target=writer)
    thread.start()
    reads = 0
    while not stop.is_set():
        page = mnemo.recall.search("sailing", mode="keyword", limit=5)
        assert page.total >= len(page.hits)
        mnemo.recall.search_by_date(None, None)
        reads += 1
    thread.join()
    assert not errors
    assert reads > 0
    assert mnemo.recall.search("sailing", mode="keyword").total == 60


def test_a_turn_is_found_by_words_of_its_neighbours(mnemo):
    """'Lisbon, for the conference.' never says 'weekend', but the question before it does."""
    ids = mnemo.recall.add_many(
        [
            {"role": "user", "text": "Where did you go last weekend?"},
            {"role": "assistant", "text": "Lisbon, for the conference."},
            {"role": "user", "text": "I repainted the kitchen cabinets."},
        ]
    )
    hits = mnemo.recall.search("weekend", mode="keyword")
    assert ids[1] in [hit.id for hit in hits]
    assert hits[0].id == ids[0]  # the turn's own words weigh more than a neighbour's
    later = mnemo.recall.add("assistant", "Nice, what colour did you choose?")
    assert later in [hit.id for hit in mnemo.recall.search("kitchen cabinets", mode="keyword")]
    # The earlier turn now also knows its new neighbour.
    assert ids[1] in [hit.id for hit in mnemo.recall.search("colour", mode="keyword")]


def test_dates_are_searchable_words(mnemo):
    mnemo.recall.add("user", "We planted the apple tree.", created_at="2023-05-08")
    mnemo.recall.add("user", "We pruned the apple tree.", created_at="2024-01-20")
    hits = mnemo.recall.search("apple tree May 2023", mode="keyword")
    assert "planted" in hits[0].text


def test_messages_stored_before_neighbour_indexing_are_indexed_on_open(profile_dir, embedder):
    from sqlalchemy import text as sql

    from engine import Mnemo

    with Mnemo.open(profile_dir, embedder=embedder) as first:
        first.recall.add_many(
            [
                {"role": "user", "text": "Where did you go last weekend?"},
                {"role": "assistant", "text": "Lisbon, for the conference."},
            ]
        )
        with first.database.begin() as connection:  # as an older Mnemo left them
            connection.execute(sql("UPDATE message SET search_text = text"))
            connection.execute(sql("INSERT INTO message_context_pending VALUES ('default')"))
        assert len(first.recall.search("weekend", mode="keyword")) == 1
    with Mnemo.open(profile_dir, embedder=embedder) as second:
        second.wait_for_background_work()
        assert len(second.recall.search("weekend", mode="keyword")) == 2


LONG_ANSWER = (
    "Here are some ideas for a relaxed week in Porto. Start with a walk along the Ribeira, "
    "then cross the Dom Luís bridge to the port cellars in Gaia. "
) * 8  # about 250 words, as an assistant writes


def test_a_long_turn_lends_its_words_only_nearby_and_takes_none(mnemo):
    """A short turn next to a long answer takes only the answer's nearest words; the long
    answer is indexed by its own words alone."""
    ids = mnemo.recall.add_many(
        [
            {"role": "user", "text": "I am allergic to peanuts."},
            {"role": "assistant", "text": "Noted! " + LONG_ANSWER + " Enjoy the pastries."},
            {"role": "user", "text": "Thanks, booked the train."},
        ]
    )
    assert ids[1] not in [h.id for h in mnemo.recall.search("peanuts", mode="keyword")]
    assert ids[1] not in [h.id for h in mnemo.recall.search("train", mode="keyword")]
    # 'Noted' starts the answer after the first turn; 'pastries' ends the one before the third.
    assert ids[0] in [h.id for h in mnemo.recall.search("noted", mode="keyword")]
    assert ids[2] in [h.id for h in mnemo.recall.search("pastries", mode="keyword")]
    assert ids[0] not in [h.id for h in mnemo.recall.search("pastries", mode="keyword")]


def test_turns_of_another_sitting_lend_no_words(mnemo):
    ids = mnemo.recall.add_many(
        [
            {
                "role": "user",
                "text": "The plumber fixed the sink.",
                "created_at": "2024-05-01T10:00",
            },
            {"role": "assistant", "text": "Good to hear.", "created_at": "2024-05-01T10:01"},
            {"role": "user", "text": "Any film tips?", "created_at": "2024-05-03T20:00"},
        ]
    )
    found = [h.id for h in mnemo.recall.search("plumber", mode="keyword")]
    assert ids[1] in found and ids[2] not in found


def test_a_first_person_question_prefers_what_the_user_said(mnemo):
    """The user's own turn holds the fact; the assistant's replies only discuss the topic."""
    mnemo.recall.add_many(
        [
            {"role": "user", "text": "My favourite wine is a Douro red."},
            {"role": "assistant", "text": "Lovely! " + LONG_ANSWER},
            {"role": "user", "text": "Which wines should I try in Porto?"},
            {
                "role": "assistant",
                "text": "Tawny port is the favourite wine of many visitors to Porto.",
            },
        ]
    )
    hits = mnemo.recall.search("What is my favourite wine?", limit=1)
    assert hits[0].text == "My favourite wine is a Douro red."


@pytest.mark.parametrize(
    ("query", "role"),
    [
        ("What is my favourite wine?", "user"),
        ("when did I move", "user"),
        ("Which wine did you suggest?", "assistant"),
        ("Can you remind me what I said about wine?", None),  # both: no preference
        ("Would you recommend a wine?", "assistant"),
        ("What did Caroline research?", None),
        ("favourite wine", None),
    ],
)
def test_the_role_a_question_is_about(query, role):
    assert addressed_role(query) == role


def test_the_other_role_needs_more_evidence_to_rank_first():
    ranked = [("answer", 1.2), ("fact", 0.5), ("other answer", 0.1)]
    roles = {"answer": "assistant", "fact": "user", "other answer": "assistant"}
    assert [key for key, _ in prefer_role(ranked, roles, "user")] == [
        "fact",
        "answer",
        "other answer",
    ]
    assert [key for key, _ in prefer_role(ranked, roles, "assistant")][0] == "answer"


def test_a_match_on_one_word_of_four_counts_for_little():
    """Keyword scores are scaled by the share of the query's words a text holds, and the
    keyword side weighs less when no candidate holds half of them."""
    scores = {"partial": 8.0, "full": 6.0}
    texts = {"partial": "Car insurance renewal", "full": "Where I leave the car at work"}
    scaled, weight = coordinated(scores, texts, "where do I leave the car at work")
    assert scaled["full"] > scaled["partial"]
    assert weight == KEYWORD_WEIGHT
    _, weak_weight = coordinated({"partial": 8.0}, texts, "where do I leave the car at work")
    assert weak_weight < KEYWORD_WEIGHT


def test_an_excerpt_shows_where_the_query_matched():
    filler = "Some general advice about packing for a long trip abroad. " * 30
    text = filler + "You said you are allergic to peanuts, so skip the satay. " + filler
    cut = excerpt(text, "peanut allergy", 120)
    assert cut.startswith("…") and cut.endswith("…") and len(cut) <= 120
    assert "allergic to peanuts" in cut
    assert excerpt(text, "zebra", 60).startswith("Some general advice")  # nothing matched
    assert excerpt("short", "anything", 60) == "short"
    huge = "peanut " * 200_000 + "satay peanut"
    assert "satay" in excerpt(huge, "peanut satay", 100)


def test_a_rare_word_of_the_query_weighs_more_than_a_common_one(mnemo):
    mnemo.recall.add_many(
        [{"role": "user", "text": f"Garden note {i}: the garden needs water."} for i in range(40)]
        + [
            {
                "role": "user",
                "text": "After work I finally planted the zucchini seedlings in the pots by "
                "the fence, next to the old shed.",
                "conversation_id": "veg",
            }
        ]
    )
    hits = mnemo.recall.search("garden zucchini", mode="keyword")
    assert "zucchini" in hits[0].text  # the word only one message holds decides


ASIDE = (
    "Can you recommend a lightweight tent for a weekend of camping in the Alps? "
    "By the way, I finally cancelled my Forbes magazine subscription because I never read it."
)


def test_which_messages_get_vectors_of_their_sentences():
    from engine.memory.recall.vectors import sentence_parts

    assert sentence_parts("user", ASIDE) == [
        "Can you recommend a lightweight tent for a weekend of camping in the Alps?",
        "By the way, I finally cancelled my Forbes magazine subscription because I never read it.",
    ]
    assert sentence_parts("assistant", ASIDE) == []  # replies explain one subject at length
    assert sentence_parts("user", "One sentence is its own message vector already.") == []
    # "Thanks!" says too little to stand for the message; the other sentence gets a vector.
    assert sentence_parts("user", "Thanks! I booked the night train to Porto for May.") == [
        "I booked the night train to Porto for May."
    ]
    assert (
        len(sentence_parts("user", "Each of these sentences holds eight words exactly. " * 50))
        == 20
    )


def test_a_fact_mentioned_in_passing_is_found_by_meaning(mnemo):
    """The aside of a message about something else is found by a question about the aside,
    in other words, ahead of messages nearer to the question than the message as a whole."""
    ids = mnemo.recall.add_many(
        [
            {"role": "user", "text": "I read the newspaper on the train every morning."},
            {"role": "user", "text": "My sister writes articles for a fashion blog."},
            {"role": "user", "text": "Which bookshop in town has the best choice of comics?"},
            {"role": "user", "text": ASIDE},
        ]
    )
    parts = mnemo.recall_vectors.rows(f"id = {ids[-1]}", ["part"])
    assert sorted(row["part"] for row in parts) == [0, 1, 2]
    hits = mnemo.recall.search("Which periodicals did I stop paying for?", mode="semantic")
    assert hits[0].id == ids[-1]


def test_deleting_a_message_deletes_its_sentence_vectors(mnemo):
    message_id = mnemo.recall.add("user", ASIDE)
    assert mnemo.recall_vectors.count(f"id = {message_id}") == 3
    mnemo.recall.delete(message_id)
    assert mnemo.recall_vectors.count(f"id = {message_id}") == 0


def test_messages_stored_before_sentence_vectors_get_theirs_on_open(profile_dir, embedder):
    from sqlalchemy import text as sql

    with Mnemo.open(profile_dir, embedder=embedder) as first:
        message_id = first.recall.add("user", ASIDE)
        first.recall_vectors.delete("part > 0")  # as an older Mnemo left them
        with first.database.begin() as connection:
            connection.execute(sql("INSERT INTO message_sentences_pending VALUES ('default')"))
    with Mnemo.open(profile_dir, embedder=embedder) as second:
        second.wait_for_background_work()
        rows = second.recall_vectors.rows(f"id = {message_id}", ["part"])
        assert sorted(row["part"] for row in rows) == [0, 1, 2]
        with second.database.connect() as connection:
            pending = connection.execute(sql("SELECT count(*) FROM message_sentences_pending"))
            assert pending.scalar() == 0


def test_each_word_of_the_question_is_matched_in_other_forms():
    from engine.embed import default_embedder
    from engine.memory.word_match import matches

    found = matches(
        "How many weddings did I attend?",
        ["I went to my cousin's wedding in June.", "The boiler needs a service soon.", ""],
        default_embedder().piece_vectors,
    )
    assert found[0] > found[1] > found[2] == 0


def test_the_best_hits_are_reordered_by_word_match_and_the_rest_kept():
    from engine.memory import word_match

    def pieces(texts):  # one piece per word; a word's vector says which word it is
        vocabulary = {"wedding": 0, "weddings": 0, "boiler": 1, "news": 2}
        out = []
        for text in texts:
            words = text.lower().split()
            vectors = np.zeros((len(words), 3), np.float32)
            for i, word in enumerate(words):
                vectors[i, vocabulary.get(word, 2)] = 1.0
            out.append((words, vectors))
        return out

    ranked = [("boiler", 1.0), ("wedding", 0.9), ("news", 0.8)]
    texts = {"boiler": "boiler", "wedding": "wedding", "news": "news"}
    order = [key for key, _ in word_match.rerank(ranked, texts, "weddings", pieces)]
    assert order == ["wedding", "boiler", "news"]
    deep = ranked + [(f"later {i}", 0.1) for i in range(30)]
    again = word_match.rerank(deep, texts, "weddings", pieces)
    assert [key for key, _ in again[3:]] == [key for key, _ in deep[3:]]  # beyond the texts
    assert word_match.rerank(ranked[:1], texts, "weddings", pieces) == ranked[:1]
