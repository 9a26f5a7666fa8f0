"""The self-managed mode's turn: model -> one function call -> result -> another step
(heartbeat) or the reply (``send_message``), up to the step limit. What the person said is kept
after the reply by the same rules as in the assisted mode (``engine.agent.keeping``)."""

from __future__ import annotations

import json
import threading
from typing import Any

from engine.agent import assisted_rules as assisted
from engine.agent.grounding import Grounds, Record, strip_frame
from engine.agent.keeping import Keeper
from engine.agent.steps import EventCallback, Steps
from engine.agent.turn import Turn
from engine.events import (
    FunctionCalled,
    FunctionReturned,
    Notice,
    ProposalApplied,
    ProposalCreated,
    ReplyWithdrawn,
    StepStarted,
    TextStreamed,
    TurnFinished,
)
from engine.functions import (
    SEND_MESSAGE,
    ToolContext,
    check_arguments,
    describe_call,
    run_function,
)
from engine.llm.base import Step
from engine.transcript import result_text


def _call_key(name: str, arguments: dict[str, Any]) -> str:
    meaningful = {k: v for k, v in arguments.items() if k != "request_heartbeat"}
    return name + json.dumps(meaningful, sort_keys=True, ensure_ascii=False)


class SelfManagedTurn:
    """What ``Agent`` does only in the self-managed mode (``Agent.self_managed``)."""

    def __init__(self, steps: Steps, keeper: Keeper) -> None:
        self.steps, self.keeper = steps, keeper
        self.mnemo, self.conversation_id = steps.mnemo, steps.conversation_id
        self.model, self.window = steps.model, steps.window

    def run(self, turn: Turn, emit: EventCallback, cancel: threading.Event | None) -> TurnFinished:
        limit = self.mnemo.settings.step_limit
        while turn.steps < limit:
            final = turn.must_reply or turn.steps == limit - 1
            turn.final = final
            prompt, stats = self.steps.prepare(turn, final, emit, cancel)
            turn.steps += 1
            emit(StepStarted(turn.steps, stats))
            step = self.model.step(
                prompt, on_text=lambda text: emit(TextStreamed(text)), cancel=cancel
            )
            outcome = self._execute(step, turn, emit)
            if isinstance(outcome, TurnFinished):
                if outcome.reason == "replied":
                    self._keep_after_reply(turn, emit)
                return self.steps.finish(outcome, emit)
        return self.steps.stop(
            turn,
            emit,
            "step_limit",
            f"Stopped after {limit} steps without a reply. Ask again, or raise the step "
            "limit in the settings if the assistant needs more steps.",
        )

    def _keep_after_reply(self, turn: Turn, emit: EventCallback) -> None:
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

    def _execute(self, step: Step, turn: Turn, emit: EventCallback) -> TurnFinished | None:
        """Run the step's call and commit it; a TurnFinished ends the turn, None continues."""
        call = step.call
        if call is None and step.text and not step.error:
            return self._checked_reply(step.text, turn, emit)  # a chat API answered in plain text
        if call is None:
            self.steps.record_failure(step.raw or step.text, None, step.error or "no call", emit)
            return None
        functions = {f.name: f for f in self.window.functions()}
        function = functions.get(call.name)
        if function is None:
            self.steps.record_failure(
                call.to_json(),
                call.name,
                f"there is no function {call.name!r}; use one of {', '.join(functions)}",
                emit,
            )
            return None
        problem = check_arguments(function, call.arguments)
        if problem:
            self.steps.record_failure(call.to_json(), call.name, problem, emit)
            return None
        if call.name == SEND_MESSAGE:
            return self._checked_reply(call.arguments["message"], turn, emit, call.to_json())
        key = _call_key(call.name, call.arguments)
        if key in turn.seen_calls:
            return self._repeated(call.name, turn, emit)
        turn.seen_calls.add(key)
        if turn.must_reply:  # the model ignored the request to reply
            return self.steps.stop(
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
        question = self.steps.newest_user_text()
        if not turn.final and assisted.asks_about_the_user(question):
            core = self.window.core_text(self.mnemo.core.blocks())
            records = [Record(result) for result in turn.results]
            grounds = Grounds(question, records, core, question=False)
            if made_up := grounds.invented(shown):
                self.steps.record_failure(
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
        return self.steps.reply(shown, turn, emit)

    def _run_function(
        self, name: str, arguments: dict[str, Any], turn: Turn, emit: EventCallback
    ) -> TurnFinished | None:
        emit(FunctionCalled(name, arguments, describe_call(name, arguments)))
        with self.mnemo.recall.transaction() as transaction:
            call_id = self.steps.store_call(transaction, name, arguments)
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

    def _repeated(self, name: str, turn: Turn, emit: EventCallback) -> TurnFinished | None:
        text = f"The assistant repeated the same {name} call, so it was not run again."
        if turn.must_reply:
            return self.steps.stop(turn, emit, "repeated_call", text + " The turn was stopped.")
        self.steps.note(text + " Reply to the user now.", for_model=True)
        emit(Notice("repeated_call", text))
        turn.must_reply = True
        return None
