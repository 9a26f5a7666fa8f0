"""The README's scripting example runs as written (on a temporary profile)."""

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_scripting_api_example_runs(tmp_path, capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text("utf-8"), re.S)
    assert blocks, "README has no Python example"
    code = blocks[0].replace('"/path/to/profile"', repr(str(tmp_path / "profile")))
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "I moved to Lisbon" in out
    assert "showing" in out


def test_agent_example_runs(tmp_path, capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text("utf-8"), re.S)
    code = blocks[1].replace('"/path/to/profile"', repr(str(tmp_path / "profile")))
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "Nice to meet you, Ada!" in out
    assert "waiting for approval: add to human: 'Name: Ada.'" in out
    assert "Nice to meet you, Ada! 2 replied" in out
    assert out.rstrip().endswith("Name: Ada.")
