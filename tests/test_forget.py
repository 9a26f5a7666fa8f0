"""Forget means forget: a text leaves every store and every file of the profile, and nothing
brings it back (a re-ingest, an older export, a restored snapshot, an extraction)."""

from __future__ import annotations

import io
import json
import logging
import shutil
import threading
import zipfile
from pathlib import Path

import pytest

from engine import Mnemo, health
from engine.cli import main
from engine.cli.chat import chat
from engine.errors import InputError
from engine.exchange import import_file
from engine.exchange.archive import export_archive
from engine.ingest.ingestor import Ingestor
from engine.llm import ScriptedModel
from engine.memory import forget
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
    forget.forget(used, forget.plan_text(used, PASSPORT))
    assert used.snapshots.all() == []  # the snapshot held it: deleted
    shutil.copytree(kept, used.profile.root / "snapshots" / snapshot.id)
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
    stop = threading.Event()

    def chat() -> None:
        while not stop.is_set():
            written.append(used.recall.add("user", f"Message {len(written)} about the shed."))

    writer = threading.Thread(target=chat)
    writer.start()
    try:
        forget.forget(used, forget.plan_text(used, PIN))
    finally:
        stop.set()
        writer.join()
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
