"""The frozen app's entry point: the same ``mnemo`` command as ``uv run mnemo``."""

from desktop.launcher import run_and_exit

if __name__ == "__main__":
    run_and_exit()
