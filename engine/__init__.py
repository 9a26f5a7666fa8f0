"""Mnemo's engine: memory, context management, models and the agent loop. Never imports Qt.

``from engine import Mnemo`` works as ever, but ``Mnemo`` (SQLite, SQLAlchemy, the stores) loads
only when it is first used, so that `mnemo --help` and the window's first paint do not wait for
it. The other heavy dependency, LanceDB, loads when a profile opens
(``engine.memory.vectors.lance``).
"""

import os
from typing import TYPE_CHECKING, Any

# Lance logs routine events ("dataset will be created") as warnings on stderr; only errors matter.
# Set before anything imports lancedb, which reads it once.
os.environ.setdefault("LANCEDB_LOG", "error")

from engine.errors import MnemoError  # noqa: E402 (after the environment is set)

if TYPE_CHECKING:
    from engine.mnemo import Mnemo

__all__ = ["Mnemo", "MnemoError"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "Mnemo":
        from engine.mnemo import Mnemo

        return Mnemo
    raise AttributeError(f"module 'engine' has no attribute {name!r}")
