"""The ``mnemo`` command line. The parser is ``engine.cli.parsers`` (light: `mnemo --help`
answers at once); each command group's handlers are a module of their own in this package,
imported when one of its commands runs; this one runs a command with one error path."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NoReturn

from engine import moments
from engine.cli.output import safe_output
from engine.cli.parsers import build_parser
from engine.errors import user_message
from engine.llm.base import safe_text
from engine.profile import behind_turns, log_to_profile
from engine.startup import resume_collection

if TYPE_CHECKING:
    from engine.mnemo import Mnemo


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


def handler_of(args: argparse.Namespace) -> Callable[[Mnemo, argparse.Namespace], int]:
    """The function a command names ("group:function"), from its group's module."""
    group, function = str(args.handler).split(":")
    handler: Callable[[Mnemo, argparse.Namespace], int] = getattr(
        importlib.import_module(f"engine.cli.{group}"), function
    )
    return handler


BULK_COMMANDS = {"exchange:cmd_import", "ingest:cmd_ingest", "archival:cmd_reembed"}


def main(argv: Sequence[str] | None = None) -> int:
    moments.mark("started")
    args = build_parser().parse_args(argv)
    problem = undecodable_argument(args)
    if problem:
        print(f"mnemo: {problem}", file=sys.stderr)
        return 2
    read_only = None
    try:
        if getattr(args, "profileless", False):  # the server: it opens its users' profiles
            resume_collection()
            return int(handler_of(args)(None, args))  # type: ignore[arg-type]
        from engine.mnemo import Mnemo  # the stores load only once a command runs

        if args.handler in BULK_COMMANDS:
            behind_turns()  # before any thread starts: each inherits it

        on_settings = None
        if args.handler == "chat:cmd_chat":
            from engine.cli.model_ahead import load_model_ahead

            on_settings = load_model_ahead(args)
        try:
            with Mnemo.open(args.profile, on_settings=on_settings) as mnemo:
                moments.mark("opened")
                read_only = mnemo.read_only
                log_to_profile(mnemo.profile)
                try:
                    handler = handler_of(args)
                    resume_collection()  # the start is over
                    with safe_output():
                        return int(handler(mnemo, args))
                finally:
                    moments.mark("closing")
        finally:
            ahead = getattr(args, "model_ahead", None)
            if ahead is not None:  # what is said next must not go to its /dev/null
                ahead.wait()
            moments.mark("closed")
    except KeyboardInterrupt:
        print("mnemo: interrupted", file=sys.stderr)
        return 130
    except EOFError:  # a question asked of a closed input (a script, `< /dev/null`)
        print("mnemo: the input ended before an answer was given; nothing was changed.",
              file=sys.stderr)  # fmt: skip
        return 1
    except Exception as error:
        message = user_message(error, read_only)
        if message is None:
            raise  # a bug: the traceback is what helps
        print(f"mnemo: {message}", file=sys.stderr)
        return 1


def exit_now(code: int) -> NoReturn:
    """End the process as soon as a command has returned: by then it has closed its assistant
    (everything is on disk). The interpreter's teardown (collecting modules, llama.cpp's, ONNX
    Runtime's and LanceDB's destructors) only kept a person waiting, about 0.3 s after a
    `mnemo chat -m` reply (tests/benchmarks/felt_speed.py), and now and then aborted the process
    in a native destructor ("terminate called without an active exception") after the work was
    done."""
    logging.shutdown()  # the profile's log
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe: nothing more to say
            stream.flush()
    os._exit(code)
