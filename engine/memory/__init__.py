"""The three memory tiers: core (always in context), recall (every message), archival (passages)."""

from engine.memory.archival import ArchivalStore, NewPassage, Passage, Source
from engine.memory.core import Block, BlockVersion, CoreMemory
from engine.memory.recall import MessageHit, NewMessage, RecallStore
from engine.memory.search import Page

__all__ = [
    "ArchivalStore",
    "Block",
    "BlockVersion",
    "CoreMemory",
    "MessageHit",
    "NewMessage",
    "NewPassage",
    "Page",
    "Passage",
    "RecallStore",
    "Source",
]
