"""docs/cli.md's reference part, written from the command line's own parsers, so it cannot drift
from them (tests/test_docs.py checks that it is current).

    uv run python tests/cli_reference.py --write     # rewrite the reference in docs/cli.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
MARKER = "<!-- The reference below is written by tests/cli_reference.py; do not edit it. -->"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if sub not in found.values():  # an alias names the same parser
                    found[name] = sub
    return found


def _help_of(parent: argparse.ArgumentParser, name: str) -> str:
    for action in parent._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if choice.dest == name:
                    return choice.help or ""
    return ""


def _section(path: list[str], parser: argparse.ArgumentParser, summary: str) -> list[str]:
    level = "#" * min(len(path) + 2, 5)  # under docs/cli.md's "## Reference"
    lines = [f"{level} `{' '.join(path)}`", ""]
    description = parser.description or summary
    if description:
        lines += [" ".join(description.split()), ""]
    usage = " ".join(parser.format_usage().removeprefix("usage: ").split())
    lines += ["```", usage, "```", ""]
    options = [
        action
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction | argparse._HelpAction)
    ]
    for action in options:
        names = ", ".join(action.option_strings) or action.metavar or action.dest
        if action.option_strings and action.nargs != 0:
            names += f" {action.metavar or action.dest.upper()}"
        text = " ".join((action.help or "").split()) % {"default": action.default}
        lines.append(f"- `{names}`" + (f": {text}" if text else ""))
    if options:
        lines.append("")
    for name, sub in _subcommands(parser).items():
        lines += _section([*path, name], sub, _help_of(parser, name))
    return lines


def reference() -> str:
    from engine.cli.parsers import build_parser

    return "\n".join(_section(["mnemo"], build_parser(), "")).rstrip() + "\n"


def written() -> str:
    """docs/cli.md with its reference part as the parsers say it now."""
    text = DOC.read_text("utf-8")
    head = text.split(MARKER)[0].rstrip()
    return f"{head}\n\n{MARKER}\n\n## Reference\n\n{reference()}"


if __name__ == "__main__":
    if "--write" in sys.argv:
        DOC.write_text(written(), "utf-8")
    else:
        print(reference(), end="")
