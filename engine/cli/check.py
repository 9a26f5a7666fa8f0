"""`mnemo check [--repair]`: the health check (``engine.health``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from engine import health
from engine.cli.output import print_json

if TYPE_CHECKING:
    from engine.mnemo import Mnemo


def cmd_check(mnemo: Mnemo, args: argparse.Namespace) -> int:
    """Exit 0 when nothing is wrong (after the repair, with --repair), else 1."""
    done: list[str] = []
    if args.repair:
        done, problems = health.repair(mnemo)
    else:
        problems = health.check(mnemo, forgotten=True)
    if args.json:
        print_json({"repaired": done, "problems": problems})
        return 1 if problems else 0
    for line in done:
        print(f"Repaired: {line}")
    for problem in problems:
        fix = " (`mnemo check --repair` fixes it)" if problem.repairable and not args.repair else ""
        print(f"{problem.check}: {problem.sentence}{fix}")
    if not problems:
        print("No problems found: the database, its keyword index and the vectors agree.")
    return 1 if problems else 0
