"""Small text helpers that every layer uses (the command line, the tools' results, the window)."""

from __future__ import annotations


def one_line(text: str, width: int = 90) -> str:
    """``text`` on one line (runs of white space become one space), cut to ``width`` with "…"."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
