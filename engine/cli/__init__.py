"""The ``mnemo`` command line. Each command group has its module (``memory``, ``archival``,
``chat``, ``ingest``, ``models``, ``keys``, ``doctor``); this one builds the parser from them and
runs a command with one error path."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from engine import __version__
from engine.cli import archival, chat, doctor, ingest, keys, memory, models
from engine.errors import user_message
from engine.llm.base import safe_text
from engine.profile import log_to_profile


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mnemo", description="Mnemo: a local assistant that remembers."
    )
    parser.add_argument("--version", action="version", version=f"mnemo {__version__}")
    parser.add_argument(
        "--profile",
        metavar="PATH",
        help="profile folder (default: $MNEMO_HOME or your user data folder)",
    )
    parser.set_defaults(handler=memory.cmd_status)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    for group in (memory, chat, models, keys, doctor, ingest, archival):
        group.add_parsers(commands)
    return parser


def undecodable_argument(args: argparse.Namespace) -> str | None:
    """The first argument that is not valid UTF-8 (Python holds such bytes as lone surrogates,
    which nothing downstream can store), as a sentence; None when all are text. Files to ingest
    are left to the ingestor, which reports each badly named file on its own."""
    for name, value in vars(args).items():
        if name == "paths":
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and safe_text(item) != item:
                shown = item.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
                return (
                    f'the {name} "{shown}" is not valid UTF-8 text; set your terminal to UTF-8 '
                    "(for example LANG=C.UTF-8) and try again"
                )
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    problem = undecodable_argument(args)
    if problem:
        print(f"mnemo: {problem}", file=sys.stderr)
        return 2
    read_only = None
    try:
        from engine.mnemo import Mnemo  # the stores load only once a command runs

        with Mnemo.open(args.profile) as mnemo:
            read_only = mnemo.read_only
            log_to_profile(mnemo.profile)
            return int(args.handler(mnemo, args))
    except KeyboardInterrupt:
        print("mnemo: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        message = user_message(error, read_only)
        if message is None:
            raise  # a bug: the traceback is what helps
        print(f"mnemo: {message}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
