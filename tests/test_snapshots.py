"""Snapshots: taken while Mnemo runs, restored after damage, pruned, and taken automatically
before risky operations."""

from __future__ import annotations

import sqlite3
import threading
import time

import numpy as np
import pytest

from engine import Mnemo
from engine.cli import main
from engine.db import SCHEMA_VERSION
from engine.db.schema import MIGRATIONS
from engine.errors import NotFoundError
from engine.ingest.ingestor import Ingestor
from engine.memory import snapshots


def test_damage_then_restore_brings_everything_back_and_the_restore_can_be_undone(
    profile_dir, embedder
):
    with Mnemo.open(profile_dir, embedder=embedder) as m:
        ids = [m.recall.add("user", f"Message {i} about the garden shed.") for i in range(5)]
        passage = m.archival.insert("The spare key is under the blue pot.")
        m.core.set("human", "Name: Ada.")
        m.knowledge.add("user", "lives_in", "Porto")
        taken = m.snapshots.create("before spring cleaning")
        assert set(taken.tables) == {"recall_vectors", "passages"}  # versions kept, not copied

        for message_id in ids:  # the damage
            m.recall.delete(message_id)
        m.archival.delete(passage)
        m.core.set("human", "Nothing.")
        m.knowledge.add("user", "lives_in", "Lyon", supersede=True)
        m.wait_for_background_work()
        before = m.snapshots.restore(taken.id)
        assert before.automatic and before.note == f"before restoring {taken.id}"

    with Mnemo.open(profile_dir, embedder=embedder) as m:
        assert m.recall.count() == 5
        assert m.recall.search("garden shed", mode="semantic")[0].text.startswith("Message")
        assert (
            m.archival.search("where is the key")[0].text == "The spare key is under the blue pot."
        )
        assert m.core.get("human") == "Name: Ada."
        assert [f.object for f in m.knowledge.facts("user")] == ["Porto"]
        m.snapshots.restore(before.id)  # and back again

    with Mnemo.open(profile_dir, embedder=embedder) as m:
        assert m.recall.count() == 0 and m.archival.count() == 0
        assert m.core.get("human") == "Nothing."
        assert [f.object for f in m.knowledge.facts("user")] == ["Lyon"]


def test_a_snapshot_taken_while_an_ingest_writes_is_consistent(profile_dir, embedder, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(40):
        (folder / f"note{i:02}.txt").write_text(
            "\n\n".join(f"Note {i}, paragraph {j}: the plumber came on day {j}." for j in range(6)),
            encoding="utf-8",
        )
    with Mnemo.open(profile_dir, embedder=embedder) as m:
        ingest = threading.Thread(target=lambda: Ingestor(m).ingest([folder]))
        ingest.start()
        index = Ingestor(m).index
        deadline = time.monotonic() + 60
        # Passages land a moment before their file is marked done; wait for the mark.
        while not _any_done(index) and time.monotonic() < deadline:
            time.sleep(0.01)
        taken = m.snapshots.create("mid-ingest")
        ingest.join()
        assert m.archival.count() > 0
        m.snapshots.restore(taken.id)

    with Mnemo.open(profile_dir, embedder=embedder) as m:
        done = Ingestor(m).index.all()
        done = [row for row in done if row.status == "done"]
        assert done, "the snapshot was taken after the first file was indexed"
        for row in done:  # what SQLite says is indexed is in archival memory, exactly
            assert len(m.archival.list_by_source(row.path)) == row.chunk_count
        # Passages of files SQLite did not yet count are leftovers a re-ingest replaces.
        Ingestor(m).ingest([folder])
        assert m.archival.count() == sum(row.chunk_count for row in Ingestor(m).index.all())


def _any_done(index) -> bool:
    return any(row.status == "done" for row in index.all())


def test_automatic_snapshots_are_pruned_and_yours_are_kept(mnemo, monkeypatch):
    mine = mnemo.snapshots.create("mine")
    for i in range(snapshots.KEEP_AUTOMATIC + 2):
        mnemo.snapshots.create(f"automatic {i}", automatic=True)
    automatic = [s for s in mnemo.snapshots.all() if s.automatic]
    assert len(automatic) == snapshots.KEEP_AUTOMATIC
    assert automatic[-1].note == "automatic 2"  # the two oldest went
    assert mine in mnemo.snapshots.all()
    monkeypatch.setattr(snapshots, "AUTOMATIC_CAP_BYTES", 1)  # the size cap: the newest stays
    mnemo.snapshots.prune()
    assert [s.note for s in mnemo.snapshots.all()] == ["automatic 11", "mine"]
    mnemo.snapshots.delete(mine.id)
    with pytest.raises(NotFoundError, match="no snapshot"):
        mnemo.snapshots.get(mine.id)
    assert not any(tag.startswith("snapshot-") and mine.id in tag for tag in _tags(mnemo))


def _tags(mnemo: Mnemo) -> list[str]:
    return [tag for table in mnemo.snapshots._tables for tag in table.table.tags.list()]


def test_upkeep_prunes_old_versions_but_keeps_the_tagged_ones(mnemo):
    mnemo.archival.insert("First note.")
    taken = mnemo.snapshots.create()
    for i in range(5):
        mnemo.archival.insert(f"Note {i}.")
    table = mnemo.snapshots._tables[1]
    table.maintain()  # prunes: must not fail on the tagged version, nor drop it
    mnemo.snapshots.restore(taken.id)
    assert [p.text for p in mnemo.archival.recent()] == ["First note."]


def test_a_schema_upgrade_keeps_the_old_database_as_a_snapshot(profile_dir, embedder):
    profile_dir.mkdir(parents=True)
    database = profile_dir / "mnemo.sqlite"
    with sqlite3.connect(database) as connection:
        for number, migration in enumerate(MIGRATIONS[:-1], start=1):
            connection.executescript(f"{migration.for_sqlite}\nPRAGMA user_version = {number};")
    with Mnemo.open(profile_dir, embedder=embedder) as m:
        (snapshot,) = m.snapshots.all()
        assert snapshot.note == (
            f"before upgrading the database from schema {SCHEMA_VERSION - 1} to {SCHEMA_VERSION}"
        )
        copy = profile_dir / "snapshots" / snapshot.id / "mnemo.sqlite"
        with sqlite3.connect(copy) as old:
            assert old.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION - 1


def test_the_snapshot_commands(profile_dir, capsys, monkeypatch):
    def run(*args: str) -> tuple[int, str]:
        code = main(["--profile", str(profile_dir), "snapshot", *args])
        return code, capsys.readouterr().out

    assert run("list")[1].startswith("No snapshots yet")
    code, out = run("create", "--note", "before trying something")
    snapshot_id = out.split()[1]
    assert code == 0 and "before trying something" in out
    assert snapshot_id in run("list")[1]
    monkeypatch.setattr("builtins.input", lambda _prompt: "n")
    assert run("restore", snapshot_id) == (1, "Nothing changed.\n")
    code, out = run("restore", snapshot_id, "--yes")
    assert code == 0 and out.startswith(f"Restored {snapshot_id}. The state before it is")
    assert run("delete", snapshot_id) == (0, f"Deleted snapshot {snapshot_id}.\n")


def test_a_message_written_between_the_database_copy_and_the_tags_leaves_no_stray_vector(
    profile_dir, embedder, monkeypatch
):
    with Mnemo.open(profile_dir, embedder=embedder) as m:
        m.recall.add("user", "Before the snapshot.")
        copy = snapshots.backup

        def copy_then_write(source, target):
            copy(source, target)
            m.recall.add("user", "Written while the snapshot was being taken.")

        monkeypatch.setattr(snapshots, "backup", copy_then_write)
        taken = m.snapshots.create()
        monkeypatch.setattr(snapshots, "backup", copy)
        m.snapshots.restore(taken.id)
    with Mnemo.open(profile_dir, embedder=embedder) as m:
        m.wait_for_background_work()
        assert [h.text for h in m.recall.recent(5)] == ["Before the snapshot."]
        new = m.recall.add("user", "A new message takes the freed id.")
        m.wait_for_background_work()
        assert m._message_vectors.count() == 2  # one vector per message, none left over
        own = embedder.embed(["A new message takes the freed id."])[0]
        assert float(np.dot(m.recall.vectors_of([new])[new], own)) > 0.99
