"""What the command line's commands share: JSON output and how a time is shown."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from engine.server.wire import plain


def print_json(value: Any) -> None:
    print(json.dumps(plain(value), ensure_ascii=False, indent=2))


def when(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M")


def confirmed(question: str, ask: Callable[[str], str] | None = None) -> bool:
    """Whether the person answers yes to ``question`` (asked with " [y/N] "; anything else is
    no), through ``ask`` or ``input`` (looked up when asked, so that a replaced one is used)."""
    return (ask or input)(f"{question} [y/N] ").strip().lower() in ("y", "yes")
