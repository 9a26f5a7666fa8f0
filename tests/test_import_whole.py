"""An import of a chat export ends whole: stopped, paused, failed or killed halfway, it is
finished by importing again or taken out, and never takes what the person wrote meanwhile.
Claude's memories and projects come in with its conversations. Any file imported twice adds
nothing."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest
from profiles import contents, fill_randomly
from sqlalchemy import text

from engine import Mnemo, health
from engine.cli import main
from engine.errors import MnemoError
from engine.exchange import chat_exports, import_file, unfinished
from engine.exchange.archive import ArchiveError
from engine.exchange.claude_extras import sections

T0 = 1_760_000_000.0
TOPICS = ["the allotment", "a bridge in Leeds", "sourdough", "the greyhound", "a trip to Oslo"]
REPO = Path(__file__).resolve().parents[1]


def chatgpt_export(conversations: int, per: int, prefix: str = "c") -> list[dict]:
    """ChatGPT's 2026 layout: mapping nodes with parents and no children."""
    items = []
    for c in range(conversations):
        mapping, parent = {}, None
        for i in range(per):
            node_id = f"{prefix}{c}-{i}"
            mapping[node_id] = {
                "id": node_id,
                "parent": parent,
                "message": {
                    "id": node_id,
                    "author": {"role": "user" if i % 2 == 0 else "assistant"},
                    "create_time": T0 + c * 1000 + i,
                    "content": {
                        "content_type": "text",
                        "parts": [
                            f"Note {i} of talk {c} is about {TOPICS[(c + i) % len(TOPICS)]}."
                        ],
                    },
                },
            }
            parent = node_id
        items.append(
            {
                "title": f"Talk {c}",
                "create_time": T0 + c * 1000,
                "mapping": mapping,
                "current_node": parent,
                "conversation_id": f"{prefix}{c}",
            }
        )
    return items


def write_export(path: Path, items: list[dict]) -> Path:
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


def imported_counts(mnemo: Mnemo) -> tuple[int, int, int]:
    """Imported messages, imported conversations, and their vectors."""
    with mnemo.database.connect() as connection:
        messages = connection.execute(
            text("SELECT count(*) FROM message WHERE conversation_id LIKE 'chatgpt:%'")
        ).scalar_one()
        conversations = connection.execute(
            text("SELECT count(*) FROM conversation WHERE origin = 'ChatGPT'")
        ).scalar_one()
    vectors = mnemo.recall_vectors.count("conversation_id LIKE 'chatgpt:%'")
    return messages, conversations, vectors


def import_until_paused(mnemo: Mnemo, path: Path, match: str = "paused") -> None:
    """Import ``path`` and pause once 10 messages are in (the batch under way finishes)."""
    pause = threading.Event()

    def progress(_what: str, done: int, _total: int) -> None:
        if done >= 10:
            pause.set()

    with pytest.raises(MnemoError, match=match):
        import_file(mnemo, path, progress=progress, pause=pause)


def test_stop_takes_out_what_the_import_brought_and_keeps_what_the_person_wrote(
    mnemo, tmp_path, monkeypatch
):
    """A snapshot restore on Stop would take the person's messages written while the import ran
    (the window keeps the chat usable): only the import's rows go."""
    monkeypatch.setattr(chat_exports, "BATCH", 6)
    path = write_export(tmp_path / "conversations.json", chatgpt_export(8, 4))
    cancel = threading.Event()
    seen = []

    def progress(_what, done, total):
        seen.append((done, total))
        if len(seen) == 2:  # two batches in: the person writes, then presses Stop
            mnemo.recall.add("user", "My own words while it imported.", conversation_id="mine")
            cancel.set()

    with pytest.raises(MnemoError, match=r"was stopped, and the \d+ messages it had brought"):
        import_file(mnemo, path, progress=progress, cancel=cancel)
    # The first conversation alone, and an estimate from the bytes parsed (not read ahead).
    assert seen[0][0] == 4 and seen[0][1] == pytest.approx(32, rel=0.1)
    assert imported_counts(mnemo) == (0, 0, 0)
    assert [hit.text for hit in mnemo.recall.recent(10, "mine")] == [
        "My own words while it imported."
    ]
    assert mnemo.recall.search("own words", mode="hybrid")
    assert unfinished.read(mnemo) is None
    report = import_file(mnemo, path)  # and it can be imported whole afterwards
    assert report.added["messages"] == 32
    assert imported_counts(mnemo) == (32, 8, 32)


def test_a_paused_import_is_said_refuses_another_and_resumes_or_is_taken_out(
    mnemo, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(chat_exports, "BATCH", 6)
    path = write_export(tmp_path / "conversations.json", chatgpt_export(8, 4))
    import_until_paused(mnemo, path, match="paused with 12 messages in")
    assert imported_counts(mnemo)[0] == 12  # the first conversation, then two more, whole
    journal = unfinished.read(mnemo)
    assert journal is not None and journal.stored == 12
    (problem,) = [p for p in health.check(mnemo) if p.check == "import"]
    assert "conversations.json" in problem.sentence and "stopped halfway" in problem.sentence

    other = write_export(tmp_path / "other.json", chatgpt_export(2, 2, prefix="o"))
    with pytest.raises(ArchiveError, match="Import it again to finish it"):
        import_file(mnemo, other)

    report = import_file(mnemo, path)  # the same file again: it resumes
    assert report.added["messages"] == 20 and report.skipped["messages"] == 12
    assert any("it was resumed" in line for line in report.lines())
    assert imported_counts(mnemo) == (32, 8, 32)
    assert unfinished.read(mnemo) is None
    assert not [p for p in health.check(mnemo) if p.check == "import"]

    # Paused again on another file, then taken out with `mnemo import --undo`.
    mnemo.recall.add("user", "Written between the two.", conversation_id="mine")
    import_until_paused(
        mnemo, write_export(tmp_path / "many.json", chatgpt_export(8, 4, prefix="m"))
    )
    assert imported_counts(mnemo)[0] > 32
    profile = str(mnemo.profile.root)
    mnemo.close()
    assert main(["--profile", profile, "import", "--undo"]) == 0
    assert "Took out the 12 messages the stopped import of many.json brought" in (
        capsys.readouterr().out
    )
    with Mnemo.open(profile) as again:
        assert imported_counts(again) == (32, 8, 32)
        assert again.recall.count("mine") == 1
        assert unfinished.read(again) is None


def test_an_import_killed_halfway_holds_whole_conversations_and_finishes_when_run_again(
    tmp_path,
):
    """kill -9 of `mnemo import` mid-way: each committed batch holds whole conversations, the
    journal says what happened, `mnemo check` says it, and the same command finishes it."""
    items = chatgpt_export(200, 10)
    path = write_export(tmp_path / "conversations.json", items)
    profile = tmp_path / "profile"
    database = profile / "mnemo.sqlite"
    command = [sys.executable, "-m", "engine.cli", "--profile", str(profile), "import", str(path)]
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    held = 0
    deadline = time.monotonic() + 300
    while process.poll() is None and time.monotonic() < deadline:
        if database.exists():
            try:
                with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=1) as db:
                    held = db.execute("SELECT count(*) FROM message").fetchone()[0]
            except sqlite3.Error:
                held = 0
        if held >= 300:
            os.kill(process.pid, signal.SIGKILL)
            break
        time.sleep(0.05)
    process.wait()
    assert process.returncode == -signal.SIGKILL, "the import ended before it could be killed"
    with sqlite3.connect(database) as db:
        per_conversation = db.execute(
            "SELECT count(*) FROM message GROUP BY conversation_id"
        ).fetchall()
    assert 0 < len(per_conversation) < 200
    assert {count for (count,) in per_conversation} == {10}  # no conversation cut in two
    assert (profile / unfinished.JOURNAL).exists()
    check = subprocess.run(
        [sys.executable, "-m", "engine.cli", "--profile", str(profile), "check"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    # It says how many are in, counted in the database (the journal may be a batch behind).
    assert f"with {10 * len(per_conversation):,} messages in" in check.stdout
    again = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert "it was resumed" in again.stdout
    with Mnemo.open(profile) as mnemo:
        mnemo.wait_for_background_work()
        assert imported_counts(mnemo) == (2000, 200, 2000)
        assert unfinished.read(mnemo) is None
        stored = {h.text for h in mnemo.recall.recent(20, "chatgpt:c199")}
        assert stored == {
            f"Note {i} of talk 199 is about {TOPICS[(199 + i) % 5]}." for i in range(10)
        }


# -- Claude's memories and projects ---------------------------------------------------------------

ACCOUNT_MEMORY = (
    """**Work context**

Dana is a structural engineer at Arup in Leeds, working on timber footbridges.

**Personal context**

Dana lives in Otley with her partner Sam and a greyhound called Biscuit.
- Allergic to walnuts.

**Top of mind**

"""
    + "Planning the spring planting of plot 14, week by week. " * 45
)  # longer than a block


def claude_zip(path: Path) -> Path:
    conversations = [
        {
            "uuid": "c-1",
            "name": "Garlic",
            "created_at": "2026-02-01T09:00:00Z",
            "chat_messages": [
                {
                    "uuid": "m-1",
                    "sender": "human",
                    "text": "When do I plant garlic?",
                    "content": [{"type": "text", "text": "When do I plant garlic?"}],
                    "created_at": "2026-02-01T09:00:05Z",
                    "parent_message_uuid": "00000000-0000-4000-8000-000000000000",
                },
                {
                    "uuid": "m-2",
                    "sender": "assistant",
                    "text": "In autumn.",
                    "content": [{"type": "text", "text": "In autumn."}],
                    "created_at": "2026-02-01T09:00:15Z",
                    "parent_message_uuid": "m-1",
                },
            ],
        }
    ]
    memories = [
        {
            "conversations_memory": ACCOUNT_MEMORY,
            "project_memories": {"p-1": "**Purpose & context**\n\nPlot 14 grows garlic in bed A."},
            "account_uuid": "a-1",
        }
    ]
    projects = [
        {
            "uuid": "p-0",
            "name": "How to use Claude",
            "description": "An example project that also doubles as a how-to guide.",
            "is_starter_project": True,
            "prompt_template": "",
            "docs": [
                {"uuid": "d-0", "filename": "Claude prompting guide.md", "content": "Be clear."}
            ],
            "created_at": "2025-01-01T00:00:00Z",
        },
        {
            "uuid": "p-1",
            "name": "Allotment",
            "description": "Plot 14 at Otley allotments.",
            "is_starter_project": False,
            "prompt_template": "Answer as an organic gardener.",
            "docs": [
                {
                    "uuid": "d-1",
                    "filename": "plot-plan.md",
                    "content": "# Plot plan\n\nBed A: garlic, planted in October.\n\nBed B: beans.",
                    "created_at": "2026-02-02T00:00:00Z",
                }
            ],
            "created_at": "2026-02-01T00:00:00Z",
        },
    ]
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("conversations.json", json.dumps(conversations))
        archive.writestr("memories.json", json.dumps(memories))
        archive.writestr("projects.json", json.dumps(projects))
        archive.writestr("users.json", json.dumps([{"uuid": "a-1", "full_name": "Dana"}]))
    return path


def test_a_memory_is_cut_at_its_headings_and_a_memory_without_them_at_its_paragraphs():
    assert sections(ACCOUNT_MEMORY)[:2] == [
        "Work context: Dana is a structural engineer at Arup in Leeds, working on timber "
        "footbridges.",
        "Personal context: Dana lives in Otley with her partner Sam and a greyhound called "
        "Biscuit. Allergic to walnuts.",
    ]
    assert sections("Likes tea.\n\nWorks nights.") == ["Likes tea.", "Works nights."]


def test_claudes_memories_wait_as_proposals_and_its_projects_go_to_archival_memory(mnemo, tmp_path):
    path = claude_zip(tmp_path / "data-2026-02-03.zip")
    report = import_file(mnemo, path)
    assert report.added["messages"] == 2
    assert report.added["memories Claude kept, to review"] == 4
    assert report.added["project documents"] == 2  # the instructions and plot-plan.md
    assert report.skipped["example projects made by Anthropic"] == 1
    pending = {p.new_content: p for p in mnemo.proposals.pending()}
    work = pending[
        "Work context: Dana is a structural engineer at Arup in Leeds, working on timber "
        "footbridges."
    ]
    assert (work.kind, work.label, work.action) == ("core", "human", "append")
    assert work.untrusted_reason.startswith("from Claude's memory of you (exported 20")
    plot = pending["Purpose & context: Plot 14 grows garlic in bed A."]
    assert 'of the project "Allotment"' in plot.untrusted_reason
    (long,) = [p for p in pending.values() if p.new_content.startswith("Top of mind")]
    assert long.kind == "note"  # no room in the block: an archival note, still the person's call
    sources = {hit.source.path for hit in mnemo.archival.search("garlic bed A", 10)}
    assert "Claude project Allotment/plot-plan.md" in sources
    assert not [
        h for h in mnemo.archival.search("prompting guide", 10) if "How to use" in h.source.path
    ]
    mnemo.proposals.approve(work.id)
    assert "structural engineer at Arup" in mnemo.core.get("human")

    before = contents(mnemo), len(mnemo.proposals.all(1000)), mnemo.archival.count()
    again = import_file(mnemo, path)
    assert not [line for line in again.lines() if " added" in line and "0 added" not in line]
    assert (contents(mnemo), len(mnemo.proposals.all(1000)), mnemo.archival.count()) == before


def test_a_stopped_claude_import_takes_out_its_proposals_and_project_passages(
    mnemo, tmp_path, monkeypatch
):
    path = claude_zip(tmp_path / "export.zip")
    cancel = threading.Event()
    extras = chat_exports.import_extras

    def then_stop(*args):  # Stop pressed once the memories and projects are in
        extras(*args)
        assert mnemo.proposals.pending() and mnemo.archival.count()
        cancel.set()

    monkeypatch.setattr(chat_exports, "import_extras", then_stop)
    with pytest.raises(MnemoError, match="was stopped"):
        import_file(mnemo, path, cancel=cancel)
    assert mnemo.proposals.pending() == []
    assert mnemo.archival.count() == 0 and mnemo.recall.count() == 0


def test_a_damaged_memories_file_is_said_and_the_conversations_still_come_in(mnemo, tmp_path):
    folder = tmp_path / "export"
    folder.mkdir()
    with zipfile.ZipFile(claude_zip(tmp_path / "export.zip")) as archive:
        archive.extractall(folder)
    (folder / "memories.json").write_text('[{"conversations_memory": "cut', encoding="utf-8")
    (folder / "projects.json").write_text('[{"name": "not Claude\'s"}]', encoding="utf-8")
    report = import_file(mnemo, folder / "conversations.json")
    assert report.added["messages"] == 2
    assert (
        "memories.json is damaged and was not read. The conversations were imported without it."
        in report.lines()
    )
    assert mnemo.proposals.pending() == [] and mnemo.archival.count() == 0


# -- any file, twice -----------------------------------------------------------------------------


@pytest.mark.parametrize("in_use", [False, True], ids=["empty", "in use"])
def test_every_kind_of_file_imported_a_second_time_adds_nothing(
    tmp_path, embedder, real_files, in_use
):
    """Real exports and agent files, an archive of a random profile (superseded facts, merges,
    aliases) and a Claude export with memories and projects: each a second time adds nothing
    and fails nowhere, into an empty profile and one in use."""
    with Mnemo.open(tmp_path / "source", embedder=embedder) as source:
        fill_randomly(source, random.Random(3), tmp_path / "source-files")
        from engine.exchange.archive import export_archive

        export_archive(source, tmp_path / "memory.mnemo")
    shard = tmp_path / "chatgpt"
    shard.mkdir()
    first = json.loads((real_files / "chatgpt_2026" / "conversations-002.json").read_bytes())
    (shard / "conversations-002.json").write_text(json.dumps(first[:12]), encoding="utf-8")
    files = [
        tmp_path / "memory.mnemo",
        shard,
        real_files / "claude" / "claude_example.json",
        next((real_files / "letta").glob("*.af")),
        claude_zip(tmp_path / "claude.zip"),
    ]
    with Mnemo.open(tmp_path / "target", embedder=embedder) as target:
        if in_use:
            fill_randomly(target, random.Random(11), tmp_path / "target-files")
        for path in files:
            import_file(target, path)
            target.wait_for_background_work()
            before = (
                contents(target),
                target.recall.count(),
                target.archival.count(),
                len(target.proposals.all(10_000)),
            )
            report = import_file(target, path)
            target.wait_for_background_work()
            after = (
                contents(target),
                target.recall.count(),
                target.archival.count(),
                len(target.proposals.all(10_000)),
            )
            assert after == before, path.name
            added = [line for line in report.lines() if re.search(r"\b[1-9]\d* added", line)]
            assert added == [], (path.name, added)


def test_a_held_import_waits_while_a_reply_is_written_and_then_goes_on(mnemo, tmp_path):
    """The window holds the import while the model writes a reply: both need the same cores,
    and a reply during a real import took 63 s."""
    path = write_export(tmp_path / "conversations.json", chatgpt_export(4, 4))
    hold = threading.Event()
    hold.set()
    done: list[object] = []
    running = threading.Thread(
        target=lambda: done.append(import_file(mnemo, path, hold=hold)), daemon=True
    )
    running.start()
    running.join(1.5)
    assert running.is_alive() and imported_counts(mnemo) == (0, 0, 0)  # nothing stored yet
    hold.clear()
    running.join(60)
    assert not running.is_alive() and imported_counts(mnemo) == (16, 4, 16)


def test_a_turns_message_is_stored_while_an_import_embeds_its_batch(mnemo):
    """The import's batch held the vectors' lock while it embedded 256 messages: a reply
    during a real import took 50 s. Embedded a few at a time, the lock is free between."""
    from engine.memory.recall.messages import NewMessage
    from engine.memory.recall.vectors import YIELD_CHUNK

    waiting, go_on = threading.Event(), threading.Event()
    calls = []

    def between() -> None:
        calls.append(1)
        if len(calls) == 2:  # after the first chunk: a turn arrives
            waiting.set()
            assert go_on.wait(30)

    batch = [NewMessage("user", f"Imported message number {i}.") for i in range(YIELD_CHUNK * 3)]

    def store() -> None:
        with mnemo.recall.transaction(between=between) as transaction:
            transaction.add_many(batch)

    importing = threading.Thread(target=store, daemon=True)
    importing.start()
    assert waiting.wait(60)
    stored = threading.Thread(target=lambda: mnemo.recall.add("user", "A turn's own words."))
    stored.start()
    stored.join(10)
    assert not stored.is_alive()  # not behind the rest of the batch
    go_on.set()
    importing.join(60)
    assert mnemo.recall_vectors.count("part = 0") == YIELD_CHUNK * 3 + 1
    assert mnemo.recall.search("own words", mode="hybrid")[0].text == "A turn's own words."


def test_an_undo_after_a_pause_keeps_what_the_person_wrote_in_an_imported_conversation(
    mnemo, tmp_path, monkeypatch
):
    """Paused, then the person wrote in one of the imported conversations, then undid the
    import: their message was taken out with it (it had an id after the import's first, in a
    conversation of the import's origin). The undo takes out the ids the import's batches
    recorded, and nothing else."""
    monkeypatch.setattr(chat_exports, "BATCH", 6)
    path = write_export(tmp_path / "conversations.json", chatgpt_export(8, 4))
    import_until_paused(mnemo, path)
    mnemo.recall.add("user", "My own reply in the old talk.", conversation_id="chatgpt:c0")
    assert unfinished.undo_unfinished(mnemo) == ("conversations.json", 12)
    assert [hit.text for hit in mnemo.recall.recent(10, "chatgpt:c0")] == [
        "My own reply in the old talk."
    ]


def test_a_planted_journal_takes_out_nothing(mnemo, tmp_path):
    """A journal nobody's import wrote (planted, or left by another Mnemo) made the undo take
    out every earlier imported conversation: it names no batch, so nothing goes."""
    path = write_export(tmp_path / "conversations.json", chatgpt_export(3, 4))
    assert import_file(mnemo, path).added["messages"] == 12
    planted = {
        "path": str(tmp_path / "other.json"),
        "first_message_id": 0,
        "first_proposal_id": 0,
        "started_at": 0,
        "pid": 999_999,
    }
    (mnemo.profile.root / unfinished.JOURNAL).write_text(json.dumps(planted), encoding="utf-8")
    assert unfinished.undo_unfinished(mnemo) == ("other.json", 0)
    assert imported_counts(mnemo) == (12, 3, 12)


def test_a_claude_memory_of_30_mb_is_proposed_in_readable_pieces_and_the_rest_said(mnemo, tmp_path):
    """A 30 MB memories.json section became one 31 MB proposal nobody could read."""
    from engine.exchange.claude_extras import MEMORY_CHARS, MEMORY_PROPOSALS

    path = claude_zip(tmp_path / "data-2026-02-03.zip")
    flood = " ".join(f"Fact {n} about the plot is that bed A holds garlic." for n in range(600_000))
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    memories = json.loads(members["memories.json"])
    memories[0]["conversations_memory"] = flood
    members["memories.json"] = json.dumps(memories).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    assert len(flood) > 30 * 10**6
    report = import_file(mnemo, path)
    assert report.added["messages"] == 2
    proposed = [p for p in mnemo.proposals.pending() if p.cause_kind == "import"]
    assert 0 < len(proposed) <= MEMORY_PROPOSALS + 1  # and the project's memory
    assert max(len(p.new_content) for p in proposed) <= MEMORY_CHARS
    assert any("left out" in line for line in report.lines())


def test_an_export_replaced_between_pause_and_resume_is_refused_not_finished_with_the_other(
    mnemo, tmp_path, monkeypatch
):
    """Paused, then the file at the same path replaced by another export: the "resume"
    finished silently with the other file, and 26 of 40 conversations never came in."""
    monkeypatch.setattr(chat_exports, "BATCH", 6)
    path = write_export(tmp_path / "conversations.json", chatgpt_export(8, 4))
    import_until_paused(mnemo, path)
    write_export(path, chatgpt_export(10, 4, prefix="other"))
    with pytest.raises(ArchiveError, match="has been replaced since by another file"):
        import_file(mnemo, path)
    assert unfinished.undo_unfinished(mnemo) == ("conversations.json", 12)
    assert import_file(mnemo, path).added["messages"] == 40
