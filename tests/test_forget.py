"""Forget means forget: a text leaves every store and every file of the profile, and nothing
brings it back (a re-ingest, an older export, a restored snapshot, an extraction)."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import shutil
import threading
import time
import unicodedata
import zipfile
from pathlib import Path

import pytest

from engine import Mnemo, forget, health
from engine.cli import main
from engine.cli.chat import chat
from engine.errors import InputError
from engine.exchange import import_file
from engine.exchange.archive import export_archive
from engine.ingest.ingestor import Ingestor
from engine.llm import ScriptedModel
from engine.profile import log_to_profile

PIN = "zebra-7741-quartz"
PASSPORT = "QX-55123-LM"
SISTER = "Marguerite"


def held_in(folder: Path, *needles: str) -> list[str]:
    """Every file under ``folder`` holding any of ``needles`` as bytes (``grep -rla``)."""
    found = []
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if any(needle.encode() in data for needle in needles):
                found.append(str(path.relative_to(folder)))
    return found


def a_day_of_use(mnemo: Mnemo, documents: Path) -> None:
    """Conversations, a document, notes, facts, core memory, a proposal and a snapshot."""
    documents.mkdir(exist_ok=True)
    (documents / "bank.md").write_text(f"# Bank\n\nThe card PIN is {PIN}.\n", encoding="utf-8")
    Ingestor(mnemo).ingest_file(documents / "bank.md")
    mnemo.archival.insert(f"My bank PIN is {PIN}.")
    for said in (
        f"My passport number is {PASSPORT}, please remember it.",
        f"My sister {SISTER} lives in Lyon.",
        "I painted the garden shed green.",
    ):
        mnemo.recall.add("user", said)
        mnemo.recall.add("assistant", f"Noted: {said}")
    mnemo.core.append("human", f"Passport {PASSPORT}. Sister {SISTER}.")
    mnemo.knowledge.add("user", "sister", SISTER)
    mnemo.knowledge.add(SISTER, "lives_in", "Lyon")
    mnemo.knowledge.add("user", "passport", PASSPORT, literal=True)
    with mnemo.database.begin() as connection:
        connection.exec_driver_sql(
            "INSERT INTO agent_state (conversation_id, summary, updated_at) "
            f"VALUES ('default', 'The user told their PIN {PIN}.', 0)"
        )
    mnemo.snapshots.create("after a day")
    logging.getLogger("mnemo.test").warning("searched for %s", PASSPORT)  # a log holding it
    mnemo.wait_for_background_work()


@pytest.fixture
def used(tmp_path, embedder):
    mnemo = Mnemo.open(tmp_path / "profile", embedder=embedder)
    log_to_profile(mnemo.profile)
    a_day_of_use(mnemo, tmp_path / "documents")
    export_archive(mnemo, tmp_path / "before.mnemo")
    yield mnemo
    mnemo.close()
    for handler in list(logging.getLogger("mnemo").handlers):
        if isinstance(handler, logging.FileHandler):
            logging.getLogger("mnemo").removeHandler(handler)
            handler.close()


def test_three_things_forgotten_leave_no_byte_in_the_profile_folder(used, tmp_path):
    root = used.profile.root
    assert held_in(root, PIN) and held_in(root, PASSPORT) and held_in(root, SISTER)
    for plan in (
        forget.plan_text(used, PIN.replace("-", " ").upper()),  # a close variant finds it
        forget.plan_text(used, PASSPORT),
        forget.plan_entity(used, SISTER),
    ):
        kinds = plan.by_kind()
        assert kinds and "snapshot" in kinds  # the day's snapshot holds each
        forget.forget(used, plan)
    used.wait_for_background_work()
    assert held_in(root, PIN, PASSPORT, SISTER) == []
    assert held_in(root, "7741", "55123") == []  # not even a part of them
    # What was around them stays, and the rest of memory works.
    texts = [hit.text for hit in used.recall.recent(10)]
    assert f"My passport number is {forget.forgotten_marker()}, please remember it." in texts
    assert used.recall.search("garden shed")[0].text == "I painted the garden shed green."
    assert used.knowledge.resolve(SISTER) is None
    assert "[forgotten on" in used.core.get("human")
    history = used.core.history("human")
    assert all(PASSPORT not in (v.new_value or "") for v in history)
    assert [stone.status for stone in used.tombstones.all()] == ["done"] * 3
    assert all(PIN not in stone.what for stone in used.tombstones.all())
    export_archive(used, tmp_path / "after.mnemo")  # an export made after holds none of it
    assert archive_holds(tmp_path / "before.mnemo", PIN, PASSPORT, SISTER)
    assert not archive_holds(tmp_path / "after.mnemo", PIN, PASSPORT, SISTER)


def test_forgetting_removes_the_models_kept_prompt_states(used, tmp_path, monkeypatch):
    """A local model keeps its evaluated prompts (core memory and conversations, as tokens) in
    the cache folder between processes; a forget removes every one, and any being written."""
    import engine.profile

    monkeypatch.setattr(engine.profile, "cache_folder", lambda: tmp_path)
    states = tmp_path / "prompt-states"
    states.mkdir()
    (states / "0123.state").write_bytes(PASSPORT.encode() * 10)
    (states / ".4567.partial").write_bytes(b"being written")
    forget.forget(used, forget.plan_text(used, PASSPORT))
    assert [path.name for path in states.iterdir()] == ["forgotten"]  # when, for running models


def archive_holds(path: Path, *needles: str) -> bool:
    with zipfile.ZipFile(path) as archive:
        return any(
            needle.encode() in archive.read(name)
            for name in archive.namelist()
            for needle in needles
        )


def test_nothing_brings_a_forgotten_text_back(used, tmp_path):
    forget.forget(used, forget.plan_text(used, PIN))
    forget.forget(used, forget.plan_text(used, PASSPORT))
    # a re-ingested file (changed since, so read again)
    bank = tmp_path / "documents" / "bank.md"
    bank.write_text(f"# Bank\n\nThe card PIN is {PIN}. Call the branch.\n", encoding="utf-8")
    Ingestor(used).ingest_file(bank)
    # the older export, merged into the profile in use
    report = import_file(used, tmp_path / "before.mnemo")
    assert any("forgotten again" in note for note in report.notes)
    # a fact extracted again, as from an older message
    with pytest.raises(InputError, match="asked Mnemo to forget"):
        used.knowledge.add("user", "passport", PASSPORT, literal=True)
    used.wait_for_background_work()
    assert held_in(used.profile.root, PIN, PASSPORT) == []


def test_a_restored_snapshot_that_held_it_is_forgotten_again(used, tmp_path):
    (snapshot,) = used.snapshots.all()
    kept = tmp_path / "kept-aside"
    shutil.copytree(used.profile.root / "snapshots" / snapshot.id, kept)  # as a backup tool
    result = forget.forget(used, forget.plan_text(used, PASSPORT))
    assert result.snapshots_rewritten == [snapshot.id]  # it held it: kept, without it
    assert held_in(used.profile.root / "snapshots", PASSPORT) == []
    shutil.rmtree(used.profile.root / "snapshots" / snapshot.id)
    shutil.copytree(kept, used.profile.root / "snapshots" / snapshot.id)  # the backup's copy
    used.snapshots.restore(snapshot.id, keep_current=False)
    used.wait_for_background_work()
    assert all(PASSPORT not in hit.text for hit in used.recall.recent(20))
    assert PASSPORT not in used.core.get("human")


def test_a_forget_cut_short_finishes_at_the_next_open(tmp_path, embedder):
    with Mnemo.open(tmp_path / "p", embedder=embedder) as mnemo:
        mnemo.recall.add("user", f"My passport number is {PASSPORT}.")
        mnemo.archival.insert(f"Passport: {PASSPORT}")
        # killed right after the tombstone was written, before anything was removed
        mnemo.tombstones.add("words", PASSPORT.split("-"), "3 words")
    with Mnemo.open(tmp_path / "p", embedder=embedder) as mnemo:
        assert [s.status for s in mnemo.tombstones.all()] == ["done"]
        assert PASSPORT not in mnemo.recall.recent(1)[0].text
        assert mnemo.archival.recent(1)[0].text == "Passport: [forgotten]"
        mnemo.wait_for_background_work()
    assert held_in(tmp_path / "p", PASSPORT) == []


def test_a_common_or_absent_text_is_not_forgotten(used):
    for common in ("the", "it", "a b"):
        with pytest.raises(InputError, match="too common"):
            forget.plan_text(used, common)
    assert forget.plan_text(used, "words nobody ever said").empty
    with pytest.raises(InputError, match="nothing to forget|holds nothing"):
        forget.forget(used, forget.plan_text(used, "words nobody ever said"))


def test_one_message_forgotten_whole_does_not_return_with_an_older_export(used, tmp_path):
    said = "I painted the garden shed green."
    message = next(h for h in used.recall.recent(10) if h.text == said)
    forget.forget(used, forget.plan_item(used, "message", str(message.id)))
    assert all(h.text != said for h in used.recall.recent(20))
    assert any(h.text == f"Noted: {said}" for h in used.recall.recent(20))  # only that one
    import_file(used, tmp_path / "before.mnemo")
    assert all(h.text != said for h in used.recall.recent(40))


def test_mnemo_forget_previews_asks_and_lists(tmp_path, capsys, monkeypatch):
    profile = ["--profile", str(tmp_path / "p")]
    assert main([*profile, "archival", "insert", f"My bank PIN is {PIN}."]) == 0
    assert main([*profile, "forget", PIN, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "1 archival passage" in out and f"My bank PIN is {PIN}." in out
    monkeypatch.setattr("builtins.input", lambda _prompt: "n")
    assert main([*profile, "forget", PIN]) == 1
    assert "cannot be undone" in capsys.readouterr().out
    assert main([*profile, "forget", PIN, "--yes"]) == 0
    assert "Forgotten: the text" in capsys.readouterr().out
    assert main([*profile, "forget", "--list"]) == 0
    listed = capsys.readouterr().out
    assert "3 words" in listed and PIN not in listed
    assert held_in(tmp_path / "p", PIN) == []
    stones = json.loads((tmp_path / "p" / "forgotten.json").read_text())
    assert PIN not in json.dumps(stones)


def test_forget_my_passport_number_in_the_chat_is_a_preview_the_person_confirms(used):
    """The request never reaches the model, and it forgets nothing on its own: the person
    reads where the sentences are and says yes."""
    model = ScriptedModel(parameter_count=135_000_000)  # the bundled model's mode
    answers = iter(["Suggest a name for a cat.", "forget my passport number", "n",
                    "forget my passport number", "yes"])  # fmt: skip

    def ask(_prompt: str) -> str:
        said = next(answers, None)
        if said is None:
            raise EOFError  # Ctrl-D: the chat ends
        return said

    replies = io.StringIO()
    model.enqueue(["How about Biscuit?"])
    chat(used, model, ask=ask, out=replies, err=replies)
    shown = replies.getvalue()
    assert shown.count("To forget what you said about 'passport number'") == 2
    assert f"My passport number is {PASSPORT}, please remember it." in shown  # the preview
    assert "Nothing was forgotten." in shown and "Forgotten: what you said" in shown
    assert len(model.prompts) == 1  # only the question; the two requests never reached it
    texts = [hit.text for hit in used.recall.recent(20)]
    assert all(PASSPORT not in said for said in texts)
    assert used.knowledge.facts("user", "passport").total == 0
    used.wait_for_background_work()
    assert held_in(used.profile.root, PASSPORT) == []


def test_what_a_chat_message_asks_to_forget():
    assert forget.requested("forget my passport number") == "passport number"
    assert forget.requested("Please forget about Jordan.") == "Jordan"
    assert forget.requested("delete my PIN from your memory") == "PIN"
    for ordinary in ("I forget things easily", "forget it", "Forget that!", "How do I forget?"):
        assert forget.requested(ordinary) is None, ordinary


def _topic_words(text: str | None) -> list[str]:
    return [w for w in re.findall(r"[\w']+", (text or "").lower()) if w not in ("my", "the")]


def test_everyday_ways_of_asking_to_forget_in_the_chat_are_read_as_requests():
    """ "Hey, please forget that I work at …" was kept as a fact, a note and a proposal. The
    ways of asking are data (resources/language/forget_requests.txt); the wordings the reader
    was shaped on (tests/data/forget_requests.json, "tuned") are read whole, the messages that
    only look like a request are not taken for one. The held-out wordings are measured in
    tests/benchmarks/forget_requests.py, never tuned on."""
    pools = json.loads((Path(__file__).parent / "data" / "forget_requests.json").read_text())
    missed = [
        (message, forget.requested(message))
        for message, what in pools["tuned"]
        if _topic_words(forget.requested(message)) != _topic_words(what)
    ]
    assert missed == []
    assert [m for m in pools["not_requests"] if forget.requested(m) is not None] == []


def test_mnemo_check_finds_forgotten_text_still_on_disk_and_repair_forgets_it(
    used, tmp_path, capsys
):
    forget.forget(used, forget.plan_text(used, PIN))
    assert health.check(used, forgotten=True) == []
    # A copy the forget could not know of: a file put back into the profile by hand.
    (used.profile.root / "notes-copy.txt").write_text(f"PIN: {PIN}\n", encoding="utf-8")
    (problem,) = health.check(used, forgotten=True)
    assert problem.check == "forgotten text" and "notes-copy.txt" in problem.sentence
    assert PIN not in problem.sentence
    (used.profile.root / "notes-copy.txt").unlink()
    used.recall.add("user", f"The PIN was {PIN}")  # through the stores: the tombstone holds
    assert PIN not in used.recall.recent(1)[0].text
    with used.database.begin() as connection:  # past them (another program, a bug): repaired
        connection.exec_driver_sql(
            f"INSERT INTO message (role, text, created_at) VALUES ('user', 'PIN {PIN}', 0)"
        )
    (problem,) = health.check(used, forgotten=True)
    assert "mnemo.sqlite" in problem.sentence  # the database or its WAL
    assert main(["--profile", str(used.profile.root), "check", "--repair"]) == 0
    assert "Forgot again what was still held" in capsys.readouterr().out
    used.wait_for_background_work()
    assert held_in(used.profile.root, PIN) == []


def test_forget_on_postgresql_removes_the_rows_and_says_what_the_server_keeps(
    tmp_path, embedder, database_url
):
    with Mnemo.open(tmp_path / "p", embedder=embedder, database_url=database_url) as mnemo:
        mnemo.recall.add("user", f"My passport number is {PASSPORT}.")
        mnemo.core.append("human", f"Passport {PASSPORT}.")
        result = forget.forget(mnemo, forget.plan_text(mnemo, PASSPORT))
        assert result.forgotten == {"message": 1, "core memory block": 1, "core memory version": 1}
        assert PASSPORT not in mnemo.recall.recent(1)[0].text
        assert PASSPORT not in mnemo.core.get("human")
        on_server = database_url is not None
        assert any("PostgreSQL" in note for note in result.notes) == on_server


def test_a_forget_while_the_chat_writes_loses_nothing_else(used):
    written: list[int] = []
    failed: list[BaseException] = []
    stop = threading.Event()

    def chat() -> None:
        try:
            while not stop.is_set():
                written.append(used.recall.add("user", f"Message {len(written)} about the shed."))
        except BaseException as error:  # the test fails if the chat could not write
            failed.append(error)

    writer = threading.Thread(target=chat)
    writer.start()
    try:
        forget.forget(used, forget.plan_text(used, PIN))
    finally:
        stop.set()
        writer.join()
    assert not failed
    assert written and all(used.recall.get(message_id) for message_id in written)
    assert all(PIN not in hit.text for hit in used.recall.recent(len(written) + 20))


def test_a_topic_forgets_its_value_not_a_year_in_the_same_sentence(used):
    used.recall.add("user", "(2 December 2026, from a note) My passport number is QX-55123-LM.")
    used.recall.add("user", "We moved here in 2026 and I renewed my passport.")
    plan = forget.plan_topic(used, "passport number")
    forget.forget(used, plan)
    texts = [hit.text for hit in used.recall.recent(40)]
    assert "We moved here in 2026 and I renewed my passport." in texts
    assert all(PASSPORT not in said for said in texts)
    assert all("[forgotten on [forgotten" not in said for said in texts)


# -- forget's reach, round two: every column and file a person's text can be in ----------------

BAKERY = "Lindqvist Bakery"


def test_a_forget_reaches_tags_headings_paths_proposals_hand_offs_and_uploads(mnemo, tmp_path):
    """Found by a hostile session: a passage's tags, a document's heading and path, a
    proposal's label, a crashed hand-off and an upload kept the text after a forget."""
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "shifts.md").write_text(  # its heading holds it
        "# Lindqvist Bakery shifts\n\nEarly shifts start at five; the ovens warm by six.\n",
        encoding="utf-8",
    )
    folder = tmp_path / "lindqvist-bakery"  # its path holds it: it goes whole
    folder.mkdir()
    (folder / "contract.md").write_text("Pay is 14 euros an hour.", encoding="utf-8")
    Ingestor(mnemo).ingest([tmp_path / "work", folder])
    mnemo.archival.insert("Bring the rye starter on Mondays.", tags=["lindqvist_bakery"])
    with mnemo.recall.transaction() as transaction:
        mnemo.proposals.create_fact_in(
            transaction.session,
            conversation_id="default",
            subject=BAKERY,
            predicate="employs",
            obj="the user",
        )
    root = mnemo.profile.root
    (root / "handoff").mkdir()
    (root / "handoff" / "0a1b.ask").write_text(
        json.dumps({"text": f"Do I still work at {BAKERY}?"}), encoding="utf-8"
    )
    (root / "uploads").mkdir()
    (root / "uploads" / "lindqvist-bakery-contract.md").write_text("Pay: 14 euros an hour.")
    (root / "uploads" / "letter.md").write_text(f"Dear {BAKERY}, I resign.", encoding="utf-8")
    (root / "uploads" / "unrelated.md").write_text("Plant tulips in October.")

    plan = forget.plan_text(mnemo, BAKERY)
    kinds = plan.by_kind()
    assert kinds["archival passage"] == 3  # a heading, a path, a tag
    assert kinds["document"] == 1 and kinds["proposal"] == 1
    assert kinds["hand-off file"] == 1 and kinds["uploaded document"] == 2
    forget.forget(mnemo, plan)
    mnemo.wait_for_background_work()

    assert held_in(root, "indqvist", "INDQVIST") == []  # no byte of it, in any case or form
    assert sorted(path.name for path in (root / "uploads").iterdir()) == ["unrelated.md"]
    passages = mnemo.archival.recent(10)
    assert {p.text for p in passages} >= {"Bring the rye starter on Mondays."}
    assert all("indqvist" not in f"{p.tags} {p.source.path} {p.source.section}" for p in passages)
    assert any("ovens warm by six" in p.text for p in passages)  # the rest is kept
    assert all("14 euros" not in p.text for p in passages)
    assert [row.path for row in Ingestor(mnemo).documents()] == [
        str(tmp_path / "work" / "shifts.md")
    ]
    assert health.check(mnemo) == []  # no passage is left of a document Mnemo does not know
    assert mnemo.archival.search("Lindqvist")[:1] == [] or all(
        "indqvist" not in hit.text.lower() for hit in mnemo.archival.search("Lindqvist")
    )
    # The folder is read again: a file whose path holds the text is not indexed again.
    (result,) = Ingestor(mnemo).ingest([folder]).results
    assert result.outcome == "skipped" and "asked Mnemo to forget" in (result.error or "")
    assert held_in(root, "indqvist") == []


def test_repair_says_only_what_it_did(mnemo, tmp_path, capsys):
    mnemo.archival.insert(f"The alarm code is {PIN}.")
    forget.forget(mnemo, forget.plan_text(mnemo, PIN))
    profile = ["--profile", str(mnemo.profile.root)]
    # A copy no store knows of: repair cannot forget it, and must not say it did.
    (mnemo.profile.root / "notes-copy.txt").write_text(f"code {PIN}\n", encoding="utf-8")
    assert main([*profile, "check", "--repair"]) == 1
    out = capsys.readouterr().out
    assert "Repaired" not in out and "notes-copy.txt" in out
    (mnemo.profile.root / "notes-copy.txt").unlink()
    # A passage's tag written past the stores (another program): repaired, and said.
    mnemo.passage_vectors.upsert(
        [{**mnemo.archival._raw(mnemo.archival.recent(1)[0].id), "tags": [f"pin {PIN}"]}]
    )
    assert main([*profile, "check"]) == 1
    assert main([*profile, "check", "--repair"]) == 0
    out = capsys.readouterr().out
    assert "Repaired: Forgot again what was still held in " in out
    mnemo.wait_for_background_work()
    assert held_in(mnemo.profile.root, PIN) == []


ZOE = "Zoë Ångström"


@pytest.mark.parametrize(
    "written",
    [
        unicodedata.normalize("NFD", ZOE),  # decomposed: "o" + U+0308
        "ＺＯＥ\u0308 ÅＮＧＳＴＲÖＭ",  # full-width letters (and a decomposed Ë)
        "Zo\u200bë Ång\u2060ström",  # zero-width space and word joiner inside the words
        "Zoë Ång\u00adström",  # a soft hyphen
        "zoë_ångström",  # joined by an underscore
        "ZOË -- ÅNGSTRÖM",  # any run of punctuation between them
        # Every other character Unicode lets a renderer leave unseen (Default_Ignorable):
        "Z\u200eoë Ång\u200fström",  # left-to-right and right-to-left marks
        "Zo\u2061ë Å\u2062ng\u2063st\u2064röm",  # invisible operators
        "Zo\u034fë Ångström",  # the combining grapheme joiner
        "Zoë\ufe0f Ångström",  # a variation selector
        "Z\U000e0020oë Ångström",  # a tag space
        "Zoë Å\u3164ngström",  # the Hangul filler
    ],
    ids=[
        "nfd",
        "full-width",
        "zero-width",
        "soft-hyphen",
        "underscore",
        "punctuation",
        "direction-marks",
        "invisible-operators",
        "grapheme-joiner",
        "variation-selector",
        "tag-space",
        "hangul-filler",
    ],
)
def test_one_text_in_any_unicode_form_is_found_forgotten_and_kept_out(mnemo, written):
    """A forget of "Zoë Ångström" finds every way it can be written, and none comes back."""
    mnemo.recall.add("user", f"My tutor is {written}, she teaches cello.")
    plan = forget.plan_text(mnemo, ZOE)
    assert plan.by_kind().get("message") == 1  # in the preview
    forget.forget(mnemo, plan)
    assert mnemo.recall.recent(1)[0].text.startswith("My tutor is [forgotten on ")
    for form in (ZOE, written, unicodedata.normalize("NFC", written)):
        mnemo.recall.add("user", f"Ask {form} about the recital.")
        assert mnemo.recall.recent(1)[0].text == "Ask [forgotten] about the recital."
        passage = mnemo.archival.insert(f"Lessons with {form}.", tags=[form])
        assert mnemo.archival.get(passage).text == "Lessons with [forgotten]."
        assert mnemo.archival.get(passage).tags == ["[forgotten]"]


def test_a_programs_core_edit_after_a_forget_keeps_the_text_out_even_once_approved(mnemo):
    from engine.server.mcp_server import propose_client_edit

    mnemo.core.append("human", f"Works at the {BAKERY}.")
    forget.forget(mnemo, forget.plan_text(mnemo, BAKERY))
    propose_client_edit(mnemo, "an MCP program", "human", f"Bakes at {BAKERY} on Saturdays.", None)
    (proposal,) = mnemo.proposals.pending()
    assert "Lindqvist" not in f"{proposal.new_content} {proposal.describe()}"
    mnemo.proposals.approve(proposal.id)
    assert "Lindqvist" not in mnemo.core.get("human")
    mnemo.core.set("human", f"{BAKERY} fan.")  # and any other write of the block
    assert mnemo.core.get("human") == "[forgotten] fan."
    mnemo.wait_for_background_work()
    assert held_in(mnemo.profile.root, "Lindqvist") == []


def test_a_lost_or_replaced_tombstone_key_is_said(mnemo, capsys):
    mnemo.recall.add("user", f"My PIN is {PIN}.")
    forget.forget(mnemo, forget.plan_text(mnemo, PIN))
    assert health.check(mnemo) == []
    key = mnemo.profile.root / "forgotten.key"
    original = key.read_bytes()
    key.unlink()
    (problem,) = health.check(mnemo)
    assert problem.check == "tombstones" and "forgotten.key is missing" in problem.sentence
    assert main(["--profile", str(mnemo.profile.root), "forget", "--list"]) == 1
    assert "forgotten.key is missing" in capsys.readouterr().err
    key.write_bytes(os.urandom(32))
    (problem,) = health.check(mnemo)
    assert "forgotten.key was replaced" in problem.sentence
    key.write_bytes(original)
    assert health.check(mnemo) == []


def test_a_prompt_state_being_kept_while_a_forget_runs_is_not_kept(tmp_path, monkeypatch):
    """A chat evaluating its prompt (core memory, with the text) when a forget ran wrote the
    state 11 s after it: a state whose step began before the last forget is never kept."""
    import engine.profile
    from engine.llm.base import ChatMessage, Prompt
    from engine.llm.local import LlamaModel

    monkeypatch.setattr(engine.profile, "cache_folder", lambda: tmp_path)
    model = LlamaModel(context_length=2048, seed=7)
    evaluate = model._llama.eval
    forgets = iter([engine.profile.forget_prompt_states])

    def forget_while_evaluating(tokens):
        evaluate(tokens)
        for forget_now in forgets:  # another process forgets, during the first evaluation
            forget_now()

    model._llama.eval = forget_while_evaluating
    lines = f"The PIN is {PIN}. Lives in Lyon, near the river. Walks a lot on Sundays.\n" * 3
    memory = f"### Core memory\n<human>\n{lines}</human>"  # long enough to be kept
    prompt = Prompt("You are Mnemo, an assistant.", [], memory, [ChatMessage("user", "Hello")])
    assert model.step(prompt).text
    model.keep_state()  # as `mnemo chat -m` does after its reply
    assert [path.name for path in (tmp_path / "prompt-states").iterdir()] == ["forgotten"]


def test_a_prompt_read_before_a_forget_is_never_kept_nor_carried_into_later_steps(
    tmp_path, monkeypatch
):
    """A chat that read its prompt (core memory, with the text) just before a forget, and
    stepped on it after, wrote a prompt state 23 s after the forget: what counts is when the
    prompt's memory was read, not when its step began. And the context it evaluated is not
    carried into the next step either."""
    import engine.profile
    from engine.llm.base import ChatMessage, Prompt
    from engine.llm.local import LlamaModel

    monkeypatch.setattr(engine.profile, "cache_folder", lambda: tmp_path)
    model = LlamaModel(context_length=2048, seed=7)
    lines = f"The PIN is {PIN}. Lives in Lyon, near the river. Walks a lot on Sundays.\n" * 3
    memory = f"### Core memory\n<human>\n{lines}</human>"
    read = Prompt("You are Mnemo, an assistant.", [], memory, [ChatMessage("user", "Hello")])
    time.sleep(0.05)
    engine.profile.forget_prompt_states()  # another process forgets, after the read
    time.sleep(0.05)
    assert model.step(read).text
    model.keep_state()
    assert [path.name for path in (tmp_path / "prompt-states").iterdir()] == ["forgotten"]
    clean = Prompt(
        "You are Mnemo, an assistant.",
        [],
        "### Core memory\n<human>\nLives in Lyon.\n</human>",
        [ChatMessage("user", "Hello")],
    )
    assert model.step(clean).text
    assert model._states._asides == []  # the read-before context was not set aside either
    model.keep_state()  # the clean prompt's state may be kept
    kept = sorted(path.suffix for path in (tmp_path / "prompt-states").iterdir())
    assert kept == ["", ".state", ".tokens"]


def test_mnemo_check_finds_a_prompt_state_kept_while_a_forget_ran(used, tmp_path, monkeypatch):
    import os

    import engine.profile

    monkeypatch.setattr(engine.profile, "cache_folder", lambda: tmp_path)
    forget.forget(used, forget.plan_text(used, PASSPORT))
    assert forget.held_on_disk(used) == []
    stale = tmp_path / "prompt-states" / "0123.state"  # written by a model as the forget ran
    stale.write_bytes(b"tokens")
    when = engine.profile.last_forget() - 1
    os.utime(stale, (when, when))
    assert forget.held_on_disk(used) == [
        "the local model's kept prompt states (in the cache folder)"
    ]
    health.repair(used)
    assert not stale.exists() and forget.held_on_disk(used) == []


def test_a_conversation_a_program_named_keeps_no_guessable_trace_of_a_forgotten_name(used):
    """Its id was an unkeyed hash of the name: a forgotten 4-digit code in a conversation's
    name was found again from 10,000 guesses. The id is keyed, and a forget that takes the name
    out of the title gives the conversation a new id."""
    import hashlib

    from engine.server.completion_turn import conversation_for

    name = "Door code 4471"
    conversation_id = conversation_for(used, name)
    assert conversation_id != "api-" + hashlib.sha256(name.encode()).hexdigest()[:12]
    used.recall.add("user", "Hello from a program.", conversation_id=conversation_id)
    used.wait_for_background_work()
    guesses = {
        made
        for code in range(10_000)
        for made in (
            "api-" + hashlib.sha256(f"Door code {code:04d}".encode()).hexdigest()[:12],
            "api-" + used.tombstones.keyed(f"Door code {code:04d}"),
        )
    }
    forget.forget(used, forget.plan_text(used, "4471"))
    ids = {c.id for c in used.conversations.all()}
    ids |= {row["conversation_id"] for row in used.recall_vectors.rows(None, ["conversation_id"])}
    assert not ids & guesses
    assert any(hit.text == "Hello from a program." for hit in used.recall.search("program").hits)
    assert health.check(used) == []


def test_a_conversation_an_older_mnemo_named_moves_to_its_keyed_id(used):
    import hashlib

    from engine.server.completion_turn import conversation_for

    older = "api-" + hashlib.sha256(b"Trip planning").hexdigest()[:12]
    used.conversations.ensure(older, "Trip planning", "API")
    used.recall.add("user", "We fly to Lisbon on Friday.", conversation_id=older)
    moved = conversation_for(used, "Trip planning")
    assert moved != older and [hit.text for hit in used.recall.recent(5, moved)] == [
        "We fly to Lisbon on Friday."
    ]
    assert used.recall.recent(5, older) == []


def test_a_tidy_proposals_payload_is_forgotten_in_however_its_json_writes_it(mnemo):
    """A merged note's text is kept in its proposal's payload as JSON, where "Zoë" is written
    "Zo\\u00eb": a forget of "Zoë" left it there."""
    from engine.agent import assisted_rules as assisted

    passage_id = mnemo.archival.insert(
        'The user said: "My niece Zoë Hartwell starts school in May."', tags=(assisted.NOTE_TAG,)
    )
    note = mnemo.archival.get(passage_id)
    with mnemo.recall.transaction() as transaction:
        mnemo.proposals.create_tidy_in(transaction.session, "tidy-1", "musing", note)
    forget.forget(mnemo, forget.plan_text(mnemo, "Zoë Hartwell"))
    (proposal,) = mnemo.proposals.batch("tidy-1")
    assert "Zoë" not in json.dumps(proposal.payload, ensure_ascii=False)
    assert "Hartwell" not in json.dumps(proposal.payload)
    assert forget.held_on_disk(mnemo) == []
