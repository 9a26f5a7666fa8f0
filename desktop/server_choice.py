"""Which assistant on which Mnemo server the window opens, as the app remembers it between runs.
Kept apart from ``desktop.remote`` (the window's side of a server), so that the app reads a
remembered choice without loading the window's modules."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from engine.profile import Profile, data_folder

SERVER_PREFIX = "mnemo-server:"  # a remembered choice of an assistant on a server


@dataclass(frozen=True)
class ServerChoice:
    url: str
    assistant: str

    def remembered(self) -> str:
        """The choice as the app keeps it between runs (no token: that is in the keyring)."""
        return f"{SERVER_PREFIX}{self.assistant}@{self.url}"

    @classmethod
    def read(cls, remembered: str | None) -> ServerChoice | None:
        if not remembered or not remembered.startswith(SERVER_PREFIX):
            return None
        assistant, _, url = remembered[len(SERVER_PREFIX) :].partition("@")
        return cls(url, assistant) if assistant and url else None

    @property
    def local_folder(self) -> Profile:
        """A folder on this computer for the window's own files (its log, its lock)."""
        digest = hashlib.sha256(self.remembered().encode()).hexdigest()[:16]
        return Profile.resolve(data_folder() / ".servers" / digest)
