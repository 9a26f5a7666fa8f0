"""Mnemo's engine: memory, context management, models and the agent loop. Never imports Qt."""

import os

# Lance logs routine events ("dataset will be created") as warnings on stderr; only errors matter.
# Set before anything imports lancedb, which reads it once.
os.environ.setdefault("LANCEDB_LOG", "error")

from engine.errors import MnemoError
from engine.mnemo import Mnemo

__all__ = ["Mnemo", "MnemoError"]
__version__ = "0.1.0"
