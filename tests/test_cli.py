"""The ``mnemo`` command line, run in-process and once through the installed console script."""

import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from engine import Mnemo
from engine.cli import main


@pytest.fixture
def run(profile_dir, capsys):
    def run_cli(*args: str) -> tuple[int, str, str]:
        code = main(["--profile", str(profile_dir), *args])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run_cli


def test_memory_show_set_history(run):
    assert run("memory", "set", "human", "Name: Ada")[0] == 0
    code, out, _ = run("memory", "show", "--json")
    blocks = {block["label"]: block for block in json.loads(out)}
    assert code == 0 and blocks["human"]["value"] == "Name: Ada"
    assert blocks["human"]["room_left"] == 2000 - len("Name: Ada")
    code, out, _ = run("memory", "show")
    assert "[human] 9/2000 chars" in out and "Name: Ada" in out
    code, out, _ = run("memory", "history", "human")
    assert "set by user (cli)" in out
    assert [v["action"] for v in json.loads(run("memory", "history", "human", "--json")[1])] == [
        "create",
        "set",
    ]
    assert run("memory", "undo", "human")[0] == 0
    assert "Nothing is known" in run("memory", "show")[1]


def test_errors_are_one_sentence_and_exit_non_zero(run):
    code, out, err = run("memory", "set", "nosuch", "text")
    assert code == 1 and out == ""
    assert err == "mnemo: There is no core memory block named 'nosuch'.\n"
    code, _, err = run("memory", "set", "human", "x" * 2001)
    assert code == 1 and "has 1964 left" in err and err.count("\n") == 1
    code, _, err = run("search", "recall", "x", "--since", "yesterday")
    assert code == 1 and "is not a date" in err


def test_a_question_to_a_closed_input_or_a_missing_file_is_a_sentence(run, monkeypatch, tmp_path):
    """A script that pipes nothing in, or names a file that is not there, gets words, not a
    traceback."""
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    code, _, err = run("keys", "set", "openai")
    assert code == 1 and err.endswith(
        "mnemo: the input ended before an answer was given; nothing was changed.\n"
    )
    code, _, err = run("kg", "extract", str(tmp_path / "letter.pdf"))
    assert code == 1 and err == f"mnemo: There is no file {tmp_path / 'letter.pdf'}.\n"


def test_search_recall_and_archival(run, profile_dir, embedder):
    with Mnemo.open(profile_dir, embedder=embedder) as m:
        m.recall.add("user", "My passport expires in March 2027")
    code, out, _ = run("archival", "insert", "The dentist is Dr. Okafor", "--tag", "health")
    assert code == 0
    code, out, _ = run("search", "recall", "passport expiry", "--json")
    assert json.loads(out)["hits"][0]["text"] == "My passport expires in March 2027"
    code, out, _ = run("search", "archival", "who is my dentist")
    assert "showing 1 of 1, page 1 of 1" in out and "Dr. Okafor" in out and "health" in out
    code, out, _ = run("search", "archival", "dentist", "--tag", "work", "--json")
    assert json.loads(out)["total"] == 0


def test_custom_block_add_and_remove(run):
    assert run("memory", "add", "projects", "Mnemo", "--limit", "500")[0] == 0
    assert "[projects] 5/500 chars" in run("memory", "show")[1]
    assert run("memory", "remove", "projects")[0] == 0
    code, _, err = run("memory", "remove", "human")
    assert code == 1 and "built in" in err


def test_console_script_runs_with_mnemo_home(tmp_path):
    script = shutil.which("mnemo", path=str(Path(sys.executable).parent))
    assert script, "the `mnemo` console script is not installed"
    env = {**os.environ, "MNEMO_HOME": str(tmp_path / "home")}
    result = subprocess.run(
        [script, "memory", "show", "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert {b["label"] for b in json.loads(result.stdout)} == {"persona", "human"}
    assert result.stderr == ""
    assert (tmp_path / "home" / "mnemo.sqlite").exists()


def test_a_locked_database_is_one_clear_sentence_and_nothing_changes(run, profile_dir, monkeypatch):
    from engine import db

    run("memory", "set", "human", "Name: Ada")
    monkeypatch.setattr(db, "BUSY_TIMEOUT_S", 0.2)
    blocker = sqlite3.connect(profile_dir / "mnemo.sqlite")
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        code, out, err = run("memory", "set", "human", "Name: Bob")
    finally:
        blocker.rollback()
        blocker.close()
    assert code == 1
    assert err.startswith("mnemo: The profile database is busy") and err.count("\n") == 1
    assert "Name: Ada" in run("memory", "show")[1]


def test_the_mnemo_command_ends_its_process_once_everything_is_kept(tmp_path):
    """The console script ends a command's process without the interpreter's teardown: what it
    wrote is on disk and on its output, and its exit status and errors are the command's (a
    chat's too, whose model loads ahead on a thread)."""
    mnemo = [str(Path(sys.executable).parent / "mnemo")]
    env = {**os.environ, "MNEMO_HOME": str(tmp_path / "profile")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*mnemo, *args], env=env, capture_output=True, text=True, timeout=300)

    assert run("archival", "insert", "The spare key is under the blue pot").returncode == 0
    listed = run("archival", "list")
    assert listed.returncode == 0 and "The spare key is under the blue pot" in listed.stdout
    refused = run("memory", "approve", "3")
    assert refused.returncode == 1 and "There is no proposal 3." in refused.stderr
    opened = run("chat", "--open", "nope", "-m", "Hello")
    assert opened.returncode == 1 and "There is no conversation 'nope'" in opened.stderr
    with Mnemo.open(tmp_path / "profile") as kept:
        assert kept.archival.count() == 1


def test_what_memory_holds_is_printed_without_anything_a_terminal_would_obey(tmp_path, capsys):
    """A message or a program's name holding escape sequences (OSC 52 sets the clipboard, CSI
    2J clears the screen) was printed raw by `search recall`, `chat --list` and
    `memory proposals`."""
    from engine.server.mcp_server import propose_client_edit

    osc52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
    clear = "\x1b[2J\x1b[H"
    profile = tmp_path / "profile"
    with Mnemo.open(profile) as mnemo:
        mnemo.recall.add("user", f"The boiler code is 5512{osc52}{clear} remember it.")
        propose_client_edit(mnemo, f"Evil{osc52}Client", "human", f"Likes tea{clear}.", None)
    for command in (
        ["search", "recall", "boiler code"],
        ["chat", "--list"],
        ["memory", "proposals"],
    ):
        assert main(["--profile", str(profile), *command]) == 0
        out = capsys.readouterr().out
        assert out.strip(), command
        assert "\x1b" not in out and "\x07" not in out, command
    assert main(["--profile", str(profile), "search", "recall", "boiler code"]) == 0
    assert "The boiler code is 5512" in capsys.readouterr().out


def test_bulk_work_runs_behind_the_persons_turns():
    """`behind_turns` lowers the priority of its own process only (run in a child: the test
    process keeps its own)."""
    code = (
        "import os; from engine.profile import behind_turns; "
        "before = os.nice(0); behind_turns(); print(before, os.nice(0))"
    )
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    from engine.profile import BULK_NICENESS

    before, after = map(int, child.stdout.split())
    assert after == min(before + BULK_NICENESS, 19)  # 19: the lowest priority there is
    assert os.getpriority(os.PRIO_PROCESS, 0) == before  # the test process kept its own
