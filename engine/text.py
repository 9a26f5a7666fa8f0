"""Small text helpers that every layer uses (the command line, the tools' results, the window)."""

from __future__ import annotations

import re
from typing import Any

# The first letter of a name in any script, for patterns compiled with ``regex`` (which knows
# letters' categories): a capital (Joaquín, Łukasz, Ólöf) or a letter of a script without case
# (美咲). ``re``'s [A-Z][a-z]+ read "Joaquín" as "Joaqu" and "Ólafur" as no name at all.
CAPITAL = r"[\p{Lu}\p{Lt}\p{Lo}]"
LETTERS = r"[^\W\d_]"  # any letters, of any script


def one_line(text: str, width: int = 90) -> str:
    """``text`` on one line (runs of white space become one space), cut to ``width`` with "…"."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


_SURROGATE = re.compile("[\ud800-\udfff]")


def has_lone_surrogate(*texts: str | None) -> bool:
    """Whether any of ``texts`` holds a lone surrogate: not text, so a request holding one is
    refused (``safe_text`` makes such text storable where it is only kept)."""
    return any(text and _SURROGATE.search(text) for text in texts)


LONE_SURROGATE = (
    "The request holds a lone surrogate (a \\uD800 to \\uDFFF escape without its pair), "
    "which is not text; nothing was done."
)


def safe_text(text: str) -> str:
    """``text`` with lone surrogates (which JSON's \\uXXXX escapes can produce, and which SQLite
    and Qt cannot encode) replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def safe_value(value: Any) -> Any:
    """``value`` (parsed JSON) with every string made safe to store (``safe_text``)."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, list):
        return [safe_value(item) for item in value]
    if isinstance(value, dict):
        return {safe_text(str(key)): safe_value(item) for key, item in value.items()}
    return value


# A Markdown image or link: ![alt](url "title") or [text](url "title").
_MARKDOWN_LINK = re.compile(r"(!?)\[([^\]\n]*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"\n]*\")?\s*\)")


def plain_links(text: str) -> str:
    """Markdown links and images as words, with where they point shown: "[your bank](http://…)"
    as "your bank (http://…)". A link a fact or note carried (a program proposed it, the person
    approved it) was repeated in answers and shown as a clickable link, an image fetched as the
    window drew it; written out, the person sees where it goes and nothing loads."""

    def written(match: re.Match[str]) -> str:
        words = match.group(2).strip() or ("image" if match.group(1) else "link")
        return f"{words} ({match.group(3)})"

    return _MARKDOWN_LINK.sub(written, text)
