"""LanceDB, loaded the first time a profile's archival store is opened, and from here only.

Importing it cost about a second on this machine (``python -X importtime``: lancedb 0.98 s), of
which 0.55 s was the ``__init__`` of lance_namespace's generated REST client: it imports every
API module of a remote catalogue service that Mnemo never uses. LanceDB imports only the client's
models, so the package is registered without running its ``__init__``, which runs after all the
first time anything asks the package itself for a name (``_defer_rest_client_init``).
`mnemo --help`, most commands and the window's first paint need none of LanceDB, so nothing
imports ``lancedb`` at module level: it is asked for here.
"""

from __future__ import annotations

import importlib.util
import sys
from functools import cache
from types import ModuleType

REST_CLIENT = "lance_namespace_urllib3_client"


@cache
def lancedb() -> ModuleType:
    _defer_rest_client_init()
    import lancedb
    import lancedb.index
    import lancedb.query

    return lancedb


def _defer_rest_client_init() -> None:
    if REST_CLIENT in sys.modules:
        return
    spec = importlib.util.find_spec(REST_CLIENT)
    if spec is None or spec.loader is None:
        return
    loader = spec.loader
    package = importlib.util.module_from_spec(spec)  # __path__ set: its submodules import

    def init_on_first_use(name: str) -> object:
        del package.__getattr__
        loader.exec_module(package)
        return getattr(package, name)

    package.__getattr__ = init_on_first_use  # type: ignore[method-assign]
    sys.modules[REST_CLIENT] = package
