"""What one turn has done so far: the loop (``engine.agent.loop``) and the assisted turn
(``engine.agent.assisted_turn``) both carry it through a turn."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from engine.context.window import AgentState, load_state
from engine.memory.archival import Passage

if TYPE_CHECKING:
    from engine.mnemo import Mnemo


class Turn:
    def __init__(self) -> None:
        self.steps = 0
        self.seen_calls: set[str] = set()
        self.untrusted_reason: str | None = None
        self.must_reply = False
        self.passages: list[Passage] = []  # read this turn; a reply may cite them
        self.results: list[str] = []  # what the functions returned this turn: a reply's grounds
        self.final = False  # the step that must reply (self-managed)
        self.phases: dict[str, float] = {}  # seconds by phase (TurnFinished.phases)
        # Messages and passages in memory, for the status line: counted at the turn's first
        # step only (counting a large profile is not free, and the few a turn adds tell the
        # model nothing).
        self.memory_size: tuple[int, int] | None = None
        # The window's state (where it starts, the summary), loaded once: eviction and the
        # pressure warning change it in place, and nothing else writes it during a turn.
        self.state: AgentState | None = None

    def timed(self, phase: str, started: float) -> None:
        """Add the time since ``started`` (time.perf_counter) to ``phase``."""
        self.phases[phase] = self.phases.get(phase, 0.0) + time.perf_counter() - started

    def window_state(self, mnemo: Mnemo, conversation_id: str) -> AgentState:
        if self.state is None:
            self.state = load_state(mnemo, conversation_id)
        return self.state
