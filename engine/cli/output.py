"""What the command line's commands share: JSON output and how a time is shown."""

from __future__ import annotations

import json
from dataclasses import asdict, is_dataclass
from datetime import datetime
from typing import Any


def jsonable(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {key: jsonable(item) for key, item in asdict(value).items()}
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {key: jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    return value


def print_json(value: Any) -> None:
    print(json.dumps(jsonable(value), ensure_ascii=False, indent=2))


def when(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M")
