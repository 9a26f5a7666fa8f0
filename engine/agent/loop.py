"""The agent: one conversation with one model. It stores the person's message and runs the
turn of the memory mode in use: ``engine.agent.self_managed_turn`` (the model calls memory
functions, step by step) or ``engine.agent.assisted_turn`` (the engine recalls, the model
replies). Both write through ``engine.agent.steps``, and what the person said is kept by
``engine.agent.keeping``."""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable

import sqlalchemy.exc

from engine.agent.assisted_turn import AssistedTurn
from engine.agent.keeping import Keeper
from engine.agent.self_managed_turn import SelfManagedTurn
from engine.agent.steps import EventCallback, Steps
from engine.agent.turn import Turn
from engine.context.window import ContextStats, ContextWindow, load_state
from engine.errors import GenerationCancelled, MnemoError, user_message
from engine.events import Event, Notice, TurnFinished
from engine.foreground import turn_running
from engine.llm.base import ChatModel, safe_text
from engine.memory.recall import DEFAULT_CONVERSATION
from engine.mnemo import Mnemo
from engine.modes import ModeChoice
from engine.transcript import CITE, RECALL, read_call, result_ok

log = logging.getLogger("mnemo.agent")


def sent_by(program: str) -> str:
    """Why a program's message is not the person's word, as the proposals it makes say it."""
    return f"sent by {program}"


def _ignore(_event: Event) -> None:
    pass


class Agent:
    """One conversation with one model. ``send`` runs a whole turn on the calling thread."""

    def __init__(
        self,
        mnemo: Mnemo,
        model: ChatModel,
        *,
        conversation_id: str = DEFAULT_CONVERSATION,
        fold_ahead: bool = True,
    ) -> None:
        self.mnemo = mnemo
        self.model = model
        self.conversation_id = conversation_id
        self.window = ContextWindow(mnemo, model, conversation_id)
        # The re-ranker the settings name (llama.cpp's only when one is set, or was: a cleared
        # setting takes it off the searches).
        if mnemo.settings.get("models.reranker") or "engine.llm.rerank" in sys.modules:
            from engine.llm.rerank import attach_configured

            attach_configured(mnemo)
        self.steps = Steps(mnemo, model, self.window, conversation_id)
        self.keeper = Keeper(self.steps)  # what the person says about their life, in either mode
        self.self_managed = SelfManagedTurn(self.steps, self.keeper)
        # After a reply, a window past the pressure line is folded into the summary at once (the
        # model summarises, ~20 s on the bundled one) and the folded prompt evaluated, for the
        # next message of a chat that goes on. A one-shot turn (`mnemo chat -m`) ends its process
        # with the reply: it leaves the fold to the next start (``catch_up``), or to the turn
        # that needs it.
        self.assisted = AssistedTurn(self.steps, self.keeper, folds_ahead=fold_ahead)
        self._lock = threading.Lock()
        self._drop_orphaned_passages()

    # -- public --------------------------------------------------------------------------------

    def send(
        self,
        text: str,
        *,
        on_event: EventCallback | None = None,
        cancel: threading.Event | None = None,
        program: str | None = None,
    ) -> TurnFinished:
        """Store the user's message and run the turn it starts. A message a ``program`` sent
        (`mnemo serve`'s chat with a program's token) is not the person's word: what it says
        about them waits for the person as a proposal marked with that program."""
        text = text.strip()
        if not text:
            raise MnemoError("Type a message first; an empty message was not sent.")
        if safe_text(text) != text:  # bytes that are not UTF-8, as a terminal may pass them
            raise MnemoError(
                "The message holds characters that are not valid UTF-8 text, so it was not sent; "
                "set your terminal to UTF-8 (for example LANG=C.UTF-8)."
            )
        with self._lock:
            self.mnemo.recall.add(
                "user",
                text,
                conversation_id=self.conversation_id,
                untrusted_reason=None if program is None else sent_by(program),
            )
            return self._run_turn(_ignore if on_event is None else on_event, cancel)

    @property
    def mode(self) -> ModeChoice:
        """The memory mode of the next turn (the setting can change between turns)."""
        return self.steps.mode

    @property
    def interrupted(self) -> bool:
        """True when the last turn stopped before it finished (a crash or a kill mid-turn)."""
        last = self.mnemo.recall.recent(2, self.conversation_id)
        if not last:
            return False
        if last[-1].role == "user" or last[-1].name == RECALL:
            return True
        if last[-1].name == CITE:
            return False  # the reply before it finished the turn
        if last[-1].role != "function_result" or len(last) < 2:
            return False
        if not result_ok(last[-1].text):
            return True
        call = read_call(last[-2].text)
        return bool(call and call.arguments.get("request_heartbeat"))

    def resume(
        self,
        *,
        on_event: EventCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> TurnFinished | None:
        """Finish a turn that a crash interrupted; None when there is nothing to finish."""
        with self._lock:
            if not self.interrupted:
                return None
            emit = _ignore if on_event is None else on_event
            emit(Notice("resumed", "Continuing the turn that was interrupted."))
            return self._run_turn(emit, cancel)

    def catch_up(self, *, on_event: EventCallback | None = None) -> bool:
        """At a start: the fold a one-shot turn left (``fold_ahead=False``), done while the person
        reads and types; whether anything was folded. The same fold as after a reply."""
        with self._lock:
            return self._catch_up(on_event, None)

    def catch_up_behind(self) -> Callable[[], None]:
        """``catch_up`` on a thread of its own: a message sent meanwhile waits for it. Returns
        ``stop``, which cancels the fold (nothing of it is kept) and waits for the thread."""
        self._lock.acquire()  # taken here: a message sent at once must not go first
        cancel = threading.Event()

        def work() -> None:
            try:
                self._catch_up(None, cancel)
            except Exception:  # the next turn folds if it must
                log.exception("folding the window at the start failed")
            finally:
                self._lock.release()

        thread = threading.Thread(target=work, name="mnemo-catch-up", daemon=True)
        thread.start()

        def stop() -> None:
            cancel.set()
            thread.join()

        return stop

    def _catch_up(self, on_event: EventCallback | None, cancel: threading.Event | None) -> bool:
        if self.mode.mode != "assisted":
            return False  # the self-managed loop folds inside its steps
        state = load_state(self.mnemo, self.conversation_id)
        return self.assisted.fold_ahead(state, _ignore if on_event is None else on_event, cancel)

    def context_stats(self) -> ContextStats:
        """Token use of the window as the next step would see it."""
        state = load_state(self.mnemo, self.conversation_id)
        return self.window.build(state, assisted=self.mode.mode == "assisted")[1]

    # -- the loop ------------------------------------------------------------------------------

    def _run_turn(self, emit: EventCallback, cancel: threading.Event | None) -> TurnFinished:
        # Work that can wait leaves the cores to the person's turn: in this process, and in any
        # other on this profile (an import's embedding, a forget's steps).
        with turn_running(), self.mnemo.profile.in_turn():
            return self._turn(emit, cancel)

    def _turn(self, emit: EventCallback, cancel: threading.Event | None) -> TurnFinished:
        turn = Turn()
        try:
            # Text the user did not write stays in the context after the turn that read it
            # (and across a restart): edits wait for the user while it is there.
            turn.untrusted_reason = self.mnemo.recall.untrusted_reason(self.conversation_id)
            if self.mode.mode == "assisted":
                return self.assisted.run(turn, emit, cancel)
            return self.self_managed.run(turn, emit, cancel)
        except GenerationCancelled:
            return self.steps.stop(
                turn, emit, "cancelled", "Stopped. Nothing from the unfinished step was kept."
            )
        except Exception as error:  # the user's to fix, their storage's, or a bug: say which
            sentence = user_message(error, self.mnemo.read_only)
            if sentence is not None:
                return self._fail(turn, emit, sentence)
            log.exception("the turn failed")
            return self._fail(
                turn,
                emit,
                "Something went wrong inside Mnemo, and this turn was stopped (the details are "
                "in the log). Send your message again.",
            )

    def _fail(self, turn: Turn, emit: EventCallback, sentence: str) -> TurnFinished:
        """End a turn that cannot go on. The note closes it, so that the next start does not
        retry it (a message that fails every time would otherwise fail at every start)."""
        try:
            self.steps.note(f"The turn stopped: {sentence}")
        except (MnemoError, sqlalchemy.exc.OperationalError):
            log.warning("could not record the failed turn: %s", sentence)
        emit(Notice("error", sentence))
        return self.steps.finish(TurnFinished(None, turn.steps, "error"), emit)

    # -- start-up repair -----------------------------------------------------------------------

    def _drop_orphaned_passages(self) -> None:
        """Remove passages a killed step stored for a function call that never committed."""
        removed = self.mnemo.archival.delete_from_uncommitted_steps(self.mnemo.recall.latest_id())
        if removed:
            log.info("removed %d archival passages of an interrupted step", removed)
