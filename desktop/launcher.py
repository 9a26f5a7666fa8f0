"""The ``mnemo`` command: with no command it opens the window, otherwise it is the CLI.

Qt is imported only when the window opens, so the command line starts as quickly as before.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from engine.startup import pause_collection

WINDOW_OPTIONS = ("--profile", "--server", "--assistant")  # desktop.app.run's own


def wants_window(argv: Sequence[str]) -> bool:
    """True for ``mnemo``, ``mnemo --profile PATH`` and ``mnemo --server URL [--assistant
    NAME]``: no command was given."""
    rest = list(argv)
    while rest:
        if rest[0] in WINDOW_OPTIONS:
            rest = rest[2:]
        elif rest[0].split("=", 1)[0] in WINDOW_OPTIONS and "=" in rest[0]:
            rest = rest[1:]
        else:
            break
    return not rest


def main(argv: Sequence[str] | None = None) -> int:
    pause_collection()  # until the profile is open (engine.cli) or the window ready (desktop.app)
    argv = sys.argv[1:] if argv is None else list(argv)
    if wants_window(argv):
        from desktop.app import run

        return run(argv)
    from engine.cli import main as cli_main

    return cli_main(argv)


def run_and_exit() -> None:
    """The console script: the window exits as usual; a command ends its process as soon as it
    returns (``engine.cli.exit_now``)."""
    argv = sys.argv[1:]
    if wants_window(argv):
        sys.exit(main(argv))
    from engine.cli import exit_now

    exit_now(main(argv))


if __name__ == "__main__":
    sys.exit(main())
