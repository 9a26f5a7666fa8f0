"""Vectors kept in the user's cache folder: what an embedder always computes the same way
(MiniLM's word-piece table, the search's background sentences), kept so that a process need not
compute it again. A cache: a file that cannot be written is only logged."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

import numpy as np

log = logging.getLogger("mnemo.embed")


def keep(path: Path, **arrays: np.ndarray) -> bool:
    """Write ``arrays`` to ``path`` (``.npz``: all of them by name; ``.npy``: the one) whole or
    not at all: a process ended mid-write, or two writing at once, leave no half file. Whether it
    was kept."""
    # hidden, and unlike the names a reader looks for ("met-*.npz"), until it is whole
    partial = path.with_name(f".{path.stem}-{uuid.uuid4().hex}{path.suffix}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".npz":
            np.savez(partial, **arrays)  # type: ignore[arg-type]  # (numpy's stub: allow_pickle)
        else:
            (array,) = arrays.values()
            np.save(partial, array)
        partial.replace(path)
        return True
    except OSError:
        partial.unlink(missing_ok=True)
        log.warning("could not keep vectors in %s", path)
        return False
