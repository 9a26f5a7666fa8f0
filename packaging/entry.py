"""The frozen app's entry point: the same ``mnemo`` command as ``uv run mnemo``."""

import sys

from desktop.launcher import main

if __name__ == "__main__":
    sys.exit(main())
