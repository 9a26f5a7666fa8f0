"""`mnemo export` and `mnemo import`: the whole memory in and out, as one archive."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from engine.exchange import import_file
from engine.exchange.archive import export_archive, parse_since
from engine.exchange.letta import export_agent_file

if TYPE_CHECKING:
    from engine.mnemo import Mnemo


def _progress(what: str, done: int, total: int) -> None:
    if sys.stderr.isatty():
        of = f"/{total}" if total else ""
        print(f"\r{what}: {done}{of}", end="", file=sys.stderr, flush=True)


def cmd_export(mnemo: Mnemo, args: argparse.Namespace) -> int:
    if args.format == "af":
        path = args.path if args.path.suffix else args.path.with_suffix(".af")
        count = export_agent_file(mnemo, path)
        print(f"Exported the core blocks and {count} messages as a Letta Agent File: {path}.")
        return 0
    since = parse_since(args.since) if args.since else None
    path = args.path if args.path.suffix else args.path.with_suffix(".mnemo")
    counts = export_archive(
        mnemo, path, vectors=not args.no_vectors, since=since, progress=_progress
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
    report = import_file(mnemo, args.path, progress=_progress)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(f"Imported {args.path.name}:")
    for line in report.lines():
        print(f"  {line}")
    if report.snapshot:
        print(f"Undo it with `mnemo snapshot restore {report.snapshot}`.")
    return 0
