"""Events the agent emits during a turn, as plain objects (the desktop turns them into signals).

They arrive through the ``on_event`` callback of ``Agent.send``/``Agent.resume``, on the thread
that runs the turn, in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from engine.transcript import Citation

if TYPE_CHECKING:  # only named in annotations: importing events stays light
    from engine.context.window import ContextStats
    from engine.memory.proposals import Proposal


@dataclass(frozen=True)
class StepStarted:
    number: int
    stats: ContextStats


@dataclass(frozen=True)
class TextStreamed:
    """A piece of the reply being written."""

    text: str


@dataclass(frozen=True)
class ReplyWithdrawn:
    """The reply streamed so far repeated an earlier one and is taken back; another follows."""


@dataclass(frozen=True)
class FunctionCalled:
    name: str
    arguments: dict[str, Any]
    description: str  # "searched archival memory for 'taxes'"


@dataclass(frozen=True)
class FunctionReturned:
    name: str
    ok: bool
    result: str
    summary: str  # "3 of 12 passages"
    trace: tuple[str, ...] = ()  # how a search ranked its hits (engine.memory.trace), for people


@dataclass(frozen=True)
class MessageSent:
    """The model's finished reply to the user, with the documents it relied on."""

    text: str
    message_id: int
    sources: tuple[Citation, ...] = ()


@dataclass(frozen=True)
class ProposalCreated:
    """A core-memory edit waits for the user's decision."""

    proposal: Proposal


@dataclass(frozen=True)
class ProposalApplied:
    """A trusted edit applied under the auto-approve policy."""

    proposal: Proposal


@dataclass(frozen=True)
class MemoryPressure:
    stats: ContextStats


@dataclass(frozen=True)
class ContextEvicted:
    evicted: int
    summary: str


NoticeKind = Literal["step_limit", "repeated_call", "no_reply", "cancelled", "error", "resumed"]


@dataclass(frozen=True)
class Notice:
    """Something the user should know about the turn, in words."""

    kind: NoticeKind
    text: str


@dataclass(frozen=True)
class TurnFinished:
    reply: str | None
    steps: int
    reason: Literal["replied", "step_limit", "repeated_call", "cancelled", "error"]
    # Where the turn's time went, in seconds (the assisted mode's recall, window, prompt,
    # generation, drafts and memory step): what a slow turn spent its time on.
    phases: dict[str, float] = field(default_factory=dict, compare=False)


Event = (
    StepStarted
    | TextStreamed
    | ReplyWithdrawn
    | FunctionCalled
    | FunctionReturned
    | MessageSent
    | ProposalCreated
    | ProposalApplied
    | MemoryPressure
    | ContextEvicted
    | Notice
    | TurnFinished
)
