"""The ``mnemo`` command line: chat, memory inspection and editing, search, settings."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, is_dataclass
from datetime import datetime
from typing import Any

from engine import __version__, cli_chat, cli_ingest, cli_models
from engine.cli_chat import describe_proposal
from engine.errors import user_message
from engine.llm.base import safe_text
from engine.memory.core import DEFAULT_CHAR_LIMIT
from engine.memory.search import hit_line
from engine.mnemo import Mnemo
from engine.modes import configured_mode
from engine.profile import log_to_profile
from engine.text import one_line


def _jsonable(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {key: _jsonable(item) for key, item in asdict(value).items()}
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    return value


def _print_json(value: Any) -> None:
    print(json.dumps(_jsonable(value), ensure_ascii=False, indent=2))


def _when(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M")


# -- commands ----------------------------------------------------------------------------------


def cmd_status(mnemo: Mnemo, _args: argparse.Namespace) -> int:
    blocks = mnemo.core.blocks()
    print(f"Mnemo {__version__}: profile at {mnemo.profile.root}")
    if mnemo.read_only:
        print(mnemo.read_only)
    print(
        f"Core memory: {len(blocks)} blocks ({', '.join(b.label for b in blocks)}); "
        f"recall: {mnemo.recall.count()} messages; archival: {mnemo.archival.count()} passages."
    )
    mode = configured_mode(mnemo.settings)
    print(f"Memory mode: {mode.label} ({mode.reason}).")
    pending = mnemo.proposals.pending()
    if pending:
        print(f"{len(pending)} core-memory edits wait for approval: `mnemo memory proposals`.")
    print("Open the window with `mnemo`, chat here with `mnemo chat`; `mnemo --help` lists more.")
    return 0


def cmd_memory_show(mnemo: Mnemo, args: argparse.Namespace) -> int:
    blocks = mnemo.core.blocks()
    if args.json:
        _print_json([{**_jsonable(b), "room_left": b.room_left} for b in blocks])
        return 0
    for block in blocks:
        flags = " read-only" if block.read_only else ""
        print(f"[{block.label}] {len(block.value)}/{block.char_limit} chars{flags}")
        if block.description:
            print(f"  ({block.description})")
        for line in block.value.splitlines() or [""]:
            print(f"  {line}")
        print()
    return 0


def cmd_memory_set(mnemo: Mnemo, args: argparse.Namespace) -> int:
    block = mnemo.core.set(args.label, args.text, author="user", cause_kind="cli")
    print(f"Saved {block.label}: {len(block.value)}/{block.char_limit} characters.")
    return 0


def cmd_memory_append(mnemo: Mnemo, args: argparse.Namespace) -> int:
    block = mnemo.core.append(args.label, args.text, author="user", cause_kind="cli")
    print(f"Saved {block.label}: {len(block.value)}/{block.char_limit} characters.")
    return 0


def cmd_memory_history(mnemo: Mnemo, args: argparse.Namespace) -> int:
    versions = mnemo.core.history(args.label)
    if args.json:
        _print_json(versions)
        return 0
    for version in versions:
        cause = " ".join(filter(None, (version.cause_kind, version.cause_ref)))
        cause = f" ({cause})" if cause else ""
        print(
            f"#{version.id} {_when(version.created_at)} {version.action} by {version.author}{cause}"
        )
        print(f"  now: {one_line(version.new_value or '(removed)', 100)}")
    return 0


def cmd_memory_undo(mnemo: Mnemo, args: argparse.Namespace) -> int:
    block = mnemo.core.undo(args.label, args.version)
    print(f"Restored {block.label}: {one_line(block.value, 100) or '(empty)'}")
    return 0


def cmd_memory_add(mnemo: Mnemo, args: argparse.Namespace) -> int:
    block = mnemo.core.add_block(
        args.label,
        args.text or "",
        description=args.description or "",
        char_limit=args.limit,
        read_only=args.read_only,
    )
    print(f"Added block {block.label} ({block.char_limit} characters at most).")
    return 0


def cmd_memory_remove(mnemo: Mnemo, args: argparse.Namespace) -> int:
    mnemo.core.remove_block(args.label)
    print(f"Removed block {args.label}; its history is kept.")
    return 0


def cmd_memory_proposals(mnemo: Mnemo, args: argparse.Namespace) -> int:
    proposals = mnemo.proposals.all() if args.all else mnemo.proposals.pending()
    if args.json:
        _print_json(proposals)
        return 0
    if not proposals:
        print("No core-memory edits are waiting for approval.")
        return 0
    for proposal in proposals:
        if proposal.status == "pending":
            for line in describe_proposal(mnemo, proposal):
                print(line)
        else:
            print(f"Proposal {proposal.id} ({proposal.status}): {proposal.describe()}")
    if not args.all:
        print(
            "Approve with `mnemo memory approve ID` (--text to edit), or `mnemo memory reject ID`."
        )
    return 0


def cmd_memory_approve(mnemo: Mnemo, args: argparse.Namespace) -> int:
    proposal = mnemo.proposals.approve(args.id, args.text)
    block = mnemo.core.block(proposal.label)
    print(f"Approved proposal {proposal.id}; {block.label} now has {len(block.value)} characters.")
    return 0


def cmd_memory_reject(mnemo: Mnemo, args: argparse.Namespace) -> int:
    proposal = mnemo.proposals.reject(args.id)
    print(f"Rejected proposal {proposal.id}; {proposal.label} is unchanged.")
    return 0


def cmd_settings(mnemo: Mnemo, args: argparse.Namespace) -> int:
    if args.key is None:
        for key, value in mnemo.settings.all().items():
            print(f"{key} = {json.dumps(value)}")
        return 0
    if args.value is None:
        print(json.dumps(mnemo.settings.get(args.key)))
        return 0
    value = mnemo.settings.set(args.key, args.value)
    print(f"{args.key} = {json.dumps(value)}")
    return 0


def cmd_search(mnemo: Mnemo, args: argparse.Namespace) -> int:
    if args.store == "recall":
        page: Any = mnemo.recall.search(
            args.query, args.limit, args.page, mode=args.mode, start=args.since, end=args.until
        )
    else:
        page = mnemo.archival.search(
            args.query,
            args.limit,
            args.page,
            mode=args.mode,
            tags=args.tag or None,
            source=args.source,
            start=args.since,
            end=args.until,
        )
    if args.json:
        _print_json(
            {
                "total": page.total,
                "page": page.page,
                "pages": page.pages,
                "notes": page.notes,
                "hits": page.hits,
            }
        )
        return 0
    for note in page.notes:
        print(f"note: {note}")
    print(page.describe())
    for hit in page:
        text = hit_line(hit.text, args.query, 100, hit.weak)
        if args.store == "recall":
            print(f"  [{hit.id}] {_when(hit.created_at)} {hit.role}: {text}")
        else:
            print(f"  [{hit.id}] {text}")
            print(f"      from {hit.source.describe()}; tags: {', '.join(hit.tags) or '-'}")
    return 0


def cmd_archival_insert(mnemo: Mnemo, args: argparse.Namespace) -> int:
    passage_id = mnemo.archival.insert(args.text, tags=args.tag or [], origin="user")
    print(f"Stored passage {passage_id}.")
    return 0


def cmd_archival_delete(mnemo: Mnemo, args: argparse.Namespace) -> int:
    mnemo.archival.delete(args.id)
    print(f"Deleted passage {args.id}.")
    return 0


def cmd_archival_list(mnemo: Mnemo, args: argparse.Namespace) -> int:
    passages = (
        mnemo.archival.list_by_source(args.source)
        if args.source
        else mnemo.archival.recent(args.limit)
    )
    if args.json:
        _print_json(passages)
        return 0
    for passage in passages:
        print(f"[{passage.id}] {_when(passage.created_at)} {one_line(passage.text, 100)}")
    return 0


def cmd_reembed(mnemo: Mnemo, args: argparse.Namespace) -> int:
    mismatch = mnemo.embedder_mismatch
    if not mismatch:
        print("Memory already uses the current embedder; nothing to do.")
        return 0
    print(mismatch)
    if not args.yes:
        total = mnemo.archival.count() + mnemo.recall.count()
        answer = input(f"Re-embed up to {total} passages and messages now? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("Nothing changed.")
            return 1
    count = mnemo.reembed(lambda name, done, total: print(f"\r{name}: {done}/{total}", end=""))
    print(f"\nRe-embedded {count} items.")
    return 0


# -- parser ------------------------------------------------------------------------------------


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
    parser.set_defaults(handler=cmd_status)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    status = commands.add_parser("status", help="the profile in one glance")
    status.set_defaults(handler=cmd_status)

    memory = commands.add_parser("memory", help="show and edit core memory")
    memory.set_defaults(handler=cmd_memory_show, json=False)
    memory_commands = memory.add_subparsers(metavar="ACTION")
    show = memory_commands.add_parser("show", help="print every block")
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=cmd_memory_show)
    set_ = memory_commands.add_parser("set", help="replace a block's text")
    set_.add_argument("label")
    set_.add_argument("text")
    set_.set_defaults(handler=cmd_memory_set)
    append = memory_commands.add_parser("append", help="add a line to a block")
    append.add_argument("label")
    append.add_argument("text")
    append.set_defaults(handler=cmd_memory_append)
    history = memory_commands.add_parser("history", help="list a block's changes")
    history.add_argument("label")
    history.add_argument("--json", action="store_true")
    history.set_defaults(handler=cmd_memory_history)
    undo = memory_commands.add_parser("undo", help="undo a block's latest (or a given) change")
    undo.add_argument("label")
    undo.add_argument("--version", type=int, help="the change to undo (from `history`)")
    undo.set_defaults(handler=cmd_memory_undo)
    add = memory_commands.add_parser("add", help="add a custom block")
    add.add_argument("label")
    add.add_argument("text", nargs="?")
    add.add_argument("--description")
    add.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_CHAR_LIMIT,
        help=f"character limit (default {DEFAULT_CHAR_LIMIT})",
    )
    add.add_argument("--read-only", action="store_true")
    add.set_defaults(handler=cmd_memory_add)
    remove = memory_commands.add_parser("remove", help="remove a custom block")
    remove.add_argument("label")
    remove.set_defaults(handler=cmd_memory_remove)
    proposals = memory_commands.add_parser(
        "proposals", help="list the model's core-memory edits waiting for approval"
    )
    proposals.add_argument("--all", action="store_true", help="include decided ones")
    proposals.add_argument("--json", action="store_true")
    proposals.set_defaults(handler=cmd_memory_proposals)
    approve = memory_commands.add_parser("approve", help="apply a proposed edit")
    approve.add_argument("id", type=int)
    approve.add_argument("--text", help="apply this text instead of the proposed one")
    approve.set_defaults(handler=cmd_memory_approve)
    reject = memory_commands.add_parser("reject", help="discard a proposed edit")
    reject.add_argument("id", type=int)
    reject.set_defaults(handler=cmd_memory_reject)

    settings = commands.add_parser("settings", help="show or change settings")
    settings.add_argument("key", nargs="?", help="e.g. memory.core_write_policy")
    settings.add_argument("value", nargs="?", help="the new value")
    settings.set_defaults(handler=cmd_settings)

    cli_chat.add_parser(commands)
    cli_models.add_parsers(commands)
    cli_ingest.add_parsers(commands)

    search = commands.add_parser("search", help="search recall or archival memory")
    search.add_argument("store", choices=["recall", "archival"])
    search.add_argument("query")
    search.add_argument("--json", action="store_true")
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--page", type=int, default=1)
    search.add_argument("--mode", choices=["hybrid", "keyword", "semantic"], default="hybrid")
    search.add_argument("--since", metavar="DATE", help="only items from this date (YYYY-MM-DD)")
    search.add_argument("--until", metavar="DATE", help="only items up to this date")
    search.add_argument("--tag", action="append", help="archival: only passages with this tag")
    search.add_argument("--source", help="archival: only passages from this file or folder")
    search.set_defaults(handler=cmd_search)

    archival = commands.add_parser("archival", help="add, list and delete archival passages")
    archival_commands = archival.add_subparsers(metavar="ACTION", required=True)
    insert = archival_commands.add_parser("insert", help="store a passage")
    insert.add_argument("text")
    insert.add_argument("--tag", action="append")
    insert.set_defaults(handler=cmd_archival_insert)
    delete = archival_commands.add_parser("delete", help="delete a passage by id")
    delete.add_argument("id")
    delete.set_defaults(handler=cmd_archival_delete)
    list_ = archival_commands.add_parser("list", help="list recent passages")
    list_.add_argument("--limit", type=int, default=20)
    list_.add_argument("--source", help="list the passages of one file, in order")
    list_.add_argument("--json", action="store_true")
    list_.set_defaults(handler=cmd_archival_list)

    reembed = commands.add_parser("reembed", help="re-embed archival memory after a model change")
    reembed.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    reembed.set_defaults(handler=cmd_reembed)
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
