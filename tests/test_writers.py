"""Several writers on one profile at once: a chat, a second process, forgets, an import; one of
them killed. Nothing acknowledged is lost or doubled, nothing forgotten stays, the profile stays
whole, and no writer is told "database is locked". (tests/benchmarks/writers.py runs the same
for minutes, with more writers.)"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from sqlalchemy import text

from engine import Mnemo, forget, health
from engine.db import NestedWriteError, ReadThenWriteError, writing
from engine.errors import VectorTableDamagedError

ROOT = Path(__file__).resolve().parents[1]


def start_writer(kind: str, profile: Path, seconds: float, log: Path) -> subprocess.Popen:
    """``tests/profile_writer.py`` in a process of its own."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.profile_writer", kind, str(profile), str(seconds), str(log)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )


def wait_open(process: subprocess.Popen) -> None:
    """Until the writer process has opened the profile (it says so)."""
    assert process.stdout is not None and process.stdout.readline().strip() == "open"


def acknowledged(log: Path) -> tuple[list[str], list[str]]:
    """The texts a writer process was told are stored, and the errors it saw."""
    texts, errors = [], []
    if log.exists():
        for line in log.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:  # the line a kill cut short was never acknowledged
                continue
            if "error" in entry:
                errors.append(entry["error"])
            else:
                texts.append(entry["text"])
    return texts, errors


def held_in(folder: Path, needle: str) -> list[str]:
    return [
        str(path.relative_to(folder))
        for path in folder.rglob("*")
        if path.is_file() and needle.encode() in path.read_bytes()
    ]


def copies(mnemo: Mnemo, texts: list[str]) -> dict[str, int]:
    """How many messages hold each text exactly."""
    with mnemo.database.connect() as connection:
        counted = dict(
            connection.execute(text("SELECT text, count(*) FROM message GROUP BY text")).all()
        )
    return {item: counted.get(item, 0) for item in texts}


class ChatWriter(threading.Thread):
    """The chat, in this process: adds messages back to back, keeping what it was told and
    every error it saw."""

    def __init__(self, mnemo: Mnemo) -> None:
        super().__init__()
        self.mnemo = mnemo
        self.stop = threading.Event()
        self.texts: list[str] = []
        self.errors: list[str] = []

    def run(self) -> None:
        while not self.stop.is_set():
            message = f"Chat message {len(self.texts)} about the shed {uuid.uuid4().hex[:6]}."
            try:
                self.mnemo.recall.add("user", message)
                self.texts.append(message)
            except Exception as error:  # noqa: BLE001 (the test fails on any)
                self.errors.append(f"{type(error).__name__}: {error}")


def test_a_chat_a_second_process_and_forgets_lose_nothing_and_leave_the_profile_whole(
    tmp_path, embedder
):
    rng = random.Random(72)
    profile = tmp_path / "profile"
    mnemo = Mnemo.open(profile, embedder=embedder)
    for number in range(30):
        mnemo.recall.add("user", f"Earlier message {number}: apples and pears in the orchard.")
    mnemo.wait_for_background_work()
    log = tmp_path / "other.jsonl"
    other = start_writer("messages", profile, 120, log)
    wait_open(other)
    chat = ChatWriter(mnemo)
    chat.start()
    # The other process is killed mid-write, after some seeded number of its writes (counted,
    # not timed: a busy machine writes fewer in a second), and the forgets go on after it.
    kill_after = rng.randint(20, 40)
    tokens: list[str] = []
    after_the_kill = 0
    try:
        while other.poll() is None or after_the_kill < 2:
            token = f"zq{uuid.uuid4().hex[:8]}"
            mnemo.recall.add("user", f"My locker code is {token} today.")
            forget.forget(mnemo, forget.plan_text(mnemo, token))
            tokens.append(token)
            if other.poll() is not None:
                after_the_kill += 1
            elif len(acknowledged(log)[0]) >= kill_after:
                other.send_signal(signal.SIGKILL)
                other.wait()
    finally:
        chat.stop.set()
        chat.join()
        if other.poll() is None:
            other.send_signal(signal.SIGKILL)
        other.wait()
    mnemo.close()

    others, other_errors = acknowledged(log)
    assert chat.errors == [] and other_errors == []
    assert chat.texts and len(others) >= 20
    reopened = Mnemo.open(profile, embedder=embedder)
    try:
        reopened.wait_for_background_work()  # what the killed process had not embedded yet
        counts = copies(reopened, chat.texts + others)
        assert {item: n for item, n in counts.items() if n != 1} == {}
        assert health.check(reopened, forgotten=True) == []
        assert reopened.recall.search("garden shed roof", limit=3).hits
    finally:
        reopened.close()
    for token in tokens:
        assert held_in(profile, token) == []


def test_a_forget_beside_an_import_leaves_the_imports_snapshot_for_its_undo(
    tmp_path, embedder, real_files
):
    """The import's snapshot holds the text too: the forget takes it out of it, and keeps it
    for the import's undo (it deleted it before, and the import then named a snapshot that was
    gone)."""
    profile = tmp_path / "profile"
    mnemo = Mnemo.open(profile, embedder=embedder)
    token = "zqlocker4471"
    mnemo.recall.add("user", f"My locker code is {token}, remember it.")
    errors: list[BaseException] = []
    reports = []

    def importing() -> None:
        from engine.exchange.chat_exports import import_conversations

        try:
            reports.append(
                import_conversations(mnemo, real_files / "claude" / "claude_example.json")
            )
        except BaseException as error:  # noqa: BLE001 (the test fails on any)
            errors.append(error)

    importer = threading.Thread(target=importing)
    importer.start()
    deadline = time.monotonic() + 60
    while not mnemo.snapshots.all() and time.monotonic() < deadline:
        time.sleep(0.05)
    plan = forget.plan_text(mnemo, token)
    assert plan.snapshots  # the import's snapshot holds the text
    result = forget.forget(mnemo, plan)
    importer.join()
    assert errors == []
    snapshot = reports[0].snapshot
    assert snapshot is not None and result.snapshots_rewritten == [snapshot]
    assert mnemo.snapshots.get(snapshot).needed_by is None  # the import is over
    assert held_in(profile, token) == []
    mnemo.snapshots.restore(snapshot, keep_current=False)  # its undo, as the report says
    mnemo.close()
    reopened = Mnemo.open(profile, embedder=embedder)
    try:
        reopened.wait_for_background_work()
        assert reopened.recall.count() == 1  # the message, as it was before the import
        assert token not in reopened.recall.recent(5)[0].text
        assert health.check(reopened) == []
    finally:
        reopened.close()


def test_a_lost_vector_file_leaves_words_searching_and_the_repair_rebuilds_it(tmp_path, embedder):
    profile = tmp_path / "profile"
    mnemo = Mnemo.open(profile, embedder=embedder)
    for number in range(12):
        mnemo.recall.add("user", f"Message {number}: the heron fishes by the old mill pond.")
    mnemo.wait_for_background_work()
    mnemo.close()
    for data in (profile / "archival.lance" / "recall_vectors.lance" / "data").glob("*"):
        data.unlink()  # a disk fault

    mnemo = Mnemo.open(profile, embedder=embedder)
    try:
        mnemo.wait_for_background_work()
        found = mnemo.recall.search("heron mill pond", limit=3)
        assert found.hits and any("cannot be read" in note for note in found.notes)
        with pytest.raises(VectorTableDamagedError):
            mnemo.recall.search("heron", mode="semantic")
        problems = health.check(mnemo)
        assert [problem.check for problem in problems] == ["message vectors"]
        done, left = health.repair(mnemo)
        assert left == [] and any("Rebuilt" in line for line in done)
        assert mnemo.recall.search("a bird catching fish", mode="semantic", limit=3).hits
    finally:
        mnemo.close()


def test_a_read_that_turns_into_a_write_and_a_second_write_in_one_thread_are_refused(mnemo):
    """SQLite answers "database is locked" at once, without waiting its turn, to a transaction
    that read before it wrote while another wrote between: every write begins as one."""
    with (  # the tests set MNEMO_STRICT_WRITES
        pytest.raises(ReadThenWriteError),
        mnemo.database.begin() as connection,
    ):
        connection.execute(text("SELECT count(*) FROM message")).scalar()
        connection.execute(text("DELETE FROM message WHERE id = -1"))
    with writing(mnemo.database).begin() as connection:  # the same, begun as a write
        connection.execute(text("SELECT count(*) FROM message")).scalar()
        connection.execute(text("DELETE FROM message WHERE id = -1"))
    with (  # it would wait for itself until the busy timeout
        pytest.raises(NestedWriteError),
        writing(mnemo.database).begin() as outer,
    ):
        outer.execute(text("DELETE FROM message WHERE id = -1"))
        mnemo.recall.add("user", "A message from inside another write.")


def test_writes_wait_their_turn_in_another_process_instead_of_failing(tmp_path, embedder):
    """A second process holding SQLite's write lock for a while: this one's writes wait for
    it (the busy timeout), where a read-then-write failed at once."""
    profile = tmp_path / "profile"
    mnemo = Mnemo.open(profile, embedder=embedder)
    mnemo.recall.add("user", "First.")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            f"c = sqlite3.connect({str(profile / 'mnemo.sqlite')!r}, isolation_level=None)\n"
            "c.execute('BEGIN IMMEDIATE'); print('held', flush=True); time.sleep(2)\n"
            "c.execute('COMMIT')\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        mnemo.recall.add("user", "Second, while the other holds the lock.")
        mnemo.knowledge.add("user", "lives in", "Porto")
        assert time.monotonic() - started > 1.0  # it waited
    finally:
        holder.wait()
        mnemo.close()


def test_a_commit_that_conflicts_with_another_writers_is_tried_again(mnemo, monkeypatch):
    """A writer that does not take the lock (an older Mnemo) may still commit between: Lance
    then says "Retryable commit conflict", and the write is made again on the newest version."""
    table = mnemo.passage_vectors
    real_add = table.table.add
    conflicts = []

    def add_after_a_conflict(rows, *args, **kwargs):
        if not conflicts:
            conflicts.append(1)
            raise RuntimeError("lance error: Retryable commit conflict for version 7")
        return real_add(rows, *args, **kwargs)

    monkeypatch.setattr(table.table, "add", add_after_a_conflict)
    passage = mnemo.archival.insert("The boiler was serviced on 3 March.")
    assert conflicts and mnemo.archival.get(passage).text.startswith("The boiler")
    assert table.count(f"id = '{passage}'") == 1


def cli(profile: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "engine.cli", "--profile", str(profile), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_one_command_after_another_finds_what_the_first_wrote(tmp_path, real_files):
    """Each command's writes are whole and readable when it exits: an import and then a
    search, two forgets and then a search of what was not forgotten."""
    export = tmp_path / "conversations.json"
    whole = json.loads((real_files / "chatgpt_2026" / "conversations-002.json").read_text())
    export.write_text(json.dumps(whole[:5]), encoding="utf-8")
    profile = tmp_path / "profile"
    cli(profile, "import", str(export))
    assert "showing 0 of 0" not in cli(profile, "search", "recall", "bebé meses")
    cli(profile, "archival", "insert", "The lighthouse keeper painted the boat blue.")
    for secret in ("zqalpha1", "zqbeta2"):
        cli(profile, "archival", "insert", f"The shed key code is {secret}.")
    for secret in ("zqalpha1", "zqbeta2"):
        cli(profile, "forget", secret, "--yes")
    found = cli(profile, "search", "archival", "lighthouse keeper")
    assert "painted the boat blue" in found
    assert held_in(profile, "zqalpha1") == held_in(profile, "zqbeta2") == []


def test_six_writers_at_once_one_killed_now_and_then_lose_nothing(tmp_path):
    """The chat, an import, forgets, the tidy pass, an MCP client's notes and a second process,
    all at once on one profile, with kill -9s (tests/benchmarks/writers.py, for half a minute)."""
    from tests.benchmarks.writers import stress

    result = stress(tmp_path, seconds=40, seed=72, kill_every=10)
    assert result["kills"] >= 2
    assert result["messages_acknowledged"] > 50 and result["notes_acknowledged"] > 5
    assert result["forgets"] >= 1
    failures = ("lost", "doubled", "forgotten_held", "locked", "conflicts", "errors")
    assert {name: result[name] for name in failures} == dict.fromkeys(failures, 0), result
    assert result["check"] == "clean" and result["searchable"]


def test_a_snapshot_taken_while_a_forget_runs_keeps_no_byte_of_the_text(
    tmp_path, embedder, monkeypatch
):
    """Another program took a snapshot (an import's) after the forget changed the rows and
    before it merged the keyword index: the copy's rows were clean, so it was not rewritten,
    and its index still held the words (seen in 1 of 3 ten-minute runs of writers.py)."""
    import engine.forget

    profile = tmp_path / "profile"
    mnemo = Mnemo.open(profile, embedder=embedder)
    try:
        for number in range(20):
            mnemo.recall.add("user", f"Message {number} about the allotment and its beans.")
        mnemo.recall.add("user", "The gate code is zq7730491, don't tell anyone.")
        real_scrub = engine.forget.scrub

        def scrub_as_another_program_snapshots(stores):
            stores.snapshots.create("taken by an import meanwhile", automatic=True)
            return real_scrub(stores)

        monkeypatch.setattr(engine.forget, "scrub", scrub_as_another_program_snapshots)
        forget.forget(mnemo, forget.plan_text(mnemo, "zq7730491"))
        assert len(mnemo.snapshots.all()) == 1
        assert held_in(profile, "zq7730491") == []
    finally:
        mnemo.close()
