"""`mnemo export` and `mnemo import`: the whole memory in and out, as one archive."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from engine.exchange.archive import export_archive, import_archive, parse_since

if TYPE_CHECKING:
    from engine.mnemo import Mnemo


def _progress(what: str, done: int, total: int) -> None:
    if sys.stderr.isatty() and total:
        print(f"\r{what}: {done}/{total}", end="", file=sys.stderr, flush=True)


def cmd_export(mnemo: Mnemo, args: argparse.Namespace) -> int:
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
    report = import_archive(mnemo, args.path, progress=_progress)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(f"Imported {args.path.name}:")
    for line in report.lines():
        print(f"  {line}")
    if report.snapshot:
        print(f"Undo it with `mnemo snapshot restore {report.snapshot}`.")
    return 0
