"""The health check: each kind of damage, made on purpose, is found and (where it can be)
repaired; what cannot be repaired is said in a sentence."""

from __future__ import annotations

import json
import sqlite3

import pyarrow as pa
import pytest
from sqlalchemy import text

from engine import health
from engine.cli import main


def checks(mnemo) -> dict[str, str]:
    return {problem.check: problem.sentence for problem in health.check(mnemo)}


@pytest.fixture
def filled(mnemo):
    for i in range(6):  # two sentences each: every message has sentence vectors too
        mnemo.recall.add(
            "user",
            f"Note {i}: the boiler was serviced by the plumber this morning. "
            "The invoice for all of the work arrives next week.",
        )
    mnemo.archival.insert("The spare key is under the blue pot.")
    mnemo.wait_for_background_work()
    assert checks(mnemo) == {}
    return mnemo


def test_a_damaged_keyword_index_is_found_and_rebuilt(filled):
    message = filled.recall.recent(1)[0]
    with filled.database.begin() as connection:  # the index forgets one message
        connection.execute(
            text(
                "INSERT INTO message_fts (message_fts, rowid, search_text) "
                "SELECT 'delete', id, search_text FROM message WHERE id = :id"
            ),
            {"id": message.id},
        )
    assert "keyword index" in checks(filled)
    done, left = health.repair(filled)
    assert done == ["Rebuilt the keyword index of past conversations."] and left == []
    assert message.id in [
        hit.id for hit in filled.recall.search("boiler serviced", 10, mode="keyword")
    ]
    assert any(s.note == "before repairing the profile" for s in filled.snapshots.all())


def test_missing_stray_and_doubled_message_vectors_are_found_and_fixed(filled):
    first, second, *_ = [hit.id for hit in filled.recall.recent(6)]
    vectors = filled.recall_vectors
    vectors.delete(f"id = {first}")  # missing
    row = vectors.rows(f"id = {second} AND part = 0", vectors.table.schema.names)[0]
    vectors.add(pa.Table.from_pylist([row], schema=vectors.table.schema))  # doubled
    stray = dict(row, id=99_999)
    vectors.add(pa.Table.from_pylist([stray], schema=vectors.table.schema))  # belongs to none
    sentence = checks(filled)["message vectors"]
    assert sentence == (
        "1 messages have no vector, so searching by meaning misses them; 1 vectors belong to no "
        "message; 1 messages have more than one vector."
    )
    health.repair(filled)
    filled.wait_for_background_work()
    assert checks(filled) == {}
    assert sorted(int(r["id"]) for r in vectors.rows("part = 0", ["id"])) == sorted(
        hit.id for hit in filled.recall.recent(6)
    )
    assert vectors.count("part > 0") == 12  # the sentences' vectors are back too


def test_doubled_and_orphaned_passages_are_found_and_fixed(filled, tmp_path):
    table = filled.passage_vectors
    row = table.rows(None, table.table.schema.names)[0]
    table.add(pa.Table.from_pylist([row], schema=table.table.schema))
    orphan = dict(row, id="f" * 32, origin="document", source_path=str(tmp_path / "gone.pdf"))
    table.add(pa.Table.from_pylist([orphan], schema=table.table.schema))
    sentence = checks(filled)["passages"]
    assert sentence.startswith("1 passages are stored twice; 1 documents have passages but")
    health.repair(filled)
    assert checks(filled) == {}
    assert [p.text for p in filled.archival.recent()] == ["The spare key is under the blue pot."]


def test_what_cannot_be_repaired_is_said(filled, tmp_path):
    with filled.database.begin() as connection:
        connection.execute(
            text("UPDATE core_block SET value = :v WHERE label = 'human'"), {"v": "x" * 3000}
        )
        connection.execute(
            text(
                "INSERT INTO watched_folder (path, include, exclude, added_at) "
                "VALUES (:p, '[]', '[]', 0)"
            ),
            {"p": str(tmp_path / "unplugged-drive")},
        )
    found = checks(filled)
    assert "over its limit of 2000" in found["core memory"]
    assert "no longer exists" in found["watched folders"]
    done, left = health.repair(filled)
    assert done == [] and {p.check for p in left} == {"core memory", "watched folders"}
    assert not any(problem.repairable for problem in left)


def test_proposals_of_deleted_messages_are_set_aside(filled):
    message = filled.recall.recent(1)[0]
    with filled.recall.transaction() as tx:
        proposal = filled.proposals.create_in(
            tx.session,
            conversation_id="default",
            label="human",
            action="append",
            new_content="Services the boiler.",
            cause_ref=str(message.id),
        )
    filled.recall.delete(message.id)
    assert "1 pending proposals come from messages that were deleted" in checks(filled)["proposals"]
    health.repair(filled)
    assert filled.proposals.get(proposal.id).status == "rejected"
    assert checks(filled) == {}


def test_a_damaged_database_is_said_not_repaired(filled):
    path = filled.profile.database_path
    with sqlite3.connect(path) as connection:  # break one index's pages, not the data
        connection.execute("PRAGMA writable_schema = ON")
        connection.execute(
            "UPDATE sqlite_master SET sql = replace(sql, 'created_at', 'created_at DESC') "
            "WHERE name = 'message_created_at'"
        )
    problems = {p.check: p for p in health.check(filled)}
    assert "database" in problems and not problems["database"].repairable


def test_mnemo_check(profile_dir, capsys):
    base = ["--profile", str(profile_dir)]
    assert main([*base, "check"]) == 0
    assert "No problems found" in capsys.readouterr().out
    with sqlite3.connect(profile_dir / "mnemo.sqlite") as connection:
        connection.execute(
            "INSERT INTO message (role, text, created_at, search_text) "
            "VALUES ('user', 'hi', 0, 'hi')"
        )
        connection.execute(
            "INSERT INTO message_fts (message_fts, rowid, search_text) VALUES ('delete', 1, 'hi')"
        )
    assert main([*base, "check", "--json"]) == 1
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert [p["check"] for p in problems] == ["keyword index"]
    assert main([*base, "check", "--repair"]) == 0
    assert "Repaired: Rebuilt the keyword index" in capsys.readouterr().out


def test_a_repair_killed_at_any_moment_leaves_the_profile_no_worse(profile_dir, embedder):
    import os
    import signal
    import subprocess
    import sys
    import time

    from engine import Mnemo

    with Mnemo.open(profile_dir, embedder=embedder) as m:
        for i in range(40):
            m.recall.add("user", f"Note {i}: the boiler was serviced.")
        m.archival.insert("The spare key is under the blue pot.")
        m.wait_for_background_work()
        with m.database.begin() as connection:  # two kinds of damage for the repair to fix
            connection.execute(text("DELETE FROM message_fts WHERE rowid IN (1, 2)"))
        m.recall_vectors.delete("id <= 10")
        before = {p.check for p in health.check(m)}
    assert before == {"keyword index", "message vectors"}
    command = [
        sys.executable,
        "-m",
        "engine.cli",
        "--profile",
        str(profile_dir),
        "check",
        "--repair",
    ]
    for delay in (0.5, 1.5, 2.5, 3.5):
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        with Mnemo.open(profile_dir, embedder=embedder) as m:
            m.wait_for_background_work()
            assert {p.check for p in health.check(m)} <= before  # nothing new went wrong
            assert (m.recall.count(), m.archival.count()) == (40, 1)  # nothing lost
    assert subprocess.run(command, capture_output=True).returncode == 0
    with Mnemo.open(profile_dir, embedder=embedder) as m:
        assert health.check(m) == []
