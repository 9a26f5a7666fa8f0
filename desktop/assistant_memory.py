"""What the window's pages need of an assistant's memory.

The pages show the same memory whether it is on this computer (``engine.mnemo.Mnemo``) or on a
Mnemo server (``engine.server.client.RemoteMnemo``, whose stores make the same calls over the
wire). Typed by this ``Protocol``, a page says which of the two it cannot take: what only a local
assistant has (its conversations, forgetting) is reached through ``Mnemo`` itself.
"""

from __future__ import annotations

from typing import Protocol

from engine.db.schema import DocumentRow
from engine.errors import MnemoError
from engine.memory.archival import ArchivalStore
from engine.memory.core import CoreMemory
from engine.memory.knowledge import KnowledgeStore
from engine.memory.proposals import ProposalStore
from engine.memory.recall import RecallStore
from engine.memory.snapshots import Snapshot, SnapshotStore
from engine.mnemo import Mnemo
from engine.profile import Profile
from engine.settings import Settings


class AssistantMemory(Protocol):
    profile: Profile
    read_only: str | None  # why nothing may be written, if so
    core: CoreMemory
    recall: RecallStore
    archival: ArchivalStore
    knowledge: KnowledgeStore
    proposals: ProposalStore
    settings: Settings
    snapshots: SnapshotStore

    def documents(self) -> list[DocumentRow]: ...

    def snapshot_before(self, what: str) -> Snapshot | None: ...


def on_this_computer(memory: AssistantMemory, action: str) -> Mnemo:
    """``memory`` as the ``Mnemo`` that ``action`` needs: it reads or rewrites the assistant's
    own files (forgetting, export and import, a document read for facts). An assistant on a Mnemo
    server gets a sentence instead."""
    if isinstance(memory, Mnemo):
        return memory
    raise MnemoError(
        f"{action} works on assistants kept on this computer; this one is on a Mnemo server."
    )
