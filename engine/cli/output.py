"""What the command line's commands share: JSON output, how a time is shown, and text made safe
for a terminal."""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any, TextIO

# What a terminal obeys instead of showing: escape sequences (CSI: clear the screen, move the
# cursor; OSC: set the clipboard, the title; any other ESC pair), C1 controls, and C0 controls but
# tab, newline and carriage return. A program's name or a message holding them was printed raw
# by `memory proposals`, `chat --list` and `search recall`: a stored text could write to the
# person's clipboard.
_TERMINAL_CONTROL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC, to its end or the text's
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC
    r"|\x1b.?"  # any other escape
    r"|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x80-\x9f]"  # C0 (not tab, newline, CR), DEL, C1
)


def for_terminal(text: str) -> str:
    """``text`` as a terminal should show it: without anything it would obey."""
    return _TERMINAL_CONTROL.sub("", text)


class _TerminalSafe:
    """A text stream that writes what is printed to ``stream`` for a terminal (``for_terminal``);
    everything else is the stream's own."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(for_terminal(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def safe_output() -> Iterator[None]:
    """While a command runs, what it prints on standard output holds no terminal control: the
    texts it shows came from memory, other programs and models."""
    original = sys.stdout
    sys.stdout = _TerminalSafe(original)
    try:
        yield
    finally:
        sys.stdout = original


def print_json(value: Any) -> None:
    from engine.server.wire import plain  # (heavy: only a command that prints JSON loads it)

    print(json.dumps(plain(value), ensure_ascii=False, indent=2))


def when(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M")


def confirmed(question: str, ask: Callable[[str], str] | None = None) -> bool:
    """Whether the person answers yes to ``question`` (asked with " [y/N] "; anything else is
    no), through ``ask`` or ``input`` (looked up when asked, so that a replaced one is used)."""
    return (ask or input)(f"{question} [y/N] ").strip().lower() in ("y", "yes")
