"""The README and docs/: the scripting examples run as written (on a temporary profile), every
link between them leads somewhere, and the README stays a front door."""

import contextlib
import io
import re
import shlex
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
    helpers = {"_common", "conversation_people", "paraphrases", "retrieval_folds"}
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
