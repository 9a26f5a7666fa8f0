"""Where a profile's files live.

One profile is one directory: ``mnemo.sqlite`` (recall, core memory, settings) and
``archival.lance/`` (archival passages and message vectors). The location is, in order of
precedence: an explicit path, ``$MNEMO_HOME``, or the platform's user data directory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from engine.errors import ProfileError

DEFAULT_PROFILE_NAME = "default"


def default_profile_dir() -> Path:
    """``$MNEMO_HOME`` when set, else ``<user data dir>/mnemo/profiles/default``."""
    home = os.environ.get("MNEMO_HOME")
    if home:
        return Path(home).expanduser()
    return (
        Path(platformdirs.user_data_dir("mnemo", appauthor=False))
        / "profiles"
        / (DEFAULT_PROFILE_NAME)
    )


@dataclass(frozen=True)
class Profile:
    """The paths of one assistant's profile."""

    root: Path

    @classmethod
    def resolve(cls, path: str | os.PathLike[str] | None = None) -> Profile:
        """Pick the profile directory and create it if it does not exist yet."""
        root = Path(path).expanduser() if path is not None else default_profile_dir()
        if root.exists() and not root.is_dir():
            raise ProfileError(
                f"The profile path {root} is a file, not a folder; choose a folder for the profile."
            )
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ProfileError(
                f"Cannot create the profile folder {root} ({error.strerror}); "
                "choose a folder you can write to, or set MNEMO_HOME."
            ) from error
        return cls(root.resolve())

    @property
    def database_path(self) -> Path:
        return self.root / "mnemo.sqlite"

    @property
    def archival_path(self) -> Path:
        return self.root / "archival.lance"

    @property
    def log_path(self) -> Path:
        return self.root / "logs" / "mnemo.log"

    @property
    def models_path(self) -> Path:
        """Where `mnemo models` looks for GGUF files besides the configured one."""
        return self.root / "models"
