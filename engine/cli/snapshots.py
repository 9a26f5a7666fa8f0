"""`mnemo snapshot ...`: take, list, restore and delete snapshots of the whole memory."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from engine.cli.output import confirmed, print_json

if TYPE_CHECKING:
    from engine.mnemo import Mnemo


def cmd_snapshot_create(mnemo: Mnemo, args: argparse.Namespace) -> int:
    snapshot = mnemo.snapshots.create(args.note)
    print(f"Snapshot {snapshot.describe()}")
    print(f"Bring it back with `mnemo snapshot restore {snapshot.id}`.")
    return 0


def cmd_snapshot_list(mnemo: Mnemo, args: argparse.Namespace) -> int:
    snapshots = mnemo.snapshots.all()
    if args.json:
        print_json(snapshots)
        return 0
    for snapshot in snapshots:
        print(snapshot.describe())
    if not snapshots:
        print("No snapshots yet; take one with `mnemo snapshot create --note TEXT`.")
    return 0


def cmd_snapshot_restore(mnemo: Mnemo, args: argparse.Namespace) -> int:
    snapshot = mnemo.snapshots.get(args.id)
    if not args.yes and not confirmed(
        f"Bring the whole memory back to {snapshot.describe()}? What changed since is kept "
        "in a snapshot taken first."
    ):
        print("Nothing changed.")
        return 1
    # Not under a running window or chat: they would go on showing, and writing over, the old.
    with mnemo.profile.hold_assistant("mnemo snapshot restore"):
        before = mnemo.snapshots.restore(snapshot.id)
    assert before is not None  # kept by default
    print(f"Restored {snapshot.id}. The state before it is snapshot {before.id}.")
    return 0


def cmd_snapshot_delete(mnemo: Mnemo, args: argparse.Namespace) -> int:
    mnemo.snapshots.delete(args.id)
    print(f"Deleted snapshot {args.id}.")
    return 0
