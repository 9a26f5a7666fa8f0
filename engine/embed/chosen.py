"""Which embedder a profile uses: the GGUF file its ``models.embedder`` setting names, else the
bundled MiniLM."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from engine.embed.base import Embedder
from engine.embed.minilm import default_embedder
from engine.errors import ModelError

log = logging.getLogger("mnemo.embed")

_loaded: dict[Path, Embedder] = {}
_loaded_lock = threading.Lock()


def embedder_for(path: str, *, strict: bool = False) -> Embedder:
    """The embedder at ``path`` (a GGUF file, loaded once per process), or the bundled one for an
    empty path. A file that is gone or cannot be loaded raises ``ModelError`` when ``strict`` (a
    person choosing it); otherwise the bundled one stands in and the searches say that the stored
    vectors are another embedder's, so that an assistant whose file was moved still opens."""
    if not path:
        return default_embedder()
    file = Path(path).expanduser().resolve()
    with _loaded_lock:
        if file in _loaded:
            return _loaded[file]
        from engine.embed.gguf import GgufEmbedder  # llama.cpp only when one is chosen

        try:
            _loaded[file] = GgufEmbedder(file)
        except ModelError as error:
            if strict:
                raise
            log.warning("the chosen embedding model is not used: %s", error)
            return default_embedder()
        return _loaded[file]
