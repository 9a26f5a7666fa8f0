"""A GBNF grammar from function schemas, so a local model can only write one valid call.

The grammar fixes the whole shape, ``{"function": NAME, "arguments": {...}}``: the function name is
one of the allowed ones, each function has exactly its own arguments in schema order, strings are
bounded, and there is no free whitespace (every token goes into content). Only the JSON-schema
features the memory functions use are supported; anything else is a programming error.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

from engine.llm.base import CALL_PREFIX, FunctionSchema

_BASE_RULES = r"""
char ::= [^"\\\x00-\x1f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
boolean ::= "true" | "false"
"""
DEFAULT_MAX_LENGTH = 500


def _literal(text: str) -> str:
    """A GBNF string literal matching ``text`` exactly."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _value(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if "enum" in schema:
        return "(" + " | ".join(_literal(json.dumps(v)) for v in schema["enum"]) + ")"
    if kind == "string":
        if schema.get("format") == "date":
            return '"\\"" [0-9]{4} "-" [0-9]{2} "-" [0-9]{2} "\\""'
        if schema.get("format") == "date-time":
            return '"\\"" [0-9]{4} "-" [0-9]{2} "-" [0-9]{2} (" " [0-9]{2} ":" [0-9]{2})? "\\""'
        low = int(schema.get("minLength", 0))
        high = int(schema.get("maxLength", DEFAULT_MAX_LENGTH))
        return f'"\\"" char{{{low},{high}}} "\\""'
    if kind == "integer":
        if schema.get("minimum", 0) >= 1:
            return "[1-9] [0-9]{0,5}"
        return '"-"? [0-9]{1,7}'
    if kind == "boolean":
        return "boolean"
    if kind == "array":
        item = _value(schema["items"])
        most = int(schema.get("maxItems", 8))
        return f'"[" ({item} (", " {item}){{0,{most - 1}}})? "]"'
    raise ValueError(f"the function grammar does not support the schema {schema!r}")


def _object(schema: dict[str, Any]) -> str:
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    if not properties:
        return '"{}"'
    names = list(properties)
    if names[0] not in required:
        raise ValueError("the first argument of a function must be required")
    parts = [f'"{{" {_literal(json.dumps(names[0]) + ": ")} {_value(properties[names[0]])}']
    for name in names[1:]:
        pair = f"{_literal(', ' + json.dumps(name) + ': ')} {_value(properties[name])}"
        parts.append(pair if name in required else f"({pair})?")
    return " ".join(parts) + ' "}"'


def functions_grammar(
    functions: Sequence[FunctionSchema], allowed: Collection[str] | None = None
) -> str:
    """GBNF for exactly one call of one of ``functions`` (only ``allowed`` ones, if given)."""
    chosen = [f for f in functions if allowed is None or f.name in allowed]
    if not chosen:
        raise ValueError("no function is allowed for this step")
    rules = []
    for index, function in enumerate(chosen):
        head = _literal(json.dumps(function.name) + ', "arguments": ')
        rules.append(f"call-{index} ::= {head} {_object(function.parameters)}")
    alternatives = " | ".join(f"call-{index}" for index in range(len(chosen)))
    root = f"root ::= {_literal(CALL_PREFIX)} ({alternatives}) " + '"}"'
    return "\n".join([root, *rules]) + _BASE_RULES


def schema_grammar(schema: dict[str, Any]) -> str:
    """GBNF for one JSON object of ``schema`` (a structured plain reply)."""
    return f"root ::= {_object(schema)}{_BASE_RULES}"
