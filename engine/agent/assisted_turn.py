"""The assisted mode's turn, for a model too small to page its own memory: recall for the
message (stored as a ``recall`` call, so the chat shows it), one plain-text reply, written again
while it copies an earlier reply, reads its prompt back or ignores what memory found, then, while
the person reads, what they said is kept and the window folded if it is full."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import TYPE_CHECKING

from engine.agent import assisted_rules as assisted
from engine.agent import timeline
from engine.agent.grounding import Grounds, loop_start, out_of_place, recites, strip_frame
from engine.context.window import (
    PRESSURE_FRACTION,
    AgentState,
)
from engine.errors import (
    GenerationCancelled,
    MnemoError,
)
from engine.events import (
    ContextEvicted,
    FunctionCalled,
    FunctionReturned,
    ReplyWithdrawn,
    StepStarted,
    TextStreamed,
    TurnFinished,
)
from engine.functions import (
    describe_call,
)
from engine.llm.base import Prompt, Step, StepStats
from engine.memory.recall import (
    MessageHit,
)
from engine.transcript import (
    NOTE_MARKS,
    RECALL,
    RECALL_SUMMARY,
    recall_note_shown,
)

if TYPE_CHECKING:
    from engine.agent.keeping import Keeper
    from engine.agent.steps import EventCallback, Steps
    from engine.agent.turn import Turn

log = logging.getLogger("mnemo.agent")
READ_BACK = "read its prompt back"
USED_NOTHING = "used nothing memory found"


class _StopOrCancel(threading.Event):
    """Set when the person cancels (``outer``) or when the turn stops a reply that loops
    (``stop``): the model stops generating either way, and ``stopped`` tells which."""

    def __init__(self, outer: threading.Event | None) -> None:
        super().__init__()
        self._outer = outer
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True
        self.set()

    def is_set(self) -> bool:
        return super().is_set() or (self._outer is not None and self._outer.is_set())

    def wait(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.is_set():
            left = 0.05 if deadline is None else min(0.05, deadline - time.monotonic())
            if left <= 0:
                return False
            super().wait(left)
        return True


class AssistedTurn:
    """What ``Agent`` does only in the assisted mode (``Agent.assisted``)."""

    def __init__(self, steps: Steps, keeper: Keeper, *, folds_ahead: bool) -> None:
        self.steps, self.keeper = steps, keeper  # what it stores, replies and stops with
        self.folds_ahead = folds_ahead  # fold after a reply (see ``Agent.__init__``)
        self.mnemo, self.conversation_id = steps.mnemo, steps.conversation_id
        self.model, self.window = steps.model, steps.window

    def run(self, turn: Turn, emit: EventCallback, cancel: threading.Event | None) -> TurnFinished:
        """Recall, reply in plain text, then the memory step (after the user has the reply).
        The window is built once, after recall (on a GPU also before it, see below)."""
        state = turn.window_state(self.mnemo, self.conversation_id)
        hits = self.window.messages(state)
        users = [hit for hit in hits if hit.role == "user"]
        if not users:
            return self.steps.stop(turn, emit, "no_reply", "There is no message to reply to.")
        question = users[-1].text
        about_user = assisted.asks_about_the_user(question)
        built = None
        found = assisted.Recalled(query=question)
        if not self._recalled_already(hits):  # a resumed turn may have
            # With the model on a GPU, it evaluates the prompt so far while memory is searched.
            # On the CPU the two compete for the same cores (llama.cpp's threads spin while they
            # wait), and searching first gave the first token sooner (assisted_latency.py).
            warm = None
            if getattr(self.model, "gpu_layers", 0):
                built = self.steps.prepare(turn, False, emit, cancel, assisted_mode=True)
                warm = threading.Thread(target=self._prefill, args=(built[0],), daemon=True)
                warm.start()
            started = time.perf_counter()
            try:
                found = self._recall(hits, users, emit)
            finally:
                if warm is not None:
                    warm.join()
            turn.timed("recall", started)
            turn.passages = found.passages
            about_user = about_user or assisted.asks_of_theirs(question, found)
            if found or about_user:  # a note was stored: the window has changed
                built = None
        started = time.perf_counter()
        prompt, stats = built or self.steps.prepare(turn, False, emit, cancel, assisted_mode=True)
        turn.timed("window", started)  # with a fold, when the window was full
        turn.steps = 1
        emit(StepStarted(1, stats))
        note = prompt.messages[-1].content if prompt.messages else ""
        nothing_found = note.endswith(assisted.NOTHING_FOUND)
        grounds = None
        if not nothing_found:
            known = self.mnemo.knowledge.resolve
            grounds = assisted.grounds_for(
                question, about_user, found, prompt.memory, lambda name: known(name) is not None
            )
        along = timeline.answer(self.mnemo, question)
        if along is not None:
            # A question along the person's timeline (before, when, which first, how many
            # moves, still): answered from knowledge history with its days, not drafted.
            emit(TextStreamed(along))
            step = Step(None, raw=along, text=along)
        elif nothing_found or (grounds and grounds.only_of_others()):
            # A question about the user that memory holds nothing on (or only what is true of
            # others: their son's job for "What's my job?"): said so, not invented.
            text = assisted.not_told(question, self._earlier_replies())
            emit(TextStreamed(text))
            step = Step(None, raw=text, text=text)
        else:
            memory = (
                assisted.memory_words(note, question)
                if note.startswith(NOTE_MARKS) and about_user
                else None
            )
            step = self._new_reply(prompt, question, emit, cancel, memory, grounds, turn)
        if step.error or not step.text:
            return self.steps.stop(
                turn,
                emit,
                "no_reply",
                "The model gave no reply (" + (step.error or "empty output") + "). Ask again.",
            )
        finished = self.steps.reply(step.text, turn, emit)
        started = time.perf_counter()
        self._after_reply(users[-1], state, emit, cancel)
        turn.timed("memory step", started)
        return self.steps.finish(dataclasses.replace(finished, phases=turn.phases), emit)

    def _new_reply(
        self,
        prompt: Prompt,
        message: str,
        emit: EventCallback,
        cancel: threading.Event | None,
        memory: list[str] | None = None,
        grounds: Grounds | None = None,
        turn: Turn | None = None,
    ) -> Step:
        """The model's reply, capped (the window asks for ``agent.reply_tokens``), cut where
        it starts to loop and cleaned of the frame it copied (``assisted.ReplyStream``). It is
        written again while it repeats an earlier reply of the conversation or its shape, reads
        its prompt back (``assisted.without_prompt_echo``), answers a question about the user
        without a word of what memory found for it (``memory``: those words), or states what
        neither memory nor the message holds (``grounds``: such a reply is held back until
        checked). When no draft will do, the reply is the record itself ("You told me on 4
        December: …").

        A retry sees only the newest message and what was recalled for it: with its earlier
        replies in view, the bundled model copied them even when sampled (and with only the
        replies taken out, the user's messages ran together)."""
        earlier = self._earlier_replies()
        # Nor is the person's own message said back to them ("Hello! How are you today?").
        earlier += [m.content for m in prompt.messages[-2:] if m.role == "user"]
        persona = [b.value for b in self.mnemo.core.blocks() if b.label == "persona"]
        scaffold = "\n".join([prompt.instructions, *persona])
        fallback: str | None = None  # a draft that only fails to use memory: better than none
        step = Step(None)
        # What all drafts may generate: a draft written again gets what the first left, so no
        # turn runs past its cap (a failed draft mostly stops early: ``ReplyStream.doomed``).
        budget = assisted.reply_cap(message, grounds, prompt.max_tokens or 0)
        for attempt in range(assisted.reply_attempts(grounds)):
            if prompt.max_tokens:
                if budget < assisted.DRAFT_TOKENS:
                    break
                prompt = dataclasses.replace(prompt, max_tokens=budget)
            stop = _StopOrCancel(cancel)
            stream = assisted.ReplyStream(
                earlier,
                lambda text: emit(TextStreamed(text)),
                hold=grounds is not None,
                on_stop=stop.stop,
                doomed=lambda text: self._doomed(text, message, grounds),
                answered=None if grounds is None else lambda t: grounds.up_to_answer(t) is not None,
            )
            started = time.perf_counter()
            try:
                step = self.model.step(prompt, on_text=stream.feed, cancel=stop)
            except GenerationCancelled as stopped:
                if not stop.stopped:
                    raise  # the person pressed Stop
                done = stopped.stats if isinstance(stopped.stats, StepStats) else StepStats()
                step = Step(None, raw=stream.text, text=stream.text, stats=done)
            if turn is not None:
                turn.phases["drafts"] = attempt + 1
                turn.timed("model", started)
                turn.phases["prompt"] = turn.phases.get("prompt", 0.0) + step.stats.first_token_s
                turn.phases["evaluated"] = (
                    turn.phases.get("evaluated", 0) + step.stats.evaluated_tokens
                )
                turn.phases["generated"] = (
                    turn.phases.get("generated", 0) + step.stats.generated_tokens
                )
            budget -= step.stats.generated_tokens
            if step.error or not step.text:
                return step
            drafted = stream.text if stream.ended else step.text
            echo = assisted.without_prompt_echo(drafted)
            text = strip_frame(drafted if echo is None else echo)
            if (again := loop_start(text)) is not None:  # the frame hid a sentence said twice
                text = text[:again].rstrip()
            if grounds is not None and grounds.question:
                text = assisted.without_question_back(text)
                text = grounds.up_to_answer(text) or text  # it ends where the answer was given
            cut = bool(prompt.max_tokens) and step.stats.generated_tokens >= (
                prompt.max_tokens or 0
            )
            if cut:
                text = assisted.whole_sentences(text)  # the cap cut it: it ends where one did
            problem = stream.failed or self._problem(
                text, echo is not None, stream, memory, grounds, scaffold
            )
            if cut and grounds is not None and not assisted.ends_a_sentence(text):
                problem = problem or "was cut off before its first sentence ended"
            problem = problem or out_of_place(text, message, grounds is not None)
            if problem is None:
                if not stream.show(text):
                    emit(ReplyWithdrawn())
                    emit(TextStreamed(text))
                return dataclasses.replace(step, text=text)
            log.info("reply %d %s: %.80s", attempt + 1, problem, drafted)
            if problem == USED_NOTHING or (problem == READ_BACK and text):
                fallback = text
            if problem == assisted.REPEATED and self._record_will_do(grounds, text, stream):
                break  # a right answer said before: the record says it in other words, at once
            if stream.released:
                emit(ReplyWithdrawn())
            newest = max(i for i, m in enumerate(prompt.messages) if m.role == "user")
            prompt = dataclasses.replace(
                prompt,
                messages=prompt.messages[newest:],
                temperature=assisted.RETRY_TEMPERATURE,
            )
        record = grounds.record_reply() if grounds is not None else None
        if record is None and grounds is not None and grounds.unanswered():
            record = assisted.not_told(grounds.message, self._earlier_replies())
        text = record or fallback or assisted.NO_NEW_REPLY
        emit(TextStreamed(text))
        return Step(None, raw=step.raw, text=text, stats=step.stats)

    @staticmethod
    def _record_will_do(grounds: Grounds | None, text: str, stream: assisted.ReplyStream) -> bool:
        """Whether a draft that only repeats an earlier reply ("You're lactose intolerant."
        after that was said) is an answer that memory bears out, whose record is no repeat:
        then the record is the reply, and no draft is written again."""
        if grounds is None or not grounds.question or grounds.problem(text) is not None:
            return False
        record = grounds.record_reply()
        return record is not None and not stream.repeats(record)

    def _earlier_replies(self) -> list[str]:
        """The conversation's last replies, which a new one neither repeats nor copies."""
        recent = self.mnemo.recall.recent(4 * assisted.EARLIER_REPLIES, self.conversation_id)
        return [hit.text for hit in recent if hit.role == "assistant"][-assisted.EARLIER_REPLIES :]

    @staticmethod
    def _doomed(text: str, message: str, grounds: Grounds | None) -> str | None:
        """Why a draft so far cannot be shown, whatever it goes on to say (``ReplyStream``);
        what follows the answer is not shown, and does not count."""
        if grounds is not None:
            text = grounds.up_to_answer(text) or text
            if problem := grounds.doomed(text):
                return problem
        return out_of_place(text, message, grounds is not None)

    @staticmethod
    def _problem(
        text: str,
        echoed: bool,
        stream: assisted.ReplyStream,
        memory: list[str] | None,
        grounds: Grounds | None,
        scaffold: str,
    ) -> str | None:
        """Why a draft is not shown, in words for the log; None when it is (``scaffold``: the
        instructions and persona, which a reply never recites)."""
        if echoed:
            return READ_BACK
        if not text:
            return "was only frame"
        if stream.repeats(text):
            return assisted.REPEATED
        if grounds is not None and (problem := grounds.problem(text)):
            return problem
        if memory and not assisted.uses_memory(text, memory):
            return USED_NOTHING
        if recites(text, scaffold):
            return "recited its instructions or persona"
        return None

    def _after_reply(
        self,
        user: MessageHit,
        state: AgentState,
        emit: EventCallback,
        cancel: threading.Event | None,
    ) -> None:
        """While the user reads the reply: keep what their message said about them, then (in a
        chat that goes on, ``folds_ahead``) fold the window ahead."""
        self.keeper.keep(user, emit)
        if self.folds_ahead:
            self.fold_ahead(state, emit, cancel)

    def fold_ahead(
        self, state: AgentState, emit: EventCallback, cancel: threading.Event | None
    ) -> bool:
        """Fold the window if it is past the pressure line and evaluate the folded prompt, so
        that the next turn finds it in the KV cache; whether anything was folded."""
        if not self._evict_ahead(state, emit, cancel):
            return False
        self._prefill(self.window.build(state, assisted=True)[0])
        return True

    def _evict_ahead(
        self, state: AgentState, emit: EventCallback, cancel: threading.Event | None
    ) -> bool:
        """Once the window is past the pressure line, fold its oldest half into the summary
        now, so that the user's next message does not wait for it (eviction inside a turn
        stalled the bundled model for ~24 s). Whether anything was folded."""
        if self.window.build(state, assisted=True)[1].fraction < PRESSURE_FRACTION:
            return False
        try:
            evicted = self.window.evict(state, cancel)
        except GenerationCancelled:
            return False  # nothing was changed; the next turn evicts if it must
        except MnemoError as error:
            log.warning("evicting after the reply failed; the next turn will: %s", error)
            return False
        if evicted:
            emit(ContextEvicted(evicted, state.summary))
        return bool(evicted)

    @staticmethod
    def _recalled_already(hits: list[MessageHit]) -> bool:
        """Whether the newest user message already has its recall note (a resumed turn)."""
        for hit in reversed(hits):
            if hit.role == "user":
                return False
            if hit.role == "function_result" and hit.name == RECALL:
                return True
        return False

    def _prefill(self, prompt: Prompt) -> None:
        try:
            self.model.prefill(prompt)
        except Exception as error:  # only a head start; the step itself reports real failures
            log.warning("prefilling the prompt failed: %s", error)

    def _recall(
        self, hits: list[MessageHit], users: list[MessageHit], emit: EventCallback
    ) -> assisted.Recalled:
        """Search memory for the newest message; store and show what was found that the model
        does not already see (nothing when nothing new clearly fits)."""
        message = users[-1].text
        previous = users[-2].text if len(users) > 1 else None
        seen_messages, seen_passages, seen_facts = {hit.id for hit in hits}, set(), set()
        if message.rstrip().endswith("?"):
            # A question gets what memory holds on it even when it is in the window already:
            # the bundled model answered from a fresh note, not from a message ten turns up
            # ("What's my daughter's name?" got "Emily" with "…called Asha" in view).
            seen_messages = {users[-1].id}
            hits = []
        for hit in hits:
            if hit.role == "function_call" and hit.name == RECALL:
                shown_messages, shown_passages, shown_facts = recall_note_shown(hit.text)
                seen_messages.update(shown_messages)
                seen_passages.update(shown_passages)
                seen_facts.update(shown_facts)
        found = assisted.recall_for(
            self.mnemo,
            message,
            previous=previous,
            visible=seen_messages,
            shown_passages=seen_passages,
            shown_facts=seen_facts,
        )
        if not found and not assisted.asks_about_the_user(message):
            return found  # nothing to say: the prompt stays as it was, and its cache with it
        arguments = {
            "query": message[:200],
            "found": found.summary() or "nothing",
            "messages": [hit.id for hit in found.messages],
            "passages": [passage.id for passage in found.passages],
            "facts": [fact.id for fact in found.facts],
        }
        emit(FunctionCalled(RECALL, arguments, describe_call(RECALL, arguments)))
        text = found.text()
        with self.mnemo.recall.transaction() as transaction:
            self.steps.store_call(transaction, RECALL, arguments)
            transaction.add(
                "function_result",
                text,
                name=RECALL,
                conversation_id=self.conversation_id,
                untrusted_reason=found.untrusted_reason,
            )
        emit(FunctionReturned(RECALL, True, text, RECALL_SUMMARY, tuple(found.trace)))
        return found
