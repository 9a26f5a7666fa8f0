"""`mnemo forget`: a text, or one thing, removed from everywhere, after the person saw where."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, TextIO

from engine import forget
from engine.cli.output import confirmed
from engine.errors import InputError

if TYPE_CHECKING:
    from engine.mnemo import Mnemo

SHOWN_PER_KIND = 5


def cmd_forget(mnemo: Mnemo, args: argparse.Namespace) -> int:
    if args.list:
        return _list(mnemo)
    if args.lift is not None:
        stone = mnemo.tombstones.set_status(args.lift, "lifted")
        print(f"Lifted tombstone {stone.id} ({stone.what}): it may be stored again.")
        return 0
    plan = _plan(mnemo, args)
    if args.dry_run:
        show(plan, sys.stdout)
        print("Nothing was forgotten (--dry-run).")
        return 0
    return 0 if confirm_and_forget(mnemo, plan, input, sys.stdout, yes=args.yes) else 1


def confirm_and_forget(
    mnemo: Mnemo, plan: forget.ForgetPlan, ask: Callable[[str], str], out: TextIO, *, yes: bool
) -> bool:
    """Show where the text is, ask (unless ``yes``), forget; whether it was forgotten. The
    chat's "forget my passport number" comes here too: the model never forgets on its own."""
    if plan.empty:
        out.write(f"Mnemo holds nothing of {plan.what}; there is nothing to forget.\n")
        return False
    show(plan, out)
    if not yes:
        out.write("Forgetting cannot be undone: no snapshot or undo will bring it back.\n")
        if not confirmed("Forget all of this?", ask):
            out.write("Nothing was forgotten.\n")
            return False
    result = forget.forget(mnemo, plan)
    counts = ", ".join(f"{n} {kind}{'s' * (n != 1)}" for kind, n in result.forgotten.items())
    out.write(f"Forgotten: {plan.what} ({counts or 'the item'}).\n")
    if result.snapshots_rewritten:
        listed = ", ".join(result.snapshots_rewritten)
        out.write(f"Took it out of the snapshots that held it: {listed}.\n")
    for note in result.notes:
        out.write(note + "\n")
    out.write("Exports made before this still hold it; delete those files yourself.\n")
    return True


def _plan(mnemo: Mnemo, args: argparse.Namespace) -> forget.ForgetPlan:
    for kind in ("message", "passage", "fact", "conversation"):
        value = getattr(args, kind)
        if value is not None:
            if args.text:
                raise InputError(f"Give either a text or --{kind}, not both.")
            return forget.plan_item(mnemo, kind, value)
    if args.entity is not None:
        return forget.plan_entity(mnemo, args.entity)
    if not args.text:
        raise InputError(
            'Say what to forget: `mnemo forget "TEXT"`, or --message, --passage, --fact, '
            "--entity or --conversation."
        )
    return forget.plan_text(mnemo, args.text)


def show(plan: forget.ForgetPlan, out: TextIO) -> None:
    """The preview: every place, grouped by kind, a few of each with the text around it."""
    out.write(f"To forget {plan.what}:\n")
    kinds = plan.lines_by_kind()
    for kind, lines in kinds.items():
        out.write(f"  {len(lines)} {kind}{'s' * (len(lines) != 1)}:\n")
        for line in lines[:SHOWN_PER_KIND]:
            out.write(f"    {line}\n")
        if len(lines) > SHOWN_PER_KIND:
            out.write(f"    … and {len(lines) - SHOWN_PER_KIND} more\n")


def _list(mnemo: Mnemo) -> int:
    stones = sorted(mnemo.tombstones.all(), key=lambda stone: stone.created_at, reverse=True)
    if not stones:
        print("Nothing has been forgotten.")
        return 0
    for stone in stones:
        when = datetime.fromtimestamp(stone.created_at).strftime("%Y-%m-%d %H:%M")
        print(f"  {stone.id}  {when}  {stone.kind}: {stone.what}  [{stone.status}]")
    print("`mnemo forget --lift N` lets tombstone N's text be stored again.")
    if problem := mnemo.tombstones.key_problem():
        print(f"But {problem}", file=sys.stderr)
        return 1
    return 0
