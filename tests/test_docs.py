"""The README and docs/: the scripting examples and the shell commands run as written (on a
temporary profile), every link between them leads somewhere, and the README stays a front door."""

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SCRIPTING = ROOT / "docs" / "scripting.md"


def test_scripting_api_example_runs(tmp_path, capsys):
    blocks = re.findall(r"```python\n(.*?)```", SCRIPTING.read_text("utf-8"), re.S)
    assert blocks, "docs/scripting.md has no Python example"
    code = blocks[0].replace('"/path/to/profile"', repr(str(tmp_path / "profile")))
    exec(compile(code, "scripting.md", "exec"), {})
    out = capsys.readouterr().out
    assert "I moved to Lisbon" in out
    assert "showing" in out


def test_agent_example_runs(tmp_path, capsys):
    blocks = re.findall(r"```python\n(.*?)```", SCRIPTING.read_text("utf-8"), re.S)
    code = blocks[1].replace('"/path/to/profile"', repr(str(tmp_path / "profile")))
    exec(compile(code, "scripting.md", "exec"), {})
    out = capsys.readouterr().out
    assert "Nice to meet you, Ada!" in out
    assert "waiting for approval: add to human: 'Name: Ada.'" in out
    assert "Nice to meet you, Ada! 2 replied" in out
    assert out.rstrip().endswith("Name: Ada.")


def anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_every_link_between_the_readme_and_docs_leads_somewhere():
    pages = [README, *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        text = page.read_text("utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+://", target):
                continue  # a web address
            path, _, fragment = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif fragment and linked.suffix == ".md":
                headings = re.findall(r"^#+ (.+)$", linked.read_text("utf-8"), re.M)
                if fragment not in {anchor(h) for h in headings}:
                    broken.append(f"{page.name}: {target} (no such heading)")
    assert broken == []


def test_the_readme_is_a_front_door():
    assert len(README.read_text("utf-8").splitlines()) < 200


def test_the_command_line_reference_is_written_from_the_parsers():
    """`uv run python tests/cli_reference.py --write` after changing a command."""
    from tests.cli_reference import DOC, written

    assert DOC.read_text("utf-8") == written()


def test_every_benchmark_is_listed_with_its_command():
    listed = (ROOT / "docs" / "benchmarks.md").read_text("utf-8")
    helpers = {
        "_common",
        "conversation_people",
        "conversation_heldout",
        "conversation_fresh",
        "conversation_untold",
        "months_life",
        "paraphrases",
        "retrieval_folds",
    }
    missing = [
        path.name
        for path in (ROOT / "tests" / "benchmarks").glob("*.py")
        if path.stem not in helpers and f"uv run python tests/benchmarks/{path.name}" not in listed
    ]
    assert missing == []


def documented_commands() -> list[tuple[str, list[str]]]:
    """Every `mnemo` command line in the shell examples of the README and docs/, as the parser
    would get it: comments, optional parts (``[--json]``) and ``...`` left out."""
    found = []
    for page in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        for block in re.findall(r"```(?:sh|bash)\n(.*?)```", page.read_text("utf-8"), re.S):
            for line in block.replace("\\\n", " ").splitlines():  # continued lines joined
                match = re.match(r"(?:[A-Z_]+=\S+ )*(?:uv run )?mnemo(?= |$)(.*)", line.strip())
                if not match:
                    continue
                rest = re.sub(r"\s+#.*$", "", match[1]).replace("...", "")
                while re.search(r"\[[^\[\]]*\]", rest):
                    rest = re.sub(r"\s*\[[^\[\]]*\]", "", rest)
                found.append((f"{page.name}: {line.strip()}", shlex.split(rest)))
    return found


def test_every_documented_command_is_one_the_command_line_takes():
    from engine.cli.parsers import build_parser

    commands = documented_commands()
    assert len(commands) > 50
    refused = []
    for where, args in commands:
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                build_parser().parse_args(args)
        except SystemExit as exit_:
            if exit_.code:
                refused.append(where)
    assert refused == []


# Documented commands not run here, and why (each has tests of its own).
NOT_RUN = {
    "": "opens the window (tests/test_desktop.py)",
    "serve": "serves until stopped (tests/test_server.py and others)",
    "watch run": "watches until Ctrl-C (tests/test_watch.py)",
    "models download": "downloads from the internet (tests/test_download.py, a local server)",
}

# Documented commands whose names and numbers are examples: on a new profile they answer in words.
ANSWERS = {
    "memory approve 3": "There is no proposal 3.",
    "kg merge Ana Sousa Ana Souza": "knows no one and nothing called 'Ana Sousa'",
    "kg retract 12": "There is no fact 12",
    "forget my PIN is 4417": "holds nothing of",
    "forget --entity Jordan": "knows no one and nothing called 'Jordan'",
    "chat --model": "does not exist",
    "models use qwen3-4b-instruct-2507": "is not downloaded yet",
    "models use embeddinggemma-300m": "EmbeddingGemma 300M is not downloaded yet",
    "models use ~/models/other.gguf": "does not exist",
    "models remove qwen3-4b-instruct-2507": "There is no downloaded model named",
    "watch remove PATH": "is not a watched folder",
}


def test_every_documented_command_runs_as_written(tmp_path, monkeypatch, memory_keyring):
    """Each shell command of the README and docs/ runs, in the pages' order, on one new profile
    in a folder holding the files they name: it succeeds, or answers in words (never a
    traceback) where its names and numbers are examples."""
    import shutil

    import docx
    from fpdf import FPDF

    from engine.cli import main

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    notes = tmp_path / "home" / "Documents" / "notes"
    notes.mkdir(parents=True)
    (notes / "boiler.md").write_text("# Boiler\n\nThe boiler is serviced every October.\n")
    for name, text in (("report.pdf", "Sales grew in May."), ("letter.pdf", "Ana lives in Porto.")):
        pdf = FPDF()
        pdf.add_page()
        pdf.set_font("Helvetica", size=12)
        pdf.multi_cell(0, 8, text)
        pdf.output(str(tmp_path / name))
    lease = docx.Document()
    lease.add_paragraph("The lease ends in May.")
    lease.save(str(tmp_path / "lease.docx"))
    shutil.copy(ROOT / "tests" / "data" / "garden_helper.af", tmp_path / "agent.af")
    chatgpt = {
        "title": "Tea",
        "id": "t-1",
        "current_node": "b",
        "mapping": {
            "a": {"id": "a", "parent": None, "children": ["b"], "message": {
                "author": {"role": "user"}, "create_time": 1.7e9,
                "content": {"content_type": "text", "parts": ["I like green tea."]}}},
            "b": {"id": "b", "parent": "a", "children": [], "message": {
                "author": {"role": "assistant"}, "create_time": 1.7e9 + 5,
                "content": {"content_type": "text", "parts": ["Noted: green tea."]}}},
        },
    }  # fmt: skip
    (tmp_path / "conversations.json").write_text(json.dumps([chatgpt]), "utf-8")

    ran, not_run, answered, failed = 0, set(), set(), []
    for where, args in documented_commands():
        command = " ".join(args)
        skipped = next(
            (key for key in NOT_RUN if command.startswith(key) and (key or not args)), None
        )
        if skipped is not None:
            not_run.add(skipped)
            continue
        args = [os.path.expanduser(arg) for arg in args]
        if command.startswith("chat") and "--list" not in args:  # the model in its own process
            done = subprocess.run(
                [sys.executable, "-m", "engine.cli", *args],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=300,
            )
            code, out, err = done.returncode, io.StringIO(done.stdout), io.StringIO(done.stderr)
        else:
            typed = "sk-test-key\n" if command.startswith("keys set") else ""  # it asks for one
            monkeypatch.setattr("sys.stdin", io.StringIO(typed))
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(args)
        ran += 1
        answer = next((text for key, text in ANSWERS.items() if command.startswith(key)), None)
        if answer is not None:
            answered.add(answer)
            if code != 1 or answer not in out.getvalue() + err.getvalue():
                failed.append(f"{where}: exit {code}, {err.getvalue().strip()!r}")
        elif code != 0:
            failed.append(f"{where}: exit {code}, {err.getvalue().strip()!r}")
    assert failed == []
    assert not_run == set(NOT_RUN) and answered == set(ANSWERS.values())  # none stale
    assert ran > 50
