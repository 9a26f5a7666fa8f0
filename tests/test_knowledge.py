"""Knowledge memory's store: entities, facts over time, contradictions, aliases and merges."""

from __future__ import annotations

import json
from datetime import date

import pytest
import sqlalchemy
from agent_helpers import Recorder, call, say, search
from sqlmodel import Session

from engine import Mnemo
from engine.agent import Agent
from engine.agent import assisted_rules as assisted
from engine.cli import main
from engine.errors import InputError, NotFoundError
from engine.events import ProposalCreated
from engine.ingest.facts import propose_facts_from
from engine.llm.scripted import ScriptedModel
from engine.memory.knowledge import Conflict, Fact, name_key, predicate_key


@pytest.fixture
def mnemo(mnemo_on_each_backend):
    """The tests that take ``mnemo`` run on SQLite and on PostgreSQL (``database_url``)."""
    return mnemo_on_each_backend


def test_a_move_is_a_conflict_until_accepted_then_the_old_home_is_history(mnemo):
    """Over several sessions: Porto, then Lyon. Nothing is lost, and each fact points back to
    the message it came from."""
    knowledge = mnemo.knowledge
    porto_message = mnemo.recall.add("user", "I live in Porto.")
    porto = knowledge.add(
        "user", "lives in", "Porto", source_kind="message", source_ref=str(porto_message)
    )
    assert isinstance(porto, Fact) and porto.object_is_entity and porto.status == "current"
    lyon_message = mnemo.recall.add("user", "I moved to Lyon last month.")
    move = dict(valid_from="2026-10-15", source_kind="message", source_ref=str(lyon_message))
    conflict = knowledge.add("User", "lives_in", "Lyon", **move)
    assert isinstance(conflict, Conflict)
    assert [fact.object for fact in conflict.current] == ["Porto"]
    assert [fact.object for fact in knowledge.facts("user")] == ["Porto"]  # nothing changed yet

    lyon = knowledge.add("user", "lives_in", "Lyon", supersede=True, **move)
    assert isinstance(lyon, Fact)
    assert [fact.object for fact in knowledge.facts("user", "lives in")] == ["Lyon"]
    old, new = knowledge.history("user")
    assert (old.object, old.status, old.superseded_by) == ("Porto", "superseded", lyon.id)
    assert old.valid_to == lyon.valid_from and f"{lyon.valid_from:%Y-%m-%d}" == "2026-10-15"
    assert (old.source_ref, new.source_ref) == (str(porto_message), str(lyon_message))
    assert [fact.subject for fact in knowledge.facts("Lyon")] == ["User"]  # found as object too


def test_many_valued_relations_keep_every_value_and_literals_stay_text(mnemo):
    knowledge = mnemo.knowledge
    knowledge.add("Ana", "likes", "cello")
    knowledge.add("Ana", "likes", "hiking")
    birthday = knowledge.add("Ana", "birthday", "12 May")
    assert isinstance(birthday, Fact) and not birthday.object_is_entity
    assert knowledge.resolve("12 May") is None  # a value, not an entity
    assert sorted(f.object for f in knowledge.facts("Ana", "likes")) == ["cello", "hiking"]
    assert isinstance(knowledge.add("Ana", "birthday", "14 May"), Conflict)


def test_the_same_fact_twice_is_stored_once(mnemo):
    first = mnemo.knowledge.add("Ana", "works at", "Lisbon City Council")
    again = mnemo.knowledge.add("ana", "works_at", "the Lisbon city council")
    assert isinstance(again, Fact) and again.id == first.id  # type: ignore[union-attr]
    assert len(mnemo.knowledge.history("Ana")) == 1


def test_names_are_compared_without_case_accents_punctuation_or_articles():
    assert name_key("  The Café São-João ") == name_key("cafe sao joao")
    assert predicate_key("Lives in") == predicate_key("lives-in") == "lives_in"
    with pytest.raises(InputError):
        predicate_key("  ")


def test_aliases_resolve_and_a_close_name_is_suggested_for_a_merge(mnemo):
    knowledge = mnemo.knowledge
    knowledge.entity("Ana Sousa", kind="person")
    knowledge.add_alias("Ana Sousa", "my sister")
    assert knowledge.resolve("My sister").name == "Ana Sousa"  # type: ignore[union-attr]
    knowledge.add("Ana Souza", "works_at", "Lisbon City Council")  # a typo made a second one
    suggestions = knowledge.similar("Ana Souza")
    assert [entity.name for entity, _ in suggestions] == ["Ana Souza", "Ana Sousa"]
    with pytest.raises(InputError, match="already names"):
        knowledge.add_alias("Ana Souza", "my sister")

    merged = knowledge.merge("Ana Sousa", "Ana Souza")
    assert "Ana Souza" in merged.aliases and "my sister" in merged.aliases
    assert knowledge.resolve("Ana Souza").name == "Ana Sousa"  # type: ignore[union-attr]
    assert [fact.subject for fact in knowledge.facts("my sister")] == ["Ana Sousa"]
    with pytest.raises(InputError, match="already the same"):
        knowledge.merge("Ana Sousa", "my sister")


def test_a_retracted_fact_leaves_current_facts_but_stays_in_history(mnemo):
    fact = mnemo.knowledge.add("Miso", "is_a", "cat")
    mnemo.knowledge.retract(fact.id)  # type: ignore[union-attr]
    assert len(mnemo.knowledge.facts("Miso")) == 0
    assert [f.status for f in mnemo.knowledge.history("Miso")] == ["retracted"]
    with pytest.raises(NotFoundError):
        mnemo.knowledge.retract(99999)
    with pytest.raises(NotFoundError, match="no one and nothing called"):
        mnemo.knowledge.history("Nobody")


def test_bad_input_is_refused_in_words(mnemo):
    with pytest.raises(InputError, match="empty"):
        mnemo.knowledge.add("Ana", "likes", "   ")
    with pytest.raises(InputError, match="under 200"):
        mnemo.knowledge.add("Ana", "likes", "x" * 300)
    with pytest.raises(InputError, match="no letters"):
        mnemo.knowledge.add("!!!", "likes", "tea")
    with pytest.raises(InputError, match="kind of entity"):
        mnemo.knowledge.entity("Ana", kind="alien")  # type: ignore[arg-type]


def test_a_crash_during_a_write_leaves_no_half_fact(mnemo, monkeypatch):
    mnemo.knowledge.add("user", "lives_in", "Porto")

    def crash(self):
        raise RuntimeError("power cut")

    monkeypatch.setattr(Session, "commit", crash)
    with pytest.raises(RuntimeError):
        mnemo.knowledge.add("user", "lives_in", "Lyon", supersede=True)
    monkeypatch.undo()
    assert [(f.object, f.status) for f in mnemo.knowledge.history("user")] == [("Porto", "current")]
    assert mnemo.knowledge.resolve("Lyon") is None
    with mnemo.database.connect() as connection:
        count = connection.execute(sqlalchemy.text("SELECT count(*) FROM relation")).scalar()
    assert count == 1


def test_facts_survive_a_restart(profile_dir, embedder):
    with Mnemo.open(profile_dir, embedder=embedder) as m:
        m.knowledge.add("user", "lives_in", "Porto")
    with Mnemo.open(profile_dir, embedder=embedder) as m:
        assert [f.line() for f in m.knowledge.facts("user")] == ["User — lives_in — Porto"]


def test_the_command_line_adds_shows_and_explains_a_conflict(profile_dir, capsys):
    def run(*args: str) -> tuple[int, str]:
        code = main(["--profile", str(profile_dir), "kg", *args])
        captured = capsys.readouterr()
        return code, captured.out + captured.err

    assert run("add", "user", "lives_in", "Porto") == (0, "Known: User — lives_in — Porto (#1).\n")
    code, out = run("add", "user", "lives in", "Lyon", "--since", "2026-10-15")
    assert code == 1 and "User — lives_in — Porto" in out and "--replace" in out
    assert run("add", "user", "lives_in", "Lyon", "--since", "2026-10-15", "--replace")[0] == 0
    code, out = run("show", "user")
    assert "Lyon (since 2026-10-15)" in out and "Porto" not in out
    code, out = run("history", "user", "--json")
    assert [(f["object"], f["status"]) for f in json.loads(out)] == [
        ("Porto", "superseded"),
        ("Lyon", "current"),
    ]
    assert "Lyon" in run("search", "lyo")[1]
    code, out = run("show", "Nobody")
    assert code != 0 and "knows no one and nothing called 'Nobody'" in out


def test_find_matches_names_by_their_text_and_an_underscore_is_no_wildcard(mnemo):
    mnemo.knowledge.entity("proj_x")
    mnemo.knowledge.entity("projax")
    assert [e.name for e in mnemo.knowledge.find("proj_")] == ["proj_x"]
    assert {e.name for e in mnemo.knowledge.find("proj")} == {"proj_x", "projax"}


# -- the model's functions -----------------------------------------------------------------------


def _agent(mnemo, *steps):
    model = ScriptedModel(context_length=8192, max_step_tokens=64)
    model.enqueue(list(steps))
    return Agent(mnemo, model)


def test_the_model_adds_facts_and_a_contradiction_waits_for_the_user_with_both_side_by_side(mnemo):
    agent = _agent(
        mnemo,
        call(
            "knowledge_add",
            subject="user",
            relation="lives_in",
            object="Porto",
            request_heartbeat=True,
        ),
        say("Noted: you live in Porto."),
        call(
            "knowledge_add",
            subject="me",
            relation="lives in",
            object="Lyon",
            valid_from="2026-10-01",
            request_heartbeat=True,
        ),
        say("I will remember Lyon once you confirm."),
        call("knowledge_search", entity="User", request_heartbeat=True),
        say("You live in Porto."),
    )
    agent.send("I live in Porto.")
    (porto,) = mnemo.knowledge.facts("user")
    assert (porto.sentence(), porto.asserted_by, porto.source_kind) == (
        "User lives in Porto",
        "model",
        "message",
    )
    call_row = mnemo.recall.get(int(porto.source_ref))  # provenance: the exact call
    assert call_row.role == "function_call" and "knowledge_add" in call_row.text

    events = Recorder()
    agent.send("I moved to Lyon this October.", on_event=events)
    (created,) = events.of(ProposalCreated)
    proposal = created.proposal
    assert proposal.kind == "fact" and proposal.action == "replace"
    assert mnemo.proposals.preview(proposal.id) == (
        "You live in Porto",
        "You live in Lyon (since 2026-10-01)",
    )  # as the person reads it
    assert [f.object for f in mnemo.knowledge.facts("user")] == ["Porto"]  # not before approval

    agent.send("Where do I live?")
    result = mnemo.recall.recent(3)[1]
    assert "[fact " in result.text and "User lives in Porto" in result.text
    assert "said by you in message" in result.text

    mnemo.proposals.approve(proposal.id)
    assert [f.object for f in mnemo.knowledge.facts("user")] == ["Lyon"]
    old, new = mnemo.knowledge.history("user")
    assert (old.status, old.superseded_by, f"{old.valid_to:%Y-%m-%d}") == (
        "superseded",
        new.id,
        "2026-10-01",
    )
    assert mnemo.proposals.get(proposal.id).status == "approved"
    assert "approved your change to facts about User" in mnemo.recall.recent(1)[0].text


def test_a_fact_read_from_a_document_waits_for_the_user_even_without_a_contradiction(mnemo):
    mnemo.archival.insert(
        "Ana works at the Lisbon City Council.", source="notes/ana.txt", origin="document"
    )
    agent = _agent(
        mnemo,
        search("Ana work"),
        call(
            "knowledge_add",
            subject="Ana",
            relation="works_at",
            object="Lisbon City Council",
            request_heartbeat=True,
        ),
        say("Ana works at the Lisbon City Council."),
    )
    agent.send("Where does Ana work?")
    (proposal,) = mnemo.proposals.pending()
    assert proposal.kind == "fact" and proposal.action == "append" and not proposal.trusted
    assert mnemo.knowledge.resolve("Ana") is None  # nothing stored yet, not even the entity
    mnemo.proposals.approve(proposal.id, "Lisbon City Council (culture department)")
    assert [f.object for f in mnemo.knowledge.facts("Ana")] == [
        "Lisbon City Council (culture department)"
    ]


def test_the_model_corrects_and_deletes_its_notes_but_not_a_documents_text(mnemo):
    note = mnemo.archival.insert("Wifi password: tulip42.", origin="user")
    other = mnemo.archival.insert("Parking spot: B12.", origin="user")
    document = mnemo.archival.insert("Chapter 1.", source="book.txt", origin="document")
    agent = _agent(
        mnemo,
        call(
            "archival_memory_update",
            passage_id=note[:8],
            content="Wifi password: rose77.",
            request_heartbeat=True,
        ),
        say("Updated."),
        call("archival_memory_delete", passage_id=other[:8], request_heartbeat=True),
        say("Deleted."),
        call("archival_memory_delete", passage_id=document[:8], request_heartbeat=True),
        say("I cannot delete that."),
    )
    agent.send("The wifi password changed to rose77.")
    assert mnemo.archival.get(note).text == "Wifi password: rose77."
    agent.send("Forget the parking spot.")
    with pytest.raises(NotFoundError):
        mnemo.archival.get(other)
    agent.send("Delete chapter 1.")
    assert "comes from the document book.txt" in mnemo.recall.recent(3)[1].text
    assert mnemo.archival.get(document).text == "Chapter 1."


def test_after_reading_search_results_a_note_change_waits_for_the_user(mnemo):
    note = mnemo.archival.insert("Dentist on Friday.", origin="model")
    agent = _agent(
        mnemo,
        search("dentist"),
        call(
            "archival_memory_update",
            passage_id=note[:8],
            content="Dentist on Monday.",
            request_heartbeat=True,
        ),
        say("I proposed the change."),
    )
    agent.send("The dentist moved to Monday.")
    (proposal,) = mnemo.proposals.pending()
    assert (proposal.kind, proposal.old_content, proposal.new_content) == (
        "passage",
        "Dentist on Friday.",
        "Dentist on Monday.",
    )
    assert mnemo.archival.get(note).text == "Dentist on Friday."
    mnemo.proposals.approve(proposal.id)
    assert mnemo.archival.get(note).text == "Dentist on Monday."


def test_entities_named_in_a_message_are_found_by_name_alias_and_first_person(mnemo):
    knowledge = mnemo.knowledge
    knowledge.add("user", "lives_in", "Porto")
    knowledge.add("Ana Sousa", "works_at", "Lisbon City Council")
    knowledge.add_alias("Ana Sousa", "my sister")
    found = knowledge.mentioned(
        "When is my sister's birthday, and does Lisbon City Council pay well?"
    )
    assert [entity.name for entity in found] == ["Ana Sousa", "Lisbon City Council", "User"]
    assert [e.name for e in knowledge.mentioned("Where do I live?")] == ["User"]
    assert knowledge.mentioned("What is the weather like?") == []


# -- learning from the user's messages (the assisted memory step) ------------------------------


def test_a_conversation_over_several_sessions_keeps_current_facts_history_and_provenance(mnemo):
    """Porto then Lyon, Acme then Globex, a sister's birthday: over three conversations."""
    model = ScriptedModel(parameter_count=135_000_000)  # the assisted mode

    def say_in(conversation: str, text: str) -> Recorder:
        model.enqueue(["Noted."])
        events = Recorder()
        Agent(mnemo, model, conversation_id=conversation).send(text, on_event=events)
        return events

    def message_in(conversation: str) -> int:
        return next(h.id for h in mnemo.recall.recent(20, conversation) if h.role == "user")

    say_in("monday", "I live in Porto and I work at Acme.")
    say_in("tuesday", "My sister Ana's birthday is on the 12th of May.")
    events = say_in("friday", "I moved to Lyon last month. I just started a new job at Globex.")
    move = mnemo.recall.get(message_in("friday"))

    # She says herself that they changed: the new facts replace the old ones at once (asking
    # her to approve what she has just said would be asking twice), and the human block is
    # offered the new lines for her to approve.
    proposals = [event.proposal for event in events.of(ProposalCreated)]
    assert all(p.kind == "core" and p.cause_ref == str(move.id) for p in proposals)
    assert [p.new_content for p in proposals] == [
        "You moved to Lyon.",  # no "last month" to go stale in the block
        "You work at Globex.",  # the waiting Acme line, with the new value
    ]
    current = {(f.predicate, f.object, f.source_ref) for f in mnemo.knowledge.facts("user")}
    assert current == {
        ("lives_in", "Lyon", str(move.id)),
        ("works_at", "Globex", str(move.id)),
        ("sister", "Ana", str(message_in("tuesday"))),
    }
    old = {f.object: f for f in mnemo.knowledge.history("user") if f.status == "superseded"}
    assert set(old) == {"Porto", "Acme"}
    assert {f.source_ref for f in old.values()} == {str(message_in("monday"))}
    assert f"{old['Porto'].valid_to:%Y-%m-%d}" == _last_month()
    (birthday,) = mnemo.knowledge.facts("Ana", "birthday")
    assert birthday.object == "12 May" and not birthday.object_is_entity

    model.enqueue(["You live in Lyon."])
    Agent(mnemo, model, conversation_id="later").send("Where do I live?")
    note = model.prompts[-1].messages[-1].content
    assert "- You live in Lyon." in note
    assert "Porto" not in note and note.endswith(assisted.ANSWER_FROM_FACTS)


def test_a_pasted_text_that_states_a_fact_waits_for_the_user(mnemo):
    mnemo.knowledge.add("user", "lives_in", "Porto")
    model = ScriptedModel(parameter_count=135_000_000)
    model.enqueue(["Thanks."])
    pasted = "Forwarded note. I live in Atlantis. " + "Lorem ipsum dolor sit amet. " * 90
    Agent(mnemo, model).send(pasted)
    (proposal,) = mnemo.proposals.pending()
    assert proposal.kind == "fact" and not proposal.trusted
    assert proposal.describe() == "You live in Atlantis, instead of: you live in Porto"
    assert [f.object for f in mnemo.knowledge.facts("user")] == ["Porto"]


def _last_month() -> str:
    today = date.today()
    index = today.year * 12 + today.month - 2
    return date(index // 12, index % 12 + 1, 1).isoformat()


def _last_month_name() -> str:
    return f"{date.fromisoformat(_last_month()):%B %Y}"


# -- facts from a document, on request ---------------------------------------------------------


def test_facts_from_a_document_wait_for_the_user_and_a_contradiction_shows_both(mnemo, tmp_path):
    mnemo.knowledge.add("Ana", "lives_in", "Lisbon")
    letter = tmp_path / "letter.md"
    letter.write_text(
        "# News\n\nI moved to Paris.\n\nAna lives in Porto now. Rui works at Acme Labs.\n\n"
        "Ana lives in Porto now.\n",
        encoding="utf-8",
    )
    proposals, more = propose_facts_from(mnemo, letter)
    assert more == 0
    assert sorted(p.describe() for p in proposals) == [
        "Ana lives in Porto, instead of: Ana lives in Lisbon",
        "remember that Rui works at Acme Labs",
    ]  # the author's "I moved to Paris" is not the user's move
    assert {p.untrusted_reason for p in proposals} == {"taken from the document letter.md"}
    assert all(p.payload["source_kind"] == "document" for p in proposals)
    assert [f.object for f in mnemo.knowledge.facts("Ana")] == ["Lisbon"]  # nothing yet
    assert mnemo.knowledge.resolve("Rui") is None
    assert propose_facts_from(mnemo, letter) == ([], 0)  # asked again: nothing twice

    move = next(p for p in proposals if p.label == "Ana")
    mnemo.proposals.approve(move.id)
    (fact,) = mnemo.knowledge.facts("Ana")
    assert (fact.object, fact.asserted_by, fact.source_kind, fact.source_ref) == (
        "Porto",
        "document",
        "document",
        "letter.md, News",
    )


def test_mnemo_kg_extract_lists_what_waits(tmp_path, capsys, profile_dir):
    note = tmp_path / "note.txt"
    note.write_text("Rui works at Acme Labs.", encoding="utf-8")
    assert main(["--profile", str(profile_dir), "kg", "extract", str(note)]) == 0
    out = capsys.readouterr().out
    assert "Proposal 1: remember that Rui works at Acme Labs" in out
    assert "mnemo memory approve ID" in out
    assert main(["--profile", str(profile_dir), "kg", "extract", str(note)]) == 0
    assert "No new facts" in capsys.readouterr().out


def test_mnemo_kg_merge_and_retract(profile_dir, capsys):
    def run(*args: str) -> str:
        assert main(["--profile", str(profile_dir), "kg", *args]) == 0
        return capsys.readouterr().out

    run("add", "Ana Sousa", "works_at", "Acme")
    run("add", "Ana Souza", "birthday", "12 May")
    assert "Merged 'Ana Souza' into Ana Sousa [other] (also: Ana Souza)." in run(
        "merge", "Ana Sousa", "Ana Souza"
    )
    assert "Retracted: Ana Sousa — works_at — Acme (#1)" in run("retract", "1")
    assert "#1" not in run("show", "Ana Souza") and "12 May" in run("show", "Ana Souza")


def test_a_move_said_twice_is_kept_and_proposed_once(mnemo):
    mnemo.knowledge.add("user", "lives_in", "Porto")
    model = ScriptedModel(parameter_count=135_000_000)
    agent = Agent(mnemo, model)
    for reply in ("Noted, Lyon.", "Yes, you said so: you moved."):
        model.enqueue([reply])
        agent.send("I moved to Lyon last month.")
    (proposal,) = mnemo.proposals.pending()
    assert proposal.describe() == "add to human: 'You moved to Lyon.'"
    assert [f.object for f in mnemo.knowledge.facts("user", "lives_in")] == ["Lyon"]


def test_a_contradiction_said_without_a_change_waits_for_the_user(mnemo):
    mnemo.knowledge.add("user", "lives_in", "Porto")
    model = ScriptedModel(parameter_count=135_000_000)
    model.enqueue(["Noted."])
    Agent(mnemo, model).send("I live in Lyon.")
    (fact,) = [p for p in mnemo.proposals.pending() if p.kind == "fact"]
    assert fact.describe() == "You live in Lyon, instead of: you live in Porto"
    assert [f.object for f in mnemo.knowledge.facts("user", "lives_in")] == ["Porto"]


def test_the_users_own_name_is_another_word_for_them_not_a_second_person(mnemo):
    model = ScriptedModel(parameter_count=135_000_000)
    model.enqueue(["Nice to meet you, Priya."])
    Agent(mnemo, model).send("Hi! My name is Priya.")
    assert [entity.name for entity, _count in mnemo.knowledge.entities()] == ["User"]
    assert [e.name for e in mnemo.knowledge.mentioned("What does Priya like?")] == ["User"]
    (fact,) = mnemo.knowledge.facts("Priya")
    assert fact.to_person() == "Your name is Priya"  # the window says "You", never "User"


@pytest.mark.parametrize(
    ("said", "fact"),
    [
        ("My flat is in Krakow.", ("User", "lives_in", "Krakow")),
        ("Home for me is Porto these days.", ("User", "lives_in", "Porto")),
        ("I have a cat called Miso.", ("User", "cat", "Miso")),
        ("We lost Tofu, so I adopted a dog named Juno.", ("User", "dog", "Juno")),
        ("Ines, my sister, is in Bologna.", ("User", "sister", "Ines")),
        ("Dara and I are together now.", ("User", "partner", "Dara")),
        ("I've started seeing someone, Alex.", ("User", "partner", "Alex")),
        ("Meet Olive, my new cat.", ("User", "cat", "Olive")),
        ("At Wingtip it was busy today; being a nurse is busy.", ("User", "job_title", "nurse")),
        ("I prefer cats over dogs.", ("User", "prefers", "cats over dogs")),
        ("Dogs is my thing, not cats.", ("User", "prefers", "dogs over cats")),
        ("Honestly I'll always pick jazz over techno.", ("User", "prefers", "jazz over techno")),
        ("Funny, I've gone off cats; these days I prefer dogs.", ("User", "prefers", "dogs")),
        ("I prefer to walk to work.", None),  # no taste: a way of doing
        ("I prefer it when you are brief.", None),
        ("Sam and I went to the cinema.", None),
        ("Thanks, my friend, that helps.", None),  # a greeting, not a friend's name
        ("Yeah, my mom really loved flowers.", None),
        ("My house is in need of repair.", None),
    ],
)
def test_everyday_ways_of_saying_home_and_the_people_and_pets_of_a_life(said, fact):
    """Ways people say these that months of use showed were missed (tests/benchmarks/months.py):
    the note was kept but knowledge memory never learned the fact, so a later move or a
    second note of it could not be recognised."""
    from datetime import date

    from engine.memory.extract import facts_in

    found = [c.triple for c in facts_in(said, date(2026, 1, 5))]
    assert found == ([fact] if fact else [])


@pytest.mark.parametrize(
    ("said", "facts"),
    [
        ("We relocated to Ghent over the summer.", [("User", "lives_in", "Ghent")]),
        ("We call Utrecht home now.", [("User", "lives_in", "Utrecht")]),
        ("Our new flat in Leeds has a balcony.", [("User", "lives_in", "Leeds")]),
        ("The bakeries in Graz are the best, where we live.", [("User", "lives_in", "Graz")]),
        ("I rent a flat in Brno.", [("User", "lives_in", "Brno")]),
        ("I was hired by Northwind last month.", [("User", "works_at", "Northwind")]),
        (
            "I'm employed at Litware as a pharmacist.",
            [("User", "works_at", "Litware"), ("User", "job_title", "pharmacist")],
        ),
        (
            "I joined Proseware as an editor.",
            [("User", "works_at", "Proseware"), ("User", "job_title", "editor")],
        ),
        (
            "My brother Tom has a flat in Lyon.",
            [("User", "brother", "Tom"), ("Tom", "lives_in", "Lyon")],
        ),
        ("Juno, our puppy, sleeps all day.", [("User", "puppy", "Juno")]),
        ("We rescued a kitten named Pip.", [("User", "kitten", "Pip")]),
        (
            "I'm way more into swimming than running.",
            [("User", "prefers", "swimming over running")],
        ),
        ("I enjoy running far more than swimming.", [("User", "prefers", "running over swimming")]),
        ("Jazz beats techno any day.", [("User", "prefers", "jazz over techno")]),
        ("I'm a cat person, not a dog person.", [("User", "prefers", "cat over dog")]),
        ("I've been dating Noor since May.", [("User", "partner", "Noor")]),
        ("I've left my old job; I'm at Adatum now.", [("User", "works_at", "Adatum")]),
        ("My employer is Fourth Coffee.", [("User", "works_at", "Fourth Coffee")]),
        ("Fourth Coffee is my new employer.", [("User", "works_at", "Fourth Coffee")]),
        ("My company is great.", []),
        ("After work I'm at Tesco.", []),  # where they shop, not where they work
        ("I'm a guest at the Hilton.", []),  # a guest is no job
        ("We went to Lisbon.", []),  # a trip is no home
        ("I used to work as a nurse.", []),
        ("Ana is working as a nurse.", []),  # her title, not the person's
    ],
)
def test_facts_are_read_by_the_shape_of_the_sentence_not_a_list_of_phrasings(said, facts):
    """Months of a life in other words (``months.py --pool held_out``) showed facts read only
    in the phrasings the rules were written for. These say each fact in words of neither pool:
    the verb of a move or of work, a pet of any kind, a taste by comparison, a name set off by
    commas."""
    from datetime import date

    from engine.memory.extract import facts_in

    assert [c.triple for c in facts_in(said, date(2026, 3, 3))] == facts


@pytest.mark.parametrize(
    ("said", "lasting"),
    [
        ("I sometimes imagine living in Kyoto.", False),
        ("Wouldn't it be great to have a dog?", False),
        ("If only we lived by the sea.", False),
        ("Give me a minute.", False),
        ("Give me tea over coffee any day.", True),  # a taste, not a request
        ("Signed the contract, I'm with Contoso from today.", True),
    ],
)
def test_musings_and_requests_are_not_kept_but_news_said_today_is(said, lasting):
    from engine.agent.assisted_rules import lasting as is_lasting

    assert is_lasting(said) is lasting


@pytest.mark.parametrize(
    ("said", "ended"),
    [
        ("We had to put down our dog Rex.", ["Rex"]),
        ("I had to say goodbye to Pip this morning.", ["Pip"]),
        ("I had to say goodbye to Sam at the station.", []),  # a parting, not a loss
    ],
)
def test_a_loss_said_as_a_goodbye_ends_the_pet(said, ended):
    from engine.agent.assisted_rules import ended_names

    assert ended_names(said) == ended


@pytest.mark.parametrize(
    ("said", "triples"),
    [
        ("My name is Joaquín.", [("User", "name", "Joaquín")]),
        ("Call me Søren.", [("User", "name", "Søren")]),
        (
            "My sister Ólöf lives in Malmö.",
            [("User", "sister", "Ólöf"), ("Ólöf", "lives_in", "Malmö")],
        ),
        ("My colleague Łukasz works at Zürich Re.", [("Łukasz", "works_at", "Zürich Re")]),
        (
            "My sister 美咲 lives in Kyoto.",
            [("User", "sister", "美咲"), ("美咲", "lives_in", "Kyoto")],
        ),
        (
            "My partner Zoë moved to Kraków.",
            [("User", "partner", "Zoë"), ("Zoë", "lives_in", "Kraków")],
        ),
        # a possessive is no part of the name, and the sentence's full stop none of the date
        (
            "My sister Ana's birthday is 3 May.",
            [("Ana", "birthday", "3 May"), ("User", "sister", "Ana")],
        ),
        ("My name is Anne-Marie O'Neill.", [("User", "name", "Anne-Marie O'Neill")]),
    ],
)
def test_names_keep_every_letter_in_any_script(said, triples):
    """ "Joaquín" was kept, answered and listed as "Joaqu"; "Ólöf" was no name at all."""
    from engine.memory.extract import facts_in

    assert [fact.triple for fact in facts_in(said, date(2026, 12, 7))] == triples


def test_a_loss_of_a_pet_with_an_accented_name_ends_it_whole():
    from engine.agent.assisted_rules import ended_names

    assert ended_names("We lost Zoë today.") == ["Zoë"]
    assert ended_names("Chloé passed away last night.") == ["Chloé"]


def test_a_taste_turned_round_replaces_the_old_one_and_another_taste_stands_beside_it(mnemo):
    knowledge = mnemo.knowledge
    knowledge.add("user", "prefers", "cats over dogs")
    knowledge.add("user", "prefers", "tea over coffee")
    assert isinstance(knowledge.add("user", "prefers", "dogs"), Conflict)  # the pair turned
    knowledge.add("user", "prefers", "dogs", supersede=True)
    assert sorted(f.object for f in knowledge.facts("user", "prefers")) == [
        "dogs",
        "tea over coffee",
    ]
    assert knowledge.holds("user", "prefers", "dogs over cats")  # the same taste, said fuller
    assert not isinstance(knowledge.add("user", "prefers", "jazz over techno"), Conflict)
    (old,) = [f for f in knowledge.history("user") if f.status == "superseded"]
    assert old.object == "cats over dogs" and old.to_person() == "You prefer cats over dogs"


def test_a_title_told_with_an_employer_ends_when_the_employer_changes(mnemo):
    """ "I'm a data analyst with Tailspin": the title is the role at Tailspin, so a new job at
    Wingtip ends it (kept in the history); a title told on its own outlives the change."""
    knowledge = mnemo.knowledge
    told = {"source_kind": "message", "source_ref": "1"}
    knowledge.add("user", "works_at", "Tailspin", **told)
    knowledge.add("user", "job_title", "data analyst", **told)
    knowledge.add(
        "user", "works_at", "Wingtip", supersede=True, source_kind="message", source_ref="2"
    )
    assert not list(knowledge.facts("user", "job_title"))
    (ended,) = [f for f in knowledge.history("user") if f.predicate == "job_title"]
    assert ended.status == "ended" and ended.object == "data analyst"
    knowledge.add("user", "job_title", "nurse", source_kind="message", source_ref="3")
    knowledge.add(
        "user", "works_at", "Contoso", supersede=True, source_kind="message", source_ref="4"
    )
    assert [f.object for f in knowledge.facts("user", "job_title")] == ["nurse"]


@pytest.mark.parametrize(
    ("said", "on", "began"),
    [
        ("I relocated to Bilbao last weekend.", date(2026, 3, 7), "2026-02-28"),  # a Saturday
        ("I relocated to Bilbao last weekend.", date(2026, 3, 8), "2026-02-28"),  # a Sunday
        ("I relocated to Bilbao last weekend.", date(2026, 3, 4), "2026-02-28"),  # a Wednesday
        ("Clover passed away last night.", date(2026, 4, 17), "2026-04-16"),
        ("I moved here last week.", date(2026, 4, 17), "2026-04-10"),
    ],
)
def test_the_day_a_change_began_is_counted_back_from_the_day_it_was_said(said, on, began):
    """ "Last weekend" is the weekend's Saturday: read as "last week", a move told on a
    Wednesday was placed a week back."""
    from engine.memory.extract import change_date

    assert change_date(said, on) == began
