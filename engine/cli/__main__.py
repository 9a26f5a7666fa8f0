"""`python -m engine.cli`: the command line without the window's launcher."""

from engine.cli import exit_now, main

if __name__ == "__main__":
    exit_now(main())
