"""LanceDB, loaded the first time a profile's archival store is opened, and from here only.

Importing it cost about a second on this machine (``python -X importtime``: lancedb 0.98 s), of
which 0.55 s was the ``__init__`` of lance_namespace's generated REST client: it imports every
API module of a remote catalogue service that Mnemo never uses. LanceDB imports only the client's
models, so the package is registered without running its ``__init__``, which runs after all the
first time anything asks the package itself for a name (``_defer_package_init``). The
same is done for ``lancedb.embeddings`` (its embedding services), and on Python 3.11 LanceDB's
override decorator is made the plain one 3.12 gives it (``_plain_override_decorator``), and
the pydantic models it defines build their validators when first used.
`mnemo --help`, most commands and the window's first paint need none of LanceDB, so nothing
imports ``lancedb`` at module level: it is asked for here.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from engine import keys
from engine.errors import ProfileError

if TYPE_CHECKING:
    from engine.settings import Settings

REST_CLIENT = "lance_namespace_urllib3_client"


# What LanceDB's own modules ask of ``lancedb.embeddings`` (the package's names, and the module
# that defines each), so that its ``__init__`` need not run: it imports the classes of eighteen
# embedding services (Bedrock, Cohere, OpenAI...) that Mnemo never uses, 0.2 s of every start.
# Any other name asked of it runs the ``__init__`` after all.
EMBEDDINGS = "lancedb.embeddings"
EMBEDDING_NAMES = {
    "EmbeddingFunctionConfig": "base",
    "EmbeddingFunction": "base",
    "TextEmbeddingFunction": "base",
    "EmbeddingFunctionRegistry": "registry",
    "get_registry": "registry",
    "register": "registry",
}


@cache
def lancedb() -> ModuleType:
    _defer_package_init(REST_CLIENT, {})
    _defer_package_init(EMBEDDINGS, EMBEDDING_NAMES)
    _plain_override_decorator()
    with _pydantic_models_built_when_used():
        import lancedb
        import lancedb.index
        import lancedb.query

    return lancedb


@contextlib.contextmanager
def _pydantic_models_built_when_used() -> Iterator[None]:
    """LanceDB's import defines about 190 pydantic models for its namespace service's REST API,
    which Mnemo never calls. Made while it imports, each model builds its validator when first
    used instead (pydantic's ``defer_build``): 70 ms less of every start that opens a profile."""
    import pydantic

    config_dict = pydantic.ConfigDict

    def deferred(**options: Any) -> Any:
        return config_dict(**{"defer_build": True, **options})

    pydantic.ConfigDict = deferred  # type: ignore[misc,assignment]
    try:
        yield
    finally:
        pydantic.ConfigDict = config_dict  # type: ignore[misc]


def _plain_override_decorator() -> None:
    """On Python 3.12+ LanceDB marks its overriding methods with ``typing.override``, which only
    sets a flag; on 3.11 with the ``overrides`` package's decorator, which reads each base class's
    bytecode to check the signatures as the module loads: 0.3 s of every start, for a check of
    LanceDB's own code. Before LanceDB is imported, that decorator becomes 3.12's."""
    if sys.version_info >= (3, 12):
        return
    import overrides

    def override(method: Any = None, **_options: Any) -> Any:
        if method is None:  # @override(check_signature=...)
            return lambda decorated: override(decorated)
        with contextlib.suppress(AttributeError, TypeError):
            method.__override__ = True
        return method

    overrides.override = override


def _defer_package_init(name: str, known: dict[str, str]) -> None:
    """Register the package ``name`` without running its ``__init__``: its submodules import as
    usual, a name in ``known`` comes from the submodule it names, and the first other name asked
    of the package runs the ``__init__`` after all."""
    if name in sys.modules:
        return
    parent, _, _ = name.rpartition(".")
    if parent:  # found in its parent's folder without importing the parent (find_spec would)
        parent_spec = importlib.util.find_spec(parent)
        folders = parent_spec.submodule_search_locations if parent_spec is not None else None
        spec = importlib.machinery.PathFinder.find_spec(name, list(folders or []))
    else:
        spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        return
    loader = spec.loader
    package = importlib.util.module_from_spec(spec)  # __path__ set: its submodules import

    def on_first_use(attribute: str) -> object:
        if attribute in known:
            module = importlib.import_module(f"{name}.{known[attribute]}")
            return getattr(module, attribute)
        del package.__getattr__
        loader.exec_module(package)
        return getattr(package, attribute)

    package.__getattr__ = on_first_use  # type: ignore[method-assign]
    sys.modules[name] = package


def archival_location(folder: Path, settings: Settings) -> tuple[str, dict[str, str]]:
    """Where LanceDB keeps this profile's tables, and how to reach it: the profile's folder, or
    the ``storage.archival_url``, ``s3://bucket/prefix[?endpoint=URL&region=NAME]``, with the
    credentials from the keyring or the environment."""
    url = str(settings.get("storage.archival_url")).strip()
    if not url:
        return str(folder), {}
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc:
        raise ProfileError(
            f"Archival memory is set to {url!r}; it can live in the profile's folder (leave "
            "storage.archival_url empty) or in S3-compatible storage (s3://bucket/prefix)."
        )
    key_id, secret = keys.get_key("s3-key-id"), keys.get_key("s3-secret")
    if not key_id or not secret:
        raise ProfileError(
            f"Archival memory is in {parts.netloc}{parts.path}, and its credentials are not set: "
            "save them with `mnemo keys set s3-key-id` and `mnemo keys set s3-secret`, or set "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (they are never kept in the profile)."
        )
    query = parse_qs(parts.query)
    options = {
        "aws_access_key_id": key_id,
        "aws_secret_access_key": secret,
        "aws_region": query.get("region", ["us-east-1"])[0],
    }
    endpoint = query.get("endpoint", [""])[0]
    if endpoint:
        options["aws_endpoint"] = endpoint
        if endpoint.startswith("http://"):
            options["allow_http"] = "true"
    return f"s3://{parts.netloc}{parts.path.rstrip('/')}", options
