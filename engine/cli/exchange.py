"""`mnemo export` and `mnemo import`: the whole memory in and out, as one archive."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

from engine.exchange import import_file
from engine.exchange.archive import export_archive, parse_since
from engine.exchange.letta import export_agent_file
from engine.exchange.unfinished import undo_unfinished
from engine.llm.download import duration

if TYPE_CHECKING:
    from engine.mnemo import Mnemo


LINE_EVERY_S = 5.0  # into a file or a pipe: a line this often, not a line per batch


class _Progress:
    """Where an import or export stands, on stderr: one line rewritten on a terminal, a line
    every ``LINE_EVERY_S`` otherwise (a log, a pipe), with the rate and, when the total is
    known, the time left."""

    def __init__(self) -> None:
        self._started = time.monotonic()
        self._said = 0.0

    def __call__(self, what: str, done: int, total: int) -> None:
        now = time.monotonic()
        terminal = sys.stderr.isatty()
        if not terminal and now - self._said < LINE_EVERY_S and done != total:
            return
        self._said = now
        elapsed = now - self._started
        line = f"{what}: {done:,}" + (f" of {total:,}" if total else "")
        if elapsed >= 1 and done:
            rate = done / elapsed
            line += f", {rate:,.0f} a second"
            if total > done:
                line += f", about {duration((total - done) / rate)} left"
        if terminal:
            print(f"\r{line}\033[K", end="", file=sys.stderr, flush=True)
        else:
            print(line, file=sys.stderr, flush=True)


def cmd_export(mnemo: Mnemo, args: argparse.Namespace) -> int:
    if args.format == "af":
        path = args.path if args.path.suffix else args.path.with_suffix(".af")
        count = export_agent_file(mnemo, path)
        print(f"Exported the core blocks and {count} messages as a Letta Agent File: {path}.")
        return 0
    since = parse_since(args.since) if args.since else None
    path = args.path if args.path.suffix else args.path.with_suffix(".mnemo")
    counts = export_archive(
        mnemo, path, vectors=not args.no_vectors, since=since, progress=_Progress()
    )
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(
        f"Exported {counts['message']} messages, {counts['passage']} passages, "
        f"{counts['core_block']} core blocks and {counts['relation']} facts to {path}."
    )
    print("Open it as a zip to read it: core/, conversations/ and passages/ are Markdown.")
    return 0


def cmd_import(mnemo: Mnemo, args: argparse.Namespace) -> int:
    if args.undo:
        undone = undo_unfinished(mnemo)
        if undone is None:
            print("No import was stopped halfway; there is nothing to undo.")
        else:
            print(f"Took out the {undone[1]:,} messages the stopped import of {undone[0]} brought.")
        return 0
    if args.path is None:
        print("Name the file to import (or --undo).", file=sys.stderr)
        return 2
    report = import_file(mnemo, args.path, progress=_Progress())
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(f"Imported {args.path.name}:")
    for line in report.lines():
        print(f"  {line}")
    if report.snapshot:
        print(f"Undo it with `mnemo snapshot restore {report.snapshot}`.")
    return 0
