"""The ``mnemo`` command: with no command it opens the window, otherwise it is the CLI.

Qt is imported only when the window opens, so the command line starts as quickly as before.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def wants_window(argv: Sequence[str]) -> bool:
    """True for ``mnemo`` and ``mnemo --profile PATH``: no command was given."""
    rest = list(argv)
    if rest[:1] == ["--profile"]:
        rest = rest[2:]
    elif rest[:1] and rest[0].startswith("--profile="):
        rest = rest[1:]
    return not rest


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if wants_window(argv):
        from desktop.app import run

        return run(argv)
    from engine.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
