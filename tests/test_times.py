"""Times that cannot be true never break memory: "99999999 days ago", "5000 years ago", a
``created_at`` of 9e18 in a Claude project or a `.mnemo` note, NaN, Infinity, text or ±1e18 in a
chat export. Each made date arithmetic raise: every later turn that recalled it failed, `search
archival` died, `mnemo tidy` crashed, and one bad time refused a whole export as "a bug" (1e11
was stored as the year 5138). They are left out as unknown, and the import says how many."""

from __future__ import annotations

import json
import math
import zipfile
from datetime import datetime

from engine import Mnemo, clock
from engine.agent import Agent
from engine.agent.tidying import plan
from engine.exchange.archive import export_archive, import_archive
from engine.exchange.chat_exports import import_conversations
from engine.llm import ScriptedModel
from engine.memory.extract import change_date
from engine.memory.search import from_timestamp

THIS_YEAR = clock.now().year


def held_years(mnemo: Mnemo) -> set[int]:
    """The years of every time memory holds: messages, passages, facts."""
    with mnemo.database.connect() as connection:
        stamps = [row[0] for row in connection.exec_driver_sql("SELECT created_at FROM message")]
        stamps += [
            row[0] for row in connection.exec_driver_sql("SELECT created_at FROM conversation")
        ]
    stamps += [row["created_at"] for row in mnemo.passage_vectors.rows(None, ["created_at"])]
    return {from_timestamp(stamp).year for stamp in stamps if stamp is not None}


def test_a_time_said_in_words_that_cannot_be_true_is_no_time(mnemo):
    today = clock.today()
    assert change_date("I moved to Lisbon 99999999 days ago", today) is None
    assert change_date("My sister moved to Porto 5000 years ago", today) is None
    assert change_date("I moved to Lisbon 3 days ago", today) is not None
    model = ScriptedModel(parameter_count=135_000_000, default="Okay.")
    agent = Agent(mnemo, model)
    for line in (
        "I moved to Lisbon 99999999 days ago.",
        "My sister moved to Porto 5000 years ago.",
        "Where do I live?",
        "Where does my sister live?",
    ):
        assert agent.send(line).reason == "replied", line
    mnemo.wait_for_background_work()
    assert mnemo.archival.search("Lisbon").hits is not None
    plan(mnemo)  # the tidy pass reads every note and fact
    assert held_years(mnemo) <= set(range(1900, THIS_YEAR + 2))


def test_an_absurd_time_in_an_archive_or_a_call_is_clamped_and_search_and_tidy_work(
    mnemo, tmp_path
):
    passage = mnemo.archival.insert("The boiler was serviced by Rui.", created_at=9e18)
    assert mnemo.archival.get(passage).created_at.year <= THIS_YEAR + 1
    export_archive(mnemo, tmp_path / "memory.mnemo", vectors=False)
    bad = tmp_path / "bad.mnemo"
    with zipfile.ZipFile(tmp_path / "memory.mnemo") as source, zipfile.ZipFile(bad, "w") as out:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename == "data/passage.jsonl":
                rows = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
                for row in rows:
                    row["created_at"] = 1e18
                data = "\n".join(json.dumps(row) for row in rows).encode() + b"\n"
            out.writestr(info, data)
    other = Mnemo.open(tmp_path / "other")
    try:
        import_archive(other, bad)
        assert other.archival.search("boiler").hits
        plan(other)
        assert held_years(other) <= set(range(1900, THIS_YEAR + 2))
    finally:
        other.close()


def test_one_bad_time_never_refuses_a_whole_chat_export(mnemo, tmp_path, real_files):
    conversations = json.loads((real_files / "chatgpt_2026" / "conversations-002.json").read_text())
    chosen = conversations[:6]
    bad_times = [math.nan, math.inf, "yesterday", 1e18, -1e18, 1e11]
    for conversation, bad in zip(chosen, bad_times, strict=True):
        conversation["create_time"] = bad
        for node in conversation["mapping"].values():
            if isinstance(node.get("message"), dict):
                node["message"]["create_time"] = bad
                break
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps(chosen), encoding="utf-8")  # NaN and Infinity as JSON writes them
    report = import_conversations(mnemo, export)
    assert report.added["messages"] > 0
    lines = "\n".join(report.lines())
    assert "times that could not be true" in lines
    assert held_years(mnemo) <= set(range(1900, THIS_YEAR + 2))  # 1e11 is no year 5138


def test_a_claude_project_from_the_year_300_billion_is_imported(mnemo, tmp_path, real_files):
    export = tmp_path / "claude"
    export.mkdir()
    (export / "conversations.json").write_text(
        (real_files / "claude" / "claude_example.json").read_text(), encoding="utf-8"
    )
    project = {
        "uuid": "p1",
        "name": "Garden plans",
        "description": "Raised beds for tomatoes and beans.",
        "created_at": 9e18,
        "docs": [{"filename": "beds.md", "content": "Two beds of cedar.", "created_at": 9e18}],
    }
    (export / "projects.json").write_text(json.dumps([project]), encoding="utf-8")
    report = import_conversations(mnemo, export / "conversations.json")
    assert report.added["messages"] > 0
    assert mnemo.archival.search("cedar beds").hits
    assert held_years(mnemo) <= set(range(1900, THIS_YEAR + 2))


def test_a_stored_time_out_of_range_reads_as_the_nearest_true_one():
    assert from_timestamp(1e18).year <= THIS_YEAR + 1
    assert from_timestamp(-1e18).year >= 1900
    assert from_timestamp(math.nan).year >= 1900
    assert isinstance(from_timestamp(0.0), datetime)
