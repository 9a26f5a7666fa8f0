"""`mnemo serve`: the engine over HTTP, for several devices and several people.

``accounts`` holds the users and their tokens, ``hub`` the open assistants and the models they
share, ``app`` the HTTP API (FastAPI). The storage under it is each user's profile folders, as on
a desktop.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def default_root() -> Path:
    """The server's folder: ``$MNEMO_SERVER_ROOT``, else ``<user data dir>/mnemo/server``."""
    chosen = os.environ.get("MNEMO_SERVER_ROOT")
    if chosen:
        return Path(chosen).expanduser()
    return Path(platformdirs.user_data_dir("mnemo", appauthor=False)) / "server"
