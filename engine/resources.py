"""One place that finds files under ``resources/`` (prompts, templates, the embedder's tokenizer).

In a source checkout they sit next to the packages; in a built wheel they are packed into
``engine/_resources``.
"""

from __future__ import annotations

from pathlib import Path

_CANDIDATES = (
    Path(__file__).resolve().parent / "_resources",
    Path(__file__).resolve().parent.parent / "resources",
)


def resource_path(relative: str) -> Path:
    """Absolute path of a file under resources/; raises FileNotFoundError naming what is missing."""
    for root in _CANDIDATES:
        candidate = root / relative
        if candidate.exists():
            return candidate
    raise FileNotFoundError(
        f"Mnemo's resource file {relative!r} is missing; reinstall Mnemo to restore it."
    )
