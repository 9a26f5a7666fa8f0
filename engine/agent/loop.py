"""The agent's step loop, both modes share: model -> one function call -> result -> another
step (heartbeat) or yield; the assisted mode's turn is ``engine.agent.assisted_turn``, and what
the person said is kept by ``engine.agent.keeping``."""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections.abc import Callable
from typing import Any

import sqlalchemy.exc

from engine import clock
from engine.agent import assisted_rules as assisted
from engine.agent.assisted_turn import AssistedTurn
from engine.agent.grounding import Grounds, Record, strip_frame
from engine.agent.keeping import Keeper
from engine.agent.turn import Turn
from engine.context.window import (
    PRESSURE_FRACTION,
    ContextStats,
    ContextWindow,
    load_state,
)
from engine.errors import (
    ContextOverflowError,
    GenerationCancelled,
    MnemoError,
    user_message,
)
from engine.events import (
    ContextEvicted,
    Event,
    FunctionCalled,
    FunctionReturned,
    MemoryPressure,
    MessageSent,
    Notice,
    NoticeKind,
    ProposalApplied,
    ProposalCreated,
    ReplyWithdrawn,
    StepStarted,
    TextStreamed,
    TurnFinished,
)
from engine.foreground import turn_running
from engine.functions import (
    SEND_MESSAGE,
    ToolContext,
    check_arguments,
    cited_passages,
    describe_call,
    run_function,
)
from engine.llm.base import ChatModel, Prompt, Step, mode_for, safe_text
from engine.memory.recall import (
    DEFAULT_CONVERSATION,
    RecallTransaction,
)
from engine.mnemo import Mnemo
from engine.modes import ModeChoice
from engine.transcript import (
    CITE,
    NOTICE,
    RECALL,
    Citation,
    call_text,
    citations_text,
    read_call,
    result_ok,
    result_text,
)

log = logging.getLogger("mnemo.agent")

EventCallback = Callable[[Event], None]
MAX_EVICTIONS_PER_STEP = 4
RECENT_FOR_QUESTION = 40  # rows looked through for the message a reply answers


def _ignore(_event: Event) -> None:
    pass


def _call_key(name: str, arguments: dict[str, Any]) -> str:
    meaningful = {k: v for k, v in arguments.items() if k != "request_heartbeat"}
    return name + json.dumps(meaningful, sort_keys=True, ensure_ascii=False)


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
        # After a reply, a window past the pressure line is folded into the summary at once (the
        # model summarises, ~20 s on the bundled one) and the folded prompt evaluated, for the
        # next message of a chat that goes on. A one-shot turn (`mnemo chat -m`) ends its process
        # with the reply: it leaves the fold to the next start (``catch_up``), or to the turn
        # that needs it.
        self.folds_ahead = fold_ahead
        self.window = ContextWindow(mnemo, model, conversation_id)
        # The re-ranker the settings name (llama.cpp's only when one is set, or was: a cleared
        # setting takes it off the searches).
        if mnemo.settings.get("models.reranker") or "engine.llm.rerank" in sys.modules:
            from engine.llm.rerank import attach_configured

            attach_configured(mnemo)
        self.keeper = Keeper(self)  # what the person says about their life, in either mode
        self.assisted = AssistedTurn(self)
        self._lock = threading.Lock()
        self._drop_orphaned_passages()

    # -- public --------------------------------------------------------------------------------

    def send(
        self,
        text: str,
        *,
        on_event: EventCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> TurnFinished:
        """Store the user's message and run the turn it starts."""
        text = text.strip()
        if not text:
            raise MnemoError("Type a message first; an empty message was not sent.")
        if safe_text(text) != text:  # bytes that are not UTF-8, as a terminal may pass them
            raise MnemoError(
                "The message holds characters that are not valid UTF-8 text, so it was not sent; "
                "set your terminal to UTF-8 (for example LANG=C.UTF-8)."
            )
        with self._lock:
            self.mnemo.recall.add("user", text, conversation_id=self.conversation_id)
            return self._run_turn(_ignore if on_event is None else on_event, cancel)

    @property
    def mode(self) -> ModeChoice:
        """The memory mode of the next turn (the setting can change between turns)."""
        return mode_for(self.mnemo.settings.memory_mode, self.model)

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
        """At a start: the fold a one-shot turn left (see ``folds_ahead``), done while the person
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
        with turn_running():  # work that can wait leaves the cores to the person's turn
            return self._turn(emit, cancel)

    def _turn(self, emit: EventCallback, cancel: threading.Event | None) -> TurnFinished:
        turn = Turn()
        try:
            # Text the user did not write stays in the context after the turn that read it
            # (and across a restart): edits wait for the user while it is there.
            turn.untrusted_reason = self.mnemo.recall.untrusted_reason(self.conversation_id)
            if self.mode.mode == "assisted":
                return self.assisted.run(turn, emit, cancel)
            return self._self_managed_turn(turn, emit, cancel)
        except GenerationCancelled:
            return self._stop(
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
            self._note(f"The turn stopped: {sentence}")
        except (MnemoError, sqlalchemy.exc.OperationalError):
            log.warning("could not record the failed turn: %s", sentence)
        emit(Notice("error", sentence))
        return self._finish(TurnFinished(None, turn.steps, "error"), emit)

    def _self_managed_turn(
        self, turn: Turn, emit: EventCallback, cancel: threading.Event | None
    ) -> TurnFinished:
        limit = self.mnemo.settings.step_limit
        while turn.steps < limit:
            final = turn.must_reply or turn.steps == limit - 1
            turn.final = final
            prompt, stats = self._prepare(turn, final, emit, cancel)
            turn.steps += 1
            emit(StepStarted(turn.steps, stats))
            step = self.model.step(
                prompt, on_text=lambda text: emit(TextStreamed(text)), cancel=cancel
            )
            outcome = self._execute(step, turn, emit)
            if isinstance(outcome, TurnFinished):
                if outcome.reason == "replied":
                    self._keep_after_self_managed_reply(turn, emit)
                return self._finish(outcome, emit)
        return self._stop(
            turn,
            emit,
            "step_limit",
            f"Stopped after {limit} steps without a reply. Ask again, or raise the step "
            "limit in the settings if the assistant needs more steps.",
        )

    def _keep_after_self_managed_reply(self, turn: Turn, emit: EventCallback) -> None:
        """A model that manages its memory may still not save what the person said about
        their life: after the reply, the same rules as the assisted mode keep it (a fact the
        model stored itself, in knowledge memory or as the same line of the human block, is
        not kept twice)."""
        state = turn.window_state(self.mnemo, self.conversation_id)
        user = next(
            (hit for hit in reversed(self.window.messages(state)) if hit.role == "user"), None
        )
        if user is not None:
            self.keeper.keep(user, emit)

    def _prepare(
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

    # -- one step ------------------------------------------------------------------------------

    def _execute(self, step: Step, turn: Turn, emit: EventCallback) -> TurnFinished | None:
        """Run the step's call and commit it; a TurnFinished ends the turn, None continues."""
        call = step.call
        if call is None and step.text and not step.error:
            return self._checked_reply(step.text, turn, emit)  # a chat API answered in plain text
        if call is None:
            self._record_failure(step.raw or step.text, None, step.error or "no call", emit)
            return None
        functions = {f.name: f for f in self.window.functions()}
        function = functions.get(call.name)
        if function is None:
            self._record_failure(
                call.to_json(),
                call.name,
                f"there is no function {call.name!r}; use one of {', '.join(functions)}",
                emit,
            )
            return None
        problem = check_arguments(function, call.arguments)
        if problem:
            self._record_failure(call.to_json(), call.name, problem, emit)
            return None
        if call.name == SEND_MESSAGE:
            return self._checked_reply(call.arguments["message"], turn, emit, call.to_json())
        key = _call_key(call.name, call.arguments)
        if key in turn.seen_calls:
            return self._repeated(call.name, turn, emit)
        turn.seen_calls.add(key)
        if turn.must_reply:  # the model ignored the request to reply
            return self._stop(
                turn,
                emit,
                "step_limit",
                "The assistant kept calling functions instead of replying; the turn was stopped.",
            )
        return self._run_function(call.name, call.arguments, turn, emit)

    def _checked_reply(
        self, text: str, turn: Turn, emit: EventCallback, call: str | None = None
    ) -> TurnFinished | None:
        """The self-managed reply, as the assisted mode's is shown: without the frame of its
        prompt, and, to a question about the person, stating nothing that neither the turn's
        searches nor core memory nor the question hold. Such a reply goes back to the model
        with why, unless this step must reply (then it is shown as it is)."""
        shown = strip_frame(text) or text
        question = self._newest_user_text()
        if not turn.final and assisted.asks_about_the_user(question):
            core = self.window.core_text(self.mnemo.core.blocks())
            records = [Record(result) for result in turn.results]
            grounds = Grounds(question, records, core, question=False)
            if made_up := grounds.invented(shown):
                self._record_failure(
                    call or shown,
                    SEND_MESSAGE,
                    f"your reply states {', '.join(sorted(made_up))}, which neither memory nor "
                    "the user said; search memory for it, or say that you do not know",
                    emit,
                )
                return None
        if shown != text.strip():  # what streamed had frame in it: the person reads it cleaned
            emit(ReplyWithdrawn())
            emit(TextStreamed(shown))
        return self._reply(shown, turn, emit)

    def _run_function(
        self, name: str, arguments: dict[str, Any], turn: Turn, emit: EventCallback
    ) -> TurnFinished | None:
        emit(FunctionCalled(name, arguments, describe_call(name, arguments)))
        with self.mnemo.recall.transaction() as transaction:
            call_id = self._store_call(transaction, name, arguments)
            context = ToolContext(
                mnemo=self.mnemo,
                transaction=transaction,
                conversation_id=self.conversation_id,
                call_message_id=call_id,
                untrusted_reason=turn.untrusted_reason,
                max_result_chars=self.window.max_result_chars,
            )
            savepoint = transaction.session.begin_nested()
            result = run_function(context, name, arguments)
            if result.ok:
                savepoint.commit()
            else:
                savepoint.rollback()  # a failed function leaves no rows behind
            transaction.add(
                "function_result",
                result_text(result.text, result.ok),
                name=name,
                conversation_id=self.conversation_id,
                untrusted_reason=result.untrusted_reason,
            )
        emit(FunctionReturned(name, result.ok, result.text, result.summary, result.trace))
        turn.results.append(result.text)
        turn.untrusted_reason = turn.untrusted_reason or result.untrusted_reason
        turn.passages += result.passages
        if result.proposal is not None:
            applied = result.proposal.status == "approved"
            emit(ProposalApplied(result.proposal) if applied else ProposalCreated(result.proposal))
        if not result.ok or arguments.get("request_heartbeat"):
            return None
        turn.must_reply = True  # it yielded without a word to the user: ask for one
        return None

    def _store_call(
        self, transaction: RecallTransaction, name: str, arguments: dict[str, Any]
    ) -> int:
        """A call as stored in recall (the model's, or one the engine made for it)."""
        return transaction.add(
            "function_call",
            call_text(name, arguments),
            name=name,
            conversation_id=self.conversation_id,
        )

    def _reply(self, text: str, turn: Turn, emit: EventCallback) -> TurnFinished:
        """Store the reply with the documents it relies on (a ``cite`` row right after it)."""
        # What the question and today's date (in the assisted prompt) bring proves no use of a
        # document: "today is Friday" is no gardener's "every second Friday".
        now = clock.now()
        brought = f"{self._newest_user_text()} {now:%A} {now.day} {now:%B %Y}"
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

    def _newest_user_text(self) -> str:
        recent = self.mnemo.recall.recent(RECENT_FOR_QUESTION, self.conversation_id)
        return next((hit.text for hit in reversed(recent) if hit.role == "user"), "")

    def _record_failure(
        self, raw: str, name: str | None, problem: str, emit: EventCallback
    ) -> None:
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

    def _repeated(self, name: str, turn: Turn, emit: EventCallback) -> TurnFinished | None:
        text = f"The assistant repeated the same {name} call, so it was not run again."
        if turn.must_reply:
            return self._stop(turn, emit, "repeated_call", text + " The turn was stopped.")
        self._note(text + " Reply to the user now.", for_model=True)
        emit(Notice("repeated_call", text))
        turn.must_reply = True
        return None

    def _stop(self, turn: Turn, emit: EventCallback, kind: NoticeKind, text: str) -> TurnFinished:
        self._note(text)
        emit(Notice(kind, text))
        reason = kind if kind in ("step_limit", "repeated_call", "cancelled") else "error"
        return self._finish(TurnFinished(None, turn.steps, reason), emit)

    def _note(self, text: str, *, for_model: bool = False) -> None:
        """A system note in the conversation. It closes a failed turn (so a restart does not
        retry it) and is kept from the model, which has no use for an error's text (and an
        error may quote what a server sent); ``for_model`` notes are instructions to it."""
        self.mnemo.recall.add(
            "system",
            text,
            conversation_id=self.conversation_id,
            name=None if for_model else NOTICE,
        )

    def _finish(self, result: TurnFinished, emit: EventCallback) -> TurnFinished:
        log.info(
            "turn of %s finished after %d steps: %s", self.model.name, result.steps, result.reason
        )
        emit(result)
        return result

    # -- start-up repair -----------------------------------------------------------------------

    def _drop_orphaned_passages(self) -> None:
        """Remove passages a killed step stored for a function call that never committed."""
        removed = self.mnemo.archival.delete_from_uncommitted_steps(self.mnemo.recall.latest_id())
        if removed:
            log.info("removed %d archival passages of an interrupted step", removed)
