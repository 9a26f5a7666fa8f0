"""`mnemo status`, `mnemo memory ...` (core memory and the model's proposals) and
`mnemo settings`."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from engine import __version__
from engine.cli.chat import describe_proposal
from engine.cli.output import print_json, when
from engine.memory.core import DEFAULT_CHAR_LIMIT
from engine.modes import ModeChoice, choose_mode
from engine.server.wire import plain
from engine.text import one_line

if TYPE_CHECKING:
    from engine.mnemo import Mnemo
    from engine.settings import Settings


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
        print_json([{**plain(b), "room_left": b.room_left} for b in blocks])
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
        print_json(versions)
        return 0
    for version in versions:
        cause = " ".join(filter(None, (version.cause_kind, version.cause_ref)))
        cause = f" ({cause})" if cause else ""
        print(
            f"#{version.id} {when(version.created_at)} {version.action} by {version.author}{cause}"
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
        char_limit=DEFAULT_CHAR_LIMIT if args.limit is None else args.limit,
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
        print_json(proposals)
        return 0
    if not proposals:
        print("No memory changes are waiting for approval.")
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


def cmd_tidy(mnemo: Mnemo, args: argparse.Namespace) -> int:
    """Tidy memory: propose, approve the newest batch, or undo one of its changes."""
    from engine.agent.tidying import plan, propose

    if args.undo is not None:
        undone = mnemo.proposals.undo(args.undo)
        print(f"Undone: {undone.describe()}")
        return 0
    if args.approve:
        batch = mnemo.proposals.latest_batch()
        waiting = [p for p in mnemo.proposals.batch(batch or "") if p.status == "pending"]
        if not waiting:
            print("No tidy changes are waiting.")
            return 0
        for proposal in waiting:
            mnemo.proposals.approve(proposal.id)
        print(
            f"Approved {len(waiting)} tidy change{'s' * (len(waiting) != 1)}; undo one with "
            "`mnemo tidy --undo ID`."
        )
        return 0
    tidying = plan(mnemo)
    print(
        tidying.summary("Tidying would change your memory") if args.dry_run else tidying.summary()
    )
    if args.dry_run or not tidying:
        return 0
    batch = propose(mnemo, tidying)
    for proposal in mnemo.proposals.batch(batch or ""):
        if proposal.status == "pending":
            for line in describe_proposal(mnemo, proposal):
                print(line)
    print(
        "Nothing changed yet: approve them all with `mnemo tidy --approve`, or one by one with "
        "`mnemo memory approve ID`; undo an approved one with `mnemo tidy --undo ID`."
    )
    return 0


def cmd_memory_approve(mnemo: Mnemo, args: argparse.Namespace) -> int:
    proposal = mnemo.proposals.approve(args.id, args.text)
    if proposal.kind == "core":
        block = mnemo.core.block(proposal.label)
        print(
            f"Approved proposal {proposal.id}; {block.label} now has {len(block.value)} characters."
        )
    else:
        print(f"Approved proposal {proposal.id}; {proposal.target} updated.")
    return 0


def cmd_memory_reject(mnemo: Mnemo, args: argparse.Namespace) -> int:
    proposal = mnemo.proposals.reject(args.id)
    print(f"Rejected proposal {proposal.id}; {proposal.target} is unchanged.")
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


def configured_mode(settings: Settings) -> ModeChoice:
    """The mode the configured model will get, read without loading it."""
    if settings.get("model.backend") == "local":
        from engine.llm.catalog import local_mode  # llama.cpp only when it is needed

        return local_mode(settings.memory_mode, settings.get("model.path") or None)
    from engine.llm import model_settings
    from engine.llm.openai_api import server_on_this_computer

    config = model_settings(settings)
    here = config.asks_server and server_on_this_computer(config.base_url)
    return choose_mode(settings.memory_mode, None, server_on_this_computer=here)
