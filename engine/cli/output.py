"""What the command line's commands share: JSON output and how a time is shown."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from engine.server.wire import plain


def print_json(value: Any) -> None:
    print(json.dumps(plain(value), ensure_ascii=False, indent=2))


def when(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M")
