"""LanceDB, loaded the first time a profile's archival store is opened, and from here only.

Importing it costs about a second on this machine (``python -X importtime``: lancedb 0.98 s, of
which 0.53 s is lance_namespace's generated HTTP client for remote catalogues, which Mnemo never
uses and cannot skip without patching LanceDB). `mnemo --help`, most commands and the window's
first paint need none of it, so nothing imports ``lancedb`` at module level: it is asked for here.
"""

from __future__ import annotations

from functools import cache
from types import ModuleType


@cache
def lancedb() -> ModuleType:
    import lancedb
    import lancedb.index
    import lancedb.query

    return lancedb
