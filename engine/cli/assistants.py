"""`mnemo assistants …`: several assistants, each one a profile of its own."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from engine.assistants import Assistants
from engine.cli.output import confirmed, print_json
from engine.profile import data_folder

if TYPE_CHECKING:
    from engine.mnemo import Mnemo


def _assistants() -> Assistants:
    return Assistants(data_folder())


def cmd_list(_mnemo: Mnemo, args: argparse.Namespace) -> int:
    found = _assistants().all()
    if args.json:
        print_json(found)
        return 0
    for assistant in found:
        print(f"{'*' if assistant.current else ' '} {assistant.name}  ({assistant.path})")
    return 0


def cmd_create(_mnemo: Mnemo, args: argparse.Namespace) -> int:
    path = _assistants().create(args.name, args.persona)
    print(
        f"Created the assistant {args.name} ({path}); `mnemo assistants use {args.name}` to "
        "talk with it."
    )
    return 0


def cmd_use(_mnemo: Mnemo, args: argparse.Namespace) -> int:
    _assistants().use(args.name)
    print(f"{args.name} is the assistant in use from now on.")
    return 0


def cmd_rename(_mnemo: Mnemo, args: argparse.Namespace) -> int:
    _assistants().rename(args.name, args.new)
    print(f"Renamed {args.name} to {args.new}.")
    return 0


def cmd_duplicate(_mnemo: Mnemo, args: argparse.Namespace) -> int:
    _assistants().duplicate(args.name, args.new, memory=not args.persona_only)
    what = "its persona" if args.persona_only else "its whole memory"
    print(f"Copied {args.name} to {args.new}, with {what}.")
    return 0


def cmd_delete(_mnemo: Mnemo, args: argparse.Namespace) -> int:
    assistants = _assistants()
    assistants.path(args.name)  # says so when there is none
    question = f"Delete the assistant {args.name} and everything it remembers?"
    if not args.yes and not confirmed(question):
        print("Nothing changed.")
        return 1
    trash = assistants.delete(args.name)
    print(f"Deleted {args.name}; until you empty it, it waits in {trash}.")
    return 0
