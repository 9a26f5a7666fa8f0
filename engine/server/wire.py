"""What crosses the wire between `mnemo serve` and the window connected to it: engine values as
JSON, and the memory calls a client may make.

The window works on the engine's own objects (a ``Block``, a ``Page`` of ``MessageHit``, a
``Proposal``, the events of a turn), so the server sends them typed: a dataclass carries its
class (``"$type": "engine.memory.core:Block"``), a datetime its ISO form. The client rebuilds the
very same objects, and only dataclasses of the engine: nothing else is ever constructed from what
a server sends. Both sides run the same Mnemo version (``/v1/version`` says which).
"""

from __future__ import annotations

import dataclasses
import importlib
from datetime import date, datetime
from enum import Enum
from pathlib import Path, PurePath
from typing import Any

import numpy as np
from sqlmodel import SQLModel

# The memory calls a connected window makes, store by store: what the window shows and edits.
# Nothing here reads or writes a path on the server, or replaces a store wholesale.
CALLS: dict[str, frozenset[str]] = {
    "core": frozenset(
        {"blocks", "block", "get", "room_left", "set", "append", "replace", "preview"}
        | {"add_block", "remove_block", "configure", "edit", "history", "undo"}
    ),
    "recall": frozenset(
        {"recent", "get", "search", "search_by_date", "delete", "count", "titles", "latest_id"}
    ),
    "archival": frozenset(
        {"search", "get", "recent", "count", "delete", "update", "insert", "set_expiry"}
        | {"duplicate_clusters", "merge", "expired", "list_by_source", "describe"}
    ),
    "knowledge": frozenset(
        {"entities", "entity", "facts", "fact", "correct", "retract", "add", "merge"}
        | {"similar", "history", "expired", "set_expiry", "mentioned", "sentence", "line"}
    ),
    "proposals": frozenset(
        {"pending", "count_pending", "all", "get", "preview", "approve", "reject", "describe"}
    ),
    "settings": frozenset({"get", "set", "is_set", "all"}),
    "mnemo": frozenset({"documents"}),  # the assistant's own (``Mnemo.documents``)
}
# Of those, the ones that change nothing: a program's token may make these; every other call
# (an edit, an approval, a setting, a deletion) is the person's alone.
READS: dict[str, frozenset[str]] = {
    "core": frozenset({"blocks", "block", "get", "room_left", "preview", "history"}),
    "recall": frozenset(
        {"recent", "get", "search", "search_by_date", "count", "titles", "latest_id"}
    ),
    "archival": frozenset(
        {"search", "get", "recent", "count", "duplicate_clusters", "expired", "list_by_source"}
        | {"describe"}
    ),
    "knowledge": frozenset(
        {"entities", "entity", "facts", "fact", "similar", "history", "expired", "mentioned"}
        | {"sentence", "line"}
    ),
    "proposals": frozenset({"pending", "count_pending", "all", "get", "preview", "describe"}),
    "settings": frozenset({"get", "is_set", "all"}),
    "mnemo": frozenset({"documents"}),
}


def encode(value: Any) -> Any:
    """``value`` as JSON-ready data that ``decode`` turns back into the same value."""
    return _encode(value, typed=True)


def plain(value: Any) -> Any:
    """``value`` as plain JSON for people and other programs (the command line's ``--json``,
    the server's answers): dataclasses as objects of their fields, times in ISO form, no type
    tags, so it does not decode back."""
    return _encode(value, typed=False)


def _encode(value: Any, typed: bool) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value

    def tagged(kind: type, data: dict[str, Any]) -> dict[str, Any]:
        return {"$type": f"{kind.__module__}:{kind.__qualname__}", **data} if typed else data

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        data = {
            field.name: _encode(getattr(value, field.name), typed)
            for field in dataclasses.fields(value)
        }
        return tagged(type(value), data)
    if isinstance(value, datetime | date | PurePath):
        text = value.isoformat() if isinstance(value, date) else str(value)
        if not typed:
            return text
        tag = (
            "$datetime"
            if isinstance(value, datetime)
            else "$date"
            if isinstance(value, date)
            else "$path"
        )
        return {tag: text}
    if isinstance(value, Enum):
        return _encode(value.value, typed)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        if not typed or all(isinstance(key, str) and not key.startswith("$") for key in value):
            return {key: _encode(item, typed) for key, item in value.items()}
        return {
            "$items": [[_encode(key, typed), _encode(item, typed)] for key, item in value.items()]
        }
    if isinstance(value, list | tuple | set | frozenset):
        return [_encode(item, typed) for item in value]
    if hasattr(value, "model_dump"):  # a SQLModel row (DocumentRow)
        return tagged(type(value), _encode(value.model_dump(), typed))
    raise TypeError(f"{type(value).__name__} cannot be sent to a Mnemo client")


MAX_DEPTH = 32  # values nest a few levels; deeper is an attack on the recursion limit


def decode(data: Any, depth: int = 0) -> Any:
    """The value ``encode`` made ``data`` from (engine types only; anything else, and values
    nested deeper than ``MAX_DEPTH``, are refused with ValueError)."""
    if depth > MAX_DEPTH:
        raise ValueError(f"A value nested deeper than {MAX_DEPTH} levels was sent.")
    depth += 1
    if isinstance(data, list):
        return [decode(item, depth) for item in data]
    if not isinstance(data, dict):
        return data
    if "$datetime" in data:
        return datetime.fromisoformat(data["$datetime"])
    if "$date" in data:
        return date.fromisoformat(data["$date"])
    if "$path" in data:
        return Path(data["$path"])
    if "$items" in data:
        return {_hashable(decode(key, depth)): decode(item, depth) for key, item in data["$items"]}
    if "$type" in data:
        fields = {k: decode(v, depth) for k, v in data.items() if k != "$type"}
        return _build(str(data["$type"]), fields)
    return {key: decode(item, depth) for key, item in data.items()}


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


# Where the values that cross the wire are defined; a type from anywhere else is refused (and
# no other module is ever imported because a peer named it).
TYPE_MODULES = (
    "engine.events",
    "engine.memory.",
    "engine.db.schema",
    "engine.ingest.ingestor",
    "engine.context.window",
    "engine.transcript",
)


def _build(name: str, fields: dict[str, Any]) -> Any:
    module_name, _, qualname = name.partition(":")
    allowed = any(
        module_name == prefix or (prefix.endswith(".") and module_name.startswith(prefix))
        for prefix in TYPE_MODULES
    )
    if not allowed or not qualname.isidentifier():
        raise ValueError(f"A value of type {name!r} was sent, which Mnemo does not build.")
    kind = getattr(importlib.import_module(module_name), qualname, None)
    if kind is None:
        raise ValueError(f"A value of type {name!r} was sent, unknown to this version of Mnemo.")
    # Only a value class defined in that very module: never a function, or a name the module
    # imported (``sqlalchemy.func`` answers any attribute, and calling it builds SQL).
    if not isinstance(kind, type) or kind.__module__ != module_name:
        raise ValueError(f"A value of type {name!r} was sent, which Mnemo does not build.")
    if issubclass(kind, SQLModel):  # a row (DocumentRow)
        return kind.model_validate(fields)
    if not dataclasses.is_dataclass(kind):
        raise ValueError(f"A value of type {name!r} was sent, which Mnemo does not build.")
    known = {field.name: field for field in dataclasses.fields(kind)}
    values = {key: _as_field(known[key], value) for key, value in fields.items() if key in known}
    settable = {key: value for key, value in values.items() if known[key].init}
    built = kind(**settable)
    for key, value in values.items():
        if not known[key].init:
            object.__setattr__(built, key, value)
    return built


def _as_field(field: dataclasses.Field[Any], value: Any) -> Any:
    """Lists that were tuples come back as tuples (frozen events compare and hash them)."""
    if isinstance(value, list) and "tuple" in str(field.type):
        return tuple(value)
    return value
