"""Helpers for agent-loop tests: calls written as the model would write them, and event capture."""

from __future__ import annotations

from typing import Any

from engine.events import Event


def call(function: str, **arguments: Any) -> dict[str, Any]:
    return {"function": function, "arguments": arguments}


def say(message: str) -> dict[str, Any]:
    return call("send_message", message=message)


def search(query: str, heartbeat: bool = True, **extra: Any) -> dict[str, Any]:
    return call("archival_memory_search", query=query, request_heartbeat=heartbeat, **extra)


class Recorder(list[Event]):
    """An ``on_event`` callback that keeps every event."""

    def __call__(self, event: Event) -> None:
        self.append(event)

    def of(self, kind: type) -> list[Any]:
        return [event for event in self if isinstance(event, kind)]
