import subprocess
import sys
import tempfile
from datetime import date, datetime, timedelta

import numpy as np
import pytest

from engine import Mnemo
from engine.errors import EmbedderMismatchError, InputError, NotFoundError
from engine.memory.archival import Source
from engine.memory.vectors import upkeep as lance_upkeep

FACTS = [
    "The spare house key is hidden under the blue flowerpot by the back door.",
    "Dr. Okafor's dental clinic is open Tuesday to Saturday, 9am to 5pm.",
    "The boiler was serviced in October 2023 by HeatWise; next service due October 2024.",
    "Grandma's lemon cake: 200g flour, 200g sugar, 4 eggs, zest of two lemons.",
    "The car insurance policy number is AX-4471-9920, renewal on 1 March.",
    "Wi-Fi network 'Nebula' uses the password correct-horse-battery.",
]


@pytest.fixture
def facts(mnemo):
    ids = mnemo.archival.insert_many(FACTS)
    return mnemo, ids


def test_insert_and_get_round_trip(mnemo):
    when = datetime(2024, 2, 3, 4, 5, 6)
    source = Source(path="/docs/manual.pdf", section="page 4", chunk=7)
    passage_id = mnemo.archival.insert(
        "Reset the router by holding the button for 10 s.",
        source=source,
        tags=["home", "tech"],
        created_at=when,
        origin="document",
    )
    passage = mnemo.archival.get(passage_id)
    assert passage.text == "Reset the router by holding the button for 10 s."
    assert passage.source == source
    assert passage.tags == ["home", "tech"]
    assert passage.created_at == when.astimezone()
    assert passage.origin == "document" and not passage.trusted
    assert passage.embedder == mnemo.embedder.name


def test_source_can_be_the_message_that_inserted_it(mnemo):
    message_id = mnemo.recall.add("user", "remember my locker code is 3141")
    passage_id = mnemo.archival.insert("Locker code: 3141", source=message_id, origin="model")
    assert mnemo.archival.get(passage_id).source.message_id == message_id
    assert mnemo.archival.get(passage_id).source.describe() == f"message {message_id}"


def test_insert_many_keeps_order_and_count(facts):
    mnemo, ids = facts
    assert len(set(ids)) == len(FACTS) == mnemo.archival.count()
    assert [mnemo.archival.get(i).text for i in ids] == FACTS


def test_empty_text_is_refused(mnemo):
    with pytest.raises(InputError, match="needs some text"):
        mnemo.archival.insert("   ")
    assert mnemo.archival.count() == 0


@pytest.mark.parametrize(
    ("mode", "query", "expected"),
    [
        ("keyword", "insurance policy number", 4),
        ("keyword", "AX-4471-9920", 4),
        ("semantic", "where can I find the key to get into my home", 0),
        ("semantic", "when does the heating system need maintenance", 2),
        ("hybrid", "dentist opening hours", 1),
        ("hybrid", "recipe for a citrus dessert", 3),
        ("hybrid", "internet password", 5),
    ],
)
def test_each_search_mode_ranks_the_relevant_passage_first(facts, mode, query, expected):
    mnemo, ids = facts
    page = mnemo.archival.search(query, mode=mode)
    assert page[0].id == ids[expected], [hit.text for hit in page]


@pytest.mark.parametrize("query", ['"', "AND OR", "(((", "*", "😀", "", "a:b:c", "'; DROP"])
def test_odd_queries_never_raise(facts, query):
    mnemo, _ = facts
    for mode in ("keyword", "semantic", "hybrid"):
        mnemo.archival.search(query, mode=mode)


def test_filters_by_tag_source_and_time(mnemo):
    a = mnemo.archival.insert(
        "Project Falcon kickoff notes",
        source="/work/falcon/notes.md",
        tags=["work"],
        created_at=date(2024, 1, 10),
    )
    b = mnemo.archival.insert(
        "Project Falcon budget review",
        source="/work/falcon/budget.md",
        tags=["work", "money"],
        created_at=date(2024, 3, 10),
    )
    c = mnemo.archival.insert(
        "Falcon sightings at the lake",
        source="/home/birds.md",
        tags=["hobby"],
        created_at=date(2024, 3, 12),
    )
    ids = lambda page: {hit.id for hit in page}  # noqa: E731
    assert ids(mnemo.archival.search("falcon", tags=["work"])) == {a, b}
    assert ids(mnemo.archival.search("falcon", tags=["money", "hobby"])) == {b, c}
    assert ids(mnemo.archival.search("falcon", source="/work/falcon")) == {a, b}
    assert ids(mnemo.archival.search("falcon", source="/home/birds.md")) == {c}
    assert ids(mnemo.archival.search("falcon", start=date(2024, 3, 1))) == {b, c}
    assert ids(mnemo.archival.search("falcon", end="2024-03-10")) == {a, b}
    assert ids(mnemo.archival.search("falcon", tags=["o'brien"])) == set()


def test_paging(mnemo):
    mnemo.archival.insert_many([f"Recipe note {i}: bake the sourdough bread" for i in range(12)])
    first = mnemo.archival.search("sourdough bread", limit=5, mode="keyword")
    assert (first.total, first.pages, len(first)) == (12, 3, 5)
    third = mnemo.archival.search("sourdough bread", limit=5, page=3, mode="keyword")
    assert third.describe() == "showing 2 of 12, page 3 of 3"
    seen = [
        hit.id
        for p in (1, 2, 3)
        for hit in mnemo.archival.search("sourdough bread", limit=5, page=p, mode="keyword")
    ]
    assert len(set(seen)) == 12


def test_update_text_reembeds(facts):
    mnemo, ids = facts
    mnemo.archival.update(ids[3], "Grandma's tomato soup: tomatoes, basil, garlic, cream.")
    page = mnemo.archival.search("soup recipe with basil", mode="semantic")
    assert page[0].id == ids[3]
    assert "lemon" not in mnemo.archival.get(ids[3]).text
    assert mnemo.archival.count() == len(FACTS)
    mnemo.archival.update(ids[3], tags=["recipes"])
    assert mnemo.archival.get(ids[3]).tags == ["recipes"]


def test_delete_and_missing_ids(facts):
    mnemo, ids = facts
    mnemo.archival.delete(ids[0])
    assert mnemo.archival.count() == len(FACTS) - 1
    assert all(hit.id != ids[0] for hit in mnemo.archival.search("house key flowerpot"))
    with pytest.raises(NotFoundError):
        mnemo.archival.get(ids[0])
    with pytest.raises(NotFoundError):
        mnemo.archival.delete(ids[0])


def test_list_and_delete_by_source(mnemo):
    path = "/docs/guide.md"
    mnemo.archival.insert_many(
        [
            {"text": f"Section {i} of the guide", "source": Source(path=path, chunk=i)}
            for i in (2, 0, 1)
        ]
        + [{"text": "unrelated", "source": "/docs/other.md"}]
    )
    assert [p.source.chunk for p in mnemo.archival.list_by_source(path)] == [0, 1, 2]
    assert mnemo.archival.delete_by_source(path) == 3
    assert mnemo.archival.list_by_source(path) == []
    assert mnemo.archival.count() == 1


class OtherEmbedder:
    """A stand-in for the user switching to a different (bigger) embedding model."""

    name = "other-embedder"
    dim = 16
    query_prefix = document_prefix = ""

    def embed(self, texts):
        rng = [np.random.default_rng(abs(hash(t)) % 2**32).normal(size=16) for t in texts]
        vectors = np.array(rng, dtype=np.float32).reshape(len(texts), 16)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_a_different_embedder_is_detected_and_reembed_needs_consent(profile_dir, embedder):
    with Mnemo.open(profile_dir, embedder=embedder) as m:
        m.archival.insert_many(FACTS)
        m.recall.add("user", "I like jazz")
    with Mnemo.open(profile_dir, embedder=OtherEmbedder()) as m:
        assert "all-MiniLM-L6-v2-int8 (384 dimensions)" in m.archival.embedder_mismatch
        with pytest.raises(EmbedderMismatchError, match="re-embed"):
            m.archival.search("key", mode="semantic")
        with pytest.raises(EmbedderMismatchError):
            m.archival.insert("new passage")  # never mixes 16- and 384-dim vectors
        page = m.archival.search("insurance policy")  # words still work meanwhile
        assert page.notes and page[0].text == FACTS[4]
        assert m.recall.embedder_mismatch
        assert m.reembed() == len(FACTS) + 1
        assert m.embedder_mismatch is None
        (snapshot,) = m.snapshots.all()  # taken first: the old vectors can come back
        assert snapshot.note == "before re-embedding" and snapshot.automatic
        assert m.recall.search("I like jazz", mode="semantic")[0].text == "I like jazz"
        assert (
            m.archival.get(m.archival.search("insurance", mode="keyword")[0].id).embedder
            == "other-embedder"
        )
    with Mnemo.open(profile_dir, embedder=OtherEmbedder()) as m:
        assert m.archival.embedder_mismatch is None
        assert m.archival.count() == len(FACTS)
        m.snapshots.restore(snapshot.id)
    with Mnemo.open(profile_dir, embedder=embedder) as m:  # the re-embed undone
        assert m.embedder_mismatch is None
        assert m.archival.search("insurance policy", mode="semantic")[0].text == FACTS[4]


def test_large_table_gets_an_ann_index_and_compaction_in_the_background(mnemo, monkeypatch, caplog):
    monkeypatch.setattr(lance_upkeep, "ANN_INDEX_MIN_ROWS", 600)
    monkeypatch.setattr(lance_upkeep, "OPTIMIZE_EVERY_WRITES", 5)
    monkeypatch.setattr(lance_upkeep, "KEEP_VERSIONS_FOR", timedelta(microseconds=1))
    table = mnemo._passage_vectors
    for batch in range(6):
        mnemo.archival.insert_many(
            [f"passage {batch}-{i} about topic {i % 37}" for i in range(120)]
        )
    mnemo.wait_for_background_work()
    assert any("vector" in index.columns for index in table.table.list_indices())
    assert table.table.stats()["fragment_stats"]["num_fragments"] < 6  # six appends compacted
    assert len(table.table.list_versions()) < 8  # old versions were pruned
    assert mnemo.archival.search("topic 5", mode="semantic").total > 0
    assert mnemo.archival.count() == 720
    assert not [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]


def test_a_passage_with_the_query_verbatim_comes_first(mnemo):
    mnemo.archival.insert_many(
        [
            "Key-value pair: key = 7f3e2a10-aaaa, value = 1c2d3e4f-bbbb",
            "Key-value pair: key = 1c2d3e4f-bbbb, value = 99887766-cccc",
        ]
    )
    first = mnemo.archival.search("key = 1c2d3e4f-bbbb")[0]
    assert first.text.startswith("Key-value pair: key = 1c2d3e4f-bbbb")
    other = mnemo.archival.search("value = 1c2d3e4f-bbbb")[0]
    assert other.text.startswith("Key-value pair: key = 7f3e2a10-aaaa")


def test_a_question_in_other_words_finds_the_note(mnemo):
    """No word shared and a cosine of only 0.24: a fixed similarity floor of 0.25 lost it."""
    boiler = mnemo.archival.insert("The boiler service code is 7731 and the plumber is Ana Ruiz.")
    mnemo.archival.insert("Buy oat milk, rye bread and two lemons on the way home.")
    hits = mnemo.archival.search("who repairs the heating")
    assert hits[0].id == boiler


def test_a_question_about_something_never_stored_finds_nothing(facts):
    mnemo, _ = facts
    assert len(mnemo.archival.search("what did the cardiologist say about my heart")) == 0
    assert len(mnemo.archival.search("which airline lost my suitcase")) == 0


def test_among_many_notes_a_loose_match_is_marked_weak(mnemo):
    topics = ["budget", "roadmap", "hiring", "pricing", "security", "audit", "launch", "report"]
    people = ["Alice", "Bruno", "Carla", "Diego", "Elena", "Felix", "Greta", "Hugo", "Irene"]
    mnemo.archival.insert_many(
        [
            f"Meeting with {p} about the {t} on day {d}."
            for p in people
            for t in topics
            for d in (1, 2)
        ]
        + [f"Call {p} back about the {t} report." for p in people for t in topics]
        + FACTS
    )
    loose = mnemo.archival.search("what did the cardiologist say about my heart")
    assert loose.hits and all(hit.weak for hit in loose)
    clear = mnemo.archival.search("dentist opening hours")
    assert "Okafor" in clear[0].text and not clear[0].weak


def test_search_does_not_favour_long_passages(mnemo):
    """Notes are a sentence; document sections are ~160 words. Each kind must win the queries
    it answers, although a long section shares more words with any query by its length."""
    section = (
        "Chapter 4 of the household manual covers the garden, the garage and the heating. "
        "The garden hose is stored in the garage; the garage door code and the boiler's "
        "settings are described in chapter 6. Winter care: drain the hose, cover the garden "
        "tap, check the boiler pressure, bleed the radiators, and keep the garage dry. "
    ) * 3
    short = {
        "boiler pressure": "Boiler pressure should read 1.5 bar when cold.",
        "garage door code": "The garage door code is 4417.",
        "garden hose": "Lent the garden hose to Pedro next door.",
    }
    ids = {query: mnemo.archival.insert(text) for query, text in short.items()}
    long_id = mnemo.archival.insert(section, origin="document")
    mnemo.archival.insert_many([f"Shopping list {n}: bread, milk and eggs." for n in range(30)])
    for query, passage_id in ids.items():
        assert mnemo.archival.search(query)[0].id == passage_id, query
    assert mnemo.archival.search("winter care radiators")[0].id == long_id


def test_each_word_of_the_question_is_matched_in_other_words(mnemo):
    """'when does my plane leave' shares "leave" with every train note and no word with the
    flight; the word match ("plane" against "Flight") puts the flight first (third without)."""
    places = ["Lyon", "Porto", "Munich", "Dublin", "Ghent", "Turin", "Bern", "Leeds"]
    trains = [
        f"Train to {places[n % 8]} leaves at {6 + n}:{5 + 3 * n:02d}; seat {11 + 23 * n} in "
        f"coach {1 + n % 9}."
        for n in range(16)
    ]
    mnemo.archival.insert_many([*trains, "Bus to the airport every 20 minutes from the station."])
    flight = mnemo.archival.insert("Flight TP1234 to Lisbon departs at 06:40 from terminal 1.")
    assert mnemo.archival.search("when does my plane leave")[0].id == flight


def test_lancedb_loads_without_the_rest_client_it_never_uses_which_still_works_when_asked():
    code = (
        "import sys\n"
        "from engine.memory.vectors.lance import lancedb\n"
        "lancedb().connect(sys.argv[1]).create_table('t', data=[{'x': 1}])\n"
        "print(any(n.startswith('lance_namespace_urllib3_client.api') for n in sys.modules))\n"
        "from lance_namespace_urllib3_client import TableApi\n"
        "print(TableApi.__name__)\n"
    )
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run(
            [sys.executable, "-c", code, folder], capture_output=True, text=True, check=True
        )
    assert done.stdout.split() == ["False", "TableApi"]
