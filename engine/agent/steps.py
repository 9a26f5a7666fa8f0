"""What every turn writes into its conversation, in either mode: each step's prompt, a call as
stored, the reply with the documents it cites, a correction for a call that could not run, a
note, a stop and the turn's end. ``Agent`` holds one (``Agent.steps``) and gives it to both of
its turns (``engine.agent.self_managed_turn``, ``engine.agent.assisted_turn``) and to keeping
(``engine.agent.keeping``), so that none of them imports the agent that runs them."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from engine import clock
from engine.agent.turn import Turn
from engine.context.window import PRESSURE_FRACTION, ContextStats, ContextWindow
from engine.errors import ContextOverflowError
from engine.events import (
    ContextEvicted,
    Event,
    FunctionCalled,
    FunctionReturned,
    MemoryPressure,
    MessageSent,
    Notice,
    NoticeKind,
    ReplyWithdrawn,
    TextStreamed,
    TurnFinished,
)
from engine.functions import SEND_MESSAGE, cited_passages
from engine.llm.base import ChatModel, Prompt, mode_for
from engine.memory.recall import RecallTransaction
from engine.mnemo import Mnemo
from engine.modes import ModeChoice
from engine.text import plain_links
from engine.transcript import CITE, NOTICE, Citation, call_text, citations_text, result_text

log = logging.getLogger("mnemo.agent")

EventCallback = Callable[[Event], None]
MAX_EVICTIONS_PER_STEP = 4
RECENT_FOR_QUESTION = 40  # rows looked through for the message a reply answers


class Steps:
    """One conversation's writing side, shared by the turns of its ``Agent``."""

    def __init__(
        self, mnemo: Mnemo, model: ChatModel, window: ContextWindow, conversation_id: str
    ) -> None:
        self.mnemo, self.model, self.window = mnemo, model, window
        self.conversation_id = conversation_id

    @property
    def mode(self) -> ModeChoice:
        """The memory mode of the next turn (the setting can change between turns)."""
        return mode_for(self.mnemo.settings.memory_mode, self.model)

    def prepare(
        self,
        turn: Turn,
        final: bool,
        emit: EventCallback,
        cancel: threading.Event | None,
        assisted_mode: bool = False,
    ) -> tuple[Prompt, ContextStats]:
        """The next step's prompt: warn at memory pressure, evict when full."""
        state = turn.window_state(self.mnemo, self.conversation_id)
        if assisted_mode:

            def build() -> tuple[Prompt, ContextStats]:
                return self.window.build(state, assisted=True)

        else:
            status = self._status(turn, final)
            allowed = frozenset({SEND_MESSAGE}) if final else None

            def build() -> tuple[Prompt, ContextStats]:
                return self.window.build(state, status, allowed)

        prompt, stats = build()
        if (
            not assisted_mode  # the warning asks the model to save memory with functions
            and not state.pressure_warned
            and PRESSURE_FRACTION <= stats.fraction <= 1.0
        ):
            with self.mnemo.recall.transaction() as transaction:
                self.window.warn(state, transaction, stats)
            emit(MemoryPressure(stats))
            prompt, stats = build()
        evictions = 0
        while stats.total > stats.limit:
            evicted = self.window.evict(state, cancel) if evictions < MAX_EVICTIONS_PER_STEP else 0
            if not evicted:
                raise ContextOverflowError(
                    f"The newest messages alone do not fit the model's context window "
                    f"({stats.total} of {stats.limit} usable tokens). Choose a larger context "
                    "size in the model settings."
                )
            evictions += 1
            emit(ContextEvicted(evicted, state.summary))
            prompt, stats = build()
        return prompt, stats

    def _status(self, turn: Turn, final: bool) -> str:
        """The line that rides with the newest message: what changes every step."""
        now = clock.now()
        if turn.memory_size is None:
            turn.memory_size = (
                self.mnemo.recall.count(self.conversation_id),
                self.mnemo.archival.count(),
            )
        messages, passages = turn.memory_size
        parts = [
            f"{now:%A %Y-%m-%d %H:%M}",
            f"{messages} messages in conversation history",
            f"{passages} passages in archival memory",
        ]
        pending = self.mnemo.proposals.count_pending(self.conversation_id)
        if pending:
            parts.append(f"{pending} core memory edits await the user's approval")
        status = "[Status: " + " · ".join(parts) + "]"
        if final:
            status += "\n[Reply to the user now with send_message.]"
        return status

    def store_call(
        self, transaction: RecallTransaction, name: str, arguments: dict[str, Any]
    ) -> int:
        """A call as stored in recall (the model's, or one the engine made for it)."""
        return transaction.add(
            "function_call",
            call_text(name, arguments),
            name=name,
            conversation_id=self.conversation_id,
        )

    def reply(self, text: str, turn: Turn, emit: EventCallback) -> TurnFinished:
        """Store the reply with the documents it relies on (a ``cite`` row right after it). Its
        Markdown links and images are written out (``plain_links``): the person sees where they
        point, and nothing opens or loads from a link memory carried."""
        written = plain_links(text)
        if written != text:  # what streamed is shown again, written out
            emit(ReplyWithdrawn())
            emit(TextStreamed(written))
            text = written
        # What the question and today's date (in the assisted prompt) bring proves no use of a
        # document: "today is Friday" is no gardener's "every second Friday".
        now = clock.now()
        brought = f"{self.newest_user_text()} {now:%A} {now.day} {now:%B %Y}"
        sources = tuple(
            Citation(passage.source.path or "", passage.source.section)
            for passage in cited_passages(text, turn.passages, brought)
        )
        with self.mnemo.recall.transaction() as transaction:
            message_id = transaction.add(
                "assistant", text, name=SEND_MESSAGE, conversation_id=self.conversation_id
            )
            if sources:
                transaction.add(
                    "function_result",
                    citations_text(sources),
                    name=CITE,
                    conversation_id=self.conversation_id,
                )
        emit(MessageSent(text, message_id, sources))
        return TurnFinished(text, turn.steps, "replied")

    def newest_user_text(self) -> str:
        recent = self.mnemo.recall.recent(RECENT_FOR_QUESTION, self.conversation_id)
        return next((hit.text for hit in reversed(recent) if hit.role == "user"), "")

    def record_failure(self, raw: str, name: str | None, problem: str, emit: EventCallback) -> None:
        """Store a call that could not run and the correction the model gets back."""
        emit(FunctionCalled(name or "(invalid)", {}, f"made an invalid call: {problem}"))
        correction = f"{problem[0].upper()}{problem[1:].rstrip('.')}. Fix the call and try again."
        with self.mnemo.recall.transaction() as transaction:
            transaction.add(
                "function_call",
                raw[:4000],
                name=name,
                conversation_id=self.conversation_id,
            )
            transaction.add(
                "function_result",
                result_text(correction, ok=False),
                name=name,
                conversation_id=self.conversation_id,
            )
        emit(FunctionReturned(name or "(invalid)", False, correction, "error"))

    def stop(self, turn: Turn, emit: EventCallback, kind: NoticeKind, text: str) -> TurnFinished:
        self.note(text)
        emit(Notice(kind, text))
        reason = kind if kind in ("step_limit", "repeated_call", "cancelled") else "error"
        return self.finish(TurnFinished(None, turn.steps, reason), emit)

    def note(self, text: str, *, for_model: bool = False) -> None:
        """A system note in the conversation. It closes a failed turn (so a restart does not
        retry it) and is kept from the model, which has no use for an error's text (and an
        error may quote what a server sent); ``for_model`` notes are instructions to it."""
        self.mnemo.recall.add(
            "system",
            text,
            conversation_id=self.conversation_id,
            name=None if for_model else NOTICE,
        )

    def finish(self, result: TurnFinished, emit: EventCallback) -> TurnFinished:
        log.info(
            "turn of %s finished after %d steps: %s", self.model.name, result.steps, result.reason
        )
        emit(result)
        return result
